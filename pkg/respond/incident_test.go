package respond

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/detect"
)

func TestIncidentID(t *testing.T) {
	a := IncidentID("potential_sql_injection", eventWithID("evt_1", 4))
	if a != IncidentID("potential_sql_injection", eventWithID("evt_1", 4)) {
		t.Error("not deterministic")
	}
	for _, other := range []string{
		IncidentID("potential_command_injection", eventWithID("evt_1", 4)),
		IncidentID("potential_sql_injection", eventWithID("evt_2", 4)),
		IncidentID("potential_sql_injection", eventWithID("evt_1", 5)),
	} {
		if other == a {
			t.Errorf("%s for another pattern or event", a)
		}
	}
	// It must be a valid event_id: auditd stores the incident under it.
	if !strings.HasPrefix(a, "secbot-potential_sql_injection-") || len(a) > 128 || strings.Trim(a, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
		t.Errorf("IncidentID = %q", a)
	}
}

func eventWithID(id string, seq int64) audit.Event { return audit.Event{EventID: id, Seq: seq} }

// TestIncidentKeepsNames: a name that had to be made to fit is kept in the
// details, cut to detect.MaxExcerpt bytes of valid UTF-8 on a character
// boundary, with U+FFFD where an invalid byte was.
func TestIncidentKeepsNames(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	for _, tc := range []struct {
		name      string
		ev        audit.Event
		key, want string
	}{
		{"control", audit.Event{Agent: "a\tb"}, "agent", "a\tb"},
		{"long", audit.Event{Agent: long + "x"}, "agent", strings.Repeat("é", 100)},
		{"cut mid-character", audit.Event{Agent: "x" + long}, "agent", "x" + strings.Repeat("é", 99)},
		{"invalid byte", audit.Event{Agent: "bad\xffname\n"}, "agent", "bad\uFFFDname\n"},
		{"bad event id", audit.Event{EventID: "id with spaces\xfe"}, "event_id", "id with spaces\uFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Incident(detect.Alert{Type: "t", Severity: "high"}, tc.ev)
			var details map[string]json.RawMessage
			var got string
			if err := json.Unmarshal(in.Details, &details); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(details[tc.key], &got); err != nil {
				t.Fatalf("details[%q]: %v", tc.key, err)
			}
			if got != tc.want || len(got) > detect.MaxExcerpt || !utf8.ValidString(got) {
				t.Errorf("details[%q] = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}
