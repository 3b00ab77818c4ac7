package audit

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// appendEventBody appends Body(e): the canonical JSON that
// Canonical(e without EventHash) gives, written directly from the struct
// because Seal runs once per event in auditd's single writer goroutine, and
// encoding/json's reflection plus re-parsing its output cost several times
// more. Members are written in JCS order (all names are ASCII, so that is
// byte order) with encoding/json's omitempty rules and its replacement of
// invalid UTF-8 by U+FFFD. rawCanonical says the JSON-valued fields are
// canonical already (Seal made them so); otherwise they are canonicalized.
//
// TestBodyMatchesCanonical fills every field of Event by reflection and
// compares with Canonical: a field added to Event and not here fails it.
func appendEventBody(dst []byte, e *Event, rawCanonical bool) ([]byte, error) {
	w := objectWriter{dst: dst, rawCanonical: rawCanonical}
	w.dst = append(w.dst, '{')
	w.str("action_class", e.ActionClass, true)
	w.str("action_hash", e.ActionHash, true)
	w.str("agent", e.Agent, true)
	w.str("approval_id", e.ApprovalID, true)
	if e.Caller != nil {
		w.open("caller")
		w.str("name", e.Caller.Name, false)
		w.list("roles", e.Caller.Roles)
		w.close()
	}
	w.raw("data", e.Data)
	w.str("event_id", e.EventID, false)
	w.str("event_type", e.EventType, false)
	if e.Outcome != nil {
		w.open("outcome")
		w.str("status", e.Outcome.Status, true)
		w.close()
	}
	w.raw("policy_decision", e.PolicyDecision)
	w.str("prev_hash", e.PrevHash, false)
	if e.Principal != nil {
		w.open("principal")
		w.list("roles", e.Principal.Roles)
		w.str("user_id", e.Principal.UserID, true)
		w.close()
	}
	if len(e.Redactions) > 0 {
		w.name("redactions")
		w.dst = append(w.dst, '[')
		for i, r := range e.Redactions {
			if i > 0 {
				w.dst = append(w.dst, ',')
			}
			w.dst = append(w.dst, '{')
			w.str("field", r.Field, false)
			w.str("kind", r.Kind, false)
			w.dst = append(w.dst, '}')
		}
		w.dst = append(w.dst, ']')
	}
	if e.Resource != nil {
		w.open("resource")
		w.str("name", e.Resource.Name, true)
		w.list("tags", e.Resource.Tags)
		w.str("type", e.Resource.Type, true)
		w.close()
	}
	w.int("schema_version", int64(e.SchemaVersion), false)
	w.int("seq", e.Seq, false)
	w.str("session_id", e.SessionID, true)
	w.name("timestamp")
	w.dst = append(w.dst, '"')
	ts, err := e.Timestamp.AppendText(w.dst)
	if err != nil {
		return nil, fmt.Errorf("timestamp: %w", err)
	}
	w.dst = append(ts, '"')
	if t := e.Tool; t != nil {
		w.open("tool")
		w.int("duration_ms", t.DurationMS, true)
		w.str("error", t.Error, true)
		w.str("name", t.Name, true)
		w.raw("parameters", t.Parameters)
		w.str("raw_command", t.RawCommand, true)
		w.str("result", t.Result, true)
		w.close()
	}
	w.str("trace_id", e.TraceID, true)
	w.dst = append(w.dst, '}')
	if w.err != nil {
		return nil, w.err
	}
	return w.dst, nil
}

// objectWriter writes the members of nested objects, tracking commas.
type objectWriter struct {
	dst          []byte
	rawCanonical bool
	err          error
}

func (w *objectWriter) name(n string) {
	if w.dst[len(w.dst)-1] != '{' {
		w.dst = append(w.dst, ',')
	}
	w.dst = append(w.dst, '"')
	w.dst = append(w.dst, n...)
	w.dst = append(w.dst, '"', ':')
}

func (w *objectWriter) open(n string) {
	w.name(n)
	w.dst = append(w.dst, '{')
}

func (w *objectWriter) close() { w.dst = append(w.dst, '}') }

func (w *objectWriter) str(n, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	w.name(n)
	w.dst = appendStringUTF8(w.dst, v)
}

func (w *objectWriter) int(n string, v int64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	w.name(n)
	// Through float64, as the generic path goes: beyond 2^53 JCS rounds.
	w.dst = appendNumber(w.dst, float64(v))
}

func (w *objectWriter) list(n string, v []string) {
	if len(v) == 0 {
		return
	}
	w.name(n)
	w.dst = append(w.dst, '[')
	for i, s := range v {
		if i > 0 {
			w.dst = append(w.dst, ',')
		}
		w.dst = appendStringUTF8(w.dst, s)
	}
	w.dst = append(w.dst, ']')
}

func (w *objectWriter) raw(n string, v json.RawMessage) {
	if len(v) == 0 || w.err != nil {
		return
	}
	w.name(n)
	if w.rawCanonical {
		w.dst = append(w.dst, v...)
		return
	}
	node, err := parseJSON(v)
	if err != nil {
		w.err = fmt.Errorf("%s: %w", n, err)
		return
	}
	w.dst = appendNode(w.dst, &node)
}

// appendStringUTF8 is appendString for strings that may hold invalid UTF-8:
// each invalid byte becomes U+FFFD, as encoding/json writes it.
func appendStringUTF8(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		return appendString(dst, s)
	}
	buf := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = utf8.AppendRune(buf, utf8.RuneError)
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return appendString(dst, string(buf))
}
