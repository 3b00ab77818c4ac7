package detect

import (
	"fmt"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// watchEvent is an event of agent at seq, stamped at (auditd's clock).
func watchEvent(agent string, seq int64, at time.Time) audit.Event {
	return audit.Event{SchemaVersion: 1, Seq: seq, EventID: fmt.Sprintf("evt-%d", seq), Timestamp: at,
		EventType: audit.TypeToolExecution, Agent: agent, ActionClass: audit.ActionRead}
}

var watchT0 = time.Date(2026, 1, 15, 14, 30, 0, 0, time.UTC)

func TestVolumeWatch(t *testing.T) {
	type step struct {
		agent string
		at    time.Duration // after watchT0
		n     int           // events, 1 ms apart
	}
	tests := []struct {
		name  string
		max   int
		steps []step
		want  []string // "agent count" per alert, in order
	}{
		{name: "at the threshold", max: 100, steps: []step{{"a", 0, 100}}},
		{name: "one over", max: 100, steps: []step{{"a", 0, 101}}, want: []string{"a 101"}},
		// The seed's burst of 150: one alert, not fifty.
		{name: "burst alerts once", max: 100, steps: []step{{"a", 0, 150}}, want: []string{"a 101"}},
		{name: "per agent", max: 100, steps: []step{{"a", 0, 60}, {"b", 0, 60}, {"a", time.Second, 41}}, want: []string{"a 101"}},
		{name: "two agents over", max: 2, steps: []step{{"a", 0, 3}, {"b", 0, 3}}, want: []string{"a 3", "b 3"}},
		// Spread over two minutes: never more than 100 in one.
		{name: "sliding window", max: 100, steps: []step{{"a", 0, 80}, {"a", 61 * time.Second, 80}}},
		{name: "window edge", max: 3, steps: []step{{"a", 0, 2}, {"a", 59 * time.Second, 2}}, want: []string{"a 4"}},
		// A sustained burst: one alert a minute.
		{name: "sustained", max: 3, steps: []step{{"a", 0, 10}, {"a", 30 * time.Second, 10}, {"a", 61 * time.Second, 5}},
			want: []string{"a 4", "a 11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewVolumeWatch(tt.max)
			var got []string
			seq := int64(0)
			for _, s := range tt.steps {
				for i := range s.n {
					seq++
					now := watchT0.Add(s.at + time.Duration(i)*time.Millisecond)
					if a, ok := w.Observe(watchEvent(s.agent, seq, now), now.Add(time.Second)); ok {
						got = append(got, fmt.Sprintf("%s %d", a.Agent, a.Count))
						if a.Type != HighVolume || a.Threshold != tt.max || a.Seq != seq || a.Severity != Warning ||
							a.Message != fmt.Sprintf("High event volume detected: %d events in the last minute", a.Count) ||
							!a.Timestamp.Equal(now.Add(time.Second)) || a.SchemaVersion != 1 {
							t.Errorf("alert %+v", a)
						}
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("alerts %v; want %v", got, tt.want)
			}
		})
	}
}

// A replayed backlog is judged by the events' own times, not the replay's.
func TestVolumeWatchReplay(t *testing.T) {
	w := NewVolumeWatch(100)
	now := watchT0.Add(24 * time.Hour)
	for i := range 500 {
		at := watchT0.Add(time.Duration(i) * time.Second) // one a second: never a burst
		if a, ok := w.Observe(watchEvent("a", int64(i+1), at), now); ok {
			t.Fatalf("alert on a slow backlog: %+v", a)
		}
	}
}

// Many one-off agents are forgotten once idle.
func TestVolumeWatchPrunes(t *testing.T) {
	w := NewVolumeWatch(100)
	for i := range 5000 {
		at := watchT0.Add(time.Duration(i) * 100 * time.Millisecond)
		w.Observe(watchEvent(fmt.Sprintf("agent-%d", i), int64(i+1), at), at)
	}
	if n := len(w.agents); n > 2*minVolumePrune+600 {
		t.Fatalf("%d agents remembered", n)
	}
}

func BenchmarkVolumeWatch(b *testing.B) {
	w := NewVolumeWatch(100)
	ev := watchEvent("a", 1, watchT0)
	for i := range b.N {
		ev.Timestamp = watchT0.Add(time.Duration(i) * time.Millisecond)
		w.Observe(ev, ev.Timestamp)
	}
}
