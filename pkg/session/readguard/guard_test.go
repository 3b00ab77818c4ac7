package readguard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/session/reasons"
	"github.com/govkit/govkit/pkg/session/response"
)

var searchPaths = []string{"pkg/a.go", "./pkg/b.go", "vendor/x/y.go", "pkg/a.go", "node_modules/m/i.js", "docs/c.md", "dist/app.js", "sub/.git/config"}

func searched(t testing.TB, cfg Config) *Guard {
	t.Helper()
	g := New(cfg, true)
	g.OnSearchResult("search", "read_file", "budget guard", searchPaths)
	return g
}

func TestDefaultConfig(t *testing.T) {
	// S-10: the seed's defaults.
	want := Config{MaxReads: 25, MaxTotalLines: 2500, MaxSingleReadLines: 300, MaxPreviewChars: 12000,
		SoftRatio: 0.8, MaxRangeLines: 200, TopK: 10, Mode: "enforce", Budget: "enforce"}
	if got := DefaultConfig(); got != want {
		t.Errorf("DefaultConfig() = %+v", got)
	}
	if err := want.Validate(); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.MaxReads = 0 }, "max_reads_per_session: 0 is not positive"},
		{func(c *Config) { c.MaxRangeLines = -1 }, "max_range_lines: -1"},
		{func(c *Config) { c.SoftRatio = 1.5 }, "soft_ratio: 1.5"},
		{func(c *Config) { c.Mode = "strict" }, `mode: "strict"`},
		{func(c *Config) { c.Budget = "off" }, `budget: "off"`},
	} {
		c := DefaultConfig()
		tc.mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
}

// TestSearchIssuance: S-15 — stable ids, excluded trees and duplicates
// dropped, top-K kept, a ready-to-run read call per candidate.
func TestSearchIssuance(t *testing.T) {
	g1, g2 := searched(t, DefaultConfig()), New(DefaultConfig(), true)
	m1 := g1.OnSearchResult("search", "read_file", "budget guard", searchPaths)
	m2 := g2.OnSearchResult("search", "read_file", "budget guard", searchPaths)
	if !reflect.DeepEqual(m1.Candidates, m2.Candidates) || m1.BundleID != m2.BundleID {
		t.Fatalf("same search, different refs: %+v / %+v", m1, m2)
	}
	sum := sha256.Sum256([]byte("budget guard\x00pkg/a.go"))
	wantA := "cand_" + hex.EncodeToString(sum[:])[:12]
	wantCands := []Candidate{{wantA, "pkg/a.go"}, {CandidateID("budget guard", "pkg/b.go"), "pkg/b.go"}, {CandidateID("budget guard", "docs/c.md"), "docs/c.md"}}
	if !reflect.DeepEqual(m1.Candidates, wantCands) {
		t.Errorf("candidates %+v, want %+v", m1.Candidates, wantCands)
	}
	if m1.CandidateID != wantA || m1.BundleID != BundleID("budget guard", []string{"pkg/a.go", "pkg/b.go", "docs/c.md"}) {
		t.Errorf("candidate_id %s bundle_id %s", m1.CandidateID, m1.BundleID)
	}
	if !strings.HasPrefix(m1.BundleID, "bndl_") || len(m1.BundleID) != 17 {
		t.Errorf("bundle id %q", m1.BundleID)
	}
	wantCalls := []NextCall{
		{"read_file", map[string]any{"candidate_id": wantCands[0].ID}},
		{"read_file", map[string]any{"candidate_id": wantCands[1].ID}},
		{"read_file", map[string]any{"candidate_id": wantCands[2].ID}},
	}
	if !reflect.DeepEqual(m1.NextCalls, wantCalls) || m1.SuggestedNextAction != ActionReadCandidate {
		t.Errorf("next_calls %+v (%s)", m1.NextCalls, m1.SuggestedNextAction)
	}
	if len(m1.Warnings) != 1 || !strings.HasPrefix(m1.Warnings[0], "Left out 4 of the search's paths") {
		t.Errorf("warnings %q", m1.Warnings)
	}
	// Another query, or another order, is another bundle; same query+path is the same candidate.
	if BundleID("q", []string{"a", "b"}) == BundleID("q", []string{"b", "a"}) || CandidateID("q", "a") == CandidateID("r", "a") {
		t.Error("ids ignore order or query")
	}
	// TopK bounds the candidates.
	cfg := DefaultConfig()
	cfg.TopK = 2
	if m := New(cfg, true).OnSearchResult("s", "r", "q", []string{"a", "b", "c"}); len(m.Candidates) != 2 || len(m.NextCalls) != 2 {
		t.Errorf("top-2 gave %+v", m.Candidates)
	}
	// Nothing readable: no refs, advice to search again.
	if m := New(DefaultConfig(), true).OnSearchResult("s", "r", "q", []string{"vendor/a.go"}); m.BundleID != "" || m.SuggestedNextAction != ActionSearch || len(m.Warnings) != 1 {
		t.Errorf("excluded-only search: %+v", m)
	}
}

