// Package audit is the audit log's event model, its canonical bytes (RFC
// 8785 JCS), the hash chain, and verification over stored bytes (seed 003
// "Audit System"; DESIGN §6). It does no I/O.
package audit

import (
	"encoding/json"
	"time"
)

// SchemaVersion is the event schema version.
const SchemaVersion = 1

// ZeroHash is the prev_hash of the first event.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Event types (DESIGN §6); others are allowed.
const (
	TypeToolExecution     = "tool_execution"
	TypePolicyDecision    = "policy_decision"
	TypeApprovalRequested = "approval_requested"
	TypeApprovalDecided   = "approval_decided"
	TypeApprovalVoted     = "approval_voted"     // a vote that leaves the request pending (quorum > 1)
	TypeApprovalExpired   = "approval_expired"   // no decision before expires_at
	TypeApprovalConsumed  = "approval_consumed"  // the one execution an approval releases (DESIGN §11)
	TypeApprovalCancelled = "approval_cancelled" // withdrawn by the requester or an admin
	TypeIncident          = "incident"
	TypeDelegation        = "delegation"
)

// Event is one audit event (DESIGN §6 contract). Seq, Timestamp, PrevHash and
// EventHash are assigned by auditd; a client that sets them is refused.
// EventHash is not part of the hashed body.
type Event struct {
	SchemaVersion int        `json:"schema_version"`
	Seq           int64      `json:"seq"`
	EventID       string     `json:"event_id"`
	Timestamp     time.Time  `json:"timestamp"` // server receive time, UTC
	EventType     string     `json:"event_type"`
	TraceID       string     `json:"trace_id,omitempty"`
	SessionID     string     `json:"session_id,omitempty"`
	Agent         string     `json:"agent,omitempty"`
	Principal     *Principal `json:"principal,omitempty"`
	ActionClass   string     `json:"action_class,omitempty"` // read | write | destructive
	// ActionHash is set by auditd on an event that cites an approval: the
	// approval.ActionHash of the action it records, computed before
	// redaction, so detections can check that the approval released
	// exactly this action (DESIGN §11).
	ActionHash     string          `json:"action_hash,omitempty"`
	Resource       *Resource       `json:"resource,omitempty"`
	Tool           *Tool           `json:"tool,omitempty"`
	Outcome        *Outcome        `json:"outcome,omitempty"`
	PolicyDecision json.RawMessage `json:"policy_decision,omitempty"` // decision, trace, explanation (pkg/policy)
	ApprovalID     string          `json:"approval_id,omitempty"`
	// Caller is who wrote the event, as auditd authenticated it (a
	// token's name and API roles; in local mode the X-Govkit-User header):
	// set by auditd, inside the hashed body (DESIGN §11).
	Caller *Caller `json:"caller,omitempty"`
	// Data carries an event type's own payload (an incident's details, an
	// approval's state) so later event types need no schema change.
	Data json.RawMessage `json:"data,omitempty"`
	// Redactions lists the secrets auditd removed from the event before
	// sealing it (DESIGN §11): server-assigned, inside the hashed body,
	// sorted by field then kind. A client that sets it is refused.
	Redactions []Redaction `json:"redactions,omitempty"`
	PrevHash   string      `json:"prev_hash"`
	EventHash  string      `json:"event_hash,omitempty"`
}

// Redaction is one kind of secret removed from one field of an event:
// Field is tool.raw_command, tool.parameters, tool.result or tool.error;
// Kind is what was removed (pkg/redact: password, private_key, jwt, …).
// The field's text holds "[REDACTED:kind]" where the secret was.
type Redaction struct {
	Field string `json:"field"`
	Kind  string `json:"kind"`
}

// Principal is who acted.
type Principal struct {
	UserID string   `json:"user_id,omitempty"`
	Roles  []string `json:"roles,omitempty"`
}

// Caller is the authenticated writer of an event.
type Caller struct {
	Name  string   `json:"name"`
	Roles []string `json:"roles,omitempty"`
}

// Resource is what was acted on.
type Resource struct {
	Type string   `json:"type,omitempty"`
	Name string   `json:"name,omitempty"`
	Tags []string `json:"tags,omitempty"`
}

