package auditd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/store"
)

// The guardrails of the policy file (rate limit, circuit breaker; DESIGN
// §12, issue 15) are computed here, when auditd decides, from the
// session's own recorded events: every enforcement point that asks POST
// /api/v1/decisions shares them, and they need no state beyond the chain.
//
//   - writes: the session's policy_decision events for write and
//     destructive actions whose enforced effect was not deny (a refused
//     write is not a write; a require_approval counts, as a write under
//     way), except the checks after execution, in the last minute;
//   - outcomes: the session's tool_execution events whose outcome.status
//     is "error" or "timeout" (a failure) or "success", in chain order,
//     over the breaker's window plus cooldown. Other statuses (refused,
//     blocked, …) are not tool results and do not count.
//
// A request without a session_id is not subject to them (they count per
// session); its trace says so.

// maxGuardrailEvents bounds how many events one decision reads for each
// part of the history. A session beyond it in the lookback (10,000 write
// decisions in a minute, or tool executions in window + cooldown) is not
// an agent at work: that guardrail refuses (fail closed) rather than decide
// on part of the history.
const maxGuardrailEvents = 10 * store.MaxLimit

// historyEvent is what the guardrails read of a stored event.
type historyEvent struct {
	Outcome *struct {
		Status string `json:"status"`
	} `json:"outcome"`
	PolicyDecision *struct {
		EnforcedEffect string `json:"enforced_effect"`
		PostExecution  bool   `json:"post_execution"`
	} `json:"policy_decision"`
}

// sessionHistory reads what g needs of session's recorded events at now.
func (s *Server) sessionHistory(ctx context.Context, g *policy.Guardrails, session string, now time.Time) (*policy.SessionHistory, error) {
	h := &policy.SessionHistory{ID: session}
	writes, outcomes := g.Lookback()
	if writes > 0 {
		for _, class := range []string{audit.ActionWrite, audit.ActionDestructive} {
			f := store.Filter{SessionID: session, EventType: audit.TypePolicyDecision, ActionClass: class, Since: now.Add(-writes)}
			truncated, err := s.scanHistory(ctx, f, func(rec audit.Record, ev *historyEvent) {
				d := ev.PolicyDecision
				if d != nil && !d.PostExecution && d.EnforcedEffect != string(policy.EffectDeny) {
					h.Writes = append(h.Writes, rec.Timestamp)
				}
			})
			if err != nil {
				return nil, err
			}
			h.WritesTruncated = h.WritesTruncated || truncated
		}
	}
	if outcomes > 0 {
		f := store.Filter{SessionID: session, EventType: audit.TypeToolExecution, Since: now.Add(-outcomes)}
		truncated, err := s.scanHistory(ctx, f, func(rec audit.Record, ev *historyEvent) {
			if ev.Outcome == nil {
				return
			}
			switch ev.Outcome.Status {
			case "error", "timeout":
				h.Outcomes = append(h.Outcomes, policy.ToolOutcome{At: rec.Timestamp, Error: true})
			case "success":
				h.Outcomes = append(h.Outcomes, policy.ToolOutcome{At: rec.Timestamp})
			}
		})
		if err != nil {
			return nil, err
		}
		h.OutcomesTruncated = truncated
	}
	return h, nil
}

// scanHistory calls fn for each event matching f in chain order, reading at
// most maxGuardrailEvents; truncated reports that more remained.
func (s *Server) scanHistory(ctx context.Context, f store.Filter, fn func(audit.Record, *historyEvent)) (truncated bool, err error) {
	f.Limit = store.MaxLimit
	for read := 0; ; {
		if read >= maxGuardrailEvents {
			return true, nil
		}
		recs, err := s.st.Query(ctx, f)
		if err != nil {
			return false, fmt.Errorf("reading the session's history for the guardrails: %w", err)
		}
		for _, rec := range recs {
			var ev historyEvent
			if json.Unmarshal(rec.Body, &ev) != nil {
				continue // verification reports a damaged body; it is no history
			}
			fn(rec, &ev)
		}
		read += len(recs)
		if len(recs) < f.Limit {
			return false, nil
		}
		f.AfterSeq = recs[len(recs)-1].Seq
	}
}

// guardedEvaluate decides req as evaluate does, with g's guardrails
// checked against session's history (no session: not evaluated, and the
// trace says so). Without guardrails in the policy file it is evaluate.
func (s *Server) guardedEvaluate(ctx context.Context, g *governance, req policy.Request, session string, post bool) (policy.DecisionTrace, error) {
	gr := g.engine.Guardrails()
	if gr == nil {
		return s.evaluate(g, req, post), nil
	}
	req.Context.Time = s.cfg.Now()
	if post {
		return g.engine.CheckPostExecutionSession(req), nil
	}
	var h *policy.SessionHistory
	if session != "" {
		var err error
		if h, err = s.sessionHistory(ctx, gr, session, req.Context.Time); err != nil {
			return policy.DecisionTrace{}, err
		}
	}
	return g.engine.ExplainSession(req, h), nil
}
