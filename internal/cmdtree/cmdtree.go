// Package cmdtree holds the command tree of every govkit binary, for the
// tools and tests that walk them all: the man pages and docs/config.md
// (internal/gendocs), and the environment-rule test (issue 20).
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

// Roots returns the root command of every binary, sorted by name, each
// with the help, version and completion commands and flags cobra adds when
// it runs, so that a walk sees every flag a user can pass. Add each new
// binary here.
func Roots(streams *cli.IOStreams) []*cobra.Command {
	roots := []*cobra.Command{
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
	for _, root := range roots {
		root.InitDefaultCompletionCmd("completion")
		cli.VisitCommands(root, func(c *cobra.Command) {
			c.InitDefaultHelpFlag()
			c.InitDefaultVersionFlag()
			_ = c.InheritedFlags() // merges the parents' persistent flags into c.Flags()
		})
	}
	return roots
}
