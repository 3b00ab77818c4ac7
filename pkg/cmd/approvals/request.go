package approvals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// holdMargin separates a long-poll's end from the expiry or the deadline it
// is timed against.
const holdMargin = 250 * time.Millisecond

// RequestOptions are the flags of request.
type RequestOptions struct {
	*Options
	Resource   string
	Action     string
	Reason     string
	Tool       string
	RawCommand string
	Tags       []string
	TTL        time.Duration
	Wait       time.Duration

	resType, resName string
}

func newCmdRequest(opts *Options, runF func(*RequestOptions) error) *cobra.Command {
	ro := &RequestOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "request --resource TYPE:NAME --action ACTION [--wait DURATION] [flags]",
		Short: "Ask for approval of one action, and optionally wait for the decision",
		Long: `Request asks auditd for approval of one action on one resource, as you (your
token's name, or $USER in local mode). The request binds the exact action:
its action_hash covers the resource, action, tool and command, so an approval
releases exactly that, once ('approvals consume').

auditd opens a request only when its policy requires approval for the action:
the quorum and the policy decision approvers see come from the policy, and
the resource's tags from auditd's infra file. When the policy allows the
action outright, request says so and exits 0 (nothing to wait for); when it
denies it, request exits 1 with the policy's explanation.

Without --wait, request prints the new request (with -o json the request
object; its "id" names it) and exits 0.

With --wait, it says on standard error what it waits for and the command that
approves it, follows the request until it is decided, expires, or --wait
passes, prints the final request (a line such as "approved by bob" in text,
the request object in JSON; when the wait ends undecided, JSON still shows the
request as last seen, pending), and exits with the outcome. It asks auditd to
hold each answer until something changes (a long-poll), never more often than
once a second; when auditd is unreachable it retries until --wait ends, and
an authentication or permission refusal ends it at once. Ctrl-C stops waiting
(exit 2); the request stays pending until it expires.

Exit status:

    0  created (without --wait); approved (with --wait)
    1  denied
    2  expired, or no decision before --wait ended or Ctrl-C
    3  usage error, auditd unreachable or refusing, internal failure`,
		Example: `  approvals request --resource database:prod-db --action write \
    --reason "backfill orders.total" --command "psql -f backfill.sql" --wait 15m
  approvals request --resource kubernetes:web --action destructive --ttl 30m
  id=$(approvals request --resource database:prod-db --action write -o json | jq -r .id)`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.prepare(c)
			if err := ro.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(ro)
			}
			return requestRun(ro)
		},
	}
	f := cmd.Flags()
	f.StringVar(&ro.Resource, "resource", "", "the resource as `TYPE:NAME` (database:prod-db)")
	f.StringVar(&ro.Action, "action", "", "the `ACTION`: read, write or destructive")
	f.StringVar(&ro.Reason, "reason", "", "why the action is needed: `TEXT` the approvers read")
	f.StringVar(&ro.Tool, "tool", "", "the tool `NAME` that will run the action (e.g. psql)")
	f.StringVar(&ro.RawCommand, "command", "", "the exact command line `RAW` that will run")
	f.StringSliceVar(&ro.Tags, "tags", nil, "tag the resource with `TAGS` (comma-separated, or repeated; only for a gateway token and a resource auditd's infra file does not list)")
	f.DurationVar(&ro.TTL, "ttl", 0, "expire the request after `DURATION` (default: auditd's, 5m)")
	f.DurationVar(&ro.Wait, "wait", 0, "wait up to `DURATION` for the decision and exit with it (default: do not wait)")
	_ = cmd.RegisterFlagCompletionFunc("action",
		cobra.FixedCompletions(approval.Actions, cobra.ShellCompDirectiveNoFileComp))
	cli.SkipConfig(f, "resource", "action", "reason", "tool", "command", "tags", "ttl", "wait")
	cli.AliasFlag(f, "tags", "tag") // issue 20: --tags everywhere; the seed's --tag still works
	return cmd
}

func (o *RequestOptions) validate() error {
	typ, name, ok := strings.Cut(o.Resource, ":")
	switch {
	case o.Resource == "":
		return cli.Failf("--resource is required").WithHint("pass --resource TYPE:NAME, e.g. --resource database:prod-db")
	case !ok || strings.TrimSpace(typ) == "" || strings.TrimSpace(name) == "":
		return cli.Failf("--resource %s is not TYPE:NAME", termtext.OneLine(termtext.Truncate(o.Resource, 100))).
			WithHint("pass --resource TYPE:NAME, e.g. --resource database:prod-db")
	}
	o.resType, o.resName = typ, name
	actions := strings.Join(approval.Actions, ", ")
	switch {
	case o.Action == "":
		return cli.Failf("--action is required").WithHint("pass --action " + actions)
	case !approval.ValidAction(strings.ToLower(o.Action)):
		return cli.Failf("--action %s is not one of %s", termtext.OneLine(termtext.Truncate(o.Action, 40)), actions).
			WithHint("pass --action " + actions)
	}
	// Any case, as the policy engine matches actions (issue 20: --action
	// READ was refused). The request and its action_hash carry the lower
	// case, as every execution's action_class does, so that an approval
	// asked for as WRITE releases the write it names.
	o.Action = strings.ToLower(o.Action)
	if o.TTL != 0 && (o.TTL < approval.MinTTL || o.TTL > approval.MaxTTL) {
		return cli.Failf("--ttl %s is not between %s and %s", o.TTL, approval.MinTTL, approval.MaxTTL).
			WithHint("pass --ttl like 15m, or leave it out for auditd's default")
	}
	if o.Wait < 0 {
		return cli.Failf("--wait %s is negative", o.Wait).WithHint("pass --wait like 15m, or leave it out to not wait")
	}
	return nil
}

