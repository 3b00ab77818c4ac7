package approvals

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/termtext"
)

// exitRefused is consume's exit status when auditd refuses the consumption
// by a rule (consumed already, another action, stale, not approved, not the
// requester), so a script can tell "not released" from an error (3).
const exitRefused = 1

// StepOptions are the arguments of wait, cancel and consume.
type StepOptions struct {
	*Options
	ID         string
	Timeout    time.Duration // wait
	ActionHash string        // consume
}

// newCmdWait is `approvals wait ID [--timeout D]`: resume waiting on a
// request opened earlier, so that a retried CI job follows its request
// instead of opening a duplicate (DESIGN §7, §11).
func newCmdWait(opts *Options, runF func(*StepOptions) error) *cobra.Command {
	so := &StepOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "wait ID [--timeout DURATION]",
		Short: "Wait for the decision on an existing request and exit with it",
		Long: `Wait follows one request, as 'request --wait' does, until it is decided, its
time runs out, or --timeout passes, and exits with the outcome. Use it to
resume waiting in a retried job instead of opening a second request.

Exit status:

    0  approved
    1  denied
    2  expired, cancelled, consumed already, or no decision before --timeout
    3  usage error, auditd unreachable or refusing, internal failure`,
		Example: `  id=$(approvals request --resource database:prod-db --action write -o json | jq -r .id)
  approvals wait "$id" --timeout 15m`,
		Args:              requireID("wait"),
		ValidArgsFunction: opts.completeID,
		RunE: func(c *cobra.Command, args []string) error {
			opts.prepare(c)
			so.ID = args[0]
			if so.Timeout <= 0 {
				return cli.Failf("--timeout %s is not a positive duration", so.Timeout).WithHint("pass --timeout like 15m")
			}
			if runF != nil {
				return runF(so)
			}
			return waitRun(so)
		},
	}
	cmd.Flags().DurationVar(&so.Timeout, "timeout", 15*time.Minute, "wait up to `DURATION` for the decision")
	cli.SkipConfig(cmd.Flags(), "timeout")
	return cmd
}

func waitRun(o *StepOptions) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	r, err := c.Approval(ctx, o.ID)
	if err != nil {
		return o.apiError(err, o.ID)
	}
	if r.Status == approval.Pending {
		fmt.Fprintf(o.IO.ErrOut, "waiting for approval %s (expires in %s); approve with: %s\n",
			termtext.OneLine(r.ID), cli.Approx(r.ExpiresAt.Sub(o.now())), o.command("approve "+r.ID))
	}
	r, waitErr := o.follow(ctx, c, r, o.Timeout, "--timeout")
	return o.waitOutcome(r, waitErr)
}

// newCmdCancel is `approvals cancel ID`: the requester (or an admin)
// withdraws a request that is pending, or approved and not yet consumed.
func newCmdCancel(opts *Options, runF func(*StepOptions) error) *cobra.Command {
	so := &StepOptions{Options: opts}
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Withdraw your request (pending, or approved and unused)",
		Long: `Cancel withdraws a request: its requester may, and an admin. A pending request
stops waiting for approvers; an approved one that was not consumed can no
longer release its action. The cancellation is recorded in the audit chain.`,
		Example: `  approvals cancel apr_2al33qaosuvdf2jaxgt5fxm46g`,
		Args:    requireID("cancel"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.prepare(c)
			so.ID = args[0]
			if runF != nil {
				return runF(so)
			}
			return stepRun(so, 0, func(ctx context.Context, c *client.Client) (approval.Request, error) {
				return c.CancelApproval(ctx, so.ID)
			})
		},
	}
}

// newCmdConsume is `approvals consume ID --action-hash H`: release the one
// execution an approval allows, for scripts that run the action themselves
// (gate does this on its own).
func newCmdConsume(opts *Options, runF func(*StepOptions) error) *cobra.Command {
	so := &StepOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "consume ID --action-hash HASH",
		Short: "Release the one execution an approval allows",
		Long: `Consume tells auditd that the approved action is about to run, once: an
approval releases exactly one execution of exactly its action. HASH is the
action_hash of the action about to run (the SHA-256 of its canonical
resource, action, tool and command; 'approvals show ID -o json' prints the
approved one). Only the requester, or a gateway acting for it, may consume.

A second consumption, another action, an approval past its validity window
(15 minutes after approval by default) or one that is not approved is
refused.

Exit status:

    0  consumed: run the action now
    1  refused: consumed already, another action, stale, not approved, or not
       yours (the message says which)
    3  usage error, auditd unreachable, internal failure`,
		Example: `  hash=$(approvals show "$id" -o json | jq -r .action_hash)
  approvals consume "$id" --action-hash "$hash" && psql -f backfill.sql`,
		Args: requireID("consume"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.prepare(c)
			so.ID = args[0]
			if !audit.IsHash(so.ActionHash) {
				return cli.Failf("--action-hash must be 64 lowercase hex digits").
					WithHint(fmt.Sprintf("'%s' prints the approved action_hash", so.command("show "+so.ID+" -o json")))
			}
			if runF != nil {
				return runF(so)
			}
			return stepRun(so, exitRefused, func(ctx context.Context, c *client.Client) (approval.Request, error) {
				return c.ConsumeApproval(ctx, so.ID, so.ActionHash)
			})
		},
	}
	cmd.Flags().StringVar(&so.ActionHash, "action-hash", "", "the action_hash `HASH` of the action about to run")
	cli.SkipConfig(cmd.Flags(), "action-hash")
	return cmd
}

// stepRun runs one change of a request and prints the request after it.
// A refusal by a rule of the workflow (an error with a code) exits with
// refusedExit when it is not 0.
func stepRun(o *StepOptions, refusedExit int, step func(context.Context, *client.Client) (approval.Request, error)) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	r, err := step(ctx, c)
	var ae *client.Error
	if refusedExit != 0 && errors.As(err, &ae) && ae.Code != "" && ae.StatusCode != 401 {
		return &cli.ExitError{Code: refusedExit, Err: fmt.Errorf("%s (%s)", ae.Message, ae.Code),
			Hint: fmt.Sprintf("'%s' shows the request", o.command("show "+o.ID))}
	}
	if err != nil {
		return o.apiError(err, o.ID)
	}
	if o.format() == cli.FormatJSON {
		return cli.WriteJSON(o.IO.Out, r)
	}
	if _, err := fmt.Fprintf(o.IO.Out, "approval %s is %s\n", termtext.OneLine(r.ID), outcome(r)); err != nil {
		return cli.Failf("writing the output: %v", err)
	}
	return nil
}
