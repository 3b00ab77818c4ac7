package policy

import (
	"strings"
	"testing"
	"time"
)

func mustSchedule(t *testing.T, s Schedule) *schedule {
	t.Helper()
	c, probs := compileSchedule(&s)
	if len(probs) > 0 {
		t.Fatalf("compile %+v: %v", s, probs)
	}
	return c
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestScheduleDST: hours are local wall-clock hours in the schedule's zone
// (DESIGN §5 "DST-safe"). On spring-forward days the skipped hour never
// happens; on fall-back days the repeated hour matches twice.
func TestScheduleDST(t *testing.T) {
	tests := []struct {
		name  string
		zone  string
		hours []int
		at    string // UTC instant
		want  bool
	}{
		// New York, 2026-03-08: 02:00 EST jumps to 03:00 EDT. 02:30 does not exist.
		{"NY before spring-forward, 01:30 EST", "America/New_York", []int{1}, "2026-03-08T06:30:00Z", true},
		{"NY spring-forward: 06:59:59Z is 01:59:59 EST", "America/New_York", []int{2}, "2026-03-08T06:59:59Z", false},
		{"NY spring-forward: 07:00Z is 03:00 EDT, not 02:00", "America/New_York", []int{2}, "2026-03-08T07:00:00Z", false},
		{"NY spring-forward: 07:30Z is 03:30 EDT", "America/New_York", []int{3}, "2026-03-08T07:30:00Z", true},
		{"NY EDT business hours 09:00", "America/New_York", []int{9}, "2026-03-09T13:00:00Z", true},
		{"NY EST offset no longer applies after spring-forward", "America/New_York", []int{9}, "2026-03-09T14:00:00Z", false},
		// New York, 2026-11-01: 02:00 EDT falls back to 01:00 EST. 01:30 happens twice.
		{"NY fall-back: first 01:30 (EDT)", "America/New_York", []int{1}, "2026-11-01T05:30:00Z", true},
		{"NY fall-back: second 01:30 (EST)", "America/New_York", []int{1}, "2026-11-01T06:30:00Z", true},
		{"NY fall-back: 02:30 EST", "America/New_York", []int{1}, "2026-11-01T07:30:00Z", false},
		// Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST.
		{"Berlin spring-forward: 00:59Z is 01:59 CET", "Europe/Berlin", []int{1}, "2026-03-29T00:59:00Z", true},
		{"Berlin spring-forward: 01:00Z is 03:00 CEST", "Europe/Berlin", []int{2}, "2026-03-29T01:00:00Z", false},
		{"Berlin spring-forward: 01:00Z hour 3", "Europe/Berlin", []int{3}, "2026-03-29T01:00:00Z", true},
		// Berlin, 2026-10-25: 03:00 CEST falls back to 02:00 CET. 02:30 happens twice.
		{"Berlin fall-back: first 02:30 (CEST)", "Europe/Berlin", []int{2}, "2026-10-25T00:30:00Z", true},
		{"Berlin fall-back: second 02:30 (CET)", "Europe/Berlin", []int{2}, "2026-10-25T01:30:00Z", true},
		{"Berlin fall-back: 03:30 CET", "Europe/Berlin", []int{2}, "2026-10-25T02:30:00Z", false},
		// Day boundaries follow the zone, not UTC.
		{"NY Friday 23:30 is Saturday in UTC", "America/New_York", nil, "2026-11-28T04:30:00Z", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			days := []string{"mon", "tue", "wed", "thu", "fri", "sun"}
			if tt.hours == nil {
				days = []string{"fri"}
			}
			s := mustSchedule(t, Schedule{Days: days, Hours: tt.hours, Timezone: tt.zone})
			if got := s.active(utc(tt.at)); got != tt.want {
				wd, h := wallClock(utc(tt.at), s.loc)
				t.Errorf("active(%s) = %v, want %v (wall clock %s %d:xx, %s)", tt.at, got, tt.want, wd, h, utc(tt.at).In(s.loc))
			}
		})
	}
}

