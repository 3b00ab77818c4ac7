package reasons

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/session/response"
)

var update = flag.Bool("update", false, "rewrite docs/reasons.md from the embedded registry")

// TestCoreCodesStable pins every code's spelling and meaning: changing one
// is a wire-format change (S-06, S-22 "reason codes deterministic and stable").
func TestCoreCodesStable(t *testing.T) {
	want := map[string]struct {
		severity string
		blocking bool
	}{
		"SEARCH_FIRST_REQUIRED":      {"block", true},
		"SEARCH_REF_REQUIRED":        {"block", true},
		"CANDIDATE_REF_REQUIRED":     {"block", true},
		"BUDGET_SOFT_LIMIT":          {"warning", false},
		"BUDGET_HARD_LIMIT":          {"block", true},
		"LOW_RELEVANCE_OUTSIDE_TOPK": {"warning", false},
		"PREVIEW_DEGRADED":           {"warning", false},
		"BUDGET_EXCEEDED":            {"block", true},
		"READ_RANGE_EXCEEDED":        {"block", true},
		"STRICT_RESOLUTION":          {"block", true},
		"FSM_BLOCKED":                {"block", true},
		"ROUTING_MISMATCH":           {"block", true},
		"NOT_FOUND":                  {"error", false},
		"ACTION_NOT_ALLOWED":         {"block", true},
		"POLICY_BLOCKED":             {"block", true},
		"APPROVAL_REQUIRED":          {"block", true},
		"INVALID_INPUT":              {"block", true},
		"EXECUTION_FAILED":           {"error", false},
		"PHANTOM_EXECUTION":          {"block", true},
		"AGENT_BUSY":                 {"block", true},
	}
	if got := CoreCodes(); len(got) != len(want) {
		t.Fatalf("CoreCodes() = %v, want %d codes", got, len(want))
	}
	reg := Default()
	for code, w := range want {
		re, ok := reg.Lookup(code)
		if !ok {
			t.Errorf("%s: missing from the default registry", code)
			continue
		}
		if re.Severity != w.severity || re.Blocking != w.blocking || !re.Core() {
			t.Errorf("%s: severity %q blocking %v core %v, want %q %v true", code, re.Severity, re.Blocking, re.Core(), w.severity, w.blocking)
		}
		if re.Description == "" {
			t.Errorf("%s: no description", code)
		}
	}
	if got := reg.Codes(); !reflect.DeepEqual(got, CoreCodes()) {
		t.Errorf("default registry codes %v, want exactly the core codes %v", got, CoreCodes())
	}
}

