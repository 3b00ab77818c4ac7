package respond

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// Incident is the incident for alert a about ev (seed 003: secbot
// "Creates incident bundles via REST gateway").
//
// Names and text come from the event, and auditd refuses an incident whose
// agent, session_id or trace_id is not one short line, or whose message
// holds control characters: an agent must not escape secbot by choosing
// such a name, so they are made to fit rather than sent as they are.
func Incident(a detect.Alert, ev audit.Event) govapi.IncidentInput {
	details := map[string]json.RawMessage{}
	if len(a.Details) > 0 {
		_ = json.Unmarshal(a.Details, &details) // an object: pkg/detect marshals structs
	}
	details["seq"] = json.RawMessage(strconv.FormatInt(ev.Seq, 10))
	if ev.EventType != "" {
		details["event_type"], _ = json.Marshal(ev.EventType)
	}
	in := govapi.IncidentInput{
		IncidentID: IncidentID(a.Type, ev),
		Type:       a.Type,
		Severity:   a.Severity,
		Source:     Source,
		Agent:      incidentName(ev.Agent),
		SessionID:  incidentName(ev.SessionID),
		TraceID:    incidentName(ev.TraceID),
		Message:    termtext.Clean(a.Message, maxMessage),
	}
	if in.Agent != ev.Agent {
		details["agent"], _ = json.Marshal(excerpt(ev.Agent))
	}
	if validEventID(ev.EventID) {
		in.EventIDs = []string{ev.EventID}
	} else if ev.EventID != "" {
		details["event_id"], _ = json.Marshal(excerpt(ev.EventID))
	}
	in.Details, _ = json.Marshal(details)
	return in
}

// Limits of auditd's incidents API (POST /api/v1/incidents).
const (
	maxName    = 256
	maxMessage = 4 << 10
)

// incidentName makes an event's name fit an incident: one line without
// control characters, at most maxName bytes, not blank.
func incidentName(s string) string {
	if s == "" {
		return ""
	}
	s = termtext.Clean(s, maxName-len(termtext.Ellipsis))
	if strings.TrimSpace(s) == "" {
		return "(blank)"
	}
	return s
}

// excerpt is the value an incident's details keep of a name that did not
// fit: at most detect.MaxExcerpt bytes of valid UTF-8. Invalid bytes become
// U+FFFD before the cut, not after it in encoding/json (which would grow
// the cut text past the bound), and a reader still sees where they were.
func excerpt(s string) string {
	return termtext.Cut(strings.ToValidUTF8(s, "\uFFFD"), detect.MaxExcerpt)
}

// validEventID is pkg/audit's rule for event_id: 1 to 128 of A-Z a-z 0-9
// _ . : - (a tampered row may hold anything).
func validEventID(id string) bool {
	if id == "" || len(id) > audit.MaxEventIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// IncidentID is the idempotency key of the incident of pattern about ev:
// the same for every retry, and for a secbot that replays the same events,
// so auditd stores each incident once.
func IncidentID(pattern string, ev audit.Event) string {
	sum := sha256.Sum256([]byte(pattern + "\x00" + ev.EventID + "\x00" + strconv.FormatInt(ev.Seq, 10)))
	return "secbot-" + pattern + "-" + hex.EncodeToString(sum[:16])
}
