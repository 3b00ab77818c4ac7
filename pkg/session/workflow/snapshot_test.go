package workflow

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// An FSM restored from its snapshot (through JSON) is the same FSM: state,
// verification, pending recoveries and the next recovery id.
func TestFSMSnapshotRoundTrip(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFSM()
	f.OnToolSuccess(KindResolve, "query")
	f.OnToolSuccess(KindWrite, "edit")
	f.TrackPendingRecovery("FSM_BLOCKED", "edit", now)
	f.TrackPendingRecovery("FSM_BLOCKED", "edit", now)
	f.TrackPendingRecovery("STRICT_RESOLUTION", "deploy", now.Add(time.Minute))
	b, err := json.Marshal(f.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var s FSMSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	g, err := RestoreFSM(s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f, g) {
		t.Fatalf("restored %+v, want %+v", g, f)
	}
	if a, b := f.TrackPendingRecovery("X", "y", now), g.TrackPendingRecovery("X", "y", now); a != b || a != "rec-3" {
		t.Fatalf("next ids %s and %s, want rec-3", a, b)
	}
}

func TestRestoreFSMRefuses(t *testing.T) {
	rec := func(id string) PendingRecovery {
		return PendingRecovery{RecoveryID: id, ErrorCode: "FSM_BLOCKED", Tool: "t", Attempts: 1}
	}
	many := make([]PendingRecovery, 65)
	for i := range many {
		many[i] = rec("rec-" + string(rune('0'+i%10)))
	}
	for _, c := range []struct {
		name string
		s    FSMSnapshot
		want string
	}{
		{"state", FSMSnapshot{State: 7}, "state: unknown state 7"},
		{"last id", FSMSnapshot{LastRecoveryID: -1}, "last_recovery_id: negative"},
		{"too many", FSMSnapshot{LastRecoveryID: 100, Recoveries: many}, "recoveries: 65 entries"},
		{"id above last", FSMSnapshot{LastRecoveryID: 1, Recoveries: []PendingRecovery{rec("rec-2")}}, "recoveries[0].recovery_id"},
		{"id order", FSMSnapshot{LastRecoveryID: 3, Recoveries: []PendingRecovery{rec("rec-2"), rec("rec-1")}}, "recoveries[1].recovery_id"},
		{"id form", FSMSnapshot{LastRecoveryID: 3, Recoveries: []PendingRecovery{rec("rec-01")}}, "recoveries[0].recovery_id"},
		{"code", FSMSnapshot{LastRecoveryID: 1, Recoveries: []PendingRecovery{{RecoveryID: "rec-1", Attempts: 1}}}, "recoveries[0].error_code"},
		{"attempts", FSMSnapshot{LastRecoveryID: 1, Recoveries: []PendingRecovery{{RecoveryID: "rec-1", ErrorCode: "X"}}}, "recoveries[0].attempts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := RestoreFSM(c.s); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("RestoreFSM: %v, want an error with %q", err, c.want)
			}
		})
	}
}
