package detect

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/termtext"
)

// Pin is a point of the audit log a watcher vouches for: the log had Size
// events and the last one hashed to Head. A hash chain proves that nothing
// before the head changed, but not that the tail is still there: deleting
// the last rows leaves a shorter chain that verifies (DESIGN §6: "A plain
// chain cannot detect tail truncation"). A pin held outside the database
// can: the log must never get shorter than the pin, and the event at the
// pinned seq must keep its hash.
type Pin struct {
	Size int64  `json:"size"`
	Head string `json:"head"`
}

// IsZero reports whether p pins nothing (an empty log, or no pin yet).
func (p Pin) IsZero() bool { return p.Size == 0 }

// Validate checks that p is a pin of an empty log (size 0, no head) or of
// Size > 0 events with a SHA-256 hex head.
func (p Pin) Validate() error {
	switch {
	case p.Size < 0:
		return fmt.Errorf("size %d is negative", p.Size)
	case p.Size == 0 && p.Head != "":
		return errors.New("size 0 (an empty log) with a head hash")
	case p.Size > 0 && !isEventHash(p.Head):
		return errors.New("head is not a SHA-256 hash (64 lowercase hex digits)")
	}
	return nil
}

// isEventHash reports whether s is an event_hash: 64 lowercase hex digits.
func isEventHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ChainHead is the log as it is now, as seen from a pin: the seq of its
// last event, and the hash of the event at the pinned seq ("" when there is
// none).
type ChainHead struct {
	Size  int64
	AtPin string
}

// Who pinned a Pin (HeadDetails.PinnedBy).
const (
	PinnedByVerification = "verification" // a clean verification of the whole chain
	PinnedByStream       = "stream"       // the last event the watcher saw on the stream
)

// Kinds of regression (HeadDetails.Kind).
const (
	HeadShrank    = "shrank"    // the log ends before the pinned seq
	HeadRewritten = "rewritten" // the event at the pinned seq has another hash, or is gone
)

// HeadDetails are the details of a head_regressed alert.
type HeadDetails struct {
	Kind        string `json:"kind"`
	PinnedBy    string `json:"pinned_by"`
	PinnedSize  int64  `json:"pinned_size"`
	PinnedHead  string `json:"pinned_head"`
	CurrentSize int64  `json:"current_size"`
	// CurrentHashAtPin is the hash of the event at the pinned seq now
	// ("" when there is none).
	CurrentHashAtPin string `json:"current_hash_at_pin"`
}

// CheckHead returns the head_regressed alert when the log cur no longer
// extends pin (DESIGN §8: "the log got shorter than the (size, head) it
// pinned"): it ends before the pinned seq, or the event at the pinned seq
// now hashes to something else (the tail was truncated and rewritten past
// the pin). pinnedBy says where the pin came from. A zero pin checks
// nothing.
func CheckHead(pin Pin, pinnedBy string, cur ChainHead, now time.Time) (Alert, bool) {
	if pin.IsZero() {
		return Alert{}, false
	}
	d := HeadDetails{PinnedBy: pinnedBy, PinnedSize: pin.Size, PinnedHead: pin.Head, CurrentSize: cur.Size, CurrentHashAtPin: cur.AtPin}
	var msg string
	switch {
	case cur.Size < pin.Size:
		d.Kind = HeadShrank
		d.CurrentHashAtPin = ""
		msg = fmt.Sprintf("Audit log shrank: it ends at seq %d, but seq %d (head %s) was pinned by %s; events were deleted from its tail",
			cur.Size, pin.Size, shortHash(pin.Head), pinnedBy)
	case cur.AtPin != pin.Head:
		d.Kind = HeadRewritten
		state := "is gone"
		if cur.AtPin != "" {
			state = "now hashes to " + shortHash(cur.AtPin)
		}
		msg = fmt.Sprintf("Audit log rewritten: the event at pinned seq %d %s, but %s pinned %s",
			pin.Size, state, pinnedBy, shortHash(pin.Head))
	default:
		return Alert{}, false
	}
	details, _ := json.Marshal(d)
	return Alert{
		SchemaVersion: audit.SchemaVersion,
		Type:          HeadRegressed,
		Severity:      Critical,
		Timestamp:     now.UTC(),
		Message:       msg,
		Seq:           pin.Size,
		Details:       details,
	}, true
}

// shortHash is the first 12 hex digits of a hash, for messages.
func shortHash(h string) string { return termtext.Truncate(h, 12) }

// HeadWatch is CheckHead that alerts once per pin and kind of regression:
// a log that stays truncated is one alert, not one per check.
type HeadWatch struct {
	seen map[string]bool
}

// Observe is CheckHead, deduplicated.
func (w *HeadWatch) Observe(pin Pin, pinnedBy string, cur ChainHead, now time.Time) (Alert, bool) {
	a, ok := CheckHead(pin, pinnedBy, cur, now)
	if !ok {
		return a, false
	}
	var d HeadDetails
	_ = json.Unmarshal(a.Details, &d)
	key := fmt.Sprintf("%d/%s/%s", pin.Size, pin.Head, d.Kind)
	if w.seen[key] {
		return Alert{}, false
	}
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	w.seen[key] = true
	return a, true
}
