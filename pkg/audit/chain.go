package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Body returns the bytes an event's hash covers (DESIGN §6): the RFC 8785
// canonical JSON of e without event_hash, with seq and prev_hash.
func Body(e Event) ([]byte, error) {
	return appendEventBody(make([]byte, 0, 1024), &e, false)
}

// Hash returns hex(SHA-256(body)), an event's event_hash.
func Hash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// maxSafeInteger is the largest integer every JSON number (a float64 in
// JCS) holds exactly.
const maxSafeInteger = 1<<53 - 1

// Seal makes e the next link of the chain, the way auditd's writer appends
// each event: it assigns seq, prev_hash (the previous event's hash, ZeroHash
// for the first), timestamp (now, in UTC) and schema_version; cuts
// Tool.Result to MaxResult characters; replaces the JSON-valued fields
// (tool.parameters, policy_decision, data) by their canonical form; computes
// the body and event_hash; and returns the record to store, its indexed
// columns taken from e.
//
// Everything happens before hashing, so afterwards e is exactly what the
// body says (decoding the body gives e back, without EventHash). e must carry
// an EventID (NewEventID). Indexed string fields must be valid UTF-8: they
// would otherwise disagree with the body, where encoding/json writes U+FFFD
// (DecodeEvent refuses such input anyway).
func Seal(e *Event, seq int64, prev string, now time.Time) (Record, error) {
	if e.EventID == "" {
		return Record{}, errEmptyEventID
	}
	if err := checkLink(seq, prev); err != nil {
		return Record{}, err
	}
	toolName, err := normalize(e)
	if err != nil {
		return Record{}, err
	}
	e.Seq = seq
	e.PrevHash = prev
	e.Timestamp = now.UTC()
	body, err := appendEventBody(make([]byte, 0, 1024), e, true)
	if err != nil {
		return Record{}, fmt.Errorf("seal: %w", err)
	}
	e.EventHash = Hash(body)
	rec := columns(e, toolName)
	rec.Body = body
	return rec, nil
}

var errEmptyEventID = errors.New("seal: event_id is empty")

// checkLink checks the chain fields Seal assigns.
func checkLink(seq int64, prev string) error {
	if seq < 1 || seq > maxSafeInteger {
		return fmt.Errorf("seal: seq %d out of range", seq)
	}
	if !IsHash(prev) {
		return errors.New("seal: prev_hash is not 64 lowercase hex digits")
	}
	return nil
}

// normalize does everything Seal does to e besides the chain fields: it
// sets schema_version, clears event_hash, cuts Tool.Result, makes the
// JSON-valued fields canonical and checks that the indexed string fields
// are valid UTF-8. It returns the tool_name column.
func normalize(e *Event) (toolName string, err error) {
	e.SchemaVersion = SchemaVersion
	e.EventHash = ""
	if e.Tool != nil {
		e.Tool.Result = truncateRunes(e.Tool.Result, MaxResult)
		toolName = e.Tool.Name
		if err := canonicalRaw(&e.Tool.Parameters); err != nil {
			return "", fmt.Errorf("seal: tool.parameters: %w", err)
		}
	}
	if err := canonicalRaw(&e.PolicyDecision); err != nil {
		return "", fmt.Errorf("seal: policy_decision: %w", err)
	}
	if err := canonicalRaw(&e.Data); err != nil {
		return "", fmt.Errorf("seal: data: %w", err)
	}
	for _, f := range [...]struct{ name, value string }{
		{"event_id", e.EventID}, {"event_type", e.EventType}, {"trace_id", e.TraceID},
		{"session_id", e.SessionID}, {"agent", e.Agent}, {"action_class", e.ActionClass},
		{"tool.name", toolName},
	} {
		if !utf8.ValidString(f.value) {
			return "", fmt.Errorf("seal: %s is not valid UTF-8", f.name)
		}
	}
	return toolName, nil
}

// columns returns e's record without Body: the indexed columns, and the
// chain fields as e holds them.
func columns(e *Event, toolName string) Record {
	return Record{
		Seq:         e.Seq,
		EventID:     e.EventID,
		Timestamp:   e.Timestamp,
		EventType:   e.EventType,
		TraceID:     e.TraceID,
		SessionID:   e.SessionID,
		Agent:       e.Agent,
		ActionClass: e.ActionClass,
		ToolName:    toolName,
		PrevHash:    e.PrevHash,
		EventHash:   e.EventHash,
		ApprovalID:  e.ApprovalID,
	}
}

// canonicalRaw replaces a JSON-valued field by its canonical form.
func canonicalRaw(raw *json.RawMessage) error {
	if len(*raw) == 0 || isCanonical(*raw) {
		return nil // DecodeEvent's fields, in auditd: already canonical
	}
	c, err := CanonicalizeJSON(*raw)
	if err != nil {
		return err
	}
	*raw = c
	return nil
}

// truncateRunes returns s cut to its first n characters (runes; a byte of
// invalid UTF-8 counts as one). Not termtext.Cut, which counts bytes: the
// cut is part of the sealed event (tool.result keeps MaxResult
// characters), so changing it would change the hashes of new events.
func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}

// IsHash reports whether s looks like an event hash: 64 lowercase hex digits.
func IsHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