// TestWallClockAgreesWithTime checks the one-lookup weekday/hour against
// the time package over two years of hours in zones with DST, half-hour
// offsets and negative offsets.
func TestWallClockAgreesWithTime(t *testing.T) {
	for _, zone := range []string{"America/New_York", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Chatham", "UTC"} {
		loc, msg := loadZone(zone)
		if msg != "" {
			t.Fatal(msg)
		}
		for at := utc("2025-12-31T00:17:00Z"); at.Year() < 2028; at = at.Add(37 * time.Minute) {
			wd, h := wallClock(at, loc)
			lt := at.In(loc)
			if wd != lt.Weekday() || h != lt.Hour() {
				t.Fatalf("%s at %s: got %s %d, want %s %d", zone, at, wd, h, lt.Weekday(), lt.Hour())
			}
		}
	}
	// Before 1970 the floor division matters.
	loc, _ := loadZone("America/New_York")
	at := time.Date(1969, 12, 31, 23, 30, 0, 0, loc)
	if wd, h := wallClock(at, loc); wd != time.Wednesday || h != 23 {
		t.Errorf("1969: %s %d", wd, h)
	}
}

// TestScheduleNext: when a window opens and closes, across a DST change.
func TestScheduleNext(t *testing.T) {
	s := mustSchedule(t, Schedule{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Hours: []int{9, 10, 11, 12, 13, 14, 15, 16}, Timezone: "America/New_York"})
	tests := []struct {
		from string
		want bool
		at   string
	}{
		{"2026-11-21T17:00:00Z", true, "2026-11-23T14:00:00Z"},  // Sat noon EST → Mon 09:00 EST
		{"2026-11-24T15:30:00Z", false, "2026-11-24T22:00:00Z"}, // Tue 10:30 → 17:00 EST
		{"2026-03-07T17:00:00Z", true, "2026-03-09T13:00:00Z"},  // Sat before spring-forward → Mon 09:00 EDT
		{"2026-11-24T14:00:00Z", true, "2026-11-24T14:00:00Z"},  // already open
	}
	for _, tt := range tests {
		got, ok := s.next(utc(tt.from), tt.want)
		if !ok || !got.Equal(utc(tt.at)) {
			t.Errorf("next(%s, %v) = %s %v, want %s", tt.from, tt.want, got.UTC().Format(time.RFC3339), ok, tt.at)
		}
	}
	kolkata := mustSchedule(t, Schedule{Hours: []int{9}, Timezone: "Asia/Kolkata"})
	if got, _ := kolkata.next(utc("2026-01-01T00:00:00Z"), true); !got.Equal(utc("2026-01-01T03:30:00Z")) {
		t.Errorf("half-hour zone: %s", got)
	}
	never := &schedule{loc: time.UTC, days: 0, hours: allHours}
	if _, ok := never.next(utc("2026-01-01T00:00:00Z"), true); ok {
		t.Error("an empty window opened")
	}
}

func TestCompileSchedule(t *testing.T) {
	s := mustSchedule(t, Schedule{Days: []string{"Monday", "TUE", "wed", "sat", "sun"}, Hours: []int{0, 1, 9, 10, 11, 23}, Timezone: "Europe/Berlin"})
	if s.desc != "mon–wed, sat, sun 00:00–02:00, 09:00–12:00, 23:00–24:00 Europe/Berlin" {
		t.Errorf("desc %q", s.desc)
	}
	if all := mustSchedule(t, Schedule{Timezone: "UTC"}); all.desc != "every day all day UTC" {
		t.Errorf("desc %q", all.desc)
	}
	bad := []struct {
		s    Schedule
		want []string
	}{
		{Schedule{Timezone: "America/New_Yrok"}, []string{`timezone: unknown time zone "America/New_Yrok"`}},
		{Schedule{}, []string{"timezone: required"}},
		{Schedule{Timezone: "Local"}, []string{`timezone: "Local" depends on the machine`}},
		{Schedule{Days: []string{"funday", "mon"}, Hours: []int{8, 24, -1}, Timezone: "UTC"},
			[]string{`days[0]: "funday" is not a day`, "hours[1]: 24 is not an hour", "hours[2]: -1 is not an hour"}},
	}
	for _, tt := range bad {
		_, probs := compileSchedule(&tt.s)
		var got []string
		for _, p := range probs {
			got = append(got, p.field+": "+p.msg)
		}
		if len(got) != len(tt.want) {
			t.Errorf("%+v: %q", tt.s, got)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("%+v: %q, want prefix %q", tt.s, got[i], tt.want[i])
			}
		}
	}
}
