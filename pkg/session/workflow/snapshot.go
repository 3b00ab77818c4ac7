package workflow

import (
	"strconv"
	"strings"
)

// FSMSnapshot is an FSM's state as data, pending recoveries included, for a
// front-end that runs one process per agent event (gate hook) and keeps a
// session between its events.
type FSMSnapshot struct {
	State          State  `json:"state"`
	ReadAfterWrite bool   `json:"read_after_write,omitempty"`
	LastWriteTool  string `json:"last_write_tool,omitempty"`
	// Recoveries are the pending recoveries, oldest first, expired ones
	// included until a call drops them, as the FSM keeps them.
	Recoveries []PendingRecovery `json:"recoveries,omitempty"`
	// LastRecoveryID is the n of the last "rec-n" issued.
	LastRecoveryID int `json:"last_recovery_id,omitempty"`
}

// Snapshot returns the FSM's state. The recoveries slice is shared: the
// FSM never modifies it in place (copy-on-write), and neither may the
// caller.
func (f *FSM) Snapshot() FSMSnapshot {
	return FSMSnapshot{
		State:          f.State,
		ReadAfterWrite: f.ReadAfterWrite,
		LastWriteTool:  f.LastWriteTool,
		Recoveries:     f.recoveries,
		LastRecoveryID: f.lastID,
	}
}

// SnapshotError names the field of a snapshot that cannot be restored.
type SnapshotError struct {
	Field   string // e.g. "recoveries[2].recovery_id"
	Problem string
}

func (e *SnapshotError) Error() string {
	return "workflow: snapshot field " + e.Field + ": " + e.Problem
}

// RestoreFSM rebuilds an FSM from a snapshot Snapshot made, checking it as
// untrusted input: a state the FSM does not know, more recoveries than it
// keeps (64), a recovery id it could not have issued or issued twice, a
// recovery without an error code or attempts.
func RestoreFSM(s FSMSnapshot) (FSM, error) {
	if s.State > Verifying {
		return FSM{}, &SnapshotError{"state", "unknown state " + strconv.Itoa(int(s.State))}
	}
	if s.LastRecoveryID < 0 {
		return FSM{}, &SnapshotError{"last_recovery_id", "negative"}
	}
	if len(s.Recoveries) > maxPendingRecoveries {
		return FSM{}, &SnapshotError{"recoveries", strconv.Itoa(len(s.Recoveries)) + " entries; the FSM keeps at most " + strconv.Itoa(maxPendingRecoveries)}
	}
	prev := 0
	for i, p := range s.Recoveries {
		at := "recoveries[" + strconv.Itoa(i) + "]"
		n, err := strconv.Atoi(strings.TrimPrefix(p.RecoveryID, "rec-"))
		// Ids are issued in order, oldest first: each above the one before,
		// none above the last issued.
		if !strings.HasPrefix(p.RecoveryID, "rec-") || err != nil || n <= prev || n > s.LastRecoveryID || "rec-"+strconv.Itoa(n) != p.RecoveryID {
			return FSM{}, &SnapshotError{at + ".recovery_id", strconv.Quote(p.RecoveryID) + " is not an id this FSM issued, in order"}
		}
		prev = n
		if p.ErrorCode == "" {
			return FSM{}, &SnapshotError{at + ".error_code", "empty"}
		}
		if p.Attempts < 1 {
			return FSM{}, &SnapshotError{at + ".attempts", "less than 1"}
		}
	}
	f := FSM{State: s.State, ReadAfterWrite: s.ReadAfterWrite, LastWriteTool: s.LastWriteTool, lastID: s.LastRecoveryID}
	if len(s.Recoveries) > 0 {
		f.recoveries = append([]PendingRecovery(nil), s.Recoveries...)
	}
	return f, nil
}
