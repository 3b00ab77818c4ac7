package audit

import (
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Limits on a client's event (DESIGN §3: bounded input). DecodeEvent refuses
// an event beyond any of them.
const (
	// MaxEventBytes bounds the whole JSON text of one event (DESIGN §3's
	// 1 MiB request body).
	MaxEventBytes = 1 << 20
	// MaxString bounds, in bytes, every string field but tool.result
	// (which Seal cuts to MaxResult characters anyway).
	MaxString = 64 << 10
	// MaxJSONField bounds each JSON-valued field (tool.parameters,
	// policy_decision, data), in bytes of its canonical form.
	MaxJSONField = 256 << 10
	// MaxListLen bounds principal.roles and resource.tags.
	MaxListLen = 256
	// MaxEventIDLen and MaxEventTypeLen bound the two identifiers.
	MaxEventIDLen   = 128
	MaxEventTypeLen = 64
)

// Action classes (DESIGN §6).
const (
	ActionRead        = "read"
	ActionWrite       = "write"
	ActionDestructive = "destructive"
)

// DecodeEvent parses a client's event (POST /api/events): exactly one JSON
// object with the members of DESIGN §6. It refuses, with an error that names
// the member:
//
//   - the server-assigned seq, timestamp, prev_hash, event_hash, caller,
//     action_hash and redactions;
//   - members it does not know, at any level (matching is exact, unlike
//     encoding/json's case-insensitive fields), and duplicate members;
//   - wrong types, a missing or malformed event_type, an event_id outside
//     [A-Za-z0-9_.:-]{1,128}, an action_class other than read, write or
//     destructive, a schema_version other than 1, a negative or fractional
//     tool.duration_ms;
//   - a NUL character in an identifier (trace_id, session_id, agent,
//     principal.user_id and roles, resource.type, name and tags, tool.name,
//     approval_id, outcome.status), and a number beyond ±(2^53−1) in a
//     JSON-valued field, which would be stored rounded (issue 13);
//   - anything over the limits above, invalid UTF-8 and lone surrogates.
//
// A known member that is null counts as absent (the server-assigned ones
// are refused even as null). event_id may be absent: auditd
// then assigns one (NewEventID). JSON-valued fields come back canonical.
func DecodeEvent(raw []byte) (Event, error) {
	var e Event
	if len(raw) > MaxEventBytes {
		return e, fmt.Errorf("event is over %d bytes", MaxEventBytes)
	}
	root, err := parseJSON(raw)
	if err != nil {
		return e, err
	}
	if root.kind != kindObject {
		return e, errors.New("an event must be a JSON object")
	}
	d := decoder{}
	for i, name := range root.keys {
		v := &root.elems[i]
		switch name {
		case "seq", "timestamp", "prev_hash", "event_hash", "caller", "action_hash", "redactions":
			// redactions too: only auditd says what it redacted (DESIGN §11).
			return e, fmt.Errorf("%s is assigned by auditd; remove it", name)
		}
		if !knownFields[name] {
			return e, fmt.Errorf("unknown field %s", quoteName(name))
		}
		if v.kind == kindNull {
			continue
		}
		switch name {
		case "schema_version":
			if v.kind != kindNumber || v.num != SchemaVersion {
				return e, fmt.Errorf("schema_version must be %d", SchemaVersion)
			}
		case "event_id":
			e.EventID = d.str(name, v)
			if d.err == nil && !validEventID(e.EventID) {
				d.err = fmt.Errorf("event_id %s is not 1 to %d of A-Z a-z 0-9 _ . : -", quoteName(e.EventID), MaxEventIDLen)
			}
		case "event_type":
			e.EventType = d.str(name, v)
		case "trace_id":
			e.TraceID = d.ident(name, v)
		case "session_id":
			e.SessionID = d.ident(name, v)
		case "agent":
			e.Agent = d.ident(name, v)
		case "principal":
			e.Principal = d.principal(v)
		case "action_class":
			e.ActionClass = d.str(name, v)
			switch e.ActionClass {
			case "", ActionRead, ActionWrite, ActionDestructive:
			default:
				if d.err == nil {
					d.err = fmt.Errorf("action_class %s is not read, write or destructive", quoteName(e.ActionClass))
				}
			}
		case "resource":
			e.Resource = d.resource(v)
		case "tool":
			e.Tool = d.tool(v)
		case "outcome":
			e.Outcome = d.outcome(v)
		case "policy_decision":
			e.PolicyDecision = d.json(name, v)
		case "approval_id":
			e.ApprovalID = d.ident(name, v)
		case "data":
			e.Data = d.json(name, v)
		}
		if d.err != nil {
			return Event{}, d.err
		}
	}
	if e.EventType == "" {
		return Event{}, errors.New("event_type is required")
	}
	if !validEventType(e.EventType) {
		return Event{}, fmt.Errorf("event_type %s is not a letter then up to %d of A-Z a-z 0-9 _ . -", quoteName(e.EventType), MaxEventTypeLen-1)
	}
	return e, nil
}

// knownFields are the members a client may send.
var knownFields = map[string]bool{
	"schema_version": true, "event_id": true, "event_type": true, "trace_id": true, "session_id": true,
	"agent": true, "principal": true, "action_class": true, "resource": true, "tool": true,
	"outcome": true, "policy_decision": true, "approval_id": true, "data": true,
}

// decoder converts parsed members, keeping the first error.
type decoder struct {
	err error
	// parts holds the event's principal, resource, tool and outcome, and
	// strs the strings of its lists: one allocation each rather than one
	// per part (issue 20: allocation was most of DecodeEvent's cost).
	parts *eventParts
	strs  []string
}

type eventParts struct {
	principal Principal
	resource  Resource
	tool      Tool
	outcome   Outcome
}

func (d *decoder) part() *eventParts {
	if d.parts == nil {
		d.parts = new(eventParts)
	}
	return d.parts
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) str(name string, v *node) string {
	if v.kind != kindString {
		d.fail("%s must be a string", name)
		return ""
	}
	if len(v.str) > MaxString {
		d.fail("%s is over %d bytes", name, MaxString)
		return ""
	}
	return v.str
}

func (d *decoder) list(name string, v *node) []string {
	if v.kind != kindArray {
		d.fail("%s must be an array of strings", name)
		return nil
	}
	if len(v.elems) > MaxListLen {
		d.fail("%s has over %d entries", name, MaxListLen)
		return nil
	}
	if len(v.elems) == 0 {
		return nil // as absent: the body omits an empty list
	}
	if len(d.strs) < len(v.elems) {
		d.strs = make([]string, max(len(v.elems), 8))
	}
	out := d.strs[:len(v.elems):len(v.elems)]
	d.strs = d.strs[len(v.elems):]
	for i := range v.elems {
		e := &v.elems[i]
		if e.kind != kindString || len(e.str) > MaxString {
			d.str(fmt.Sprintf("%s[%d]", name, i), e) // the error, named; built only then
			return nil
		}
		if strings.IndexByte(e.str, 0) >= 0 { // the name built only then
			d.fail("%w", checkIdentifier(fmt.Sprintf("%s[%d]", name, i), e.str))
			return nil
		}
		out[i] = e.str
	}
	return out
}

// ident is str for an identifier: no NUL (checkIdentifier).
func (d *decoder) ident(name string, v *node) string {
	s := d.str(name, v)
	if d.err == nil && strings.IndexByte(s, 0) >= 0 {
		d.fail("%w", checkIdentifier(name, s))
		return ""
	}
	return s
}

func (d *decoder) json(name string, v *node) json.RawMessage {
	if err := checkNumbers(v, name); err != nil {
		d.fail("%w", err)
		return nil
	}
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	c := appendNode((*buf)[:0], v)
	*buf = c
	if len(c) > MaxJSONField {
		d.fail("%s is over %d bytes", name, MaxJSONField)
		return nil
	}
	return slices.Clone(c)
}

// scratch holds buffers that JSON-valued fields are written into before
// they are copied out at their exact size: appending to nil grew each
// field's buffer several times.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// members calls f for each non-null member of the object v after checking
// that every member, null or not, is one of known.
func (d *decoder) members(name string, v *node, known []string, f func(key string, v *node)) {
	if v.kind != kindObject {
		d.fail("%s must be an object {%s}", name, strings.Join(known, ", "))
		return
	}
	for i, k := range v.keys {
		if !slices.Contains(known, k) {
			d.fail("unknown field %s", quoteName(name+"."+k))
			return
		}
		if v.elems[i].kind == kindNull {
			continue
		}
		if f(k, &v.elems[i]); d.err != nil {
			return
		}
	}
}

func (d *decoder) principal(v *node) *Principal {
	p := &d.part().principal
	d.members("principal", v, []string{"user_id", "roles"}, func(k string, v *node) {
		switch k {
		case "user_id":
			p.UserID = d.ident("principal.user_id", v)
		case "roles":
			p.Roles = d.list("principal.roles", v)
		}
	})
	return p
}

func (d *decoder) resource(v *node) *Resource {
	r := &d.part().resource
	d.members("resource", v, []string{"type", "name", "tags"}, func(k string, v *node) {
		switch k {
		case "type":
			r.Type = d.ident("resource.type", v)
		case "name":
			r.Name = d.ident("resource.name", v)
		case "tags":
			r.Tags = d.list("resource.tags", v)
		}
	})
	return r
}

// toolFields are the members of an event's tool, as errors list them.
var toolFields = []string{"name", "parameters", "raw_command", "result", "error", "duration_ms"}

func (d *decoder) tool(v *node) *Tool {
	t := &d.part().tool
	d.members("tool", v, toolFields, func(k string, v *node) {
		switch k {
		case "name":
			t.Name = d.ident("tool.name", v)
		case "parameters":
			t.Parameters = d.json("tool.parameters", v)
		case "raw_command":
			t.RawCommand = d.str("tool.raw_command", v)
		case "result":
			// Not bounded by MaxString: Seal keeps the first MaxResult
			// characters, so a client may send a tool's whole output.
			if v.kind != kindString {
				d.fail("tool.result must be a string")
			}
			t.Result = v.str
		case "error":
			t.Error = d.str("tool.error", v)
		case "duration_ms":
			if v.kind != kindNumber || v.num < 0 || v.num > maxSafeInteger || v.num != math.Trunc(v.num) {
				d.fail("tool.duration_ms must be a whole number of milliseconds from 0 to %d", int64(maxSafeInteger))
			}
			t.DurationMS = int64(v.num)
		}
	})
	return t
}

func (d *decoder) outcome(v *node) *Outcome {
	o := &d.part().outcome
	d.members("outcome", v, []string{"status"}, func(_ string, v *node) {
		o.Status = d.ident("outcome.status", v)
	})
	return o
}

func validEventID(s string) bool {
	if len(s) == 0 || len(s) > MaxEventIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isAlnum(c) || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

func validEventType(s string) bool {
	if len(s) == 0 || len(s) > MaxEventTypeLen || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(isAlnum(c) || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool  { return isLetter(c) || c >= '0' && c <= '9' }

// eventIDEncoding is lowercase base32 without padding: 16 bytes become 26
// characters that are safe in URLs, file names and SQL. Its alphabet is in
// ASCII order (digits before letters), so that ids sort as their bytes do:
// by time (NewEventID).
var eventIDEncoding = base32.NewEncoding("234567abcdefghijklmnopqrstuvwxyz").WithPadding(base32.NoPadding)

// NewEventID returns a fresh event id, "evt_" and 26 base32 characters of 16
// bytes: now as milliseconds since the Unix epoch in 48 bits, big-endian,
// then 80 bits read from rand (crypto/rand.Reader in auditd, a fixed reader
// in tests). It panics if rand fails, which crypto/rand.Reader never does.
//
// Why the time: the store's unique index on event_id is a b-tree, and
// random ids put every new event on a different leaf page, so a commit of
// N events rewrote about N pages of that index (DESIGN §6 "Durability":
// each page is written to the WAL and synced). Ids that grow with time go
// to the same few pages at the index's end. The 80 random bits keep ids
// unique and unguessable (2^80 per millisecond); a clock that steps back
// costs locality, never uniqueness. A time before 1970 counts as 0.
func NewEventID(now time.Time, rand io.Reader) string {
	var b [16]byte
	ms := uint64(max(now.UnixMilli(), 0))
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	if _, err := io.ReadFull(rand, b[6:]); err != nil {
		panic("audit: NewEventID: reading random bytes: " + err.Error())
	}
	var sb strings.Builder
	sb.Grow(4 + 26)
	sb.WriteString("evt_")
	sb.WriteString(eventIDEncoding.EncodeToString(b[:]))
	return sb.String()
}
