// Command gendocs writes the man pages of every govkit binary from its cobra
// command tree (make docs). Pages carry the date of SOURCE_DATE_EPOCH when it
// is set (the Makefile sets it to the last commit's), so regenerating an
// unchanged tree changes nothing.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/cmd/approvals"
	"github.com/govkit/govkit/pkg/cmd/auditd"
	"github.com/govkit/govkit/pkg/cmd/auditor"
	"github.com/govkit/govkit/pkg/cmd/classify"
	"github.com/govkit/govkit/pkg/cmd/gate"
	"github.com/govkit/govkit/pkg/cmd/govbot"
	"github.com/govkit/govkit/pkg/cmd/govexplain"
	"github.com/govkit/govkit/pkg/cmd/secbot"
	"github.com/govkit/govkit/pkg/cmd/verifychain"
)

// roots returns the root command of every binary. Add each new binary here.
func roots(streams *cli.IOStreams) []*cobra.Command {
	return []*cobra.Command{
		approvals.NewCmdApprovals(streams),
		auditd.NewCmdAuditd(streams, nil),
		auditor.NewCmdAuditor(streams, nil),
		classify.NewCmdClassify(streams, nil),
		gate.NewCmdGate(streams),
		govbot.NewCmdGovbot(streams),
		govexplain.NewCmdGovexplain(streams, nil),
		secbot.NewCmdSecbot(streams),
		verifychain.NewCmdVerifyChain(streams, nil),
	}
}

func main() {
	out := flag.String("out", "docs/man", "write the man pages into `DIR`")
	flag.Parse()
	if err := generate(*out); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: error: %v\n", err)
		os.Exit(cli.ExitFailure)
	}
}

// generate replaces the man pages in dir with freshly generated ones.
func generate(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stale, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		return err
	}
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	streams, _, _, _ := cli.Test() // the pages must not depend on this terminal
	for _, root := range roots(streams) {
		root.DisableAutoGenTag = true
		// Cobra adds the completion command only when it is invoked; the
		// pages document it like any other subcommand.
		root.InitDefaultCompletionCmd("completion")
		header := &doc.GenManHeader{Section: "1", Source: "govkit", Manual: "govkit manual"}
		if err := doc.GenManTree(root, header, dir); err != nil {
			return fmt.Errorf("%s: %v", root.Name(), err)
		}
	}
	return nil
}
