package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/govapi"
)

// MaxWait is the longest a long-poll may ask auditd to hold an answer
// (GET /v1/approvals/{id}?wait=, GET /v1/approvals?wait=); it stays under
// the client's 30 s request timeout.
const MaxWait = 25 * time.Second

// RequestApproval creates an approval request (POST /v1/approvals) by the
// caller's identity (its token's name, or the X-Govkit-User in local mode).
// auditd opens it only when the loaded policy requires approval (DESIGN
// §11): an allowed action is an *Error with code approval_not_required, a
// denied one policy_denied. The quorum comes from the policy.
func (c *Client) RequestApproval(ctx context.Context, in approval.Input) (approval.Request, error) {
	return c.RequestApprovalFor(ctx, govapi.ApprovalInput{Input: in})
}

// RequestApprovalFor is RequestApproval naming the agent and principal it
// is for: only a gateway token may.
func (c *Client) RequestApprovalFor(ctx context.Context, in govapi.ApprovalInput) (approval.Request, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return approval.Request{}, err
	}
	var r approval.Request
	_, err = c.do(ctx, http.MethodPost, "/v1/approvals", nil, body, &r)
	return r, err
}

// Approval returns one request (GET /v1/approvals/{id}). A missing one is
// an *Error with status 404 (IsNotFound).
func (c *Client) Approval(ctx context.Context, id string) (approval.Request, error) {
	return c.WaitApproval(ctx, id, 0)
}

// WaitApproval is Approval that lets auditd hold the answer up to wait
// (at most MaxWait) while the request is pending: a long-poll, so a waiter
// learns of a decision at once without polling fast.
func (c *Client) WaitApproval(ctx context.Context, id string, wait time.Duration) (approval.Request, error) {
	var q url.Values
	if wait > 0 {
		q = url.Values{"wait": {min(wait, MaxWait).String()}}
	}
	var r approval.Request
	_, err := c.do(ctx, http.MethodGet, "/v1/approvals/"+url.PathEscape(id), q, nil, &r)
	return r, err
}

// ApprovalFilter selects requests for Approvals; zero fields do not filter.
type ApprovalFilter struct {
	Status approval.Status
	// AfterSeq returns only requests changed after this audit seq (the
	// cursor ApprovalList.NextAfterSeq), oldest change first.
	AfterSeq int64
	// Wait lets auditd hold the answer up to Wait (at most MaxWait) until
	// a request changes after AfterSeq: how `approvals watch` follows.
	Wait  time.Duration
	Limit int
}

// ApprovalList is the body of GET /v1/approvals and /v1/approvals/pending.
type ApprovalList struct {
	Approvals []approval.Request `json:"approvals"`
	// NextAfterSeq is the audit seq of the last change listed (the
	// filter's AfterSeq when none was): pass it back to follow changes.
	NextAfterSeq int64 `json:"next_after_seq"`
	HasMore      bool  `json:"has_more"`
}

// Approvals lists requests (GET /v1/approvals). An agent's token sees only
// its own requests.
func (c *Client) Approvals(ctx context.Context, f ApprovalFilter) (ApprovalList, error) {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.AfterSeq > 0 {
		q.Set("after_seq", strconv.FormatInt(f.AfterSeq, 10))
	}
	if f.Wait > 0 {
		q.Set("wait", min(f.Wait, MaxWait).String())
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var l ApprovalList
	_, err := c.do(ctx, http.MethodGet, "/v1/approvals", q, nil, &l)
	return l, err
}

// PendingApprovals lists the pending requests (GET /v1/approvals/pending).
func (c *Client) PendingApprovals(ctx context.Context) ([]approval.Request, error) {
	var l ApprovalList
	_, err := c.do(ctx, http.MethodGet, "/v1/approvals/pending", nil, nil, &l)
	return l.Approvals, err
}

// Approve votes to approve request id as the caller
// (POST /v1/approvals/{id}/approve) and returns the request after the vote.
func (c *Client) Approve(ctx context.Context, id, reason string) (approval.Request, error) {
	return c.decide(ctx, id, "approve", reason)
}

// Deny denies request id as the caller (POST /v1/approvals/{id}/deny); a
// deny needs a reason.
func (c *Client) Deny(ctx context.Context, id, reason string) (approval.Request, error) {
	return c.decide(ctx, id, "deny", reason)
}

// DecisionInput is the body of the approve and deny endpoints. The
// approver is who authenticated, never a field (DESIGN §7).
type DecisionInput struct {
	Reason string `json:"reason,omitempty"`
}

func (c *Client) decide(ctx context.Context, id, verb, reason string) (approval.Request, error) {
	return c.approvalStep(ctx, id, verb, DecisionInput{Reason: reason})
}

// ConsumeApproval releases the one execution approved request id allows,
// for the action whose approval.ActionHash is actionHash
// (POST /v1/approvals/{id}/consume; DESIGN §11). Only the requester, or a
// gateway acting for it, may; a second consumption is an *Error with code
// approval_consumed, another action action_mismatch, and past the
// approval's validity window approval_stale (410).
func (c *Client) ConsumeApproval(ctx context.Context, id, actionHash string) (approval.Request, error) {
	return c.approvalStep(ctx, id, "consume", govapi.ConsumeInput{ActionHash: actionHash})
}

// CancelApproval withdraws request id (POST /v1/approvals/{id}/cancel): the
// requester or an admin may, while it is pending or approved and unused.
func (c *Client) CancelApproval(ctx context.Context, id string) (approval.Request, error) {
	return c.approvalStep(ctx, id, "cancel", struct{}{})
}

func (c *Client) approvalStep(ctx context.Context, id, verb string, in any) (approval.Request, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return approval.Request{}, err
	}
	var r approval.Request
	_, err = c.do(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id)+"/"+verb, nil, body, &r)
	return r, err
}
