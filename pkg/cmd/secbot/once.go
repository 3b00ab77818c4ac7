package secbot

import (
	"context"
	"sync/atomic"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
)

// exitIncidents is --once's exit status when it created (or, with
// --dry-run, would create) an incident: auditor --once's "alerts raised".
const exitIncidents = 2

// onceTally counts what one --once pass did, from answer.
type onceTally struct {
	// head is the chain's head when the pass started: an incident event
	// after it is new, one at or before it was created by an earlier run
	// (auditd answers a repeated incident_id with the stored incident).
	head      int64
	incidents atomic.Int64 // new incidents, or with --dry-run those printed
	failed    atomic.Int64 // incidents that could not be created
}

// once is --once, secbot from cron (issue 20): one pass over the events
// after --since-seq (the whole log by default: incident IDs are derived
// from the pattern and the event, so a rerun creates nothing twice) up to
// the head auditd reports at the start, read through the HTTP API, each
// match answered as the daemon does. It exits 0 when no new incident was
// created, 2 when one was (with --dry-run: would be), and 3 when auditd
// does not answer or refuses, or an incident could not be created.
func (r *responder) once(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	h, err := r.c.Health(cctx)
	cancel()
	if err != nil {
		return r.onceFailure(err)
	}
	r.tally = &onceTally{head: h.HeadSeq}
	since, link := int64(0), detect.ChainLink{Seq: 0, Hash: audit.ZeroHash}
	if r.o.SinceSeq > 0 {
		since, link = r.start(ctx, false)
	}
	r.matcher = detect.NewPatternMatcher(link)
	checked := 0
	for ev, err := range r.c.QueryAll(ctx, govapi.EventQuery{Cursor: govapi.Cursor{AfterSeq: since, Limit: govapi.MaxLimit}}) {
		if err != nil {
			return r.onceFailure(err)
		}
		if ev.Seq > h.HeadSeq {
			break
		}
		r.handle(ctx, ev)
		r.lastSeq.Store(ev.Seq)
		checked++
	}
	n, failed := r.tally.incidents.Load(), r.tally.failed.Load()
	what := "new incident(s)"
	if r.o.DryRun {
		what = "incident(s) it would create"
	}
	r.log.logf("checked %d events after seq %d up to seq %d: %d %s", checked, since, h.HeadSeq, n, what)
	switch {
	case failed > 0:
		return cli.Failf("%d incident(s) could not be created", failed).
			WithHint("see the errors above; secbot --once creates them on its next run")
	case n > 0:
		return cli.Silent(exitIncidents)
	}
	return nil
}

// onceFailure is --once's error when auditd did not answer a request.
func (r *responder) onceFailure(err error) error {
	if client.IsTransient(err) {
		return cli.Failf("cannot reach auditd at %s: %s", r.o.Gateway, client.Reason(err)).
			WithHint("start auditd, or pass --url (or set GOVKIT_URL) naming a running one")
	}
	return cli.Failf("%s", r.apiProblem(err))
}
