// Package cmdtree holds the command tree of every govkit binary, for the
// tools and tests that walk them all: the man pages and docs/config.md
// (internal/gendocs), the environment-rule test and the end-to-end scripts
// (issue 20).
package cmdtree

import (
	"github.com/spf13/cobra"

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

// Binary is one govkit binary: its name, what its cmd/NAME runs, and its
// command tree.
type Binary struct {
	Name string
	Main func() int
	New  func(*cli.IOStreams) *cobra.Command
}

// Binaries are every govkit binary, sorted by name, one for each directory
// of cmd/ (TestCmdTreeHasEveryBinary). Add each new binary here.
var Binaries = []Binary{
	{"approvals", approvals.Main, approvals.NewCmdApprovals},
	{"auditd", auditd.Main, func(s *cli.IOStreams) *cobra.Command { return auditd.NewCmdAuditd(s, nil) }},
	{"auditor", auditor.Main, func(s *cli.IOStreams) *cobra.Command { return auditor.NewCmdAuditor(s, nil) }},
	{"classify", classify.Main, func(s *cli.IOStreams) *cobra.Command { return classify.NewCmdClassify(s, nil) }},
	{"gate", gate.Main, gate.NewCmdGate},
	{"govbot", govbot.Main, govbot.NewCmdGovbot},
	{"govexplain", govexplain.Main, func(s *cli.IOStreams) *cobra.Command { return govexplain.NewCmdGovexplain(s, nil) }},
	{"secbot", secbot.Main, secbot.NewCmdSecbot},
	{"verify-chain", verifychain.Main, func(s *cli.IOStreams) *cobra.Command { return verifychain.NewCmdVerifyChain(s, nil) }},
}

// Roots returns the root command of every binary, sorted by name, as Root
// does.
func Roots(streams *cli.IOStreams) []*cobra.Command {
	roots := make([]*cobra.Command, len(Binaries))
	for i, b := range Binaries {
		roots[i] = b.root(streams)
	}
	return roots
}

// Root returns the root command of the binary called name (nil for none),
// with the help, version and completion commands and flags cobra adds when
// it runs, so that a walk sees every flag a user can pass.
func Root(streams *cli.IOStreams, name string) *cobra.Command {
	for _, b := range Binaries {
		if b.Name == name {
			return b.root(streams)
		}
	}
	return nil
}

func (b Binary) root(streams *cli.IOStreams) *cobra.Command {
	root := b.New(streams)
	root.InitDefaultCompletionCmd("completion")
	cli.VisitCommands(root, func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag()
		_ = c.InheritedFlags() // merges the parents' persistent flags into c.Flags()
	})
	return root
}