// TestRefGate: S-16, S-17, S-18 — the enforce gate, its exceptions, the
// precision cap (lines inclusive), and the warn and off modes.
func TestRefGate(t *testing.T) {
	a := CandidateID("budget guard", "pkg/a.go")
	bundle := BundleID("budget guard", []string{"pkg/a.go", "pkg/b.go", "docs/c.md"})
	type want struct {
		code   string // "" = allowed
		codes  []string
		calls  []NextCall
		path   string
		warned bool
	}
	window := func(p string, s, e int) NextCall {
		return NextCall{"read_file", map[string]any{"path": p, "start_line": s, "end_line": e}}
	}
	ref := func(id string) NextCall { return NextCall{"read_file", map[string]any{"candidate_id": id}} }
	for _, tc := range []struct {
		name     string
		search   bool
		mode     string
		noSearch bool // session declares no search tool
		read     Read
		want     want
	}{
		{name: "no search, plain path", read: Read{Tool: "read_file", Path: "pkg/a.go"},
			want: want{code: response.SearchFirstRequired, codes: []string{response.SearchFirstRequired}, calls: []NextCall{window("pkg/a.go", 1, 200)}}},
		{name: "no search, precision 200 lines allowed", read: Read{Tool: "read_file", Path: "pkg/a.go", StartLine: 1, EndLine: 200},
			want: want{path: "pkg/a.go"}},
		{name: "no search, 300-500 is 201 lines", read: Read{Tool: "read_file", Path: "pkg/a.go", StartLine: 300, EndLine: 500},
			want: want{code: response.SearchFirstRequired, codes: []string{response.SearchFirstRequired, reasons.ReadRangeExceeded},
				calls: []NextCall{window("pkg/a.go", 300, 499), window("pkg/a.go", 500, 500)}}},
		{name: "no search, unknown ref", read: Read{Tool: "read_file", CandidateID: "cand_000000000000"},
			want: want{code: response.SearchFirstRequired, codes: []string{response.SearchFirstRequired}, calls: []NextCall{}}},
		{name: "search, 300-499 allowed", search: true, read: Read{Tool: "read_file", Path: "pkg/a.go", StartLine: 300, EndLine: 499},
			want: want{path: "pkg/a.go"}},
		{name: "search, plain path in top-K", search: true, read: Read{Tool: "read_file", Path: "pkg/a.go"},
			want: want{code: response.SearchRefRequired, codes: []string{response.SearchRefRequired}, calls: []NextCall{ref(a), window("pkg/a.go", 1, 200)}}},
		{name: "search, start line without end", search: true, read: Read{Tool: "read_file", Path: "pkg/a.go", StartLine: 40},
			want: want{code: response.SearchRefRequired, codes: []string{response.SearchRefRequired}, calls: []NextCall{ref(a), window("pkg/a.go", 40, 239)}}},
		{name: "search, long range windows (at most 5)", search: true, read: Read{Tool: "read_file", Path: "pkg/a.go", StartLine: 1, EndLine: 5000},
			want: want{code: response.SearchRefRequired, codes: []string{response.SearchRefRequired, reasons.ReadRangeExceeded},
				calls: []NextCall{ref(a), window("pkg/a.go", 1, 200), window("pkg/a.go", 201, 400), window("pkg/a.go", 401, 600), window("pkg/a.go", 601, 800), window("pkg/a.go", 801, 1000)}}},
		{name: "search, unknown candidate", search: true, read: Read{Tool: "read_file", CandidateID: "cand_000000000000"},
			want: want{code: response.CandidateRefRequired, codes: []string{response.CandidateRefRequired},
				calls: []NextCall{ref(a), ref(CandidateID("budget guard", "pkg/b.go")), ref(CandidateID("budget guard", "docs/c.md"))}}},
		{name: "search, candidate names another path", search: true, read: Read{Tool: "read_file", CandidateID: a, Path: "pkg/b.go"},
			want: want{code: response.CandidateRefRequired, codes: []string{response.CandidateRefRequired},
				calls: []NextCall{ref(a), ref(CandidateID("budget guard", "pkg/b.go")), ref(CandidateID("budget guard", "docs/c.md"))}}},
		{name: "search, candidate ref resolves its path", search: true, read: Read{Tool: "read_file", CandidateID: a}, want: want{path: "pkg/a.go"}},
		{name: "search, candidate ref with its own path", search: true, read: Read{Tool: "read_file", CandidateID: a, Path: "./pkg/a.go"}, want: want{path: "pkg/a.go"}},
		{name: "search, bundle ref", search: true, read: Read{Tool: "read_file", BundleID: bundle}, want: want{}},
		{name: "search, bundle ref and a member path", search: true, read: Read{Tool: "read_file", BundleID: bundle, Path: "docs/c.md"}, want: want{path: "docs/c.md"}},
		{name: "warn mode never blocks", mode: ModeWarn, read: Read{Tool: "read_file", Path: "pkg/a.go"},
			want: want{codes: []string{response.SearchFirstRequired}, calls: []NextCall{window("pkg/a.go", 1, 200)}, path: "pkg/a.go", warned: true}},
		{name: "off mode has no gate", mode: ModeOff, read: Read{Tool: "read_file", Path: "pkg/a.go"}, want: want{path: "pkg/a.go"}},
		{name: "no search tool, no gate", noSearch: true, read: Read{Tool: "read_file", Path: "pkg/a.go", StartLine: 1, EndLine: 900}, want: want{path: "pkg/a.go"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.mode != "" {
				cfg.Mode = tc.mode
			}
			g := New(cfg, !tc.noSearch)
			if tc.search {
				g.OnSearchResult("search", "read_file", "budget guard", searchPaths)
			}
			meta, resp := g.CheckRead(tc.read)
			if tc.want.code == "" {
				if resp != nil {
					t.Fatalf("blocked: %+v", resp.Error)
				}
				if meta.Path != tc.want.path {
					t.Errorf("path %q, want %q", meta.Path, tc.want.path)
				}
				if !slices.Equal(meta.ReasonCodes, tc.want.codes) || (len(meta.Warnings) > 0) != tc.want.warned {
					t.Errorf("codes %v warnings %q", meta.ReasonCodes, meta.Warnings)
				}
				if tc.want.calls != nil && !reflect.DeepEqual(meta.NextCalls, tc.want.calls) {
					t.Errorf("next_calls %+v", meta.NextCalls)
				}
				return
			}
			if resp == nil {
				t.Fatalf("allowed, want %s (meta %+v)", tc.want.code, meta)
			}
			e := resp.Error
			if e.Code != tc.want.code || !e.Blocked || !strings.HasSuffix(e.Message, RefHint) || e.Details["recovery_hint"] != RefHint {
				t.Errorf("error %+v", e)
			}
			if got := e.Details["reason_codes"]; !reflect.DeepEqual(got, tc.want.codes) || !slices.Equal(meta.ReasonCodes, tc.want.codes) {
				t.Errorf("reason_codes %v / meta %v, want %v", got, meta.ReasonCodes, tc.want.codes)
			}
			if got := e.Details["next_calls"]; !reflect.DeepEqual(got, tc.want.calls) {
				t.Errorf("next_calls\n got %+v\nwant %+v", got, tc.want.calls)
			}
			if e.Details["auto_recoverable"] != true {
				t.Errorf("auto_recoverable %v", e.Details["auto_recoverable"])
			}
		})
	}
}