func requestRun(o *RequestOptions) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()

	in := approval.Input{
		Resource:   audit.Resource{Type: o.resType, Name: o.resName, Tags: o.Tags},
		Action:     o.Action,
		Tool:       o.Tool,
		RawCommand: o.RawCommand,
		Reason:     o.Reason,
	}
	if o.TTL > 0 {
		in.TTL = o.TTL.String()
	}
	r, err := c.RequestApproval(ctx, in)
	var ae *client.Error
	if errors.As(err, &ae) && ae.Code == govapi.CodeApprovalNotRequired {
		// Nothing to approve: the policy allows the action as it is.
		fmt.Fprintf(o.IO.ErrOut, "approvals: %s\n", termtext.OneLine(ae.Message))
		return nil
	}
	if errors.As(err, &ae) && ae.Code == govapi.CodePolicyDenied {
		return &cli.ExitError{Code: exitDenied, Err: errors.New(ae.Message),
			Hint: "no approval can release an action the policy denies; 'govexplain' shows which policy and rule decide it"}
	}
	if err != nil {
		return o.apiError(err, "")
	}
	jsonOut := o.format() == cli.FormatJSON
	if o.Wait == 0 {
		if jsonOut {
			return cli.WriteJSON(o.IO.Out, r)
		}
		_, err := fmt.Fprintf(o.IO.Out, "requested approval %s to %s (quorum %d, expires in %s)\napprove with: %s\ndeny with:    %s\n",
			termtext.OneLine(r.ID), summary(r), r.Quorum, cli.Approx(r.ExpiresAt.Sub(o.now())),
			o.command("approve "+r.ID), o.command("deny "+r.ID+" --reason TEXT"))
		if err != nil {
			return cli.Failf("writing the output: %v", err)
		}
		return nil
	}

	fmt.Fprintf(o.IO.ErrOut, "waiting for approval %s (expires in %s); approve with: %s\n",
		termtext.OneLine(r.ID), cli.Approx(r.ExpiresAt.Sub(o.now())), o.command("approve "+r.ID))
	r, waitErr := o.Options.follow(ctx, c, r, o.Wait, "--wait")
	return o.Options.waitOutcome(r, waitErr)
}

// waitOutcome prints how a followed request ended and returns its exit
// status (DESIGN §7): approved 0, denied 1; expired, cancelled, consumed
// (by an earlier run) or still pending when the wait ended 2.
func (o *Options) waitOutcome(r approval.Request, waitErr error) error {
	var ee *cli.ExitError
	if waitErr != nil && (!errors.As(waitErr, &ee) || ee.Code != exitNoGrant) {
		return waitErr // an error, not an outcome: nothing on stdout
	}
	if o.format() == cli.FormatJSON {
		if err := cli.WriteJSON(o.IO.Out, r); err != nil {
			return err
		}
	} else if r.Status != approval.Pending {
		if _, err := fmt.Fprintln(o.IO.Out, outcome(r)); err != nil {
			return cli.Failf("writing the output: %v", err)
		}
	}
	switch {
	case waitErr != nil:
		return waitErr
	case r.Status == approval.Approved:
		return nil
	case r.Status == approval.Denied:
		return cli.Silent(exitDenied)
	}
	return cli.Silent(exitNoGrant)
}

// follow long-polls r until it is decided or expires, wait (the flag named
// flag) passes, or ctx ends (Ctrl-C). It returns the last state it saw, and
// an exit-2 error when the wait ended with r still pending. Transient
// failures (auditd unreachable or answering 5xx) are retried; any other
// failure ends the wait with exit 3.
func (o *Options) follow(ctx context.Context, c *client.Client, r approval.Request, wait time.Duration, flag string) (approval.Request, error) {
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	deadline, _ := waitCtx.Deadline()
	outage := false
	for r.Status == approval.Pending {
		start := o.pacingStart()
		// Hold until shortly after the expiry at most (a pending request is
		// reported expired by the first read after it), and let the last
		// hold end just before the deadline, so that the answer arrives.
		hold := min(time.Until(deadline)-holdMargin, govapi.MaxWait, time.Until(r.ExpiresAt)+holdMargin)
		hold = max(hold, 0)
		got, err := c.WaitApproval(waitCtx, r.ID, hold)
		switch {
		case err == nil:
			if outage {
				fmt.Fprintf(o.IO.ErrOut, "approvals: auditd answers again; still waiting for approval %s\n", termtext.OneLine(r.ID))
				outage = false
			}
			r = got
			if r.Status != approval.Pending {
				return r, nil
			}
		case waitCtx.Err() != nil:
			// The wait ended during the request; handled below.
		case client.IsTransient(err):
			if !outage {
				fmt.Fprintf(o.IO.ErrOut, "approvals: %s; retrying every %s until the wait ends\n", o.outage(err), o.minPoll())
				outage = true
			}
		default:
			return r, o.apiError(err, r.ID)
		}
		if waitCtx.Err() != nil {
			break
		}
		if o.pace(waitCtx, start) != nil {
			break
		}
	}
	if r.Status != approval.Pending {
		return r, nil
	}
	left := "it stays pending until it expires"
	if d := r.ExpiresAt.Sub(o.now()); d > 0 {
		left += " in " + cli.Approx(d)
	}
	hint := fmt.Sprintf("%s; an approver can still run '%s'", left, o.command("approve "+r.ID))
	if ctx.Err() != nil {
		return r, &cli.ExitError{Code: exitNoGrant, Err: fmt.Errorf("interrupted while waiting for approval %s", termtext.OneLine(r.ID)), Hint: hint}
	}
	return r, &cli.ExitError{Code: exitNoGrant, Err: fmt.Errorf("no decision on approval %s within %s %s", termtext.OneLine(r.ID), flag, wait), Hint: hint}
}
