package detect

import (
	"errors"
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// Hours are the allowed hours of activity: [Start, End) in Loc's wall-clock
// time. Start > End wraps midnight (22 to 6 allows the night); End 24 is
// midnight; 0 to 24 allows every hour. The seed's default is 6 to 22 in
// local time (seed 003 "Security Detection": "Events outside 6 AM - 10 PM
// local time"; "Troubleshooting › Off-Hours Alerts": the system time zone).
type Hours struct {
	Start, End int
	Loc        *time.Location // nil means UTC
}

// DefaultHours are the seed's 06:00–22:00 in loc.
func DefaultHours(loc *time.Location) Hours { return Hours{Start: 6, End: 22, Loc: loc} }

// Validate reports a Start or End out of range, or an empty window.
func (h Hours) Validate() error {
	switch {
	case h.Start < 0 || h.Start > 23:
		return fmt.Errorf("allowed hours: start %d is not an hour from 0 to 23", h.Start)
	case h.End < 0 || h.End > 24:
		return fmt.Errorf("allowed hours: end %d is not an hour from 0 to 24", h.End)
	case h.Start == h.End:
		return errors.New("allowed hours: start and end are the same hour, which allows no hour at all; 0 to 24 allows every hour")
	}
	return nil
}

func (h Hours) loc() *time.Location {
	if h.Loc == nil {
		return time.UTC
	}
	return h.Loc
}

// Allowed reports whether t falls in the allowed hours. It reads the wall
// clock in Loc, so it holds across DST changes: 06:00 is 06:00 on the day
// the clocks change too.
func (h Hours) Allowed(t time.Time) bool {
	hour := t.In(h.loc()).Hour()
	if h.Start < h.End {
		return h.Start <= hour && hour < h.End
	}
	return hour >= h.Start || hour < h.End // wraps midnight (End may be 0)
}

// offPeriod names the off-hours period that t (not allowed) falls in: the
// calendar date on which it ends, when the allowed hours start again.
func (h Hours) offPeriod(t time.Time) string {
	y, m, d := t.In(h.loc()).Date()
	if h.Start < h.End && t.In(h.loc()).Hour() >= h.End {
		d++ // evening: the period ends tomorrow morning
	}
	// Calendar arithmetic in UTC: no DST day is 23 or 25 hours long there.
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}

// String is "06:00–22:00 Europe/Paris".
func (h Hours) String() string {
	return fmt.Sprintf("%02d:00–%02d:00 %s", h.Start, h.End, h.loc())
}

// OffHoursDetails are the details of an off_hours alert.
type OffHoursDetails struct {
	EventTime    time.Time `json:"event_time"` // UTC
	LocalTime    string    `json:"local_time"` // 2026-01-15T23:04:05+01:00
	Timezone     string    `json:"timezone"`   // Europe/Paris, Local, UTC
	AllowedStart int       `json:"allowed_start"`
	AllowedEnd   int       `json:"allowed_end"`
	Period       string    `json:"period"` // the date the off-hours period ends
}

// OffHoursWatch raises off_hours for an event whose timestamp is outside
// the allowed hours: once per agent per off-hours period (one night), at
// its first event, so that an agent working through the night is one
// alert rather than one per command.
type OffHoursWatch struct {
	hours Hours
	seen  map[string]string // agent → the period it last alerted in
}

// maxOffHoursAgents bounds the agents remembered; agent names come from
// the events, so they are not trusted to be few.
const maxOffHoursAgents = 10000

// NewOffHoursWatch returns a watch for h, which must be valid.
func NewOffHoursWatch(h Hours) *OffHoursWatch {
	return &OffHoursWatch{hours: h, seen: map[string]string{}}
}

// Hours returns the allowed hours.
func (w *OffHoursWatch) Hours() Hours { return w.hours }

// Observe returns the off_hours alert for ev when it is its agent's first
// event in the current off-hours period. Events without a timestamp are
// judged at now.
func (w *OffHoursWatch) Observe(ev audit.Event, now time.Time) (Alert, bool) {
	t := ev.Timestamp
	if t.IsZero() {
		t = now
	}
	if w.hours.Allowed(t) {
		return Alert{}, false
	}
	period := w.hours.offPeriod(t)
	if w.seen[ev.Agent] == period {
		return Alert{}, false
	}
	if len(w.seen) >= maxOffHoursAgents {
		for a, p := range w.seen {
			if p != period {
				delete(w.seen, a)
			}
		}
	}
	w.seen[ev.Agent] = period
	local := t.In(w.hours.loc())
	who := "activity"
	if ev.Agent != "" {
		who = "agent " + ev.Agent + " active"
	}
	msg := fmt.Sprintf("Off-hours activity: %s at %s %s, outside the allowed hours %s",
		who, local.Format("15:04"), local.Format("Mon 2006-01-02"), w.hours)
	return eventAlert(OffHours, Warning, ev, now, msg, OffHoursDetails{
		EventTime: t.UTC(), LocalTime: local.Format(time.RFC3339), Timezone: w.hours.loc().String(),
		AllowedStart: w.hours.Start, AllowedEnd: w.hours.End, Period: period,
	}), true
}
