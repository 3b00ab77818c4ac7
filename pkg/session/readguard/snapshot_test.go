package readguard

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A guard restored from its snapshot (through JSON) answers the next read
// and search as the original: counters, refs, the relevance baseline.
func TestGuardSnapshotRoundTrip(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxReads = 4
	g := searched(t, cfg)
	g.OnReadResult(Read{CandidateID: CandidateID("budget guard", "pkg/a.go")}, 12, 300)
	g.OnSearchResult("search", "read_file", "second", []string{"docs/c.md"})
	g.OnReadResult(Read{Path: "docs/c.md", StartLine: 1, EndLine: 20}, 20, 500)
	b, err := json.Marshal(g.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var s GuardSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, err := RestoreGuard(g.Config(), g.RefRequired(), s)
	if err != nil {
		t.Fatal(err)
	}
	for _, read := range []Read{
		{Path: "pkg/b.go"}, {CandidateID: CandidateID("budget guard", "pkg/b.go")}, {BundleID: "bndl_nope"}, {Path: "x.go", StartLine: 1, EndLine: 3},
	} {
		m1, b1 := g.CheckRead(read)
		m2, b2 := r.CheckRead(read)
		if !reflect.DeepEqual(m1, m2) || !reflect.DeepEqual(b1, b2) {
			t.Fatalf("CheckRead(%+v): restored %+v %+v, want %+v %+v", read, m2, b2, m1, b1)
		}
		if m1, m2 := g.OnReadResult(read, 3, 30), r.OnReadResult(read, 3, 30); !reflect.DeepEqual(m1, m2) {
			t.Fatalf("OnReadResult(%+v): restored %+v, want %+v", read, m2, m1)
		}
	}
	if a, b := g.Snapshot(), r.Snapshot(); !reflect.DeepEqual(a, b) {
		t.Fatalf("snapshots differ:\n%+v\n%+v", a, b)
	}
}

func TestRestoreGuardRefuses(t *testing.T) {
	cfg := DefaultConfig()
	cand := func(n int) []Candidate {
		out := make([]Candidate, n)
		for i := range out {
			out[i] = Candidate{ID: "cand_" + strings.Repeat("x", i), Path: "p"}
		}
		return out
	}
	for _, c := range []struct {
		name string
		s    GuardSnapshot
		want string
	}{
		{"negative", GuardSnapshot{Metrics: Metrics{ReadsCount: -1}}, "metrics.reads_count: negative"},
		{"after search", GuardSnapshot{Searched: true, ReadsAfterSearch: 2, Metrics: Metrics{ReadsCount: 1}}, "reads_after_search: more than"},
		{"ratio", GuardSnapshot{Metrics: Metrics{ReadsCount: 2, ReadsLinesTotal: 10, AvgReadSpan: 4}}, "metrics.avg_read_span"},
		{"top", GuardSnapshot{Searched: true, Top: cand(11)}, "top: 11 entries; top_k is 10"},
		{"candidates", GuardSnapshot{Searched: true, Candidates: cand(1025)}, "candidates: 1025 entries"},
		{"bundles", GuardSnapshot{Searched: true, Bundles: make([]Bundle, 129)}, "bundles: 129 entries"},
		{"not searched", GuardSnapshot{Candidates: cand(1)}, "searched: false"},
		{"duplicate candidate", GuardSnapshot{Searched: true, Candidates: []Candidate{{ID: "c", Path: "a"}, {ID: "c", Path: "b"}}}, "candidates[1].candidate_id"},
		{"bundle paths", GuardSnapshot{Searched: true, Bundles: []Bundle{{ID: "b"}}}, "bundles[0].paths"},
		{"empty top", GuardSnapshot{Searched: true, Top: []Candidate{{}}}, "top[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if g, err := RestoreGuard(cfg, true, c.s); err == nil || g != nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("RestoreGuard: %v, want an error with %q", err, c.want)
			}
		})
	}
}
