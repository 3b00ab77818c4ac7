// Package detect holds the security detections of seed 003 ("Security
// Detection", "Detected Security Patterns") shared by auditor, secbot and
// govbot: pure functions and small state machines over audit events, with
// the clock passed in. It does no I/O.
package detect

import (
	"encoding/json"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// Alert and pattern types (DESIGN §8). auditor raises the first nine,
// secbot matches the last four (unauthorized_destructive is both).
const (
	HighVolume              = "high_volume"
	OffHours                = "off_hours"
	UnauthorizedDestructive = "unauthorized_destructive"
	TimestampGap            = "timestamp_gap"
	SeqGap                  = "seq_gap"
	ChainTampering          = "chain_tampering"
	HeadRegressed           = "head_regressed"
	ApprovalMismatch        = "approval_mismatch"       // the approvals table disagrees with the chain (issue 13)
	CheckpointInconsistent  = "checkpoint_inconsistent" // a signed checkpoint that does not extend the pinned one (issue 19)

	HashMismatch              = "hash_mismatch"
	PotentialSQLInjection     = "potential_sql_injection"
	PotentialCommandInjection = "potential_command_injection"
)

// Severities, as incidents carry them (govapi.Severity*).
const (
	Warning  = "warning"
	Critical = "critical"
)

// Alert is one detection: auditor prints it as one JSON line and POSTs it
// to its incident webhook (seed 003 "Webhook Alerts": type, timestamp,
// agent, count, threshold, message). Seq and EventID name the event that
// raised it, when one did.
type Alert struct {
	SchemaVersion int       `json:"schema_version"`
	Type          string    `json:"type"`
	Severity      string    `json:"severity"`
	Timestamp     time.Time `json:"timestamp"` // when it was detected (the injected clock)
	Agent         string    `json:"agent,omitempty"`
	Message       string    `json:"message"`
	Count         int       `json:"count,omitempty"`
	Threshold     int       `json:"threshold,omitempty"`
	Seq           int64     `json:"seq,omitempty"`
	EventID       string    `json:"event_id,omitempty"`
	// Details carries what is particular to the type (broken links, the
	// pinned and current heads, the matched output line, …).
	Details json.RawMessage `json:"details,omitempty"`
}

// eventAlert is an alert of typ that event ev raised, detected at now;
// details, when not nil, become its Details.
func eventAlert(typ, severity string, ev audit.Event, now time.Time, msg string, details any) Alert {
	a := Alert{
		SchemaVersion: audit.SchemaVersion,
		Type:          typ,
		Severity:      severity,
		Timestamp:     now.UTC(),
		Agent:         ev.Agent,
		Message:       msg,
		Seq:           ev.Seq,
		EventID:       ev.EventID,
	}
	if details != nil {
		a.Details, _ = json.Marshal(details) // plain structs of strings and numbers: cannot fail
	}
	return a
}
