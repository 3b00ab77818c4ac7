package detect

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func TestTimeGapWatch(t *testing.T) {
	type obs struct {
		at   time.Duration // event time after watchT0
		live bool
		now  time.Duration // detection clock after watchT0
	}
	const m = time.Minute
	tests := []struct {
		name string
		evs  []obs
		want []string // "seq kind" per alert
	}{
		{name: "in step", evs: []obs{{0, true, 0}, {time.Second, true, time.Second}, {2 * time.Second, true, 3 * time.Second}}},
		// Group commits reorder timestamps by milliseconds: fine.
		{name: "jitter", evs: []obs{{10 * time.Millisecond, true, 0}, {5 * time.Millisecond, true, 0}}},
		{name: "future", evs: []obs{{0, true, 0}, {10 * m, true, 0}}, want: []string{"2 future"}},
		{name: "future within tolerance", evs: []obs{{4 * m, true, 0}}},
		// A clock that stays ahead alerts once, then again after it recovered.
		{name: "future episode", evs: []obs{{10 * m, true, 0}, {10*m + 1, true, 0}, {10*m + 2, false, 0}, {time.Second, true, time.Second}, {20 * m, true, time.Second}},
			want: []string{"1 future", "4 backwards", "5 future"}},
		{name: "backwards", evs: []obs{{60 * m, false, 61 * m}, {30 * m, false, 61 * m}}, want: []string{"2 backwards"}},
		// Replayed history is old by nature: no alert.
		{name: "replay", evs: []obs{{0, false, 24 * 60 * m}, {m, false, 24 * 60 * m}, {2 * m, false, 24 * 60 * m}}},
		// A live event from long ago is stale, once per episode.
		{name: "stale", evs: []obs{{0, true, 60 * m}, {time.Second, true, 60 * m}, {60 * m, true, 60 * m}, {time.Second, true, 60 * m}},
			want: []string{"1 stale", "4 backwards"}},
		{name: "stale again", evs: []obs{{0, true, 60 * m}, {60 * m, true, 60 * m}, {60*m + time.Second, true, 120 * m}},
			want: []string{"1 stale", "3 stale"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewTimeGapWatch(5 * m)
			var got []string
			for i, o := range tt.evs {
				now := watchT0.Add(o.now)
				a, ok := w.Observe(watchEvent("a", int64(i+1), watchT0.Add(o.at)), o.live, now)
				if !ok {
					continue
				}
				var d TimeGapDetails
				if err := json.Unmarshal(a.Details, &d); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%d %s", a.Seq, d.Kind))
				if a.Type != TimestampGap || !a.Timestamp.Equal(now) || d.ToleranceSec != 300 || d.GapSeconds <= 300 ||
					!d.EventTime.Equal(watchT0.Add(o.at)) {
					t.Errorf("alert %+v %+v", a, d)
				}
				if d.Kind == GapBackwards && (d.ReferenceSeq != int64(i) || d.Reference.Sub(d.EventTime).Seconds() != d.GapSeconds) {
					t.Errorf("backwards details %+v", d)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("alerts %v; want %v", got, tt.want)
			}
		})
	}
}

func TestTimeGapMessage(t *testing.T) {
	w := NewTimeGapWatch(0)
	a, ok := w.Observe(watchEvent("a", 7, watchT0.Add(2*time.Hour+3*time.Second)), true, watchT0)
	if !ok || a.Message != "Timestamp gap: event timestamped 2h0m3s in the future of the auditor's clock" {
		t.Fatalf("%v %q", ok, a.Message)
	}
	a, ok = w.Observe(watchEvent("a", 8, watchT0.Add(-time.Hour)), false, watchT0)
	if !ok || a.Message != "Timestamp gap: event timestamped 3h0m3s before the previous event (seq 7)" {
		t.Fatalf("%v %q", ok, a.Message)
	}
	if _, ok := w.Observe(watchEvent("a", 9, time.Time{}), true, watchT0); ok {
		t.Fatal("an event without a timestamp alerted")
	}
}
