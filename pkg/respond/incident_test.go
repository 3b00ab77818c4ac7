package respond

import (
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
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
