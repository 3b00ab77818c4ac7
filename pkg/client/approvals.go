package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/govapi"
)

// RequestApproval creates an approval request (POST govapi.PathApprovals)
// by the caller's identity (its token's name, or the govapi.UserHeader in
// local mode). auditd opens it only when the loaded policy requires
// approval (DESIGN §11): an allowed action is an *Error with code
// govapi.CodeApprovalNotRequired, a denied one govapi.CodePolicyDenied.
// The quorum comes from the policy.
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
	_, err = c.do(ctx, http.MethodPost, govapi.PathApprovals, nil, body, &r)
	return r, err
}

// Approval returns one request (GET govapi.PathApproval). A missing one is
// an *Error with status 404 (IsNotFound).
func (c *Client) Approval(ctx context.Context, id string) (approval.Request, error) {
	return c.WaitApproval(ctx, id, 0)
}

// WaitApproval is Approval that lets auditd hold the answer up to wait
// (at most govapi.MaxWait) while the request is pending: a long-poll, so a
// waiter learns of a decision at once without polling fast.
func (c *Client) WaitApproval(ctx context.Context, id string, wait time.Duration) (approval.Request, error) {
	var q url.Values
	if wait > 0 {
		q = govapi.ApprovalQuery{Wait: wait}.Values()
	}
	var r approval.Request
	_, err := c.do(ctx, http.MethodGet, govapi.WithID(govapi.PathApproval, id), q, nil, &r)
	return r, err
}

// Approvals lists requests (GET govapi.PathApprovals). An agent's token
// sees only its own requests. With q.Wait auditd holds the answer until a
// request changes after q.AfterSeq: how `approvals watch` follows.
func (c *Client) Approvals(ctx context.Context, q govapi.ApprovalQuery) (govapi.ApprovalList, error) {
	var l govapi.ApprovalList
	_, err := c.do(ctx, http.MethodGet, govapi.PathApprovals, q.Values(), nil, &l)
	return l, err
}

// PendingApprovals lists the pending requests (GET
// govapi.PathApprovalsPending).
func (c *Client) PendingApprovals(ctx context.Context) ([]approval.Request, error) {
	var l govapi.ApprovalList
	_, err := c.do(ctx, http.MethodGet, govapi.PathApprovalsPending, nil, nil, &l)
	return l.Approvals, err
}

// Approve votes to approve request id as the caller (POST
// govapi.PathApprove) and returns the request after the vote.
func (c *Client) Approve(ctx context.Context, id, reason string) (approval.Request, error) {
	return c.approvalStep(ctx, govapi.PathApprove, id, govapi.VoteInput{Reason: reason})
}

// Deny denies request id as the caller (POST govapi.PathDeny); a deny
// needs a reason.
func (c *Client) Deny(ctx context.Context, id, reason string) (approval.Request, error) {
	return c.approvalStep(ctx, govapi.PathDeny, id, govapi.VoteInput{Reason: reason})
}

// ConsumeApproval releases the one execution approved request id allows,
// for the action whose approval.ActionHash is actionHash
// (POST govapi.PathConsume; DESIGN §11). Only the requester, or a
// gateway acting for it, may; a second consumption is an *Error with code
// approval_consumed, another action action_mismatch, and past the
// approval's validity window approval_stale (410).
func (c *Client) ConsumeApproval(ctx context.Context, id, actionHash string) (approval.Request, error) {
	return c.approvalStep(ctx, govapi.PathConsume, id, govapi.ConsumeInput{ActionHash: actionHash})
}

// CancelApproval withdraws request id (POST govapi.PathCancel): the
// requester or an admin may, while it is pending or approved and unused.
func (c *Client) CancelApproval(ctx context.Context, id string) (approval.Request, error) {
	return c.approvalStep(ctx, govapi.PathCancel, id, struct{}{})
}

// approvalStep posts in to route, an approval's {id} route.
func (c *Client) approvalStep(ctx context.Context, route, id string, in any) (approval.Request, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return approval.Request{}, err
	}
	var r approval.Request
	_, err = c.do(ctx, http.MethodPost, govapi.WithID(route, id), nil, body, &r)
	return r, err
}
