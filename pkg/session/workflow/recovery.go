package workflow

import (
	"strconv"
	"time"
)

// PendingRecovery is a blocked call the agent may recover from by itself
// (seed 000 §7 Recovery Tracking): when the same tool later succeeds, the
// reducer counts an auto-recovery success with ErrorCode and Tool.
type PendingRecovery struct {
	RecoveryID string    `json:"recovery_id"`
	ErrorCode  string    `json:"error_code"` // FSM_BLOCKED or STRICT_RESOLUTION
	Tool       string    `json:"tool"`
	CreatedAt  time.Time `json:"created_at"`
	Attempts   int       `json:"attempts"`
}

// RecoveryTTL is how long a pending recovery waits for its success.
const RecoveryTTL = 10 * time.Minute

// maxPendingRecoveries bounds the list: unknown tool names are the model's
// to choose, so distinct (code, tool) pairs are unbounded within a TTL.
// Past it the oldest is dropped.
const maxPendingRecoveries = 64

// expired: older than RecoveryTTL at now (exactly RecoveryTTL is still
// pending, as upstream's Before(now-TTL)).
func (p *PendingRecovery) expired(now time.Time) bool {
	return now.Sub(p.CreatedAt) > RecoveryTTL
}

// TrackPendingRecovery records a block of tool with code and returns its
// id. A block of the same code and tool while one is pending counts one
// more attempt under the same id; ids are "rec-1", "rec-2"… in the order
// of first blocks, so a replayed log gives the same ids.
func (f *FSM) TrackPendingRecovery(code, tool string, now time.Time) string {
	live := f.live(now)
	for i := range live {
		if live[i].ErrorCode == code && live[i].Tool == tool {
			next := make([]PendingRecovery, len(live))
			copy(next, live)
			next[i].Attempts++
			f.recoveries = next
			return next[i].RecoveryID
		}
	}
	f.lastID++
	id := "rec-" + strconv.Itoa(f.lastID)
	if len(live) >= maxPendingRecoveries {
		live = live[len(live)-maxPendingRecoveries+1:]
	}
	next := make([]PendingRecovery, len(live), len(live)+1)
	copy(next, live)
	f.recoveries = append(next, PendingRecovery{RecoveryID: id, ErrorCode: code, Tool: tool, CreatedAt: now, Attempts: 1})
	return id
}

// CheckRecoverySuccess is called after tool succeeded: it removes and
// returns the oldest pending recovery of tool, or nil. Expired recoveries
// are dropped on the way and never returned. With nothing pending it does
// not allocate.
func (f *FSM) CheckRecoverySuccess(tool string, now time.Time) *PendingRecovery {
	if len(f.recoveries) == 0 {
		return nil
	}
	live := f.live(now)
	for i := range live {
		if live[i].Tool == tool {
			pr := live[i]
			next := make([]PendingRecovery, 0, len(live)-1)
			next = append(next, live[:i]...)
			f.recoveries = append(next, live[i+1:]...)
			return &pr
		}
	}
	f.recoveries = live
	return nil
}

// PendingRecoveries lists the recoveries still pending at now, oldest
// first. The result is the caller's.
func (f *FSM) PendingRecoveries(now time.Time) []PendingRecovery {
	var out []PendingRecovery
	for _, p := range f.recoveries {
		if !p.expired(now) {
			out = append(out, p)
		}
	}
	return out
}

// live is f.recoveries without the expired ones: the same slice when none
// expired, else a fresh one (copy-on-write, see FSM).
func (f *FSM) live(now time.Time) []PendingRecovery {
	for i := range f.recoveries {
		if f.recoveries[i].expired(now) {
			out := make([]PendingRecovery, 0, len(f.recoveries)-1)
			for _, p := range f.recoveries {
				if !p.expired(now) {
					out = append(out, p)
				}
			}
			return out
		}
	}
	return f.recoveries
}
