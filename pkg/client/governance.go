package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
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

// ExplainQuery is a hypothetical request for Explain. Tags nil means "from
// auditd's infra file".
type ExplainQuery struct {
	ResourceType, ResourceName string
	Action                     string
	Tags                       []string
	UserID                     string
	Roles                      []string
	Service                    string
	RowsAffected, PodsAffected int
}

// Values is q as the query string of GET /api/v1/governance/explain.
func (q ExplainQuery) Values() url.Values {
	v := url.Values{"resource_type": {q.ResourceType}, "resource_name": {q.ResourceName}, "action": {q.Action}}
	if q.Tags != nil {
		v.Set("tags", strings.Join(q.Tags, ","))
	}
	if q.UserID != "" {
		v.Set("user_id", q.UserID)
	}
	if len(q.Roles) > 0 {
		v.Set("role", strings.Join(q.Roles, ","))
	}
	if q.Service != "" {
		v.Set("service", q.Service)
	}
	if q.RowsAffected > 0 {
		v.Set("rows_affected", strconv.Itoa(q.RowsAffected))
	}
	if q.PodsAffected > 0 {
		v.Set("pods_affected", strconv.Itoa(q.PodsAffected))
	}
	return v
}

// Explain evaluates a hypothetical request against auditd's policy without
// recording anything (GET /api/v1/governance/explain).
func (c *Client) Explain(ctx context.Context, q ExplainQuery) (govapi.Explanation, error) {
	var e govapi.Explanation
	_, err := c.do(ctx, http.MethodGet, govapi.PathExplain, q.Values(), nil, &e)
	return e, err
}

// ExplainEvent returns the trace recorded with a policy_decision event, as
// it was then (GET /api/v1/governance/events/{id}/explain): no
// re-evaluation, so a changed policy does not change the answer.
func (c *Client) ExplainEvent(ctx context.Context, eventID string) (govapi.Explanation, error) {
	var e govapi.Explanation
	path := strings.Replace(govapi.PathEventExplain, "{id}", url.PathEscape(eventID), 1)
	_, err := c.do(ctx, http.MethodGet, path, nil, nil, &e)
	return e, err
}

// GovernanceEvents returns one page of events through the governance API
// (GET /api/v1/governance/events), which takes the filters of Query.
func (c *Client) GovernanceEvents(ctx context.Context, f store.Filter) (Page, error) {
	var p Page
	_, err := c.do(ctx, http.MethodGet, govapi.PathGovernanceEvents, FilterQuery(f), nil, &p)
	return p, err
}

// GovernancePending returns the pending approval requests through the
// governance API (GET /api/v1/governance/approvals/pending).
func (c *Client) GovernancePending(ctx context.Context) ([]approval.Request, error) {
	var l ApprovalList
	_, err := c.do(ctx, http.MethodGet, govapi.PathGovernancePending, nil, nil, &l)
	return l.Approvals, err
}

// GovernanceVerify verifies the chain through the governance API (GET
// /api/v1/governance/verify); the report is Verify's.
func (c *Client) GovernanceVerify(ctx context.Context) (audit.Report, error) {
	var r audit.Report
	_, err := c.do(ctx, http.MethodGet, govapi.PathGovernanceVerify, nil, nil, &r)
	return r, err
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
