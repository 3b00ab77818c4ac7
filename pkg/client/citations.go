package client

import (
	"context"
	"fmt"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// MaxCitations bounds the events Citations reads: every citation of an
// approval beyond its one use is itself an alert, so a log with more is
// under attack, and a watcher treats the approval as unknown (fail
// closed) rather than read without end.
const MaxCitations = 10 * govapi.MaxLimit

// Citations returns the events with a seq below before that cite approval
// id (GET /api/events?approval_id=), in seq order. A watcher that learns
// an approval from auditd rather than from the stream replays them
// (detect.ApprovalBook.Learn) to know whether one of them used the
// consumption already: one consumption covers one event (DESIGN §11,
// issue 13).
func (c *Client) Citations(ctx context.Context, id string, before int64) ([]audit.Event, error) {
	return citations(ctx, c.Query, id, before)
}

// GovernanceCitations is Citations through the governance API (GET
// /api/v1/governance/events), for a watcher that reads only that.
func (c *Client) GovernanceCitations(ctx context.Context, id string, before int64) ([]audit.Event, error) {
	return citations(ctx, c.GovernanceEvents, id, before)
}

func citations(ctx context.Context, page func(context.Context, govapi.EventQuery) (govapi.EventPage, error), id string, before int64) ([]audit.Event, error) {
	q := govapi.EventQuery{ApprovalID: id, Cursor: govapi.Cursor{Limit: govapi.MaxLimit}}
	var out []audit.Event
	for {
		p, err := page(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, ev := range p.Events {
			if ev.Seq >= before {
				return out, nil
			}
			if len(out) == MaxCitations {
				return nil, fmt.Errorf("approval %s is cited by more than %d events before seq %d", termtext.Truncate(id, 64), MaxCitations, before)
			}
			out = append(out, ev)
		}
		if !p.HasMore || p.NextAfterSeq <= q.AfterSeq {
			return out, nil
		}
		q.AfterSeq = p.NextAfterSeq
	}
}
