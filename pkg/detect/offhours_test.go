package detect

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func watchZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s: %v", name, err)
	}
	return loc
}

func TestHoursValidate(t *testing.T) {
	tests := []struct {
		h    Hours
		want string // "" means valid
	}{
		{Hours{Start: 6, End: 22}, ""},
		{Hours{Start: 22, End: 6}, ""},
		{Hours{Start: 0, End: 24}, ""},
		{Hours{Start: 9, End: 0}, ""},
		{Hours{Start: -1, End: 22}, "start -1 is not an hour from 0 to 23"},
		{Hours{Start: 24, End: 22}, "start 24 is not an hour from 0 to 23"},
		{Hours{Start: 6, End: 25}, "end 25 is not an hour from 0 to 24"},
		{Hours{Start: 6, End: 6}, "allows no hour at all"},
	}
	for _, tt := range tests {
		err := tt.h.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: Validate = %v; want %q", tt.h, err, tt.want)
		}
	}
}

func TestHoursAllowed(t *testing.T) {
	paris := watchZone(t, "Europe/Paris")
	ny := watchZone(t, "America/New_York")
	tests := []struct {
		name string
		h    Hours
		at   time.Time
		want bool
	}{
		{"day", Hours{6, 22, paris}, time.Date(2026, 1, 15, 14, 0, 0, 0, paris), true},
		{"start is allowed", Hours{6, 22, paris}, time.Date(2026, 1, 15, 6, 0, 0, 0, paris), true},
		{"before start", Hours{6, 22, paris}, time.Date(2026, 1, 15, 5, 59, 59, 0, paris), false},
		{"end is not allowed", Hours{6, 22, paris}, time.Date(2026, 1, 15, 22, 0, 0, 0, paris), false},
		{"last minute", Hours{6, 22, paris}, time.Date(2026, 1, 15, 21, 59, 0, 0, paris), true},
		// The same instant in UTC is 21:30, allowed; in Paris it is 22:30.
		{"zone matters", Hours{6, 22, paris}, time.Date(2026, 1, 15, 21, 30, 0, 0, time.UTC), false},
		{"utc default", Hours{6, 22, nil}, time.Date(2026, 1, 15, 21, 30, 0, 0, paris), true},
		// start > end wraps midnight: 22:00–06:00 is the allowed night.
		{"wrap night", Hours{22, 6, paris}, time.Date(2026, 1, 15, 23, 0, 0, 0, paris), true},
		{"wrap early", Hours{22, 6, paris}, time.Date(2026, 1, 15, 2, 0, 0, 0, paris), true},
		{"wrap day", Hours{22, 6, paris}, time.Date(2026, 1, 15, 12, 0, 0, 0, paris), false},
		{"end 0", Hours{9, 0, paris}, time.Date(2026, 1, 15, 23, 59, 0, 0, paris), true},
		{"end 0 morning", Hours{9, 0, paris}, time.Date(2026, 1, 15, 8, 0, 0, 0, paris), false},
		{"all day", Hours{0, 24, paris}, time.Date(2026, 1, 15, 3, 0, 0, 0, paris), true},
		// DST: on 2026-03-29 Paris goes from 02:00 to 03:00. 05:30 local
		// is 03:30 UTC that day (04:30 UTC the day before); the wall clock
		// decides.
		{"dst spring before start", Hours{6, 22, paris}, time.Date(2026, 3, 29, 3, 30, 0, 0, time.UTC), false},
		{"dst spring after start", Hours{6, 22, paris}, time.Date(2026, 3, 29, 4, 0, 0, 0, time.UTC), true},
		{"dst autumn", Hours{6, 22, paris}, time.Date(2026, 10, 25, 5, 0, 0, 0, time.UTC), true},     // 06:00 CET
		{"dst autumn 2", Hours{6, 22, paris}, time.Date(2026, 10, 25, 4, 59, 0, 0, time.UTC), false}, // 05:59 CET
		{"new york", Hours{6, 22, ny}, time.Date(2026, 7, 1, 3, 0, 0, 0, time.UTC), false},           // 23:00 EDT
	}
	for _, tt := range tests {
		if got := tt.h.Allowed(tt.at); got != tt.want {
			t.Errorf("%s: Allowed(%s in %s) = %v; want %v", tt.name, tt.at, tt.h.loc(), got, tt.want)
		}
	}
}