// TestBudget: S-10, S-11 — soft at 80% of a budget with BUDGET_SOFT_LIMIT
// and a search hint, hard once reached: the next read is refused with
// BUDGET_EXCEEDED carrying BUDGET_HARD_LIMIT, in every mode.
func TestBudget(t *testing.T) {
	t.Run("reads", func(t *testing.T) {
		for _, mode := range []string{ModeEnforce, ModeWarn, ModeOff} {
			cfg := DefaultConfig()
			cfg.Mode = mode
			g := searched(t, cfg)
			r := Read{Tool: "read_file", CandidateID: CandidateID("budget guard", "pkg/a.go")}
			for i := 1; i <= 25; i++ {
				if _, resp := g.CheckRead(r); resp != nil {
					t.Fatalf("%s: read %d refused: %+v", mode, i, resp.Error)
				}
				meta := g.OnReadResult(r, 10, 400)
				switch {
				case i < 20:
					if meta.BudgetState != BudgetOK || len(meta.ReasonCodes) != 0 {
						t.Fatalf("%s: read %d: %+v", mode, i, meta)
					}
				case i < 25:
					if meta.BudgetState != BudgetSoft || !slices.Equal(meta.ReasonCodes, []string{response.BudgetSoftLimit}) ||
						meta.SuggestedNextAction != ActionSearch || !strings.Contains(meta.Warnings[0], "use search") {
						t.Fatalf("%s: read %d: %+v", mode, i, meta)
					}
				default:
					if meta.BudgetState != BudgetHard || !slices.Contains(meta.ReasonCodes, response.BudgetHardLimit) {
						t.Fatalf("%s: read 25: %+v", mode, meta)
					}
				}
			}
			meta, resp := g.CheckRead(r)
			if resp == nil {
				t.Fatalf("%s: read 26 allowed", mode)
			}
			e := resp.Error
			if e.Code != response.BudgetExceeded || e.Message != "Read budget exceeded. Use search to narrow scope: 25/25 reads, 250/2500 lines used." ||
				!reflect.DeepEqual(e.Details["reason_codes"], []string{response.BudgetHardLimit}) || e.Details["recovery_hint"] == "" ||
				meta.BudgetState != BudgetHard || !slices.Equal(meta.ReasonCodes, []string{response.BudgetHardLimit}) {
				t.Errorf("%s: %+v / %+v", mode, e, meta)
			}
			// A precision read is no way around a spent budget.
			if _, resp := g.CheckRead(Read{Tool: "read_file", Path: "pkg/a.go", StartLine: 1, EndLine: 5}); resp == nil || resp.Error.Code != response.BudgetExceeded {
				t.Errorf("%s: precision read past the budget: %+v", mode, resp)
			}
		}
	})
	t.Run("lines", func(t *testing.T) {
		g := searched(t, DefaultConfig())
		r := Read{Tool: "read_file", Path: "pkg/a.go", StartLine: 1, EndLine: 200}
		for i, want := range []string{BudgetOK, BudgetOK, BudgetOK, BudgetOK, BudgetOK, BudgetOK, BudgetOK, BudgetOK, BudgetOK, BudgetSoft, BudgetSoft, BudgetSoft, BudgetHard} {
			if _, resp := g.CheckRead(r); resp != nil {
				t.Fatalf("read %d refused", i+1)
			}
			if got := g.OnReadResult(r, 200, 100).BudgetState; got != want {
				t.Fatalf("after %d lines: %s, want %s", (i+1)*200, got, want)
			}
		}
		if _, resp := g.CheckRead(r); resp == nil || resp.Error.Code != response.BudgetExceeded {
			t.Fatalf("read past 2600 lines: %+v", resp)
		}
	})
}

