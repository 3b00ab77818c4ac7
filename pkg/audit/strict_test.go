package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// CheckRequestJSON refuses what encoding/json would read differently from
// what was sent (issue 13 "Bad input, everywhere").
func TestCheckRequestJSON(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: "" accepted, else a part of the error
	}{
		{`{"agent":"a","n":9007199254740991,"m":-9007199254740991,"f":1.5,"s":"\u00e9\t"}`, ""},
		{`[1,{"a":{"b":[true,null]}}]`, ""},
		{`{"a":1,"a":2}`, "duplicate member name"},
		{`{"x":{"reason":"a","reason":"b"}}`, "duplicate member name"},
		{`{"agent":"a","Agent":"b"}`, `agent: duplicate member name (the same as "Agent" but for case`},
		{`{"x":[{"Reason":1,"REASON":2}]}`, `x[0].Reason: duplicate member name`},
		{"{\"kind\":\"a\",\"\u212aind\":\"b\"}", "but for case"}, // KELVIN SIGN folds to k
		{"{\"a\":\"\xff\"}", "invalid UTF-8"},
		{`{"a":"\ud800"}`, "surrogate"},
		{`{"n":9007199254740992}`, "n: number beyond ±9007199254740991"},
		{`{"n":-9007199254740993}`, "number beyond"},
		{`{"x":{"y":[1e300]}}`, "x.y[0]: number beyond"},
		{`{"agent":"a\u0000b"}`, `agent: NUL character`},
		{`{"a\u0000":1}`, `NUL character (\u0000) in a member name`},
		{`{"a b":{"c":"\u0000"}}`, `"a b".c: NUL`},
		{`{"a":1} {"b":2}`, "unexpected data"},
	} {
		err := CheckRequestJSON([]byte(tc.in))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

// DecodeEvent refuses NUL in identifiers and numbers beyond 2^53 in
// JSON-valued fields, which would be stored rounded (issue 13).
func TestDecodeEventIdentifiersAndNumbers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"event_type":"x","agent":"a\u0000b"}`, "agent has a NUL character (U+0000) at byte 1"},
		{`{"event_type":"x","session_id":"\u0000"}`, "session_id has a NUL character"},
		{`{"event_type":"x","trace_id":"t\u0000"}`, "trace_id has a NUL character"},
		{`{"event_type":"x","principal":{"user_id":"u\u0000"}}`, "principal.user_id has a NUL character"},
		{`{"event_type":"x","principal":{"roles":["dba","\u0000"]}}`, "principal.roles[1] has a NUL character"},
		{`{"event_type":"x","resource":{"type":"database","name":"db\u0000x"}}`, "resource.name has a NUL character"},
		{`{"event_type":"x","resource":{"type":"database","name":"db","tags":["\u0000"]}}`, "resource.tags[0] has a NUL character"},
		{`{"event_type":"x","tool":{"name":"a\u0000"}}`, "tool.name has a NUL character"},
		{`{"event_type":"x","approval_id":"\u0000"}`, "approval_id has a NUL character"},
		{`{"event_type":"x","data":{"id":12345678901234567890}}`, "data: number beyond"},
		{`{"event_type":"x","tool":{"parameters":[-1e16]}}`, "tool.parameters: number beyond"},
	} {
		_, err := DecodeEvent([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	// Free text keeps what it holds (tool output may carry any character),
	// and other control characters stay in names: the log records what was
	// sent, and its readers make names printable.
	if _, err := DecodeEvent([]byte(`{"event_type":"x","agent":"evil\tagent\u001b[2J","tool":{"raw_command":"printf 'a\u0000'","result":"\u0000\u001b"},"data":{"n":9007199254740991}}`)); err != nil {
		t.Errorf("free text, control characters and safe numbers: %v", err)
	}
}

// Property: what CheckRequestJSON accepts, encoding/json reads as sent: its
// value, re-encoded, has the canonical form of the input.
func FuzzCheckRequestJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x"]}`, `{"a":1,"A":2}`, `{"n":9007199254740993}`, "{\"a\":\"\xff\"}", `{"a":"\u0000"}`, `[1.5e3,-0]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if CheckRequestJSON(in) != nil {
			return
		}
		want, err := CanonicalizeJSON(in)
		if err != nil {
			t.Fatalf("accepted %q, which CanonicalizeJSON refuses: %v", in, err)
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("encoding/json refuses accepted %q: %v", in, err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := CanonicalizeJSON(raw)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encoding/json read %q as %q (%v), want %q", in, got, err, want)
		}
	})
}