// One alert per agent per off-hours period (one night), at its first event.
func TestOffHoursWatch(t *testing.T) {
	paris := watchZone(t, "Europe/Paris")
	at := func(day, hour, min int) time.Time { return time.Date(2026, 1, day, hour, min, 0, 0, paris) }
	type obs struct {
		agent string
		at    time.Time
	}
	tests := []struct {
		name string
		h    Hours
		evs  []obs
		want []string // "agent period" per alert
	}{
		{name: "day only", h: Hours{6, 22, paris}, evs: []obs{{"a", at(15, 9, 0)}, {"a", at(15, 21, 59)}}},
		{name: "night once", h: Hours{6, 22, paris},
			evs:  []obs{{"a", at(15, 22, 5)}, {"a", at(15, 23, 0)}, {"a", at(16, 2, 0)}, {"a", at(16, 5, 59)}},
			want: []string{"a 2026-01-16"}},
		{name: "per agent", h: Hours{6, 22, paris},
			evs:  []obs{{"a", at(15, 23, 0)}, {"b", at(15, 23, 1)}, {"a", at(15, 23, 2)}},
			want: []string{"a 2026-01-16", "b 2026-01-16"}},
		{name: "next night again", h: Hours{6, 22, paris},
			evs:  []obs{{"a", at(15, 23, 0)}, {"a", at(16, 12, 0)}, {"a", at(16, 23, 0)}},
			want: []string{"a 2026-01-16", "a 2026-01-17"}},
		{name: "early morning then evening", h: Hours{6, 22, paris},
			evs:  []obs{{"a", at(16, 5, 0)}, {"a", at(16, 22, 30)}},
			want: []string{"a 2026-01-16", "a 2026-01-17"}},
		{name: "wrapped window: the day is off", h: Hours{22, 6, paris},
			evs:  []obs{{"a", at(16, 7, 0)}, {"a", at(16, 21, 0)}, {"a", at(16, 23, 0)}, {"a", at(17, 7, 0)}},
			want: []string{"a 2026-01-16", "a 2026-01-17"}},
		{name: "month end", h: Hours{6, 22, paris},
			evs:  []obs{{"a", time.Date(2026, 1, 31, 23, 0, 0, 0, paris)}, {"a", time.Date(2026, 2, 1, 1, 0, 0, 0, paris)}},
			want: []string{"a 2026-02-01"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewOffHoursWatch(tt.h)
			var got []string
			for i, o := range tt.evs {
				now := o.at.Add(time.Second)
				a, ok := w.Observe(watchEvent(o.agent, int64(i+1), o.at), now)
				if !ok {
					continue
				}
				var d OffHoursDetails
				if err := json.Unmarshal(a.Details, &d); err != nil {
					t.Fatal(err)
				}
				got = append(got, a.Agent+" "+d.Period)
				if a.Type != OffHours || a.Seq != int64(i+1) || !a.Timestamp.Equal(now) || d.Timezone != "Europe/Paris" ||
					d.AllowedStart != tt.h.Start || d.AllowedEnd != tt.h.End || !d.EventTime.Equal(o.at) ||
					!strings.Contains(a.Message, "agent "+o.agent+" active at "+o.at.Format("15:04")) ||
					!strings.Contains(a.Message, "Europe/Paris") {
					t.Errorf("alert %+v %+v", a, d)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("alerts %q; want %q", got, tt.want)
			}
		})
	}
}
