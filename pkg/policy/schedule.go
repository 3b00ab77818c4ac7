package policy

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	// Schedules name IANA zones; embed the database so they load on machines
	// without /usr/share/zoneinfo (distroless images, Windows).
	_ "time/tzdata"
)

// schedule is a compiled Schedule: a location and bit masks, so checking a
// request time costs one zone lookup and two bit tests.
type schedule struct {
	loc   *time.Location
	days  uint8  // bit per time.Weekday
	hours uint32 // bit per wall-clock hour 0–23
	desc  string // "mon–fri 09:00–17:00 America/New_York"
}

const (
	allDays  = 1<<7 - 1
	allHours = 1<<24 - 1
)

// dayNames accepts the three-letter names of DESIGN §5 and the full English
// names, case-insensitively ("mon", "Monday", "MON"); anything else is an
// error, never a silently empty window.
var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

var shortDay = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// fieldProblem is a validation message for a field below some base path.
type fieldProblem struct{ field, msg string }

// compileSchedule checks a Schedule and compiles it. Field names in the
// problems are relative to the schedule ("timezone", "hours[2]").
func compileSchedule(s *Schedule) (*schedule, []fieldProblem) {
	var probs []fieldProblem
	c := &schedule{days: allDays, hours: allHours}
	if len(s.Days) > 0 {
		c.days = 0
		for i, name := range s.Days {
			d, ok := dayNames[strings.ToLower(name)]
			if !ok {
				probs = append(probs, fieldProblem{"days[" + strconv.Itoa(i) + "]", quote(name) + " is not a day (mon, tue, wed, thu, fri, sat, sun)"})
				continue
			}
			c.days |= 1 << d
		}
	}
	if len(s.Hours) > 0 {
		c.hours = 0
		for i, h := range s.Hours {
			if h < 0 || h > 23 {
				probs = append(probs, fieldProblem{"hours[" + strconv.Itoa(i) + "]", strconv.Itoa(h) + " is not an hour (0–23, local wall-clock hours)"})
				continue
			}
			c.hours |= 1 << h
		}
	}
	loc, msg := loadZone(s.Timezone)
	if msg != "" {
		probs = append(probs, fieldProblem{"timezone", msg})
	}
	if len(probs) > 0 {
		return nil, probs
	}
	c.loc = loc
	c.desc = describeDays(c.days) + " " + describeHours(c.hours) + " " + loc.String()
	return c, nil
}

var zones sync.Map // zone name → *time.Location; LoadLocation parses tzdata each call

// loadZone loads an IANA zone. The zone is required: a window without one
// would follow the server's clock, the classic business-hours bug; "Local"
// is refused for the same reason.
func loadZone(name string) (*time.Location, string) {
	switch name {
	case "":
		return nil, "required: an IANA time zone such as America/New_York or UTC"
	case "Local":
		return nil, `"Local" depends on the machine; name an IANA time zone such as America/New_York or UTC`
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), ""
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, "unknown time zone " + quote(name) + " (want an IANA name such as America/New_York, Europe/Berlin or UTC)"
	}
	zones.Store(name, loc)
	return loc, ""
}

// wallClock returns t's weekday and hour on the wall clock of loc. Days and
// hours in a schedule are local wall-clock values (DESIGN §5 "DST-safe"):
// on a spring-forward day the skipped hour never occurs, and on a fall-back
// day the repeated hour matches both times. One zone lookup, no allocation.
func wallClock(t time.Time, loc *time.Location) (time.Weekday, int) {
	_, offset := t.In(loc).Zone()
	return localWallClock(t.Unix() + int64(offset))
}

// localWallClock is the weekday and hour of local, a wall-clock time in
// seconds since 1970-01-01 00:00 on that wall clock.
func localWallClock(local int64) (time.Weekday, int) {
	days := floorDiv(local, 86400)
	// 1970-01-01 was a Thursday.
	return time.Weekday(((days+4)%7 + 7) % 7), int((local - days*86400) / 3600)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// active reports whether t falls inside the window.
func (s *schedule) active(t time.Time) bool { return s.covers(wallClock(t, s.loc)) }

// covers reports whether the window holds hour h of weekday wd.
func (s *schedule) covers(wd time.Weekday, h int) bool {
	return s.days&(1<<wd) != 0 && s.hours&(1<<h) != 0
}

// next returns the first instant at or after t at which active is want —
// when the window opens (want true) or closes (want false) — looking at
// most eight days ahead. It steps from local hour boundary to local hour
// boundary in absolute time, so DST gaps and repeats need no special case.
// Each step costs one zone lookup (the explanation calls next for every
// skipped or deciding scheduled rule; issue 20).
func (s *schedule) next(t time.Time, want bool) (time.Time, bool) {
	sec := t.Unix()
	for i := range 8*24 + 2 {
		_, offset := time.Unix(sec, 0).In(s.loc).Zone()
		local := sec + int64(offset)
		if s.covers(localWallClock(local)) == want {
			if i == 0 {
				return t, true
			}
			return time.Unix(sec, 0), true
		}
		into := local - floorDiv(local, 3600)*3600
		sec = sec - into + 3600
	}
	return time.Time{}, false
}

// describeDays renders a day mask in week order from Monday, with runs of
// three or more as ranges: "mon–fri", "sat, sun", "every day".
func describeDays(mask uint8) string {
	if mask == allDays {
		return "every day"
	}
	order := [7]time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday, time.Sunday}
	var parts []string
	for i := 0; i < 7; {
		if mask&(1<<order[i]) == 0 {
			i++
			continue
		}
		j := i
		for j+1 < 7 && mask&(1<<order[j+1]) != 0 {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, shortDay[order[i]]+"–"+shortDay[order[j]])
		default:
			for k := i; k <= j; k++ {
				parts = append(parts, shortDay[order[k]])
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// describeHours renders an hour mask as wall-clock ranges:
// [9..16] is "09:00–17:00".
func describeHours(mask uint32) string {
	if mask == allHours {
		return "all day"
	}
	var parts []string
	for h := 0; h < 24; {
		if mask&(1<<h) == 0 {
			h++
			continue
		}
		end := h
		for end+1 < 24 && mask&(1<<(end+1)) != 0 {
			end++
		}
		parts = append(parts, fmt.Sprintf("%02d:00–%02d:00", h, end+1))
		h = end + 1
	}
	return strings.Join(parts, ", ")
}
