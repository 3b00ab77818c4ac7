package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// base is a valid policy file; tests edit one line of it. Line numbers in
// the comments are the file's.
const base = `version: "1"
default_effect: deny
policies:
  - name: prod
    description: production databases
    enabled: true
    enforcement: enforce
    principals: [{role: dba}, {user: alice@example.com}, {service: db-agent}]
    resources:
      - type: database
        name: "prod-*"
        match: {tags: [production]}
    rules:
      - action: read
        effect: allow
      - action: [write, destructive]
        effect: allow
        message: careful
        conditions:
          require_approval: true
          approval_quorum: 2
          max_rows_affected: 1000
          max_pods_affected: 10
          schedule:
            days: [mon, tue, wed, thu, fri]
            hours: [9, 10, 11, 12, 13, 14, 15, 16]
            timezone: America/New_York
  - name: other
    resources: [{type: kubernetes}]
    rules: [{action: read, effect: allow}]
`

func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(base, old) {
		t.Fatalf("base has no %q", old)
	}
	return strings.Replace(base, old, new, 1)
}

func TestLoadValid(t *testing.T) {
	cfg, err := LoadNamed("policies.yaml", strings.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source != "policies.yaml" || len(cfg.Policies) != 2 {
		t.Fatalf("%+v", cfg)
	}
	p := cfg.Policies[0]
	if p.Line != 4 || p.Rules[0].Line != 14 || p.Rules[1].Line != 16 || cfg.Policies[1].Line != 28 {
		t.Errorf("lines: policy %d, rules %d %d, second policy %d", p.Line, p.Rules[0].Line, p.Rules[1].Line, cfg.Policies[1].Line)
	}
	r := p.Rules[1]
	c := r.Conditions
	if len(r.Actions) != 2 || r.Actions[1] != ActionDestructive || len(p.Rules[0].Actions) != 1 ||
		!c.RequireApproval || c.ApprovalQuorum != 2 || *c.MaxRowsAffected != 1000 || *c.MaxPodsAffected != 10 ||
		c.Schedule.Timezone != "America/New_York" || len(c.Schedule.Hours) != 8 || *p.Enabled != true ||
		p.Resources[0].Match.Tags[0] != "production" || p.Principals[2].Service != "db-agent" {
		t.Errorf("decoded %+v", p)
	}
}

// TestLoadErrors: each error names the file, the line and the field
// (DESIGN §3 "Bad input"; the loader list).
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // the whole message, or its prefix when it ends in "…"
	}{
		{"bad effect", edit(t, "        effect: allow\n        message", "        effect: alow\n        message"),
			`policies.yaml:17: policies[0].rules[1].effect: "alow" is not one of allow, deny, require_approval`},
		{"unknown key", edit(t, "    enforcement: enforce", "    enforcment: enforce"),
			`policies.yaml:7: policies[0].enforcment: unknown key (want one of name, description, enabled, enforcement, principals, resources, rules)`},
		{"unknown nested key", edit(t, "          max_pods_affected: 10", "          max_pod_affected: 10"),
			`policies.yaml:23: policies[0].rules[1].conditions.max_pod_affected: unknown key…`},
		{"bad zone", edit(t, "timezone: America/New_York", "timezone: America/New_Yrok"),
			`policies.yaml:27: policies[0].rules[1].conditions.schedule.timezone: unknown time zone "America/New_Yrok"…`},
		{"hour 24", edit(t, "15, 16]", "15, 24]"),
			`policies.yaml:26: policies[0].rules[1].conditions.schedule.hours[7]: 24 is not an hour (0–23, local wall-clock hours)`},
		{"bad day", edit(t, "[mon, tue,", "[mon, tues,"),
			`policies.yaml:25: policies[0].rules[1].conditions.schedule.days[1]: "tues" is not a day (mon, tue, wed, thu, fri, sat, sun)`},
		{"duplicate names", edit(t, "name: other", "name: prod"),
			`policies.yaml:28: policies[1].name: duplicate policy name "prod" (first at line 4)`},
		{"quorum 0", edit(t, "approval_quorum: 2", "approval_quorum: 0"),
			`policies.yaml:21: policies[0].rules[1].conditions.approval_quorum: 0 must be at least 1`},
		{"negative limit", edit(t, "max_rows_affected: 1000", "max_rows_affected: -1"),
			`policies.yaml:22: policies[0].rules[1].conditions.max_rows_affected: -1 must be 0 or more`},
		{"version", edit(t, `version: "1"`, `version: "2"`),
			`policies.yaml:1: version: "2" is not supported (want "1")`},
		{"no version", edit(t, `version: "1"`+"\n", ""),
			`policies.yaml:1: version: required (want "1")`},
		{"bad default", edit(t, "default_effect: deny", "default_effect: maybe"),
			`policies.yaml:2: default_effect: "maybe" is not one of allow, deny, require_approval`},
		{"enforcement", edit(t, "enforcement: enforce", "enforcement: dry-run"),
			`policies.yaml:7: policies[0].enforcement: "dry-run" is not one of enforce, audit`},
		{"two principal fields", edit(t, "{role: dba}", "{role: dba, user: bob}"),
			`policies.yaml:8: policies[0].principals[0]: want exactly one of role, user or service, got 2`},
		{"empty principal", edit(t, "{role: dba}", "{}"),
			`policies.yaml:8: policies[0].principals[0]: want exactly one of role, user or service, got 0`},
		{"no type", edit(t, "      - type: database\n        name:", "      - name:"),
			`policies.yaml:10: policies[0].resources[0].type: required…`},
		{"bad glob", edit(t, `name: "prod-*"`, `name: "prod-["`),
			`policies.yaml:11: policies[0].resources[0].name: "prod-[" is not a valid glob…`},
		{"bad action", edit(t, "[write, destructive]", "[write, delete]"),
			`policies.yaml:16: policies[0].rules[1].action[1]: "delete" is not one of read, write, destructive`},
		{"missing effect", edit(t, "      - action: read\n        effect: allow\n", "      - action: read\n"),
			`policies.yaml:14: policies[0].rules[0].effect: required: one of allow, deny, require_approval`},
		{"empty rules", edit(t, "rules: [{action: read, effect: allow}]", "rules: []"),
			`policies.yaml:30: policies[1].rules: required: a policy needs at least one rule`},
		{"no resources", edit(t, "resources: [{type: kubernetes}]", "resources: []"),
			`policies.yaml:29: policies[1].resources: required: a policy without resources never applies`},
		{"no name", edit(t, "  - name: other\n", "  - description: other\n"),
			`policies.yaml:28: policies[1].name: required…`},
		{"bool", edit(t, "enabled: true", "enabled: yes"),
			`policies.yaml:6: policies[0].enabled: want true or false, got "yes"`},
		{"int", edit(t, "max_pods_affected: 10", "max_pods_affected: ten"),
			`policies.yaml:23: policies[0].rules[1].conditions.max_pods_affected: want an integer, got "ten"`},
		{"wrong kind", edit(t, "rules: [{action: read, effect: allow}]", "rules: {action: read}"),
			`policies.yaml:30: policies[1].rules: want a list, got a mapping`},
		{"duplicate key", edit(t, "    enabled: true\n", "    enabled: true\n    enabled: false\n"),
			`policies.yaml:7: policies[0].enabled: duplicate key (first at line 6)`},
		{"merge key", "version: \"1\"\nx: &x {type: database}\npolicies: []\n",
			`policies.yaml:2: x: unknown key (want one of version, default_effect, policies, guardrails)`},
		{"merge key used", "version: \"1\"\npolicies:\n  - name: a\n    resources:\n      - <<: {type: database}\n    rules: [{action: read, effect: allow}]\n",
			`policies.yaml:5: policies[0].resources[0]: merge keys (<<) are not supported…`},
		{"syntax", edit(t, "    rules:\n      - action: read", "    rules:\n     - action: read\n   oops"),
			`policies.yaml:…`},
		{"tab indentation", "version: \"1\"\npolicies:\n\t- name: x\n",
			`policies.yaml:3: invalid YAML: found character that cannot start any token`},
		{"unfinished at end of input", "[\n", `policies.yaml:2: invalid YAML…`},
		{"empty", "", `policies.yaml:1: empty policy file`},
		{"comments only", "# nothing\n", `policies.yaml:1: empty policy file`},
		{"two documents", base + "---\nversion: \"1\"\n", `policies.yaml:31: more than one YAML document…`},
		{"not a mapping", "- a\n- b\n", `policies.yaml:1: want a mapping with keys version, default_effect, policies, guardrails, got a list`},
		{"control character", "version: \"1\"\npolicies: []\n# \x1b[31m\n", `policies.yaml:3: control character U+001B is not allowed`},
		{"invalid utf-8", "version: \"1\"\n\xff\n", `policies.yaml:2: invalid UTF-8: policy files must be UTF-8 text`},
		{"utf-16", "\xff\xfev\x00", `policies.yaml:1: invalid UTF-8…`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadNamed("policies.yaml", strings.NewReader(tt.doc))
			if err == nil {
				t.Fatal("loaded")
			}
			got := strings.Split(err.Error(), "\n")[0]
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(got, prefix) {
					t.Errorf("got  %s\nwant %s", got, tt.want)
				}
			} else if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var le *LoadError
			if !errors.As(err, &le) || le.Line < 1 || le.File != "policies.yaml" {
				t.Errorf("not a located *LoadError: %#v", err)
			}
		})
	}
}