// TestPreviewDegraded: S-11 — a read over max_single_read_lines or
// max_preview_chars is PREVIEW_DEGRADED (and counted), with a windowed
// next call; once soft, the preview limits halve.
func TestPreviewDegraded(t *testing.T) {
	g := searched(t, DefaultConfig())
	r := Read{Tool: "read_file", CandidateID: CandidateID("budget guard", "pkg/b.go")}
	for _, tc := range []struct {
		lines, chars int
		degraded     bool
	}{{300, 12000, false}, {301, 10, true}, {10, 12001, true}} {
		meta := g.OnReadResult(r, tc.lines, tc.chars)
		if got := slices.Contains(meta.ReasonCodes, response.PreviewDegraded); got != tc.degraded {
			t.Errorf("%d lines %d chars: degraded %v", tc.lines, tc.chars, got)
		}
		if tc.degraded && (meta.SuggestedNextAction != ActionReadRange ||
			!reflect.DeepEqual(meta.NextCalls, []NextCall{{"read_file", map[string]any{"path": "pkg/b.go", "start_line": 1, "end_line": 200}}})) {
			t.Errorf("degraded meta %+v", meta)
		}
	}
	if got := g.Metrics().PreviewDegradedCount; got != 2 {
		t.Errorf("preview_degraded_count %d", got)
	}
	if l, c := g.PreviewLimits(); l != 300 || c != 12000 {
		t.Errorf("limits %d %d", l, c)
	}
	for g.BudgetState() == BudgetOK {
		g.OnReadResult(r, 1, 1)
	}
	if l, c := g.PreviewLimits(); l != 150 || c != 6000 {
		t.Errorf("soft limits %d %d", l, c)
	}
	if meta := g.OnReadResult(r, 151, 10); !slices.Contains(meta.ReasonCodes, response.PreviewDegraded) {
		t.Errorf("151 lines when soft not degraded: %v", meta.ReasonCodes)
	}
}

