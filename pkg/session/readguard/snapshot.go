package readguard

import (
	"math"
	"strconv"
)

// GuardSnapshot is a guard's state as data, for a front-end that runs one
// process per agent event (gate hook) and keeps a session between its
// events: the counters, the latest search and every ref still held. The
// guard's Config is not in it: it comes from the session's configuration.
type GuardSnapshot struct {
	Metrics          Metrics `json:"metrics"`
	ReadsAfterSearch int     `json:"reads_after_search,omitempty"`
	Searched         bool    `json:"searched,omitempty"`
	SearchTool       string  `json:"search_tool,omitempty"`
	ReadTool         string  `json:"read_tool,omitempty"`
	LastQuery        string  `json:"last_query,omitempty"`
	// Top is the latest search's top-K, rank order: the relevance baseline.
	Top []Candidate `json:"top,omitempty"`
	// Candidates and Bundles are the refs held, oldest first (the oldest go
	// first when the guard is full).
	Candidates []Candidate `json:"candidates,omitempty"`
	Bundles    []Bundle    `json:"bundles,omitempty"`
}

// Bundle is one bundle ref and the paths it names, in the search's order.
type Bundle struct {
	ID    string   `json:"bundle_id"`
	Paths []string `json:"paths"`
}

// Snapshot returns the guard's state. It shares the guard's slices, which
// the guard never modifies in place: encode it, do not modify it.
func (g *Guard) Snapshot() GuardSnapshot {
	s := GuardSnapshot{
		Metrics:          g.m,
		ReadsAfterSearch: g.readsAfterSearch,
		Searched:         g.searched,
		SearchTool:       g.searchTool,
		ReadTool:         g.readTool,
		LastQuery:        g.lastQuery,
		Top:              g.top,
	}
	if len(g.candOrder) > 0 {
		s.Candidates = make([]Candidate, len(g.candOrder))
		for i, id := range g.candOrder {
			s.Candidates[i] = Candidate{ID: id, Path: g.candidates[id]}
		}
	}
	if len(g.bundleOrd) > 0 {
		s.Bundles = make([]Bundle, len(g.bundleOrd))
		for i, id := range g.bundleOrd {
			s.Bundles[i] = Bundle{ID: id, Paths: g.bundles[id]}
		}
	}
	return s
}

// Config returns the guard's policy.
func (g *Guard) Config() Config { return g.cfg }

// RefRequired reports whether the ref gate applies (the session declares a
// search tool).
func (g *Guard) RefRequired() bool { return g.refRequired }

// SnapshotError names the field of a snapshot that cannot be restored.
type SnapshotError struct {
	Field   string // e.g. "candidates[3].candidate_id"
	Problem string
}

func (e *SnapshotError) Error() string {
	return "readguard: snapshot field " + e.Field + ": " + e.Problem
}

// RestoreGuard rebuilds a guard of cfg from a snapshot Snapshot made,
// checking it as untrusted input: negative counters, ratios that do not
// follow from them, more refs than a guard keeps (1024 candidates, 128
// bundles, top-K of cfg), an empty or repeated ref id.
func RestoreGuard(cfg Config, refRequired bool, s GuardSnapshot) (*Guard, error) {
	m := s.Metrics
	for _, f := range [...]struct {
		name string
		v    int
	}{
		{"metrics.reads_count", m.ReadsCount}, {"metrics.reads_lines_total", m.ReadsLinesTotal},
		{"metrics.reads_chars_total", m.ReadsCharsTotal}, {"metrics.search_count", m.SearchCount},
		{"metrics.max_read_span", m.MaxReadSpan}, {"metrics.preview_degraded_count", m.PreviewDegradedCount},
		{"reads_after_search", s.ReadsAfterSearch},
	} {
		if f.v < 0 {
			return nil, &SnapshotError{f.name, "negative"}
		}
	}
	switch {
	case s.ReadsAfterSearch > m.ReadsCount:
		return nil, &SnapshotError{"reads_after_search", "more than metrics.reads_count"}
	case !eqRatio(m.ReadAfterSearchRatio, ratio(s.ReadsAfterSearch, m.ReadsCount)):
		return nil, &SnapshotError{"metrics.read_after_search_ratio", "does not follow from the counts"}
	case !eqRatio(m.AvgReadSpan, ratio(m.ReadsLinesTotal, m.ReadsCount)):
		return nil, &SnapshotError{"metrics.avg_read_span", "does not follow from the counts"}
	case len(s.Top) > cfg.TopK:
		return nil, &SnapshotError{"top", strconv.Itoa(len(s.Top)) + " entries; top_k is " + strconv.Itoa(cfg.TopK)}
	case len(s.Candidates) > maxCandidates:
		return nil, &SnapshotError{"candidates", strconv.Itoa(len(s.Candidates)) + " entries; a guard keeps at most " + strconv.Itoa(maxCandidates)}
	case len(s.Bundles) > maxBundles:
		return nil, &SnapshotError{"bundles", strconv.Itoa(len(s.Bundles)) + " entries; a guard keeps at most " + strconv.Itoa(maxBundles)}
	case !s.Searched && (len(s.Top) > 0 || len(s.Candidates) > 0 || len(s.Bundles) > 0 || s.ReadsAfterSearch > 0):
		return nil, &SnapshotError{"searched", "false, but the snapshot holds what a search leaves"}
	}
	for i, c := range s.Top {
		if c.ID == "" || c.Path == "" {
			return nil, &SnapshotError{"top[" + strconv.Itoa(i) + "]", "empty candidate_id or path"}
		}
	}
	g := New(cfg, refRequired)
	g.m = m
	g.readsAfterSearch = s.ReadsAfterSearch
	g.searched = s.Searched
	g.searchTool, g.readTool, g.lastQuery = s.SearchTool, s.ReadTool, s.LastQuery
	g.top = s.Top
	g.candOrder = make([]string, 0, len(s.Candidates))
	for i, c := range s.Candidates {
		if _, dup := g.candidates[c.ID]; dup || c.ID == "" {
			return nil, &SnapshotError{"candidates[" + strconv.Itoa(i) + "].candidate_id", "empty or repeated: " + strconv.Quote(c.ID)}
		}
		g.candidates[c.ID] = c.Path
		g.candOrder = append(g.candOrder, c.ID)
	}
	g.bundleOrd = make([]string, 0, len(s.Bundles))
	for i, b := range s.Bundles {
		if _, dup := g.bundles[b.ID]; dup || b.ID == "" {
			return nil, &SnapshotError{"bundles[" + strconv.Itoa(i) + "].bundle_id", "empty or repeated: " + strconv.Quote(b.ID)}
		}
		if len(b.Paths) == 0 || len(b.Paths) > cfg.TopK {
			return nil, &SnapshotError{"bundles[" + strconv.Itoa(i) + "].paths", strconv.Itoa(len(b.Paths)) + " paths; a bundle names 1 to top_k"}
		}
		g.bundles[b.ID] = b.Paths
		g.bundleOrd = append(g.bundleOrd, b.ID)
	}
	return g, nil
}

// eqRatio compares a stored ratio with the recomputed one; NaN never
// equals (a ratio is never NaN).
func eqRatio(a, b float64) bool { return a == b && !math.IsNaN(a) }
