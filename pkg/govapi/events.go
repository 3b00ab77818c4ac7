package govapi

import (
	"fmt"
	"net/url"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/termtext"
)

// EventQuery selects events for GET PathEvents (and PathGovernanceEvents):
// the filters are ANDed, empty ones do not filter, and the answer is an
// EventPage in seq order.
type EventQuery struct {
	Agent       string
	TraceID     string
	SessionID   string
	ActionClass string
	ToolName    string
	EventType   string
	ApprovalID  string    // events that cite this approval (DESIGN §11)
	Since       time.Time // timestamp >= Since
	Until       time.Time // timestamp < Until
	Cursor
}

// eventParams are EventQuery's query parameters.
var eventParams = []string{"agent", "trace_id", "session_id", "action_class", "tool_name", "event_type", "approval_id", "since", "until", "after_seq", "limit"}

// Values is q as a query string.
func (q EventQuery) Values() url.Values {
	v := url.Values{}
	for _, p := range [...]struct{ name, value string }{
		{"agent", q.Agent}, {"trace_id", q.TraceID}, {"session_id", q.SessionID},
		{"action_class", q.ActionClass}, {"tool_name", q.ToolName}, {"event_type", q.EventType},
		{"approval_id", q.ApprovalID},
	} {
		if p.value != "" {
			v.Set(p.name, p.value)
		}
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.UTC().Format(time.RFC3339Nano))
	}
	q.Cursor.encode(v)
	return v
}

// ParseEventQuery reads an EventQuery strictly: an unknown or repeated
// parameter, or a bad value, is an error naming it. Limit is always set
// (DefaultLimit when absent).
func ParseEventQuery(v url.Values) (EventQuery, error) {
	if err := CheckParams(v, eventParams...); err != nil {
		return EventQuery{}, err
	}
	q := EventQuery{
		Agent: v.Get("agent"), TraceID: v.Get("trace_id"), SessionID: v.Get("session_id"),
		ActionClass: v.Get("action_class"), ToolName: v.Get("tool_name"), EventType: v.Get("event_type"),
		ApprovalID: v.Get("approval_id"),
	}
	for _, t := range [...]struct {
		name string
		at   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if s := v.Get(t.name); s != "" {
			at, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return EventQuery{}, fmt.Errorf("%s=%q is not an RFC 3339 time (like 2026-03-09T14:00:00Z)", t.name, termtext.Truncate(s, 40))
			}
			*t.at = at
		}
	}
	var err error
	if q.Cursor, err = parseCursor(v); err != nil {
		return EventQuery{}, err
	}
	return q, nil
}

// Page is the answer of GET PathEvents: events in seq order. NextAfterSeq
// is the cursor of the next page: the seq of the last event returned (the
// query's AfterSeq when none was), so polling with it picks up events
// committed since. HasMore tells whether another matching event exists
// now. Clients read the events as audit.Event (EventPage); auditd serves
// them as stored (json.RawMessage), byte for byte as hashed.
type Page[E any] struct {
	SchemaVersion int   `json:"schema_version"`
	Events        []E   `json:"events"`
	NextAfterSeq  int64 `json:"next_after_seq"`
	HasMore       bool  `json:"has_more"`
}

// EventPage is a Page as clients read it.
type EventPage = Page[audit.Event]

// BatchAnswer is the answer of a batch append (POST PathEvents with JSON
// Lines): the events as stored, in the order of the request's lines; how
// many this request created; and the line numbers (from 1) of the others,
// answered with the event stored already under their event_id, as a
// single append answers a retry with 200.
type BatchAnswer struct {
	SchemaVersion int           `json:"schema_version"`
	Events        []audit.Event `json:"events"`
	Created       int           `json:"created"`
	ExistingLines []int         `json:"existing_lines"`
}

// VerifyReport is the answer of GET PathVerify: verify-chain's report with
// the schema version every govkit object carries.
type VerifyReport struct {
	SchemaVersion int `json:"schema_version"`
	audit.Report
}

// Health is the answer of GET PathHealth. Status is "ok" (200), or
// "degraded" (503) while auditd cannot make writes durable: Reason is then
// one of the Reason* codes and Error says what happened. Chain is the
// result of the last verification: unverified, verified or broken.
type Health struct {
	SchemaVersion int    `json:"schema_version"`
	Status        string `json:"status"`
	Reason        string `json:"reason,omitempty"`
	Error         string `json:"error,omitempty"`
	HeadSeq       int64  `json:"head_seq"`
	HeadHash      string `json:"head_hash"`
	Chain         string `json:"chain"`
}

// Health statuses and the reasons of "degraded"; the same reasons are the
// codes of the writes refused for them (503).
const (
	HealthOK       = "ok"
	HealthDegraded = "degraded"

	// ReasonReadOnly: auditd runs with --read-only, or the store refused a
	// write as read-only.
	ReasonReadOnly = "read_only"
	// ReasonDatabaseReplaced: the database file was removed or replaced
	// under auditd; it refuses writes until restarted.
	ReasonDatabaseReplaced = "database_replaced"
	// ReasonDiskFull: the last commit failed because the disk is full.
	ReasonDiskFull = "disk_full"
	// ReasonWriteFailed: the last commit failed for another reason.
	ReasonWriteFailed = "write_failed"
	// ReasonDatabaseUnavailable: the last commit could not reach the
	// database server (PostgreSQL restarting or failing over, issue 19).
	ReasonDatabaseUnavailable = "database_unavailable"
)