// TestSeed004EnumHasNextCalls: every seed 004 code recommends a next call
// (S-21: always return actionable hints).
func TestSeed004EnumHasNextCalls(t *testing.T) {
	for _, code := range []string{response.SearchFirstRequired, response.SearchRefRequired, response.CandidateRefRequired,
		response.BudgetSoftLimit, response.BudgetHardLimit, response.LowRelevanceOutsideTop, response.PreviewDegraded,
		response.BudgetExceeded, ReadRangeExceeded} {
		re, _ := Default().Lookup(code)
		if len(re.NextCalls) == 0 {
			t.Errorf("%s: no next_calls template", code)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, doc, err string
		check          func(t *testing.T, r *Registry)
	}{
		{name: "empty file keeps the defaults", doc: `{"reasons":[]}`, check: func(t *testing.T, r *Registry) {
			if !reflect.DeepEqual(r.Codes(), Default().Codes()) {
				t.Errorf("codes %v", r.Codes())
			}
		}},
		{name: "extension code added", doc: `{"reasons":[{"code":"SESSION_KEY_FALLBACK","description":"d","severity":"info","next_calls":[{"tool":"{search_tool}","args":{"query":"{query}"}}]}]}`,
			check: func(t *testing.T, r *Registry) {
				re, ok := r.Lookup("SESSION_KEY_FALLBACK")
				if !ok || re.Blocking || re.Core() || re.Severity != "info" || len(re.NextCalls) != 1 {
					t.Errorf("got %+v %v", re, ok)
				}
				if len(r.Codes()) != len(CoreCodes())+1 {
					t.Errorf("codes %v", r.Codes())
				}
			}},
		{name: "core description replaced, severity omitted", doc: `{"reasons":[{"code":"SEARCH_REF_REQUIRED","description":"ours"}]}`,
			check: func(t *testing.T, r *Registry) {
				re, _ := r.Lookup("SEARCH_REF_REQUIRED")
				if re.Description != "ours" || re.Severity != SeverityBlock || !re.Blocking || re.NextCalls != nil {
					t.Errorf("got %+v", re)
				}
			}},
		{name: "core severity restated", doc: `{"reasons":[{"code":"PREVIEW_DEGRADED","description":"d","severity":"warning"}]}`},
		{name: "blocking on a core code", doc: `{"reasons":[{"code":"LOW_RELEVANCE_OUTSIDE_TOPK","description":"d","blocking":true}]}`,
			err: "reasons[0]: LOW_RELEVANCE_OUTSIDE_TOPK: blocking is decided in code"},
		{name: "blocking false is refused too", doc: `{"reasons":[{"code":"SEARCH_FIRST_REQUIRED","description":"d","blocking":false}]}`,
			err: "SEARCH_FIRST_REQUIRED: blocking is decided in code"},
		{name: "blocking on an extension", doc: `{"reasons":[{"code":"X","description":"d","severity":"info","blocking":true}]}`,
			err: "X: blocking is decided in code"},
		{name: "conflicting core severity", doc: `{"reasons":[{"code":"BUDGET_HARD_LIMIT","description":"d","severity":"warning"}]}`,
			err: `reasons[0]: BUDGET_HARD_LIMIT: severity "warning" conflicts with the code's own "block"`},
		{name: "soft code made a block", doc: `{"reasons":[{"code":"BUDGET_SOFT_LIMIT","description":"d","severity":"block"}]}`,
			err: "BUDGET_SOFT_LIMIT: severity \"block\" conflicts"},
		{name: "extension block", doc: `{"reasons":[{"code":"RANGE_STRICT","description":"d","severity":"block"}]}`,
			err: "RANGE_STRICT: an extension reason cannot block"},
		{name: "extension without severity", doc: `{"reasons":[{"code":"RANGE_STRICT","description":"d"}]}`,
			err: `RANGE_STRICT: severity "" is not info, warning or error`},
		{name: "lower-case code", doc: `{"reasons":[{"code":"low","description":"d","severity":"info"}]}`, err: `reasons[0]: code "low" is not UPPER_SNAKE`},
		{name: "duplicate", doc: `{"reasons":[{"code":"A","description":"d","severity":"info"},{"code":"A","description":"d","severity":"info"}]}`,
			err: "reasons[1]: A: duplicate code"},
		{name: "empty description", doc: `{"reasons":[{"code":"A","description":" ","severity":"info"}]}`, err: "A: description is empty"},
		{name: "unknown field", doc: `{"reasons":[{"code":"A","description":"d","severity":"info","semantics":"x"}]}`, err: `unknown field "semantics"`},
		{name: "unknown placeholder", doc: `{"reasons":[{"code":"A","description":"d","severity":"info","next_calls":[{"tool":"{read_tool}","args":{"path":"{file}"}}]}]}`,
			err: "A: next_calls[0]: args.path: unknown placeholder {file}"},
		{name: "empty tool", doc: `{"reasons":[{"code":"A","description":"d","severity":"info","next_calls":[{"tool":""}]}]}`, err: "A: next_calls[0]: tool is empty"},
		{name: "trailing data", doc: `{"reasons":[]} {}`, err: "trailing data"},
		{name: "not an object", doc: `[]`, err: "reason registry: json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestParseDoesNotChangeDefault(t *testing.T) {
	if _, err := Parse([]byte(`{"reasons":[{"code":"FSM_BLOCKED","description":"changed"},{"code":"EXT","description":"d","severity":"info"}]}`)); err != nil {
		t.Fatal(err)
	}
	if re, _ := Default().Lookup("FSM_BLOCKED"); re.Description == "changed" {
		t.Error("Parse changed the default registry")
	}
	if _, ok := Default().Lookup("EXT"); ok {
		t.Error("Parse added to the default registry")
	}
}

func TestExpand(t *testing.T) {
	tmpl := Template{Tool: "{read_tool}", Args: map[string]string{"path": "{path}", "start_line": "{start_line}", "mode": "lines"}}
	tool, args, ok := tmpl.Expand(map[string]any{"read_tool": "read_file", "path": "a.go", "start_line": 3})
	if !ok || tool != "read_file" || !reflect.DeepEqual(args, map[string]any{"path": "a.go", "start_line": 3, "mode": "lines"}) {
		t.Errorf("Expand = %q %v %v", tool, args, ok)
	}
	if _, _, ok := tmpl.Expand(map[string]any{"read_tool": "read_file"}); ok {
		t.Error("missing placeholder value expanded")
	}
	if _, _, ok := tmpl.Expand(map[string]any{"path": "a", "start_line": 1}); ok {
		t.Error("missing tool expanded")
	}
}

// TestReasonsDoc keeps docs/reasons.md in step with the registry; run with
// -update to regenerate it.
func TestReasonsDoc(t *testing.T) {
	path := filepath.Join("..", "..", "..", "docs", "reasons.md")
	got := Default().Markdown()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(got) {
		t.Errorf("docs/reasons.md is out of date: go test ./pkg/session/reasons -run TestReasonsDoc -update")
	}
	for _, code := range Default().Codes() {
		if !strings.Contains(string(got), "| `"+code+"` |") {
			t.Errorf("the doc has no row for %s", code)
		}
	}
}
