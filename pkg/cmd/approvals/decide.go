package approvals

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/termtext"
)

// The two decisions, as subcommand names.
const (
	verbApprove = "approve"
	verbDeny    = "deny"
)

// DecideOptions are the arguments and flags of approve and deny.
type DecideOptions struct {
	*Options
	Verb   string // verbApprove or verbDeny
	ID     string
	Reason string
}

func newCmdDecide(opts *Options, verb string, runF func(*DecideOptions) error) *cobra.Command {
	do := &DecideOptions{Options: opts, Verb: verb}
	cmd := &cobra.Command{
		Use:   "approve ID [--reason TEXT]",
		Short: "Approve a pending request",
		Long: `Approve records your approval of a pending request. The request is approved once
quorum distinct approvers have approved it; until then it stays pending and
approve says how many more it needs.

auditd refuses, and approve exits 3 with its reason, when you requested it
yourself (another approver must decide), when you have voted on it already,
when it is no longer pending, or when it has expired.`,
		Example: `  approvals approve apr_2al33qaosuvdf2jaxgt5fxm46g
  approvals approve apr_2al33qaosuvdf2jaxgt5fxm46g --reason "checked the migration plan"`,
	}
	reasonHelp := "say why in `TEXT`, for the requester and the audit log"
	if verb == verbDeny {
		cmd.Use = "deny ID --reason TEXT"
		cmd.Short = "Deny a pending request"
		cmd.Long = `Deny ends a pending request: one deny is enough, whatever the quorum. The
reason is required; the requester reads it, and the audit log keeps it.

auditd refuses, and deny exits 3 with its reason, when you requested it
yourself, when you have voted on it already, when it is no longer pending, or
when it has expired.`
		cmd.Example = `  approvals deny apr_2al33qaosuvdf2jaxgt5fxm46g --reason "not during the change freeze"`
		reasonHelp = "say why in `TEXT` (required): the requester reads it"
	}
	cmd.Args = requireID(verb)
	cmd.ValidArgsFunction = opts.completeID
	cmd.RunE = func(c *cobra.Command, args []string) error {
		opts.prepare(c)
		do.ID = args[0]
		if verb == verbDeny && strings.TrimSpace(do.Reason) == "" {
			return cli.Failf("deny needs a reason").
				WithHint(fmt.Sprintf("pass --reason TEXT: the requester reads it (%s)", opts.command("deny "+do.ID+" --reason TEXT")))
		}
		if runF != nil {
			return runF(do)
		}
		return decideRun(do)
	}
	cmd.Flags().StringVar(&do.Reason, "reason", "", reasonHelp)
	cli.SkipConfig(cmd.Flags(), "reason")
	return cmd
}

func decideRun(o *DecideOptions) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	decide := c.Approve
	if o.Verb == verbDeny {
		decide = c.Deny
	}
	r, err := decide(ctx, o.ID, o.Reason)
	if err != nil {
		return o.apiError(err, o.ID)
	}
	if o.format() == cli.FormatJSON {
		return cli.WriteJSON(o.IO.Out, r)
	}
	if _, err := fmt.Fprintln(o.IO.Out, decisionLine(r, o.Verb)); err != nil {
		return cli.Failf("writing the output: %v", err)
	}
	return nil
}

// decisionLine says where a request stands after the caller's vote.
func decisionLine(r approval.Request, verb string) string {
	id := termtext.OneLine(r.ID)
	n := r.Approvals()
	switch {
	case r.Status == approval.Approved:
		return fmt.Sprintf("approved %s — %d of %s; the request is approved", id, n, cli.Plural(r.Quorum, "approval", "approvals"))
	case r.Status == approval.Denied:
		v, _ := r.Denial()
		return fmt.Sprintf("denied %s — the request is denied: %s", id, flatten(v.Reason))
	case r.Status == approval.Pending && verb == verbApprove:
		return fmt.Sprintf("recorded your approval of %s: %d of %d; waiting for %d more", id, n, r.Quorum, r.Quorum-n)
	}
	return fmt.Sprintf("%s: %s", id, r.Status)
}
