package detect

import (
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// VolumeWindow is the sliding window of high_volume: seed 003 "Security
// Detection" counts events per minute.
const VolumeWindow = time.Minute

// DefaultMaxEventsPerMinute is the seed's threshold (">100 events/minute").
const DefaultMaxEventsPerMinute = 100

// VolumeWatch raises high_volume when one agent records more than Max
// events within a sliding minute (seed 003 "Security Detection": "Burst of
// activity, >100 events/minute (configurable)").
//
// The window slides over the events' own timestamps (auditd's receive
// time), not over the detection clock, so that replaying a backlog judges
// each burst when it happened rather than as one huge burst now.
//
// An agent alerts once per window: after an alert, its further events
// raise nothing until a minute (of event time) has passed, so a sustained
// burst yields one alert a minute rather than one per event. Memory is the
// events of the last minute, per agent; idle agents are forgotten.
type VolumeWatch struct {
	max    int
	agents map[string]*agentVolume
	// newest is the latest event time seen: idle agents are judged by it.
	newest  int64
	pruneAt int
}

// agentVolume is one agent's window: the timestamps (Unix nanoseconds) of
// its events in the last minute, oldest first, as a queue in times[head:].
type agentVolume struct {
	times       []int64
	head        int
	quietUntil  int64 // no alert before this event time (the last alert + a window)
	lastEventNS int64
}

// minVolumePrune is the agent count under which idle agents are kept.
const minVolumePrune = 1024

// NewVolumeWatch returns a watch alerting above limit events per minute
// per agent (at least 1).
func NewVolumeWatch(limit int) *VolumeWatch {
	return &VolumeWatch{max: max(limit, 1), agents: map[string]*agentVolume{}, pruneAt: minVolumePrune}
}

// Threshold is the number of events per minute an agent may record.
func (w *VolumeWatch) Threshold() int { return w.max }

// Observe counts ev and returns the high_volume alert when it takes its
// agent over the threshold. Events without a timestamp count at now.
func (w *VolumeWatch) Observe(ev audit.Event, now time.Time) (Alert, bool) {
	t := ev.Timestamp
	if t.IsZero() {
		t = now
	}
	ts := t.UnixNano()
	w.newest = max(w.newest, ts)
	a := w.agents[ev.Agent]
	if a == nil {
		if len(w.agents) >= w.pruneAt {
			w.prune()
		}
		a = &agentVolume{}
		w.agents[ev.Agent] = a
	}
	a.lastEventNS = max(a.lastEventNS, ts)
	// Events arrive in seq order, which is nearly but not exactly time
	// order (auditd stamps on receipt and numbers on commit): the window
	// ends at the agent's latest event time.
	cutoff := a.lastEventNS - int64(VolumeWindow)
	a.times = append(a.times, ts)
	for a.head < len(a.times) && a.times[a.head] <= cutoff {
		a.head++
	}
	if a.head > 0 && a.head >= len(a.times)/2 {
		a.times = append(a.times[:0], a.times[a.head:]...)
		a.head = 0
	}
	count := len(a.times) - a.head
	if count <= w.max || ts < a.quietUntil {
		return Alert{}, false
	}
	a.quietUntil = ts + int64(VolumeWindow)
	// The seed's wording ("Webhook Alerts"): "High event volume detected:
	// 150 events in the last minute".
	alert := eventAlert(HighVolume, Warning, ev, now, fmt.Sprintf("High event volume detected: %d events in the last minute", count), nil)
	alert.Count, alert.Threshold = count, w.max
	return alert, true
}

// prune forgets agents with no event in the last window whose quiet time
// is over: their state could not change an alert any more. The next prune
// happens when the map has doubled, so pruning costs O(1) per event.
func (w *VolumeWatch) prune() {
	cutoff := w.newest - int64(VolumeWindow)
	for name, a := range w.agents {
		if a.lastEventNS <= cutoff && a.quietUntil <= w.newest {
			delete(w.agents, name)
		}
	}
	w.pruneAt = max(minVolumePrune, 2*len(w.agents))
}
