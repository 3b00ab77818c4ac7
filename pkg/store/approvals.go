package store

import (
	"context"
	"time"

	"github.com/govkit/govkit/pkg/approval"
)

// Approvals stores approval requests (DESIGN §7). The table is a projection
// of the approval events in the audit log: every state is first appended to
// the chain, then put here with the seq of that event, so auditd can redo
// what a crash left out (ApprovalsSeq tells from where).
type Approvals interface {
	// PutApproval inserts or replaces r's row; seq is the audit event
	// that recorded this state. A seq not above the row's is ignored (a
	// replay never moves a request back).
	PutApproval(ctx context.Context, r approval.Request, seq int64) error
	// GetApproval returns the request with id.
	GetApproval(ctx context.Context, id string) (ApprovalRow, bool, error)
	// ListApprovals returns requests matching f in the order f asks for.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]ApprovalRow, error)
	// ApprovalsSeq is the seq after which approval events may still need
	// to be put: the highest seq put, and never below the head of the log
	// when the store started keeping approvals.
	ApprovalsSeq(ctx context.Context) (int64, error)
}

// ApprovalRow is a stored request and the seq of the audit event that
// recorded its current state.
type ApprovalRow struct {
	Request approval.Request
	Seq     int64
}

// ApprovalFilter selects requests; zero fields do not filter.
type ApprovalFilter struct {
	Status      approval.Status
	RequestedBy string
	// AfterSeq selects requests whose last change is after this seq.
	AfterSeq int64
	// DueBy selects pending requests whose expiry is at or before it.
	DueBy time.Time
	// Order: by last change, oldest first; Newest takes the newest Limit
	// changes instead (still returned oldest first); ByCreation orders by
	// creation time.
	Newest     bool
	ByCreation bool
	Limit      int // 0 means DefaultLimit; never more than MaxLimit
}
