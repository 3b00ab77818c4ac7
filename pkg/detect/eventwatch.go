package detect

import (
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
)

// DefaultApprovalMemory is how many approvals an EventWatch remembers from
// the stream before it must ask auditd again.
const DefaultApprovalMemory = 10000

// EventWatchConfig configures the auditor's per-event detections.
type EventWatchConfig struct {
	// MaxEventsPerMinute is the high_volume threshold per agent (0 means
	// DefaultMaxEventsPerMinute).
	MaxEventsPerMinute int
	// Hours are the allowed hours of off_hours.
	Hours Hours
	// ClockSkew is the tolerance of timestamp_gap (0 means
	// DefaultClockSkew).
	ClockSkew time.Duration
	// ApprovalMemory bounds the approvals remembered from the stream (0
	// means DefaultApprovalMemory).
	ApprovalMemory int
}

// Validate reports the first invalid field.
func (c EventWatchConfig) Validate() error {
	switch {
	case c.MaxEventsPerMinute < 0:
		return fmt.Errorf("max events per minute %d is negative", c.MaxEventsPerMinute)
	case c.ClockSkew < 0:
		return fmt.Errorf("clock skew %s is negative", c.ClockSkew)
	case c.ApprovalMemory < 0:
		return fmt.Errorf("approval memory %d is negative", c.ApprovalMemory)
	}
	return c.Hours.Validate()
}

// EventWatch runs the auditor's detections over the audit stream, one
// event at a time in seq order (DESIGN §8): seq_gap, timestamp_gap,
// unauthorized_destructive, high_volume and off_hours. The chain-level
// detections (chain_tampering, head_regressed) judge verification reports
// and pins instead: ChainWatch, HeadWatch.
type EventWatch struct {
	Seq       *SeqWatch
	Time      *TimeGapWatch
	Volume    *VolumeWatch
	OffHours  *OffHoursWatch
	Approvals *ApprovalBook
}

// NewEventWatch returns the detections for a stream that resumes after seq
// after (negative: unknown, see NewSeqWatch).
func NewEventWatch(c EventWatchConfig, after int64) (*EventWatch, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.MaxEventsPerMinute == 0 {
		c.MaxEventsPerMinute = DefaultMaxEventsPerMinute
	}
	if c.ApprovalMemory == 0 {
		c.ApprovalMemory = DefaultApprovalMemory
	}
	return &EventWatch{
		Seq:       NewSeqWatch(after),
		Time:      NewTimeGapWatch(c.ClockSkew),
		Volume:    NewVolumeWatch(c.MaxEventsPerMinute),
		OffHours:  NewOffHoursWatch(c.Hours),
		Approvals: NewApprovalBook(c.ApprovalMemory),
	}, nil
}

// ApprovalLookup returns the approval that ev names, for an approval the
// watch has not seen on the stream: the caller asks auditd. earlier are
// the events before ev (by seq) that cited it, which the watch did not
// see either, so that it knows whether one of them used the consumption
// already (ApprovalBook.Learn). ok is false when the approval or its
// citations cannot be learnt, which counts as not approved (fail closed).
type ApprovalLookup func(ev audit.Event) (r approval.Request, earlier []audit.Event, ok bool)

// Observe runs every per-event detection on ev and returns its alerts, in
// the order above. live says ev arrived as it was committed rather than
// replayed (see TimeGapWatch). lookup may be nil: approvals not seen on the
// stream are then unknown.
func (w *EventWatch) Observe(ev audit.Event, live bool, lookup ApprovalLookup, now time.Time) []Alert {
	var alerts []Alert
	add := func(a Alert, ok bool) {
		if ok {
			alerts = append(alerts, a)
		}
	}
	w.Approvals.Observe(ev)
	add(w.Seq.Observe(ev, now))
	add(w.Time.Observe(ev, live, now))
	if IsDestructiveAction(ev) {
		add(w.Approvals.Judge(ev, w.grant(ev, lookup), now))
	}
	add(w.Volume.Observe(ev, now))
	add(w.OffHours.Observe(ev, now))
	return alerts
}

// grant is what the watch knows of ev's approval, asking lookup about one
// it has not seen.
func (w *EventWatch) grant(ev audit.Event, lookup ApprovalLookup) Grant {
	g, known := w.Approvals.Grant(ev)
	if known || lookup == nil {
		return g
	}
	r, earlier, ok := lookup(ev)
	if !ok {
		return Grant{}
	}
	w.Approvals.Learn(r, earlier)
	g, _ = w.Approvals.Grant(ev)
	return g
}
