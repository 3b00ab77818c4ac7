package approvals

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// WatchOptions are the flags of watch.
type WatchOptions struct {
	*Options
}

func newCmdWatch(opts *Options, runF func(*WatchOptions) error) *cobra.Command {
	wo := &WatchOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Print pending requests, then every new or changed request as it happens",
		Long: `Watch prints the pending requests, then follows auditd and prints each request
that is created, voted on, decided or expires, as it happens, until you stop it
(Ctrl-C or SIGTERM, exit 0).

In text, one line per change, with the time of the change in your time zone:

    12:01:05 requested 01JQ7Z… write database:prod-db by agent-7 (quorum 1, expires in 5m)
    12:01:40 approved 01JQ7Z… write database:prod-db by bob (1 of 1)

With -o json, one request object per line (the request after the change).

It asks auditd to hold each answer until something changes (a long-poll);
when auditd is unreachable it says so once and retries every second.`,
		Example: `  approvals watch
  approvals watch -o json | jq -c 'select(.status == "pending")'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.prepare(c)
			if runF != nil {
				return runF(wo)
			}
			return watchRun(wo)
		},
	}
	return cmd
}

func watchRun(o *WatchOptions) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	w := &watcher{o: o, c: c, seen: map[string]string{}, jsonOut: o.format() == cli.FormatJSON}
	err = w.run(ctx)
	if ctx.Err() != nil {
		return nil // stopped by the user: the normal end of a watch
	}
	return err
}

type watcher struct {
	o       *WatchOptions
	c       *client.Client
	jsonOut bool
	// seen holds the last state printed per request, so that a change
	// seen both in the first pending list and among the changes after the
	// cursor is printed once.
	seen   map[string]string
	outage bool
}

func (w *watcher) run(ctx context.Context) error {
	// The cursor first, then the pending list: a change between the two
	// is printed (perhaps twice), never lost.
	var cursor int64
	if err := w.retry(ctx, func() error {
		l, err := w.c.Approvals(ctx, govapi.ApprovalQuery{Cursor: govapi.Cursor{Limit: 1}})
		cursor = l.NextAfterSeq
		return err
	}); err != nil {
		return err
	}
	var pending []approval.Request
	if err := w.retry(ctx, func() (err error) {
		pending, err = w.c.PendingApprovals(ctx)
		return err
	}); err != nil {
		return err
	}
	for _, r := range pending {
		if err := w.print(r, true); err != nil {
			return err
		}
	}
	if !w.jsonOut {
		fmt.Fprintf(w.o.IO.ErrOut, "%s pending; watching %s for changes (Ctrl-C to stop)\n",
			cli.Plural(len(pending), "request", "requests"), w.o.URL)
	}

	for {
		var l govapi.ApprovalList
		start := w.o.pacingStart()
		err := w.retry(ctx, func() (err error) {
			l, err = w.c.Approvals(ctx, govapi.ApprovalQuery{Wait: govapi.MaxWait, Cursor: govapi.Cursor{AfterSeq: cursor}})
			return err
		})
		if err != nil {
			return err
		}
		for _, r := range l.Approvals {
			if err := w.print(r, false); err != nil {
				return err
			}
		}
		cursor = max(cursor, l.NextAfterSeq)
		if l.HasMore {
			continue
		}
		if err := w.o.pace(ctx, start); err != nil {
			return err
		}
	}
}

// retry calls f until it succeeds, retrying transient failures every
// minPoll (saying so once per outage), and returns any other failure as the
// command's error.
func (w *watcher) retry(ctx context.Context, f func() error) error {
	for {
		start := w.o.pacingStart()
		err := f()
		switch {
		case err == nil:
			if w.outage {
				fmt.Fprintln(w.o.IO.ErrOut, "approvals: auditd answers again")
				w.outage = false
			}
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !client.IsTransient(err):
			return w.o.apiError(err, "")
		}
		if !w.outage {
			fmt.Fprintf(w.o.IO.ErrOut, "approvals: %s; retrying every %s\n", w.o.outage(err), w.o.minPoll())
			w.outage = true
		}
		if err := w.o.pace(ctx, start); err != nil {
			return err
		}
	}
}

// print writes r once per state.
func (w *watcher) print(r approval.Request, initial bool) error {
	state := fmt.Sprintf("%s/%d", r.Status, len(r.Votes))
	if w.seen[r.ID] == state {
		return nil
	}
	w.seen[r.ID] = state
	if w.jsonOut {
		return cli.WriteJSON(w.o.IO.Out, r)
	}
	if _, err := fmt.Fprintln(w.o.IO.Out, changeLine(r, initial, w.o.now())); err != nil {
		return cli.Failf("writing the output: %v", err)
	}
	return nil
}

// changeLine is one text line about r's latest change, stamped with the
// time of the change in now's zone:
//
//	12:01:05 requested 01J… write database:prod-db by agent-7 (quorum 1, expires in 5m)
//	12:01:30 voted 01J… write database:prod-db: bob approved (1 of 2; waiting for 1 more)
//	12:01:40 approved 01J… write database:prod-db by bob, carol (2 of 2)
//	12:01:40 denied 01J… write database:prod-db by bob: not now
//	12:06:05 expired 01J… write database:prod-db (0 of 1 approvals)
//
// A request already pending when watch starts is "pending" rather than
// "requested", with its votes so far.
func changeLine(r approval.Request, initial bool, now time.Time) string {
	at := r.CreatedAt
	if n := len(r.Votes); n > 0 {
		at = r.Votes[n-1].At
	}
	if r.DecidedAt != nil {
		at = *r.DecidedAt
	}
	stamp := at.In(now.Location()).Format(time.TimeOnly)
	id, what := termtext.OneLine(r.ID), summary(r)
	n := r.Approvals()
	switch {
	case r.Status == approval.Pending && initial:
		return fmt.Sprintf("%s pending %s %s by %s (%d of %d approvals, %s)",
			r.CreatedAt.In(now.Location()).Format(time.TimeOnly), id, what, termtext.OneLine(r.RequestedBy), n, r.Quorum, expiresIn(r, now))
	case r.Status == approval.Pending && approval.ChangeType(&r) == audit.TypeApprovalVoted:
		v := r.Votes[len(r.Votes)-1]
		return fmt.Sprintf("%s voted %s %s: %s %s (%d of %d; waiting for %d more)",
			stamp, id, what, termtext.OneLine(v.By), voteWord(v.Decision), n, r.Quorum, r.Quorum-n)
	case r.Status == approval.Pending:
		return fmt.Sprintf("%s requested %s %s by %s (quorum %d, %s)",
			stamp, id, what, termtext.OneLine(r.RequestedBy), r.Quorum, expiresIn(r, now))
	case r.Status == approval.Approved:
		return fmt.Sprintf("%s approved %s %s by %s (%d of %d)", stamp, id, what, approvers(r), n, r.Quorum)
	case r.Status == approval.Denied:
		v, _ := r.Denial()
		return fmt.Sprintf("%s denied %s %s by %s: %s", stamp, id, what, termtext.OneLine(v.By), flatten(v.Reason))
	case r.Status == approval.Expired:
		return fmt.Sprintf("%s expired %s %s (%d of %s)", stamp, id, what, n, cli.Plural(r.Quorum, "approval", "approvals"))
	}
	return fmt.Sprintf("%s %s %s %s", stamp, termtext.OneLine(string(r.Status)), id, what)
}

// expiresIn is "expires in 5m", or "expired" for a request whose time has
// run out but that auditd has not yet reported expired.
func expiresIn(r approval.Request, now time.Time) string {
	if !now.Before(r.ExpiresAt) {
		return "expired"
	}
	return "expires in " + cli.Approx(r.ExpiresAt.Sub(now))
}