// TestLoadManyErrors: problems come in line order, capped.
func TestLoadManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: \"1\"\npolicies:\n")
	for i := 0; i < 15; i++ {
		b.WriteString("  - {name: p" + strings.Repeat("x", i) + ", resources: [{type: db}], rules: [{action: read, effect: alow}]}\n")
	}
	_, err := LoadNamed("many.yaml", strings.NewReader(b.String()))
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxErrors+1 || lines[maxErrors] != "many.yaml:13: too many errors" {
		t.Fatalf("%d lines:\n%s", len(lines), err)
	}
	if !strings.HasPrefix(lines[0], "many.yaml:3: policies[0].rules[0].effect") || !strings.HasPrefix(lines[1], "many.yaml:4: ") {
		t.Errorf("order:\n%s", err)
	}
}

func TestLoadLimits(t *testing.T) {
	big := "version: \"1\"\n#" + strings.Repeat("x", MaxInputSize) + "\n"
	if _, err := Load(strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "exceeds the input size limit of 1048576 bytes") {
		t.Errorf("size: %v", err)
	}
	// Aliases are fine while small.
	doc := "version: \"1\"\npolicies:\n  - {name: p, resources: [{type: db, match: {tags: &t [a, b]}}], rules: [{action: read, effect: allow}]}\n  - {name: q, resources: [{type: db, match: {tags: *t}}], rules: [{action: read, effect: allow}]}\n"
	if _, err := Load(strings.NewReader(doc)); err != nil {
		t.Fatalf("small alias file: %v", err)
	}
	var b strings.Builder
	b.WriteString("version: \"1\"\npolicies:\n  - name: p\n    resources:\n      - type: db\n        match:\n          tags: &t0 [a, a, a, a, a, a, a, a, a, a]\n    rules: [{action: read, effect: allow}]\n")
	// One list of 10,000 selectors, aliased by 30 policies: 150 KiB of
	// text that would expand to 300,000 selectors.
	b.WriteString("  - &big\n    name: q\n    resources: &rs [")
	for i := 0; i < 10000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{type: db}")
	}
	b.WriteString("]\n    rules: [{action: read, effect: allow}]\n")
	for i := 0; i < 30; i++ {
		b.WriteString("  - {name: r" + strings.Repeat("x", i) + ", resources: *rs, rules: [{action: read, effect: allow}]}\n")
	}
	_, err := LoadNamed("bomb.yaml", strings.NewReader(b.String()))
	if err == nil || !strings.Contains(err.Error(), "document too large: more than 250000 YAML nodes (aliases expanded)") {
		t.Fatalf("alias expansion: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "bomb.yaml:") {
		t.Errorf("no line: %v", err)
	}
}

