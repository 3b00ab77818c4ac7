package detect

import (
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// DefaultClockSkew is how far a timestamp may stray before timestamp_gap
// alerts: more than NTP-synchronized clocks drift, less than any jump
// worth investigating.
const DefaultClockSkew = 5 * time.Minute

// Kinds of timestamp gap (TimeGapDetails.Kind).
const (
	GapFuture    = "future"    // later than the detection clock
	GapBackwards = "backwards" // earlier than the previous event's
	GapStale     = "stale"     // a live event stamped long before it arrived
)

// TimeGapDetails are the details of a timestamp_gap alert.
type TimeGapDetails struct {
	Kind      string    `json:"kind"`
	EventTime time.Time `json:"event_time"`
	// Reference is what the event's time was compared with: the detection
	// clock (future, stale) or the previous event's timestamp (backwards,
	// with its seq).
	Reference    time.Time `json:"reference"`
	ReferenceSeq int64     `json:"reference_seq,omitempty"`
	GapSeconds   float64   `json:"gap_seconds"`
	ToleranceSec float64   `json:"tolerance_seconds"`
}

// TimeGapWatch raises timestamp_gap (seed 003 "Security Detection":
// "Suspicious time jumps: events with timestamps far in the past/future").
//
// auditd stamps each event with its own clock when it receives it, so an
// agent cannot choose a timestamp; what a gap reveals is auditd's clock
// jumping, or rows written into the database behind auditd's back. An
// event alerts when its timestamp is
//
//   - more than the tolerance after the detection clock (future);
//   - more than the tolerance before the previous event's (backwards): seq
//     order is commit order, so timestamps only ever step back by the few
//     milliseconds of a group commit;
//   - for a live event only, more than the tolerance before the detection
//     clock (stale): a live event was committed a moment ago.
//
// Replayed events are old by nature, so "far in the past" is judged only
// for live ones: catching up on a day's backlog raises nothing. A clock
// that stays off alerts once: after a future or stale alert, the next
// alert of that kind waits until an event is back within the tolerance.
type TimeGapWatch struct {
	tolerance time.Duration
	prev      time.Time
	prevSeq   int64
	future    bool // in a future episode that has alerted
	stale     bool // in a stale episode that has alerted
}

// NewTimeGapWatch returns a watch with the given tolerance (DefaultClockSkew
// when not positive).
func NewTimeGapWatch(tolerance time.Duration) *TimeGapWatch {
	if tolerance <= 0 {
		tolerance = DefaultClockSkew
	}
	return &TimeGapWatch{tolerance: tolerance}
}

// Observe checks ev's timestamp; live says ev arrived as it was committed
// rather than replayed from the log.
func (w *TimeGapWatch) Observe(ev audit.Event, live bool, now time.Time) (Alert, bool) {
	t := ev.Timestamp
	if t.IsZero() {
		return Alert{}, false
	}
	prev, prevSeq := w.prev, w.prevSeq
	w.prev, w.prevSeq = t, ev.Seq

	if d := t.Sub(now); d > w.tolerance {
		if w.future {
			return Alert{}, false
		}
		w.future = true
		return w.alert(ev, GapFuture, now, now, 0, d,
			fmt.Sprintf("Timestamp gap: event timestamped %s in the future of the auditor's clock", roundGap(d)))
	}
	w.future = false
	if !prev.IsZero() {
		if d := prev.Sub(t); d > w.tolerance {
			return w.alert(ev, GapBackwards, now, prev, prevSeq, d,
				fmt.Sprintf("Timestamp gap: event timestamped %s before the previous event (seq %d)", roundGap(d), prevSeq))
		}
	}
	if !live {
		return Alert{}, false
	}
	if d := now.Sub(t); d > w.tolerance {
		if w.stale {
			return Alert{}, false
		}
		w.stale = true
		return w.alert(ev, GapStale, now, now, 0, d,
			fmt.Sprintf("Timestamp gap: live event timestamped %s in the past", roundGap(d)))
	}
	w.stale = false
	return Alert{}, false
}

func (w *TimeGapWatch) alert(ev audit.Event, kind string, now, ref time.Time, refSeq int64, gap time.Duration, msg string) (Alert, bool) {
	return eventAlert(TimestampGap, Warning, ev, now, msg, TimeGapDetails{
		Kind: kind, EventTime: ev.Timestamp.UTC(), Reference: ref.UTC(), ReferenceSeq: refSeq,
		GapSeconds: gap.Seconds(), ToleranceSec: w.tolerance.Seconds(),
	}), true
}

// roundGap shows a gap to the second ("1h0m3s"), or to the millisecond
// under a second.
func roundGap(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
