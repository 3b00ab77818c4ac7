package respond

import (
	"context"
	"sync/atomic"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
)

// OnceResult is what one pass (Once) did.
type OnceResult struct {
	// Since and Head bound the pass: the events after Since up to Head,
	// the chain's head when it started.
	Since, Head int64
	Checked     int   // events read
	Incidents   int64 // new incidents, or with DryRun those reported
	Failed      int64 // incidents that could not be created
}

// onceTally counts what one pass does, from answer.
type onceTally struct {
	// head is the chain's head when the pass started: an incident event
	// after it is new, one at or before it was created by an earlier run
	// (auditd answers a repeated incident_id with the stored incident).
	head      int64
	incidents atomic.Int64
	failed    atomic.Int64
}

// Once is one pass for a run from cron (secbot --once, issue 20): the
// events after Config.SinceSeq (the whole log when it is not positive:
// incident IDs are derived from the pattern and the event, so a rerun
// creates nothing twice) up to the head auditd reports at the start, read
// through the HTTP API, each match answered as Run answers it. An error
// is auditd not answering or refusing a read (APIProblem describes it).
func (r *Responder) Once(ctx context.Context) (OnceResult, error) {
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	h, err := r.c.Health(cctx)
	cancel()
	if err != nil {
		return OnceResult{}, err
	}
	r.tally = &onceTally{head: h.HeadSeq}
	since, link := int64(0), detect.ChainLink{Seq: 0, Hash: audit.ZeroHash}
	if r.cfg.SinceSeq > 0 {
		since, link = r.start(ctx, false)
	}
	r.matcher = detect.NewPatternMatcher(link)
	res := OnceResult{Since: since, Head: h.HeadSeq}
	for ev, err := range r.c.QueryAll(ctx, govapi.EventQuery{Cursor: govapi.Cursor{AfterSeq: since, Limit: govapi.MaxLimit}}) {
		if err != nil {
			return res, err
		}
		if ev.Seq > h.HeadSeq {
			break
		}
		r.handle(ctx, ev)
		r.lastSeq.Store(ev.Seq)
		res.Checked++
	}
	res.Incidents, res.Failed = r.tally.incidents.Load(), r.tally.failed.Load()
	return res, nil
}

// APIProblem describes a failed request to auditd in one line, with what
// to do about it.
func (r *Responder) APIProblem(err error) string { return r.apiProblem(err) }

// IsUnreachable reports whether err is auditd not answering at all, as
// opposed to answering with a refusal.
func IsUnreachable(err error) bool { return client.IsTransient(err) }
