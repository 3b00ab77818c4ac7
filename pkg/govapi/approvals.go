package govapi

import (
	"fmt"
	"net/url"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/termtext"
)

// ApprovalInput is the body of POST /v1/approvals. auditd evaluates the
// loaded policy for it (DESIGN §11): the principal comes from the token and
// the tags from the infra file, and the quorum and the policy_decision
// shown to approvers from the evaluation — a body that sets quorum or
// policy_decision is refused (400). Agent and Principal are for gateway
// tokens, which act for a principal they authenticated themselves.
type ApprovalInput struct {
	approval.Input
	Agent     string                   `json:"agent,omitempty"`
	Principal *policy.RequestPrincipal `json:"principal,omitempty"`
}

// ConsumeInput is the body of POST /v1/approvals/{id}/consume: the hash of
// the action about to run (approval.ActionHash), which must be the one
// approved.
type ConsumeInput struct {
	ActionHash string `json:"action_hash"`
}

// VoteInput is the body of POST PathApprove and PathDeny. The voter is
// who authenticated, never a field.
type VoteInput struct {
	Reason string `json:"reason,omitempty"`
}

// MaxWait bounds a long-poll (wait=): under the 30 s timeout of pkg/client
// and of most proxies.
const MaxWait = 25 * time.Second

// ApprovalList is the answer of GET PathApprovals and PathApprovalsPending.
// NextAfterSeq is the cursor for following changes: the audit seq of the
// last change listed, or without after_seq the newest change overall.
type ApprovalList struct {
	SchemaVersion int                `json:"schema_version"`
	Approvals     []approval.Request `json:"approvals"`
	NextAfterSeq  int64              `json:"next_after_seq"`
	HasMore       bool               `json:"has_more"`
}

// ApprovalQuery selects requests for GET PathApprovals; zero fields do not
// filter. AfterSeq lists only requests changed after that audit seq (the
// cursor ApprovalList.NextAfterSeq), oldest change first; without it, the
// newest changes. Wait lets auditd hold the answer up to Wait (at most
// MaxWait) until a request changes after AfterSeq.
type ApprovalQuery struct {
	Status approval.Status
	Wait   time.Duration
	Cursor
}

// Values is q as a query string.
func (q ApprovalQuery) Values() url.Values {
	v := url.Values{}
	if q.Status != "" {
		v.Set("status", string(q.Status))
	}
	if q.Wait > 0 {
		v.Set("wait", min(q.Wait, MaxWait).String())
	}
	q.Cursor.encode(v)
	return v
}

// ParseApprovalQuery reads an ApprovalQuery strictly.
func ParseApprovalQuery(v url.Values) (ApprovalQuery, error) {
	if err := CheckParams(v, "status", "wait", "after_seq", "limit"); err != nil {
		return ApprovalQuery{}, err
	}
	q := ApprovalQuery{Status: approval.Status(v.Get("status"))}
	if q.Status != "" && !q.Status.Valid() {
		return ApprovalQuery{}, fmt.Errorf("status=%q is not pending, approved, denied, expired, cancelled or consumed", termtext.Truncate(v.Get("status"), 40))
	}
	var err error
	if q.Wait, err = ParseWait(v); err != nil {
		return ApprovalQuery{}, err
	}
	if q.Cursor, err = parseCursor(v); err != nil {
		return ApprovalQuery{}, err
	}
	return q, nil
}

// ParseWait reads wait= (absent: 0), a duration up to MaxWait.
func ParseWait(v url.Values) (time.Duration, error) {
	s := v.Get("wait")
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > MaxWait {
		return 0, fmt.Errorf("wait=%q is not a duration between 0s and %s", termtext.Truncate(s, 40), MaxWait)
	}
	return d, nil
}
