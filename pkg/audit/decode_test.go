package audit

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeEvent(t *testing.T) {
	in := `{
  "schema_version": 1,
  "event_id": "req-7:a.b_c",
  "event_type": "tool_execution",
  "trace_id": "t1", "session_id": "s1", "agent": "db-agent",
  "principal": {"user_id": "alice", "roles": ["dba"]},
  "action_class": "destructive",
  "resource": {"type": "database", "name": "prod-db", "tags": ["production"]},
  "tool": {"name": "run_sql", "parameters": {"q": "DROP TABLE x", "a": [1, 2.50]},
           "raw_command": "psql -c 'DROP TABLE x'", "result": "DROP TABLE", "error": "", "duration_ms": 12},
  "outcome": {"status": "success"},
  "policy_decision": {"effect": "require_approval", "trace": []},
  "approval_id": "apr_1",
  "data": {"note": "<ok>"}
}`
	got, err := DecodeEvent([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{
		EventID: "req-7:a.b_c", EventType: TypeToolExecution, TraceID: "t1", SessionID: "s1", Agent: "db-agent",
		Principal:   &Principal{UserID: "alice", Roles: []string{"dba"}},
		ActionClass: ActionDestructive,
		Resource:    &Resource{Type: "database", Name: "prod-db", Tags: []string{"production"}},
		Tool: &Tool{Name: "run_sql", Parameters: json.RawMessage(`{"a":[1,2.5],"q":"DROP TABLE x"}`),
			RawCommand: "psql -c 'DROP TABLE x'", Result: "DROP TABLE", DurationMS: 12},
		Outcome:        &Outcome{Status: "success"},
		PolicyDecision: json.RawMessage(`{"effect":"require_approval","trace":[]}`),
		ApprovalID:     "apr_1",
		Data:           json.RawMessage(`{"note":"<ok>"}`),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestDecodeEventMinimalAndNulls(t *testing.T) {
	got, err := DecodeEvent([]byte(`{"event_type":"incident","agent":null,"tool":null,"data":null,"principal":{"roles":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{EventType: TypeIncident, Principal: &Principal{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestDecodeEventRefuses(t *testing.T) {
	big := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name, in, want string
	}{
		{"seq", `{"event_type":"x","seq":1}`, "seq is assigned by auditd; remove it"},
		{"timestamp", `{"event_type":"x","timestamp":"2026-01-01T00:00:00Z"}`, "timestamp is assigned by auditd; remove it"},
		{"prev_hash", `{"event_type":"x","prev_hash":""}`, "prev_hash is assigned by auditd; remove it"},
		{"event_hash", `{"event_type":"x","event_hash":"00"}`, "event_hash is assigned by auditd; remove it"},
		// DESIGN §11: who wrote an event comes from its credential, and the
		// hash of an approved action is computed by auditd, never claimed.
		{"caller", `{"event_type":"x","caller":{"name":"root","roles":["admin"]}}`, "caller is assigned by auditd; remove it"},
		{"action_hash", `{"event_type":"x","action_hash":"00"}`, "action_hash is assigned by auditd; remove it"},
		{"redactions", `{"event_type":"x","redactions":[{"field":"tool.result","kind":"password"}]}`, "redactions is assigned by auditd; remove it"},
		{"redactions null", `{"event_type":"x","redactions":null}`, "redactions is assigned by auditd; remove it"},
		{"unknown field", `{"event_type":"x","colour":"red"}`, `unknown field "colour"`},
		{"unknown null field", `{"event_type":"x","colour":null}`, `unknown field "colour"`},
		{"null seq", `{"event_type":"x","seq":null}`, "seq is assigned by auditd; remove it"},
		{"unknown null nested field", `{"event_type":"x","tool":{"cmd":null}}`, `unknown field "tool.cmd"`},
		{"case differs", `{"event_type":"x","Agent":"a"}`, `unknown field "Agent"`},
		{"unknown nested field", `{"event_type":"x","tool":{"name":"t","cmd":"ls"}}`, `unknown field "tool.cmd"`},
		{"unknown principal field", `{"event_type":"x","principal":{"uid":"a"}}`, `unknown field "principal.uid"`},
		{"unknown resource field", `{"event_type":"x","resource":{"kind":"a"}}`, `unknown field "resource.kind"`},
		{"unknown outcome field", `{"event_type":"x","outcome":{"ok":true}}`, `unknown field "outcome.ok"`},
		{"duplicate field", `{"event_type":"x","agent":"a","agent":"b"}`, `duplicate member name "agent"`},
		{"not an object", `["event_type"]`, "an event must be a JSON object"},
		{"two objects", `{"event_type":"x"}{"event_type":"y"}`, "unexpected data after the JSON value"},
		{"empty", ``, "unexpected end of input"},
		{"invalid json", `{"event_type":`, "unexpected end of input"},
		{"invalid utf-8", "{\"event_type\":\"x\",\"agent\":\"\xc3\"}", "invalid UTF-8"},
		{"no event type", `{"agent":"a"}`, "event_type is required"},
		{"empty event type", `{"event_type":""}`, "event_type is required"},
		{"event type with space", `{"event_type":"tool execution"}`, `event_type "tool execution" is not`},
		{"event type starts with digit", `{"event_type":"1x"}`, `event_type "1x" is not`},
		{"event type too long", `{"event_type":"` + big(MaxEventTypeLen+1) + `"}`, "event_type"},
		{"event type number", `{"event_type":5}`, "event_type must be a string"},
		{"event id charset", `{"event_type":"x","event_id":"a/b"}`, `event_id "a/b" is not`},
		{"event id empty", `{"event_type":"x","event_id":""}`, `event_id "" is not`},
		{"event id too long", `{"event_type":"x","event_id":"` + big(MaxEventIDLen+1) + `"}`, "event_id"},
		{"action class", `{"event_type":"x","action_class":"delete"}`, `action_class "delete" is not read, write or destructive`},
		{"schema version 2", `{"event_type":"x","schema_version":2}`, "schema_version must be 1"},
		{"schema version string", `{"event_type":"x","schema_version":"1"}`, "schema_version must be 1"},
		{"agent not a string", `{"event_type":"x","agent":["a"]}`, "agent must be a string"},
		{"principal not an object", `{"event_type":"x","principal":"alice"}`, "principal must be an object {user_id, roles}"},
		{"outcome not an object", `{"event_type":"x","outcome":"ok"}`, "outcome must be an object {status}"},
		{"tool not an object", `{"event_type":"x","tool":"ls"}`, "tool must be an object {name, parameters, raw_command, result, error, duration_ms}"},
		{"roles not strings", `{"event_type":"x","principal":{"roles":[1]}}`, "principal.roles[0] must be a string"},
		{"tags not an array", `{"event_type":"x","resource":{"tags":"prod"}}`, "resource.tags must be an array of strings"},
		{"too many tags", `{"event_type":"x","resource":{"tags":[` + strings.Repeat(`"t",`, MaxListLen) + `"t"]}}`, "resource.tags has over 256 entries"},
		{"result not a string", `{"event_type":"x","tool":{"result":1}}`, "tool.result must be a string"},
		{"duration fractional", `{"event_type":"x","tool":{"duration_ms":1.5}}`, "tool.duration_ms must be a whole number"},
		{"duration negative", `{"event_type":"x","tool":{"duration_ms":-1}}`, "tool.duration_ms must be a whole number"},
		{"duration huge", `{"event_type":"x","tool":{"duration_ms":1e300}}`, "tool.duration_ms must be a whole number"},
		{"duration string", `{"event_type":"x","tool":{"duration_ms":"5"}}`, "tool.duration_ms must be a whole number"},
		{"string over 64 KiB", `{"event_type":"x","agent":"` + big(MaxString+1) + `"}`, "agent is over 65536 bytes"},
		{"raw command over 64 KiB", `{"event_type":"x","tool":{"raw_command":"` + big(MaxString+1) + `"}}`, "tool.raw_command is over 65536 bytes"},
		{"parameters over 256 KiB", `{"event_type":"x","tool":{"parameters":["` + big(MaxJSONField) + `"]}}`, "tool.parameters is over 262144 bytes"},
		{"policy decision over 256 KiB", `{"event_type":"x","policy_decision":{"a":"` + big(MaxJSONField) + `"}}`, "policy_decision is over 262144 bytes"},
		{"event over 1 MiB", `{"event_type":"x","tool":{"result":"` + big(MaxEventBytes) + `"}}`, "event is over 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeEvent([]byte(tt.in))
			if err == nil {
				t.Fatalf("accepted: %+v", e)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error is %d bytes long: it must not echo the input", len(err.Error()))
			}
		})
	}
}

func TestDecodeEventLongResultIsAccepted(t *testing.T) {
	in := `{"event_type":"x","tool":{"result":"` + strings.Repeat("y", MaxString*4) + `"}}`
	e, err := DecodeEvent([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Seal(withID(e), 1, ZeroHash, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Body) > 2000 {
		t.Errorf("sealed body is %d bytes: the result was not cut", len(rec.Body))
	}
}

func withID(e Event) *Event {
	if e.EventID == "" {
		e.EventID = "evt_test"
	}
	return &e
}

func TestNewEventID(t *testing.T) {
	epoch := time.UnixMilli(0)
	for _, tc := range []struct {
		name string
		now  time.Time
		rand []byte
		want string
	}{
		{"zero", epoch, make([]byte, 10), "evt_" + strings.Repeat("2", 26)},
		{"before 1970 counts as 0", epoch.Add(-time.Hour), make([]byte, 10), "evt_" + strings.Repeat("2", 26)},
		// 48 bits of milliseconds, big-endian, then the 80 random bits.
		{"time then random", time.UnixMilli(0x010203040506), bytes.Repeat([]byte{0xff}, 10),
			"evt_" + eventIDEncoding.EncodeToString(append([]byte{1, 2, 3, 4, 5, 6}, bytes.Repeat([]byte{0xff}, 10)...))},
	} {
		if got := NewEventID(tc.now, bytes.NewReader(tc.rand)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}

	// Ids sort by time whatever their random bits, are valid event ids of
	// 30 characters, and differ within one millisecond.
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	prev := NewEventID(now, bytes.NewReader(bytes.Repeat([]byte{0xff}, 10)))
	seen := map[string]bool{}
	for i := 1; i <= 1000; i++ {
		at := now.Add(time.Duration(i) * time.Millisecond)
		id := NewEventID(at, bytes.NewReader(make([]byte, 10)))
		if id <= prev {
			t.Fatalf("%s (at %s) sorts before %s", id, at, prev)
		}
		prev = NewEventID(at, bytes.NewReader(bytes.Repeat([]byte{0xff}, 10)))
		same := NewEventID(now, rand.Reader)
		if len(same) != 30 || !validEventID(same) || seen[same] {
			t.Fatalf("%s: not a valid, new event id of 30 characters", same)
		}
		seen[same] = true
	}
	defer func() {
		if recover() == nil {
			t.Error("a short reader did not panic")
		}
	}()
	NewEventID(now, bytes.NewReader(make([]byte, 3)))
}
