package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 9, 14, 0, 0, 123456789, time.UTC)

// sampleEvent returns a typical tool_execution event (about 650 bytes of
// body once sealed), distinct per i.
func sampleEvent(i int) Event {
	return Event{
		EventID:     fmt.Sprintf("evt_%026d", i),
		EventType:   TypeToolExecution,
		TraceID:     fmt.Sprintf("trace-%d", i/10),
		SessionID:   "sess-42",
		Agent:       "db-agent",
		Principal:   &Principal{UserID: "alice", Roles: []string{"dba", "oncall"}},
		ActionClass: ActionWrite,
		Resource:    &Resource{Type: "database", Name: "prod-db", Tags: []string{"production", "pii"}},
		Tool: &Tool{
			Name:       "run_sql",
			Parameters: json.RawMessage(`{"query":"UPDATE users SET active = false WHERE id < 1500","timeout_s":30}`),
			Result:     "UPDATE 1500",
			DurationMS: 412,
		},
		Outcome:        &Outcome{Status: "success"},
		PolicyDecision: json.RawMessage(`{"effect":"allow","policy":"prod-writes"}`),
	}
}

// sealedChain returns n sealed records, one second apart.
func sealedChain(t testing.TB, n int) []Record {
	t.Helper()
	recs := make([]Record, 0, n)
	prev := ZeroHash
	for i := range n {
		e := sampleEvent(i + 1)
		rec, err := Seal(&e, int64(i+1), prev, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		prev = rec.EventHash
	}
	return recs
}

func TestHash(t *testing.T) {
	// FIPS 180-2 example: SHA-256("abc").
	if got, want := Hash([]byte("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// The body's bytes are a contract (DESIGN §6): pin them.
func TestBodyGolden(t *testing.T) {
	e := Event{
		SchemaVersion: 1, Seq: 7, EventID: "evt_1", Timestamp: t0, EventType: TypeToolExecution,
		Agent: "a<1>", ActionClass: ActionRead, Tool: &Tool{Name: "ls", Parameters: json.RawMessage(`{"b":1,"a":"\u2028"}`)},
		PrevHash: ZeroHash, EventHash: "ignored",
	}
	got, err := Body(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"action_class":"read","agent":"a<1>","event_id":"evt_1","event_type":"tool_execution",` +
		`"prev_hash":"0000000000000000000000000000000000000000000000000000000000000000","schema_version":1,"seq":7,` +
		"\"timestamp\":\"2026-03-09T14:00:00.123456789Z\",\"tool\":{\"name\":\"ls\",\"parameters\":{\"a\":\"\u2028\",\"b\":1}}}"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if e.EventHash != "ignored" {
		t.Error("Body changed its argument")
	}
}

func TestSeal(t *testing.T) {
	e := sampleEvent(1)
	e.Seq, e.PrevHash, e.EventHash = 99, "x", "y" // overwritten
	e.Tool.Result = strings.Repeat("é", MaxResult+10)
	e.Tool.Parameters = json.RawMessage(` { "z" : 1 , "a" : 2 } `)
	prev := strings.Repeat("ab", 32)
	now := time.Date(2026, 3, 9, 15, 0, 0, 5, time.FixedZone("X", 3600))

	rec, err := Seal(&e, 5, prev, now)
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != 5 || e.PrevHash != prev || e.SchemaVersion != SchemaVersion {
		t.Errorf("seq %d prev %s schema %d", e.Seq, e.PrevHash, e.SchemaVersion)
	}
	if !e.Timestamp.Equal(now) || e.Timestamp.Location() != time.UTC {
		t.Errorf("timestamp %v, want %v in UTC", e.Timestamp, now)
	}
	if got := []rune(e.Tool.Result); len(got) != MaxResult {
		t.Errorf("result has %d characters, want %d", len(got), MaxResult)
	}
	if string(e.Tool.Parameters) != `{"a":2,"z":1}` {
		t.Errorf("parameters %s, want canonical", e.Tool.Parameters)
	}
	if e.EventHash != Hash(rec.Body) || rec.EventHash != e.EventHash {
		t.Errorf("event hash %s, record %s, hash of body %s", e.EventHash, rec.EventHash, Hash(rec.Body))
	}
	body, _ := Body(e)
	if !bytes.Equal(body, rec.Body) {
		t.Errorf("record body differs from Body(e)")
	}
	want := Record{
		Seq: 5, EventID: e.EventID, Timestamp: e.Timestamp, EventType: TypeToolExecution, TraceID: e.TraceID,
		SessionID: e.SessionID, Agent: e.Agent, ActionClass: ActionWrite, ToolName: "run_sql",
		PrevHash: prev, EventHash: e.EventHash, Body: rec.Body,
	}
	if !reflect.DeepEqual(rec, want) {
		t.Errorf("record\n got %+v\nwant %+v", rec, want)
	}
	if bytes.Contains(rec.Body, []byte("event_hash")) {
		t.Error("body holds event_hash")
	}

	// After Seal, e is exactly what the body says.
	var back Event
	if err := json.Unmarshal(rec.Body, &back); err != nil {
		t.Fatal(err)
	}
	back.EventHash = e.EventHash
	if !reflect.DeepEqual(back, e) {
		t.Errorf("body decodes to\n%+v\nwant\n%+v", back, e)
	}

	// The same event sealed again gives the same bytes: no clock, no map order.
	e2 := sampleEvent(1)
	e2.Tool.Result = strings.Repeat("é", MaxResult+10)
	e2.Tool.Parameters = json.RawMessage(`{"a":2,"z":1}`)
	rec2, err := Seal(&e2, 5, prev, now)
	if err != nil || !bytes.Equal(rec2.Body, rec.Body) {
		t.Errorf("sealing again: %v, body differs: %v", err, !bytes.Equal(rec2.Body, rec.Body))
	}
}

func TestSealWithoutTool(t *testing.T) {
	e := Event{EventID: "evt_x", EventType: TypeIncident, Data: json.RawMessage(`{"b":[],"a":{}}`)}
	rec, err := Seal(&e, 1, ZeroHash, t0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ToolName != "" || string(e.Data) != `{"a":{},"b":[]}` {
		t.Errorf("tool %q data %s", rec.ToolName, e.Data)
	}
}

func TestSealRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Event)
		seq  int64
		prev string
		want string
	}{
		{"no event id", func(e *Event) { e.EventID = "" }, 1, ZeroHash, "event_id is empty"},
		{"seq zero", func(*Event) {}, 0, ZeroHash, "seq 0 out of range"},
		{"seq beyond 2^53", func(*Event) {}, 1 << 53, ZeroHash, "out of range"},
		{"short prev", func(*Event) {}, 1, "abc", "prev_hash is not"},
		{"upper-case prev", func(*Event) {}, 1, strings.ToUpper(strings.Repeat("ab", 32)), "prev_hash is not"},
		{"invalid utf-8 agent", func(e *Event) { e.Agent = "a\xff" }, 1, ZeroHash, "agent is not valid UTF-8"},
		{"invalid utf-8 tool name", func(e *Event) { e.Tool.Name = "\xff" }, 1, ZeroHash, "tool.name is not valid UTF-8"},
		{"bad parameters", func(e *Event) { e.Tool.Parameters = json.RawMessage(`{"a":1,"a":2}`) }, 1, ZeroHash, "tool.parameters: invalid JSON"},
		{"bad policy decision", func(e *Event) { e.PolicyDecision = json.RawMessage(`{`) }, 1, ZeroHash, "policy_decision: invalid JSON"},
		{"bad data", func(e *Event) { e.Data = json.RawMessage(`nul`) }, 1, ZeroHash, "data: invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sampleEvent(1)
			tt.edit(&e)
			_, err := Seal(&e, tt.seq, tt.prev, t0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestTruncateRunes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"héllo", 2, "hé"},
		{"日本語テキスト", 3, "日本語"},
		{"a\xffbc", 2, "a\xff"},
	}
	for _, tt := range tests {
		if got := truncateRunes(tt.in, tt.n); got != tt.want {
			t.Errorf("truncateRunes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// canonicalGeneric is Body the slow, obviously right way.
func canonicalGeneric(e Event) ([]byte, error) {
	e.EventHash = ""
	return Canonical(e)
}

// fill sets every field of v, recursively, to a non-zero value, failing on a
// type it does not know: a field added to Event must reach this test.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(t0))
		return
	case json.RawMessage:
		v.Set(reflect.ValueOf(json.RawMessage(` {"z": 1e2, "a": [true, null, "<\u2028>"]} `)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(path + ` <&>"\` + "\n\u2028é")
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(len(path)))
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct {
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			fill(t, v.Index(0), path+"[0]")
			fill(t, v.Index(1), path+"[1]")
			return
		}
		if v.Type().Elem().Kind() != reflect.String {
			t.Fatalf("fill: %s: slice of %s: extend this test and appendEventBody", path, v.Type().Elem())
		}
		v.Set(reflect.ValueOf([]string{path + "-1", "", "\x00"}))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	default:
		t.Fatalf("fill: %s: %s: extend this test and appendEventBody", path, v.Type())
	}
}

// Body is written by hand for speed; it must stay byte-for-byte what
// Canonical gives, for every field of Event.
func TestBodyMatchesCanonical(t *testing.T) {
	var full Event
	fill(t, reflect.ValueOf(&full).Elem(), "e")
	cases := map[string]Event{
		"every field":   full,
		"zero":          {},
		"sample":        sampleEvent(3),
		"empty nested":  {Principal: &Principal{}, Resource: &Resource{}, Tool: &Tool{}, Outcome: &Outcome{}},
		"invalid utf-8": {Agent: "a\xffb\xc3", Tool: &Tool{Result: "\xe2\x82"}, Principal: &Principal{Roles: []string{"\xff"}}},
		"null raw":      {Data: json.RawMessage(`null`), PolicyDecision: json.RawMessage(` "x" `)},
		"big numbers":   {Seq: 1<<60 + 1, SchemaVersion: -3, Tool: &Tool{DurationMS: -1 << 62}},
		"zoned time":    {Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("", -7*3600))},
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := canonicalGeneric(e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Body(e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Body differs from Canonical:\n got %s\nwant %s", got, want)
			}
		})
	}
	for name, e := range map[string]Event{
		"bad raw":  {Data: json.RawMessage(`{"a":}`)},
		"dup raw":  {Tool: &Tool{Parameters: json.RawMessage(`{"a":1,"a":1}`)}},
		"year 1e4": {Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		_, gerr := canonicalGeneric(e)
		_, err := Body(e)
		if err == nil || gerr == nil {
			t.Errorf("%s: Body error %v, Canonical error %v: want both to fail", name, err, gerr)
		}
	}
}
