package detect

import (
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// SeqGapDetails are the details of a seq_gap alert.
type SeqGapDetails struct {
	Expected int64 `json:"expected"`
	Got      int64 `json:"got"`
	// Missing is how many seqs were skipped (0 when the stream went
	// backwards or repeated one).
	Missing int64 `json:"missing"`
}

// SeqWatch raises seq_gap when an event's seq is not the previous one plus
// one (DESIGN §8). auditd's stream delivers every committed event in order,
// with no gap and no duplicate, so a skipped seq means a row deleted from
// the middle of the log, and a repeated or earlier one a log rewritten
// under the stream.
type SeqWatch struct {
	last  int64
	known bool
}

// NewSeqWatch returns a watch for a stream that resumes after seq after
// (0: from the start); a negative after means the next seq is not known
// (a live-only subscription), and the first event sets it.
func NewSeqWatch(after int64) *SeqWatch {
	w := &SeqWatch{}
	w.Reset(after)
	return w
}

// Reset makes the next expected seq after+1, for a stream resubscribed on
// purpose at another point (negative: unknown).
func (w *SeqWatch) Reset(after int64) { w.last, w.known = after, after >= 0 }

// Last returns the last seq seen (or the one Reset named) and whether it
// is known.
func (w *SeqWatch) Last() (int64, bool) { return w.last, w.known }

// Observe checks ev's seq.
func (w *SeqWatch) Observe(ev audit.Event, now time.Time) (Alert, bool) {
	last, known := w.last, w.known
	w.last, w.known = ev.Seq, true
	if !known || ev.Seq == last+1 {
		return Alert{}, false
	}
	d := SeqGapDetails{Expected: last + 1, Got: ev.Seq}
	var msg string
	if ev.Seq > last+1 {
		d.Missing = ev.Seq - last - 1
		msg = fmt.Sprintf("Sequence gap: seq %d follows seq %d; %d event(s) missing from the log", ev.Seq, last, d.Missing)
	} else {
		msg = fmt.Sprintf("Sequence gap: seq %d follows seq %d; the log went backwards", ev.Seq, last)
	}
	return eventAlert(SeqGap, Critical, ev, now, msg, d), true
}
