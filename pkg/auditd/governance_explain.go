package auditd

import (
	"context"
	"net/http"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
)

// explainHypothetical is GET /api/v1/governance/explain.
func (s *Server) explainHypothetical(r *http.Request) (reply, error) {
	v, err := query(r)
	if err != nil {
		return reply{}, err
	}
	q, err := govapi.ParseExplainQuery(v)
	if err != nil {
		return reply{}, badRequest(err)
	}
	if q.AsCaller {
		// The principal Decide would give this caller (trust.go), so
		// that the answer predicts its decision.
		p, _, err := s.principalFor(identity(r), policy.RequestPrincipal{}, "")
		if err != nil {
			return reply{}, err
		}
		q.UserID, q.Roles, q.Service = p.UserID, p.Roles, p.Service
	}
	ex, err := s.Explain(r.Context(), q)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, ex)
}

// Explain answers what the policy in force would decide for q. It
// evaluates exactly as Decide would — same engine, infra file and clock,
// so the answer predicts the decision — and records nothing: no event, no
// approval (H-59). Counts make it the blast-radius check after execution,
// like govexplain --rows (seed 003 "Guardrails"). Unlike Decide, q may
// name any principal and tags: a hypothetical asks "what if". With a
// session_id the policy file's guardrails are checked against that
// session's history, read and not changed.
func (s *Server) Explain(ctx context.Context, q govapi.ExplainQuery) (govapi.Explanation, error) {
	req, err := explainRequest(q)
	if err != nil {
		return govapi.Explanation{}, err
	}
	if err := checkName("session_id", q.SessionID, false); err != nil {
		return govapi.Explanation{}, err
	}
	g, err := s.policyInForce()
	if err != nil {
		return govapi.Explanation{}, err
	}
	tags, note := g.tagsFor(req.Resource.Type, req.Resource.Name, req.Resource.Tags)
	req.Resource.Tags = tags
	post := req.Context.RowsAffected > 0 || req.Context.PodsAffected > 0
	trace, err := s.guardedEvaluate(ctx, g, req, q.SessionID, post)
	if err != nil {
		return govapi.Explanation{}, internal("", err)
	}
	return govapi.Explanation{SchemaVersion: audit.SchemaVersion, DecisionTrace: trace, Note: note}, nil
}

// explainRequest checks the names of a hypothetical request and makes it
// a policy request.
func explainRequest(q govapi.ExplainQuery) (policy.Request, error) {
	for _, c := range []struct {
		field, value string
		required     bool
	}{{"resource_type", q.ResourceType, true}, {"resource_name", q.ResourceName, true}, {"user_id", q.UserID, false}, {"service", q.Service, false}} {
		if err := checkName(c.field, c.value, c.required); err != nil {
			return policy.Request{}, err
		}
	}
	if err := checkAction("action", &q.Action); err != nil {
		return policy.Request{}, err
	}
	if q.Tags != nil {
		if err := checkNames("tags", q.Tags); err != nil {
			return policy.Request{}, err
		}
	}
	if err := checkNames("role", q.Roles); err != nil {
		return policy.Request{}, err
	}
	if q.RowsAffected < 0 || q.PodsAffected < 0 {
		return policy.Request{}, badField("rows_affected", "and pods_affected are counts (integers >= 0)")
	}
	return policy.Request{
		Principal: policy.RequestPrincipal{UserID: q.UserID, Roles: q.Roles, Service: q.Service},
		Resource:  policy.RequestResource{Type: q.ResourceType, Name: q.ResourceName, Tags: q.Tags},
		Action:    policy.Action(q.Action),
		Context:   policy.RequestContext{RowsAffected: q.RowsAffected, PodsAffected: q.PodsAffected},
	}, nil
}

// explainEvent is GET /api/v1/governance/events/{id}/explain: the trace
// recorded with a policy_decision event, as it was then. Nothing is
// evaluated again, so a policy changed or reloaded since cannot change the
// answer (H-58; seed 003 "Retrospective").
func (s *Server) explainEvent(r *http.Request) (reply, error) {
	if err := noQuery(r); err != nil {
		return reply{}, err
	}
	ex, err := s.ExplainEvent(r.Context(), r.PathValue("id"))
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, ex)
}

// ExplainEvent returns the trace recorded with the policy_decision event
// eventID; any other event is Unprocessable (not_a_decision).
func (s *Server) ExplainEvent(ctx context.Context, eventID string) (govapi.Explanation, error) {
	ev, err := s.Event(ctx, eventID)
	if err != nil {
		return govapi.Explanation{}, err
	}
	ex, _, err := explanationOf(ev.JSON)
	return ex, err
}