// TestRelevance: S-12, S-13 — a hit is silent, a miss warns with the
// seed's hint and alternatives and never blocks, excluded trees are not
// judged.
func TestRelevance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		search bool
		read   Read
		warn   bool
	}{
		{"hit by ref", true, Read{Tool: "read_file", CandidateID: CandidateID("budget guard", "docs/c.md")}, false},
		{"hit by range", true, Read{Tool: "read_file", Path: "./pkg/b.go", StartLine: 1, EndLine: 10}, false},
		{"miss", true, Read{Tool: "read_file", Path: "cmd/main.go", StartLine: 1, EndLine: 10}, true},
		{"excluded vendor", true, Read{Tool: "read_file", Path: "vendor/x/z.go", StartLine: 1, EndLine: 10}, false},
		{"excluded nested node_modules", true, Read{Tool: "read_file", Path: "web/node_modules/a.js", StartLine: 1, EndLine: 10}, false},
		{"no search yet", false, Read{Tool: "read_file", Path: "cmd/main.go", StartLine: 1, EndLine: 10}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(DefaultConfig(), true)
			if tc.search {
				g.OnSearchResult("search", "read_file", "budget guard", searchPaths)
			}
			meta, resp := g.CheckRead(tc.read)
			if resp != nil {
				t.Fatalf("relevance blocked: %+v", resp.Error)
			}
			if got := slices.Contains(meta.ReasonCodes, response.LowRelevanceOutsideTop); got != tc.warn {
				t.Fatalf("warned %v: %+v", got, meta)
			}
			if tc.warn {
				if meta.Warnings[0] != "This target seems unrelated. Try pkg/a.go, pkg/b.go, docs/c.md." || meta.SuggestedNextAction != ActionReadCandidate || len(meta.NextCalls) != 3 {
					t.Errorf("miss meta %+v", meta)
				}
			}
		})
	}
}