// Tool is the tool call an event records.
type Tool struct {
	Name       string          `json:"name,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	RawCommand string          `json:"raw_command,omitempty"`
	Result     string          `json:"result,omitempty"` // first MaxResult characters
	Error      string          `json:"error,omitempty"`
	DurationMS int64           `json:"duration_ms,omitempty"`
}

// MaxResult bounds Tool.Result (DESIGN §6: first 500 characters).
const MaxResult = 500

// Outcome is how the action ended.
type Outcome struct {
	Status string `json:"status,omitempty"`
}

// Record is an event as stored: the canonical body bytes (which are hashed)
// next to the columns that queries filter on. Verification hashes Body and
// checks that the columns agree with it.
type Record struct {
	Seq         int64
	EventID     string
	Timestamp   time.Time
	EventType   string
	TraceID     string
	SessionID   string
	Agent       string
	ActionClass string
	ToolName    string
	PrevHash    string
	EventHash   string
	Body        []byte // RFC 8785 canonical JSON of the event without event_hash
	// ApprovalID is the event's approval_id, which a store indexes so that
	// a watcher can find the events that cited an approval before the one
	// it judges (DESIGN §11 "one use per approval", issue 13). Seal sets
	// it and Append stores it. A store's Scan reads it back and sets
	// HasApprovalID, so that verification compares the column with the
	// body; other reads, and a read-only store of a database older than
	// that column, leave both unset.
	ApprovalID    string
	HasApprovalID bool
}

// BrokenLink is one verification failure (DESIGN §6 verify-chain output).
type BrokenLink struct {
	Seq     int64  `json:"seq"`
	EventID string `json:"event_id"`
	// Kind is hash_mismatch | prev_mismatch | seq_gap | column_mismatch |
	// approval_mismatch, and, from verify-chain with signed checkpoints
	// (issue 19), truncated | rewritten | checkpoint_unverified.
	Kind string `json:"kind"`
	// ApprovalID and Detail say which approval request an
	// approval_mismatch is about and how its table row disagrees with the
	// chain (DESIGN §11: the chain is the source of truth for approvals).
	ApprovalID string `json:"approval_id,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// Verification kinds. The first four are the chain's own; an
// approval_mismatch is an approvals table row that disagrees with the
// approval events of the chain (pkg/approval's Replay finds them).
//
// The last three compare the log with signed checkpoints (verify-chain
// --checkpoint, issue 19), which catch what a chain alone cannot; their
// Seq is the checkpoint's size and Detail names the checkpoint:
//
//   - truncated: the log has fewer events than a checkpoint signed;
//   - rewritten: the Merkle root of the log's first Size events is not the
//     one the checkpoint signed (an event up to Size was changed, removed,
//     inserted or reordered, even with every hash recomputed);
//   - checkpoint_unverified: a checkpoint offered as evidence does not
//     verify with the trusted keys (bad signature, unknown key, or, in the
//     database's checkpoints table, not a checkpoint at all), so it proves
//     nothing and the log cannot be called verified against it.
const (
	KindHashMismatch     = "hash_mismatch"
	KindPrevMismatch     = "prev_mismatch"
	KindSeqGap           = "seq_gap"
	KindColumnMismatch   = "column_mismatch"
	KindApprovalMismatch = "approval_mismatch"

	KindTruncated            = "truncated"
	KindRewritten            = "rewritten"
	KindCheckpointUnverified = "checkpoint_unverified"
)

// Report is verify-chain's output and GET /api/verify's body (DESIGN §6).
type Report struct {
	Verified    bool         `json:"verified"`
	TotalEvents int64        `json:"total_events"`
	BrokenLinks []BrokenLink `json:"broken_links"`
	FirstEvent  *EventRef    `json:"first_event"`
	LastEvent   *EventRef    `json:"last_event"`
}

// EventRef names an event in a report.
type EventRef struct {
	Seq       int64     `json:"seq"`
	EventID   string    `json:"event_id"`
	Timestamp time.Time `json:"timestamp"`
	EventHash string    `json:"event_hash"`
}
