package approvals

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/govapi"
)

// ListOptions are the flags of list.
type ListOptions struct {
	*Options
	Pending bool
	Status  string
	Limit   int
}

func newCmdList(opts *Options, runF func(*ListOptions) error) *cobra.Command {
	lo := &ListOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "list [--pending | --status STATUS] [--limit N]",
		Short: "List approval requests",
		Long: `List shows approval requests: with --pending those waiting for a decision,
oldest first; otherwise the most recently changed requests of any status (up
to --limit, default 100), the latest change last.

On a terminal it prints a table: ID, STATUS, RESOURCE, ACTION, REQUESTED BY,
CREATED, EXPIRES and VOTES (approvals so far / quorum); with -o json, one
request object per line. An empty list prints nothing on standard output (and
says so on standard error in text).`,
		Example: `  approvals list --pending
  approvals list --status denied --limit 20
  approvals list --pending -o json | jq -r .id`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.prepare(c)
			if err := lo.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(lo)
			}
			return listRun(lo)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&lo.Pending, "pending", false, "only the requests waiting for a decision, oldest first")
	f.StringVar(&lo.Status, "status", "", "only requests in `STATUS`: pending, approved, denied, expired, cancelled or consumed")
	f.IntVar(&lo.Limit, "limit", 0, "show at most `N` requests, 1-1000 (default 100; --pending shows all)")
	_ = cmd.RegisterFlagCompletionFunc("status",
		cobra.FixedCompletions([]string{"pending", "approved", "denied", "expired", "cancelled", "consumed"}, cobra.ShellCompDirectiveNoFileComp))
	cli.SkipConfig(f, "pending", "status", "limit")
	return cmd
}

func (o *ListOptions) validate() error {
	if o.Status != "" && !approval.Status(o.Status).Valid() {
		return cli.Failf("--status %q is not pending, approved, denied, expired, cancelled or consumed", o.Status).
			WithHint("pass --status pending, approved, denied, expired, cancelled or consumed")
	}
	if o.Pending && o.Status != "" && o.Status != string(approval.Pending) {
		return cli.Failf("--pending and --status %s cannot be used together", o.Status).
			WithHint("pass either --pending or --status")
	}
	if o.Limit < 0 || o.Limit > govapi.MaxLimit {
		return cli.Failf("--limit %d is not between 1 and %d", o.Limit, govapi.MaxLimit)
	}
	return nil
}

func listRun(o *ListOptions) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()

	pending := o.Pending || o.Status == string(approval.Pending)
	var reqs []approval.Request
	if pending && o.Limit == 0 {
		reqs, err = c.PendingApprovals(ctx)
	} else {
		var l govapi.ApprovalList
		l, err = c.Approvals(ctx, govapi.ApprovalQuery{Status: approval.Status(o.Status), Cursor: govapi.Cursor{Limit: o.Limit}})
		reqs = l.Approvals
	}
	if err != nil {
		return o.apiError(err, "")
	}

	if o.format() == cli.FormatJSON {
		for _, r := range reqs {
			if err := cli.WriteJSON(o.IO.Out, r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(reqs) == 0 {
		what := "approval requests"
		if o.Status != "" {
			what = o.Status + " " + what
		} else if o.Pending {
			what = "pending " + what
		}
		fmt.Fprintf(o.IO.ErrOut, "no %s\n", what)
		return nil
	}
	return writeTable(o.IO.Out, reqs, o.now())
}
