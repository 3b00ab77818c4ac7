package readguard

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/govkit/govkit/pkg/session/reasons"
	"github.com/govkit/govkit/pkg/session/response"
)

var update = flag.Bool("update", false, "rewrite testdata/scenario.golden.jsonl")

// step is one hook call of a recorded session.
type step struct {
	search []string // OnSearchResult with these paths (query "read budget")
	check  *Read    // CheckRead
	result *Read    // OnReadResult
	lines  int
	chars  int
}

// scenario walks a session through every decision the guard makes.
func scenario() []step {
	cand := func(p string) string { return CandidateID("read budget", p) }
	return []step{
		{check: &Read{Tool: "read_file", Path: "pkg/guard.go"}},                             // SEARCH_FIRST_REQUIRED
		{check: &Read{Tool: "read_file", Path: "pkg/guard.go", StartLine: 1, EndLine: 120}}, // precision exception
		{result: &Read{Tool: "read_file", Path: "pkg/guard.go", StartLine: 1, EndLine: 120}, lines: 120, chars: 4000},
		{search: []string{"pkg/guard.go", "pkg/meta.go", "vendor/lib/x.go", "docs/budget.md"}},
		{check: &Read{Tool: "read_file", Path: "pkg/meta.go"}},                                         // SEARCH_REF_REQUIRED
		{check: &Read{Tool: "read_file", CandidateID: "cand_ffffffffffff"}},                            // CANDIDATE_REF_REQUIRED
		{check: &Read{Tool: "read_file", Path: "pkg/meta.go", StartLine: 300, EndLine: 500}},           // READ_RANGE_EXCEEDED
		{check: &Read{Tool: "read_file", CandidateID: cand("pkg/meta.go")}},                            // allowed by ref
		{result: &Read{Tool: "read_file", CandidateID: cand("pkg/meta.go")}, lines: 900, chars: 30000}, // PREVIEW_DEGRADED
		{check: &Read{Tool: "read_file", Path: "cmd/other.go", StartLine: 1, EndLine: 50}},             // LOW_RELEVANCE_OUTSIDE_TOPK
		{result: &Read{Tool: "read_file", Path: "cmd/other.go", StartLine: 1, EndLine: 50}, lines: 50, chars: 1500},
		{result: &Read{Tool: "read_file", CandidateID: cand("docs/budget.md")}, lines: 1000, chars: 9000}, // soft
		{result: &Read{Tool: "read_file", CandidateID: cand("docs/budget.md")}, lines: 500, chars: 9000},  // hard
		{check: &Read{Tool: "read_file", CandidateID: cand("docs/budget.md")}},                            // BUDGET_EXCEEDED
	}
}

type record struct {
	Hook     string                 `json:"hook"`
	Meta     Meta                   `json:"meta"`
	Response *response.ToolResponse `json:"response,omitempty"`
}

func runScenario(t *testing.T) []record {
	g := New(DefaultConfig(), true)
	var out []record
	for _, s := range scenario() {
		switch {
		case s.search != nil:
			out = append(out, record{Hook: "search", Meta: g.OnSearchResult("search", "read_file", "read budget", s.search)})
		case s.check != nil:
			m, resp := g.CheckRead(*s.check)
			out = append(out, record{Hook: "check", Meta: m, Response: resp})
		default:
			out = append(out, record{Hook: "result", Meta: g.OnReadResult(*s.result, s.lines, s.chars)})
		}
	}
	return out
}

// TestScenarioGolden pins the guard's decisions, codes and next_calls for a
// recorded session (S-06, S-22 "reason codes deterministic and stable"):
// running it twice gives the same bytes, and the bytes are the golden file.
func TestScenarioGolden(t *testing.T) {
	encode := func(recs []record) []byte {
		var b bytes.Buffer
		for _, r := range recs {
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	got := encode(runScenario(t))
	if again := encode(runScenario(t)); !bytes.Equal(got, again) {
		t.Fatal("the same session gave different output")
	}
	golden := filepath.Join("testdata", "scenario.golden.jsonl")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test ./pkg/session/readguard -run TestScenarioGolden -update):\n%s", golden, got)
	}
}

// TestScenarioCodes: every code the guard emits is a registry code (S-07),
// the scenario reaches every seed 004 code, and every refusal and warning
// carries an actionable hint (S-21).
func TestScenarioCodes(t *testing.T) {
	seen := map[string]bool{}
	for i, r := range runScenario(t) {
		for _, c := range r.Meta.ReasonCodes {
			seen[c] = true
		}
		if len(r.Meta.ReasonCodes) > 0 && len(r.Meta.Warnings) == 0 && r.Response == nil {
			t.Errorf("step %d: codes %v without a warning", i, r.Meta.ReasonCodes)
		}
		if r.Response != nil {
			e := r.Response.Error
			seen[e.Code] = true
			if hint, _ := e.Details["recovery_hint"].(string); hint == "" {
				t.Errorf("step %d: %s without recovery_hint", i, e.Code)
			}
			if _, ok := e.Details["auto_recoverable"]; !ok {
				t.Errorf("step %d: %s without auto_recoverable", i, e.Code)
			}
		}
	}
	for _, c := range []string{response.SearchFirstRequired, response.SearchRefRequired, response.CandidateRefRequired,
		response.BudgetSoftLimit, response.BudgetHardLimit, response.LowRelevanceOutsideTop, response.PreviewDegraded,
		response.BudgetExceeded, reasons.ReadRangeExceeded} {
		if !seen[c] {
			t.Errorf("the scenario never emits %s", c)
		}
	}
	for c := range seen {
		if re, ok := reasons.Default().Lookup(c); !ok || !re.Core() {
			t.Errorf("%s is not a core registry code", c)
		}
	}
}
