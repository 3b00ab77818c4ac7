package store

import (
	"context"
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
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
	// ApprovalsSnapshot reads what verification compares (DESIGN §11: the
	// chain is the source of truth for approvals) from one consistent
	// snapshot, even while another process writes. ok is false when the
	// database has no approvals table (an old database opened read-only).
	ApprovalsSnapshot(ctx context.Context) (snap ApprovalsSnapshot, ok bool, err error)
}

// ApprovalsSnapshot is the approvals table as stored and the approval
// events it is a projection of.
type ApprovalsSnapshot struct {
	// Origin is the head of the log when the store started keeping
	// approvals; approval events at or before it are not auditd's.
	Origin int64
	// Rows is every row of the approvals table, with its columns as
	// stored.
	Rows []approval.TableRow
	// Events are the records of approval.EventTypes after Origin, in seq
	// order.
	Events []audit.Record
}

// Mismatches replays the snapshot's events and compares its rows with them
// (approval.Replay). settled says that no approval change can be half
// done: the caller holds auditd's approvals lock.
func (s ApprovalsSnapshot) Mismatches(settled bool) ([]approval.Mismatch, error) {
	p := approval.NewReplay(s.Origin)
	for _, rec := range s.Events {
		if err := p.Add(rec); err != nil {
			return nil, fmt.Errorf("store: approvals: %w", err)
		}
	}
	return p.Check(s.Rows, settled), nil
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

// ApprovalLocker is a store that several auditd instances share: the
// changes of one approval request must be serialised across them, not only
// within one process (issue 19), or two votes through two instances could
// both find the request pending and decide, or consume, it twice.
type ApprovalLocker interface {
	// LockApproval waits until no other instance changes request id and
	// keeps the others waiting until unlock; unlock never fails (a lock
	// whose session is lost is released by the database).
	LockApproval(ctx context.Context, id string) (unlock func(), err error)
}