// TestMetrics: S-09 — a fixed sequence gives exact metrics.
func TestMetrics(t *testing.T) {
	run := func() Metrics {
		g := New(DefaultConfig(), true)
		g.OnReadResult(Read{Path: "a", StartLine: 1, EndLine: 10}, 10, 300)
		g.OnSearchResult("search", "read_file", "q", []string{"a", "b"})
		g.OnReadResult(Read{CandidateID: CandidateID("q", "b")}, 40, 1000)
		g.OnReadResult(Read{Path: "a", StartLine: 1, EndLine: 400}, 400, 100)
		g.OnSearchResult("search", "read_file", "q2", nil)
		return g.Metrics()
	}
	want := Metrics{ReadsCount: 3, ReadsLinesTotal: 450, ReadsCharsTotal: 1400, SearchCount: 2,
		ReadAfterSearchRatio: 0.6667, AvgReadSpan: 150, MaxReadSpan: 400, PreviewDegradedCount: 1}
	if got := run(); got != want {
		t.Errorf("metrics\n got %+v\nwant %+v", got, want)
	}
	if run() != run() {
		t.Error("metrics differ between runs")
	}
}

// TestMetaJSON: S-20 — the seed's field names, arrays never null.
func TestMetaJSON(t *testing.T) {
	b, err := json.Marshal(Meta{BudgetState: BudgetOK})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"budget_state":"ok","warnings":[],"reason_codes":[],"metrics_snapshot":{"reads_count":0,"reads_lines_total":0,"reads_chars_total":0,"search_count":0,"read_after_search_ratio":0,"avg_read_span":0,"max_read_span":0,"preview_degraded_count":0},"next_calls":[]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestExcluded(t *testing.T) {
	for p, want := range map[string]bool{
		"vendor": true, "vendor/a.go": true, "a/vendor/b.go": true, "a/vendor": true, ".git/HEAD": true, "dist/x.js": true,
		"node_modules/x": true, "vendored/a.go": false, "distance.go": false, "src/dist.go": false, "a.git/x": false,
	} {
		if got := excluded(p); got != want {
			t.Errorf("excluded(%q) = %v", p, got)
		}
	}
}

// TestSoftBudget: with Budget warn a spent budget is a warning and the read
// runs (gate hook's soft limits); with the default it refuses.
func TestSoftBudget(t *testing.T) {
	for _, budget := range []string{ModeEnforce, ModeWarn} {
		cfg := DefaultConfig()
		cfg.MaxReads, cfg.Mode, cfg.Budget = 1, ModeOff, budget
		g := New(cfg, false)
		r := Read{Tool: "read_file", Path: "a.go"}
		if _, block := g.CheckRead(r); block != nil {
			t.Fatalf("%s: first read blocked: %+v", budget, block)
		}
		g.OnReadResult(r, 10, 100)
		meta, block := g.CheckRead(Read{Tool: "read_file", Path: "b.go"})
		if (block != nil) != (budget == ModeEnforce) {
			t.Errorf("budget %s: block = %+v", budget, block)
		}
		if !contains(meta.ReasonCodes, response.BudgetHardLimit) {
			t.Errorf("budget %s: codes %v lack %s", budget, meta.ReasonCodes, response.BudgetHardLimit)
		}
		if budget == ModeWarn && len(meta.Warnings) == 0 {
			t.Errorf("budget warn: no warning")
		}
	}
}
