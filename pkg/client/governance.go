package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
)

// Governance returns auditd's governance status (GET /api/v1/governance).
func (c *Client) Governance(ctx context.Context) (govapi.Status, error) {
	var s govapi.Status
	_, err := c.do(ctx, http.MethodGet, govapi.PathGovernance, nil, nil, &s)
	return s, err
}

// Decide evaluates req against auditd's policy and records the decision
// (POST /api/v1/decisions). When it requires approval, the answer names
// the approval request auditd created; wait on it with WaitApproval.
func (c *Client) Decide(ctx context.Context, req govapi.DecisionRequest) (govapi.DecisionResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return govapi.DecisionResult{}, err
	}
	var r govapi.DecisionResult
	_, err = c.do(ctx, http.MethodPost, govapi.PathDecisions, nil, body, &r)
	return r, err
}

// Explain evaluates a hypothetical request against auditd's policy without
// recording anything (GET /api/v1/governance/explain).
func (c *Client) Explain(ctx context.Context, q govapi.ExplainQuery) (govapi.Explanation, error) {
	var e govapi.Explanation
	_, err := c.do(ctx, http.MethodGet, govapi.PathExplain, q.Values(), nil, &e)
	return e, err
}

// ExplainEvent returns the trace recorded with a policy_decision event, as
// it was then (GET /api/v1/governance/events/{id}/explain): no
// re-evaluation, so a changed policy does not change the answer.
func (c *Client) ExplainEvent(ctx context.Context, eventID string) (govapi.Explanation, error) {
	var e govapi.Explanation
	_, err := c.do(ctx, http.MethodGet, govapi.WithID(govapi.PathEventExplain, eventID), nil, nil, &e)
	return e, err
}

// GovernanceEvents returns one page of events through the governance API
// (GET /api/v1/governance/events), which takes the query of Query.
func (c *Client) GovernanceEvents(ctx context.Context, q govapi.EventQuery) (govapi.EventPage, error) {
	var p govapi.EventPage
	_, err := c.do(ctx, http.MethodGet, govapi.PathGovernanceEvents, q.Values(), nil, &p)
	return p, err
}

// GovernancePending returns the pending approval requests through the
// governance API (GET /api/v1/governance/approvals/pending).
func (c *Client) GovernancePending(ctx context.Context) ([]approval.Request, error) {
	var l govapi.ApprovalList
	_, err := c.do(ctx, http.MethodGet, govapi.PathGovernancePending, nil, nil, &l)
	return l.Approvals, err
}

// GovernanceVerify verifies the chain through the governance API (GET
// /api/v1/governance/verify); the report is Verify's.
func (c *Client) GovernanceVerify(ctx context.Context) (audit.Report, error) {
	return c.verify(ctx, govapi.PathGovernanceVerify)
}

// CreateIncident records an incident (POST /api/v1/incidents): appended to
// the chain as an "incident" event and streamed to subscribers.
func (c *Client) CreateIncident(ctx context.Context, in govapi.IncidentInput) (govapi.Incident, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return govapi.Incident{}, err
	}
	var inc govapi.Incident
	_, err = c.do(ctx, http.MethodPost, govapi.PathIncidents, nil, body, &inc)
	return inc, err
}
