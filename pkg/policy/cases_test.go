package policy_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/govkit/govkit/pkg/policy"
)

var updateCases = flag.Bool("update-cases", false, "rewrite the want sections of testdata/cases/*.txtar")

// TestRunCases runs each testdata/cases/*.txtar: a policy.yaml, a
// cases.yaml, and the report they must give (want).
func TestRunCases(t *testing.T) {
	files, err := filepath.Glob("testdata/cases/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/cases/*.txtar: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string][]byte{}
			for _, f := range ar.Files {
				sections[f.Name] = f.Data
			}
			cfg, err := policy.LoadNamed("policy.yaml", bytes.NewReader(sections["policy.yaml"]))
			if err != nil {
				t.Fatal(err)
			}
			cases, err := policy.LoadCases("cases.yaml", bytes.NewReader(sections["cases.yaml"]))
			if err != nil {
				t.Fatal(err)
			}
			rep := policy.RunCases(policy.NewEngine(policy.EngineConfig{PolicyConfig: cfg}), cfg, cases)
			for _, c := range rep.Cases {
				if !c.Pass && c.Explanation == "" {
					t.Errorf("failed case %q has no explanation", c.Name)
				}
			}
			if passed := !strings.Contains(renderReport(rep), "FAIL "); rep.Passed() != passed {
				t.Errorf("Passed() = %t, want %t", rep.Passed(), passed)
			}
			got := renderReport(rep)
			if want := string(sections["want"]); got != want {
				if *updateCases {
					for i := range ar.Files {
						if ar.Files[i].Name == "want" {
							ar.Files[i].Data = []byte(got)
						}
					}
					if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				t.Errorf("report differs (go test -run TestRunCases -update-cases rewrites it)\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

// renderReport writes the report as the goldens hold it: results, then
// coverage (only for files whose cases all pass, so that a failing file's
// golden stays about the failures).
func renderReport(rep policy.Report) string {
	var b strings.Builder
	for _, c := range rep.Cases {
		if c.Pass {
			fmt.Fprintf(&b, "PASS %s\n", c.Name)
			continue
		}
		fmt.Fprintf(&b, "FAIL %s\n", c.Name)
		for _, d := range c.Differences {
			fmt.Fprintf(&b, "  %s\n", d)
		}
	}
	if !rep.Passed() {
		return b.String()
	}
	for _, p := range rep.Coverage {
		if p.Applied == 0 {
			fmt.Fprintf(&b, "policy %s (line %d): never applied: %s\n", p.Policy, p.Line, p.Why)
		} else {
			fmt.Fprintf(&b, "policy %s (line %d): applied %d\n", p.Policy, p.Line, p.Applied)
		}
		for _, r := range p.Rules {
			if r.Reached == 0 {
				fmt.Fprintf(&b, "  rule %d (line %d): never reached: %s\n", r.Index, r.Line, r.Why)
				continue
			}
			fmt.Fprintf(&b, "  rule %d (line %d): reached %d, decided %d, condition_failed %d, schedule_inactive %d\n",
				r.Index, r.Line, r.Reached, r.Decided, r.ConditionFailed, r.ScheduleInactive)
		}
	}
	return b.String()
}

func TestLoadCases(t *testing.T) {
	cases, err := policy.LoadCases("c.yaml", strings.NewReader(`cases:
  - name: full
    request:
      user: alice@example.com
      roles: dba
      service: db-agent
      resource: database:prod-db
      tags: [production, critical]
      action: write
      rows: 50
      pods: 2
      at: 2026-03-09T20:00:00-04:00
    expect:
      effect: require_approval
      enforced_effect: require_approval
      policy: p
      rule: 1
      quorum: 2
      failed_condition: none
  - name: minimal
    request: {resource: "kubernetes:ns:with:colons", action: read}
    expect: {effect: deny, policy: (default)}
  - name: no tags
    request: {resource: "database:x", action: read, tags: []}
    expect: {effect: deny}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 {
		t.Fatalf("got %d cases", len(cases))
	}
	full, minimal, noTags := cases[0], cases[1], cases[2]
	got := fmt.Sprintf("%d %+v %t %s %s %d %s %v %s", full.Line, full.Request.Principal, full.TagsGiven,
		full.Request.Resource.Type, full.Request.Resource.Name, full.Request.Context.RowsAffected,
		full.Request.Context.Time.UTC().Format("2006-01-02T15:04Z"), full.Request.Resource.Tags, full.Request.Action)
	if want := "2 {UserID:alice@example.com Roles:[dba] Service:db-agent} true database prod-db 50 2026-03-10T00:00Z [production critical] write"; got != want {
		t.Errorf("full case:\n got %s\nwant %s", got, want)
	}
	x := full.Expect
	if x.Effect != policy.EffectRequireApproval || x.EnforcedEffect != policy.EffectRequireApproval || *x.Policy != "p" || *x.Rule != 1 || x.Quorum != 2 || x.FailedCondition != "none" {
		t.Errorf("full expectation: %+v", x)
	}
	if minimal.Request.Resource.Name != "ns:with:colons" || minimal.TagsGiven || minimal.Request.Resource.Tags != nil ||
		!minimal.Request.Context.Time.IsZero() || *minimal.Expect.Policy != "" || minimal.Expect.Rule != nil {
		t.Errorf("minimal case: %+v", minimal)
	}
	if !noTags.TagsGiven || noTags.Request.Resource.Tags == nil || len(noTags.Request.Resource.Tags) != 0 {
		t.Errorf("tags: [] is given and empty: %+v", noTags)
	}
}

func TestLoadCasesErrors(t *testing.T) {
	const ok = "    request: {resource: \"database:x\", action: read}\n    expect: {effect: allow}\n"
	tests := []struct {
		name, src, want string
	}{
		{"empty file", "", "c.yaml:1: empty test case file"},
		{"no cases", "cases: []\n", "c.yaml:1: cases: required: a list of test cases"},
		{"cases missing", "{}\n", "c.yaml:1: cases: required: a list of test cases"},
		{"unknown top key", "tests: []\n", `c.yaml:1: tests: unknown key (want one of cases)`},
		{"unknown case key", "cases:\n  - name: a\n    requst: {}\n",
			"c.yaml:2: cases[0].request: required\nc.yaml:2: cases[0].expect: required\nc.yaml:3: cases[0].requst: unknown key (want one of name, request, expect)"},
		{"unknown request key", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: read, row: 5}\n    expect: {effect: allow}\n",
			`c.yaml:3: cases[0].request.row: unknown key (want one of user, roles, service, resource, tags, action, rows, pods, at)`},
		{"missing name, request and expect", "cases:\n  - {}\n", "c.yaml:2: cases[0].name: required\nc.yaml:2: cases[0].request: required\nc.yaml:2: cases[0].expect: required"},
		{"empty name", "cases:\n  - name: \" \"\n" + ok, "c.yaml:2: cases[0].name: must not be empty"},
		{"duplicate names", "cases:\n  - name: a\n" + ok + "  - name: a\n" + ok, "c.yaml:5: cases[1].name: duplicate case name \"a\" (first at line 2)"},
		{"duplicate key", "cases:\n  - name: a\n    name: b\n" + ok, "c.yaml:3: cases[0].name: duplicate key (first at line 2)"},
		{"missing resource and action", "cases:\n  - name: a\n    request: {user: u}\n    expect: {effect: allow}\n",
			"c.yaml:3: cases[0].request.resource: required\nc.yaml:3: cases[0].request.action: required"},
		{"resource without type", "cases:\n  - name: a\n    request: {resource: prod-db, action: read}\n    expect: {effect: allow}\n",
			`c.yaml:3: cases[0].request.resource: "prod-db" is not TYPE:NAME (e.g. database:prod-db)`},
		{"bad action", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: delete}\n    expect: {effect: allow}\n",
			`c.yaml:3: cases[0].request.action: "delete" is not one of read, write, destructive`},
		{"negative rows", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: write, rows: -1}\n    expect: {effect: allow}\n",
			"c.yaml:3: cases[0].request.rows: -1 must be at least 0"},
		{"rows not a number", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: write, rows: many}\n    expect: {effect: allow}\n",
			`c.yaml:3: cases[0].request.rows: want an integer, got "many"`},
		{"bad time", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: write, at: \"monday 9am\"}\n    expect: {effect: allow}\n",
			`c.yaml:3: cases[0].request.at: "monday 9am" is not an RFC 3339 time (e.g. 2026-03-09T14:00:00-04:00)`},
		{"time without zone", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: write, at: 2026-03-09T14:00:00}\n    expect: {effect: allow}\n",
			`c.yaml:3: cases[0].request.at: "2026-03-09T14:00:00" is not an RFC 3339 time (e.g. 2026-03-09T14:00:00-04:00)`},
		{"missing effect", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: read}\n    expect: {policy: p}\n",
			"c.yaml:4: cases[0].expect.effect: required"},
		{"bad effect", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: read}\n    expect: {effect: alow}\n",
			`c.yaml:4: cases[0].expect.effect: "alow" is not one of allow, deny, require_approval`},
		{"rule without policy", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: read}\n    expect:\n      effect: allow\n      rule: 0\n",
			"c.yaml:6: cases[0].expect.rule: needs policy: naming the policy the rule belongs to"},
		{"rule of the default", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: read}\n    expect: {effect: deny, policy: (default), rule: 0}\n",
			"c.yaml:4: cases[0].expect.rule: needs policy: naming the policy the rule belongs to"},
		{"quorum on allow", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: read}\n    expect: {effect: allow, quorum: 2}\n",
			"c.yaml:4: cases[0].expect.quorum: needs effect or enforced_effect require_approval: only an approval has a quorum"},
		{"quorum zero", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: read}\n    expect: {effect: require_approval, quorum: 0}\n",
			"c.yaml:4: cases[0].expect.quorum: 0 must be at least 1"},
		{"bad failed condition", "cases:\n  - name: a\n    request: {resource: \"database:x\", action: read}\n    expect: {effect: deny, failed_condition: schedule}\n",
			`c.yaml:4: cases[0].expect.failed_condition: "schedule" is not one of max_rows_affected, max_pods_affected, none`},
		{"case is a list", "cases:\n  - [a, b]\n", "c.yaml:2: cases[0]: want a mapping with keys name, request, expect, got a list"},
		{"yaml syntax", "cases:\n  - name: a: b\n", "c.yaml:2: invalid YAML: mapping values are not allowed in this context"},
		{"two documents", "cases: []\n---\ncases: []\n", `c.yaml:2: more than one YAML document (remove the second "---")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.LoadCases("c.yaml", strings.NewReader(tt.src))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}
