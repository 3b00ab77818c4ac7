package aggregate

import (
	"sort"
	"strconv"
)

// Snapshot is an aggregator's current run as data, for a front-end that
// runs one process per agent event (gate hook): per path, the line spans
// delivered so far, as [first, last] pairs, sorted and merged.
type Snapshot struct {
	Delivered map[string][][2]int `json:"delivered,omitempty"`
}

// Snapshot returns the current run (encoding/json writes the paths sorted).
func (a *Aggregator) Snapshot() Snapshot {
	if len(a.delivered) == 0 {
		return Snapshot{}
	}
	s := Snapshot{Delivered: make(map[string][][2]int, len(a.delivered))}
	for p, spans := range a.delivered {
		out := make([][2]int, len(spans))
		for i, sp := range spans {
			out[i] = [2]int{sp.lo, sp.hi}
		}
		s.Delivered[p] = out
	}
	return s
}

// MaxChars is the aggregator's budget per output (≤ 0: no limit).
func (a *Aggregator) MaxChars() int { return a.maxChars }

// SnapshotError names the field of a snapshot that cannot be restored.
type SnapshotError struct {
	Field   string // e.g. `delivered["a.go"][1]`
	Problem string
}

func (e *SnapshotError) Error() string {
	return "aggregate: snapshot field " + e.Field + ": " + e.Problem
}

// Restore rebuilds an aggregator of maxChars from a snapshot Snapshot made,
// checking it as untrusted input: every path's spans must start at line 1
// or later, end at or after their start, and be sorted and merged (apart
// by at least one line), as Add keeps them.
func Restore(maxChars int, s Snapshot) (*Aggregator, error) {
	a := New(maxChars)
	paths := make([]string, 0, len(s.Delivered))
	for p := range s.Delivered {
		paths = append(paths, p)
	}
	sort.Strings(paths) // the first bad path named is always the same one
	for _, p := range paths {
		spans := s.Delivered[p]
		if len(spans) == 0 {
			return nil, &SnapshotError{"delivered[" + strconv.Quote(p) + "]", "no spans"}
		}
		out := make([]span, len(spans))
		for i, sp := range spans {
			ok := sp[0] >= 1 && sp[1] >= sp[0] && (i == 0 || sp[0]-1 > spans[i-1][1])
			if !ok {
				return nil, &SnapshotError{"delivered[" + strconv.Quote(p) + "][" + strconv.Itoa(i) + "]",
					"not a span after the previous one (lines from 1, sorted, merged)"}
			}
			out[i] = span{sp[0], sp[1]}
		}
		a.delivered[p] = out
	}
	return a, nil
}