func TestLoadAliasesAndNulls(t *testing.T) {
	doc := `version: "1"
policies:
  - name: a
    description:
    principals: ~
    resources: &prod [{type: database, match: {tags: [production]}}]
    rules: &rules
      - {action: read, effect: allow, conditions: ~}
  - name: b
    resources: *prod
    rules: *rules
`
	cfg, err := Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Policies[1].Resources[0].Match.Tags[0]; got != "production" || cfg.Policies[1].Rules[0].Conditions != nil {
		t.Errorf("alias: %+v", cfg.Policies[1])
	}
	if cfg.Source != unnamedInput {
		t.Errorf("source %q", cfg.Source)
	}
	if _, err := Load(strings.NewReader("version: 1\npolicies: []\n")); err != nil {
		t.Errorf("version as a number: %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(path, []byte(edit(t, "effect: allow\n        message", "effect: alow\n        message")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":17: ") {
		t.Errorf("%v", err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestValidateHandBuilt: Config.Validate for configs built in code names
// fields, and lines when the config carries them.
func TestValidateHandBuilt(t *testing.T) {
	cfg := &Config{Version: "1", Policies: []Policy{
		{Name: "a", Line: 3, Resources: []ResourceSelector{{Type: "db"}}, Rules: []Rule{{Actions: []Action{ActionRead}, Effect: "allow", Line: 5}}},
		{Name: "a", Resources: []ResourceSelector{{Type: "db"}}, Rules: []Rule{{Actions: []Action{"READ"}, Effect: "allow", Conditions: &Conditions{ApprovalQuorum: -2}}}},
	}}
	err := cfg.Validate()
	want := []string{
		`policies[1].name: duplicate policy name "a" (first at line 3)`,
		`policies[1].rules[0].action: "READ" is not one of read, write, destructive`,
		`policies[1].rules[0].conditions.approval_quorum: -2 must be at least 1`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("got\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	cfg.Policies = cfg.Policies[:1]
	cfg.Policies[0].Rules[0].Effect = "nope"
	if err := cfg.Validate(); err == nil || err.Error() != `line 5: policies[0].rules[0].effect: "nope" is not one of allow, deny, require_approval` {
		t.Errorf("%v", err)
	}
}

// yaml.v3 reports parser errors one line early; the loader corrects them.
func TestYAMLSyntaxErrorLines(t *testing.T) {
	for _, tt := range []struct {
		text string
		line string
	}{
		{"version: \"1\"\npolicies:\n  - name: p\n    resources: [unclosed\n", ":4:"},
		{"version: \"1\"\npolicies:\n  - name: p\n    rules: {a: b\n", ":4:"},
		{"version: \"1\"\npolicies:\n\t- name: p\n", ":3:"}, // a scanner error (tab)
	} {
		_, err := LoadNamed("p.yaml", strings.NewReader(tt.text))
		if err == nil || !strings.Contains(err.Error(), "p.yaml"+tt.line) {
			t.Errorf("%q: error %v, want line %s", tt.text, err, tt.line)
		}
	}
}
