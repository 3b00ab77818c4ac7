package workflow

import (
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/session/response"
)

var t0 = time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC)

// TestRecoveryTracking is P-42 (seed 000 §7 Recovery Tracking, §8 State
// Transition After Success): a block records a pending recovery, a later
// success of that tool resolves it with the original code and tool.
func TestRecoveryTracking(t *testing.T) {
	f := NewFSM()
	if id := f.TrackPendingRecovery(response.FSMBlocked, "pulse_control", t0); id != "rec-1" {
		t.Fatalf("first id %q", id)
	}
	if id := f.TrackPendingRecovery(response.FSMBlocked, "pulse_control", t0.Add(time.Second)); id != "rec-1" {
		t.Fatalf("a repeated block got a new id %q", id)
	}
	if id := f.TrackPendingRecovery(response.StrictResolution, "pulse_control", t0.Add(2*time.Second)); id != "rec-2" {
		t.Fatalf("another code: id %q", id)
	}
	if id := f.TrackPendingRecovery(response.StrictResolution, "pulse_file_edit", t0.Add(3*time.Second)); id != "rec-3" {
		t.Fatalf("another tool: id %q", id)
	}
	want := []PendingRecovery{
		{RecoveryID: "rec-1", ErrorCode: response.FSMBlocked, Tool: "pulse_control", CreatedAt: t0, Attempts: 2},
		{RecoveryID: "rec-2", ErrorCode: response.StrictResolution, Tool: "pulse_control", CreatedAt: t0.Add(2 * time.Second), Attempts: 1},
		{RecoveryID: "rec-3", ErrorCode: response.StrictResolution, Tool: "pulse_file_edit", CreatedAt: t0.Add(3 * time.Second), Attempts: 1},
	}
	got := f.PendingRecoveries(t0.Add(time.Minute))
	if len(got) != len(want) {
		t.Fatalf("pending %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pending[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if pr := f.CheckRecoverySuccess("pulse_query", t0.Add(time.Minute)); pr != nil {
		t.Errorf("another tool's success resolved %+v", pr)
	}
	// The oldest of the tool's recoveries first, then the next.
	if pr := f.CheckRecoverySuccess("pulse_control", t0.Add(time.Minute)); pr == nil || *pr != want[0] {
		t.Errorf("first success resolved %+v, want %+v", pr, want[0])
	}
	if pr := f.CheckRecoverySuccess("pulse_control", t0.Add(time.Minute)); pr == nil || *pr != want[1] {
		t.Errorf("second success resolved %+v, want %+v", pr, want[1])
	}
	if pr := f.CheckRecoverySuccess("pulse_control", t0.Add(time.Minute)); pr != nil {
		t.Errorf("third success resolved %+v", pr)
	}
	if got := f.PendingRecoveries(t0.Add(time.Minute)); len(got) != 1 || got[0].RecoveryID != "rec-3" {
		t.Errorf("left pending %+v", got)
	}
	// Ids keep counting after a resolution and a Reset: never reused.
	f.Reset()
	if id := f.TrackPendingRecovery(response.FSMBlocked, "pulse_control", t0.Add(time.Minute)); id != "rec-4" {
		t.Errorf("id after resolution %q", id)
	}
}

// TestRecoveryExpiry: RecoveryTTL against the injected clock; expired
// recoveries are dropped, never returned, and a new block starts anew.
func TestRecoveryExpiry(t *testing.T) {
	f := NewFSM()
	f.TrackPendingRecovery(response.FSMBlocked, "w", t0)
	if got := f.PendingRecoveries(t0.Add(RecoveryTTL)); len(got) != 1 {
		t.Errorf("at exactly the TTL: %+v, want still pending", got)
	}
	late := t0.Add(RecoveryTTL + time.Nanosecond)
	if got := f.PendingRecoveries(late); len(got) != 0 {
		t.Errorf("past the TTL: %+v", got)
	}
	if pr := f.CheckRecoverySuccess("w", late); pr != nil {
		t.Errorf("expired recovery returned: %+v", pr)
	}
	f.TrackPendingRecovery(response.FSMBlocked, "w", t0)
	if id := f.TrackPendingRecovery(response.FSMBlocked, "w", late); id != "rec-3" {
		t.Errorf("a block after expiry reused the id: %q", id)
	}
	if pr := f.CheckRecoverySuccess("w", late.Add(RecoveryTTL)); pr == nil || pr.Attempts != 1 || pr.RecoveryID != "rec-3" {
		t.Errorf("fresh recovery: %+v", pr)
	}
}

func TestRecoveryBound(t *testing.T) {
	f := NewFSM()
	for i := 0; i < maxPendingRecoveries+10; i++ {
		f.TrackPendingRecovery(response.FSMBlocked, "tool"+string(rune('a'+i%26))+string(rune('a'+i/26)), t0)
	}
	got := f.PendingRecoveries(t0)
	if len(got) != maxPendingRecoveries {
		t.Fatalf("%d pending, want the bound %d", len(got), maxPendingRecoveries)
	}
	if got[0].RecoveryID != "rec-11" || got[len(got)-1].RecoveryID != "rec-74" {
		t.Errorf("kept %s..%s, want the newest", got[0].RecoveryID, got[len(got)-1].RecoveryID)
	}
}
