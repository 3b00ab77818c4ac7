package monitor

import (
	"reflect"
	"strings"
	"testing"
)

var (
	hashA = strings.Repeat("a", 64)
	hashB = strings.Repeat("0b", 32)
)

// rootB64 is a root hash as a checkpoint writes it.
const rootB64 = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="

func TestParseState(t *testing.T) {
	tests := []struct {
		in   string
		want string // error text; "" means valid
	}{
		{`{"schema_version":1}`, ""},
		{`{"schema_version":1,"cursor":{"seq":0,"event_hash":""}}`, ""},
		{`{"schema_version":1,"cursor":{"seq":12,"event_hash":"` + hashA + `"},"pin":{"size":10,"head":"` + hashB + `","verified_at":"2026-01-15T14:30:00Z"}}`, ""},
		{"", "it is empty"},
		{"  \n", "it is empty"},
		{`{"schema_version":1`, "it is not a state file: line 1, column 20: the JSON ends early"},
		{`[]`, "it is not a state file: the JSON value must be an object {schema_version, cursor, pin, checkpoint}, not an array"},
		{`{"schema_version":1,"extra":true}`, `unknown field "extra"`},
		{`{"schema_version":1} {}`, "more than one JSON value"},
		{`{"schema_version":2}`, "schema_version 2 is not 1"},
		{`{}`, "schema_version 0 is not 1"},
		{`{"schema_version":1,"cursor":{"seq":-1,"event_hash":""}}`, "cursor: seq -1 is negative"},
		{`{"schema_version":1,"cursor":{"seq":0,"event_hash":"` + hashA + `"}}`, "cursor: seq 0 (before the first event) with an event_hash"},
		{`{"schema_version":1,"cursor":{"seq":3,"event_hash":"xyz"}}`, "cursor: event_hash is not a SHA-256 hash"},
		{`{"schema_version":1,"pin":{"size":3,"head":"` + hashA + `"}}`, "pin: verified_at is missing"},
		{`{"schema_version":1,"pin":{"size":3,"head":"` + strings.ToUpper(hashA) + `","verified_at":"2026-01-15T14:30:00Z"}}`, "pin: head is not"},
		{`{"schema_version":1,"pin":{"size":"3"}}`, "it is not a state file"},
		{`{"schema_version":1,"checkpoint":{"note":"a.example/log\n10\n` + rootB64 + `\n\n— a.example/log AAAA\n","pinned_at":"2026-01-15T14:30:00Z"}}`, ""},
		{`{"schema_version":1,"checkpoint":{"note":"a.example/log\n10\n` + rootB64 + `\n\n— a.example/log AAAA\n"}}`, "checkpoint: pinned_at is missing"},
		{`{"schema_version":1,"checkpoint":{"note":"a.example/log\n10\n` + rootB64 + `\n","pinned_at":"2026-01-15T14:30:00Z"}}`, "checkpoint: note is not a signed note"},
		{`{"schema_version":1,"checkpoint":{"note":"a.example/log\nten\n` + rootB64 + `\n\n— a.example/log AAAA\n","pinned_at":"2026-01-15T14:30:00Z"}}`, "checkpoint: malformed checkpoint: size"},
	}
	for _, tt := range tests {
		st, err := ParseState([]byte(tt.in))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.in, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v; want %q", tt.in, err, tt.want)
		case tt.want == "":
			back, err := ParseState(st.Marshal())
			if err != nil || !reflect.DeepEqual(back, st) {
				t.Errorf("%s: round trip %+v, %v", tt.in, back, err)
			}
		}
	}
}

// FuzzParseState: anything ParseState accepts survives Marshal unchanged,
// and nothing makes it panic.
func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"schema_version":1}`))
	f.Add([]byte(`{"schema_version":1,"cursor":{"seq":12,"event_hash":"` + hashA + `"},"pin":{"size":10,"head":"` + hashB + `","verified_at":"2026-01-15T14:30:00.123456789+02:00"}}`))
	f.Add([]byte(`{"schema_version":1,"cursor":{"seq":0,"event_hash":""},"pin":{"size":0,"head":"","verified_at":"2026-01-15T14:30:00Z"}}`))
	f.Add([]byte(`{"schema_version":1,"pin":null,"cursor":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseState(data)
		if err != nil {
			return
		}
		out := st.Marshal()
		back, err := ParseState(out)
		if err != nil {
			t.Fatalf("ParseState(Marshal(%q)) = %v", data, err)
		}
		if !reflect.DeepEqual(normalized(back), normalized(st)) {
			t.Fatalf("round trip changed the state:\n%+v\n%+v", st, back)
		}
		if st.Pin != nil && st.Pin.Validate() != nil || st.Cursor != nil && st.Cursor.pin().Validate() != nil {
			t.Fatalf("accepted an invalid state: %q", data)
		}
	})
}

// normalized drops what JSON cannot keep: a time's monotonic reading and
// location (equal instants compare equal).
func normalized(st State) State {
	if st.Pin != nil {
		p := *st.Pin
		p.VerifiedAt = p.VerifiedAt.UTC()
		st.Pin = &p
	}
	return st
}
