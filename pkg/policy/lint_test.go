package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/policy"
)

// loadPolicies loads a policy file made of a header and body, so that line
// numbers in the tests are body line + 2.
func loadPolicies(t *testing.T, defaultEffect, body string) *policy.Config {
	t.Helper()
	src := "version: \"1\"\ndefault_effect: " + defaultEffect + "\npolicies:\n" + body
	cfg, err := policy.LoadNamed("test.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatalf("load: %v\n%s", err, src)
	}
	return cfg
}

func TestLint(t *testing.T) {
	// want lists findings as "kind policy rule line: message fragment".
	tests := []struct {
		name          string
		defaultEffect string
		body          string
		want          []string
	}{
		{
			name:          "the seed's three policies are clean",
			defaultEffect: "deny",
			body: `
  - name: production-database-protection
    resources: [{type: database, match: {tags: [production]}}]
    rules:
      - {action: read, effect: allow}
      - action: write
        effect: allow
        conditions: {require_approval: true, max_rows_affected: 1000}
      - {action: destructive, effect: deny, message: no}
  - name: change-freeze
    resources: [{type: database, match: {tags: [production]}}]
    rules:
      - action: [write, destructive]
        effect: deny
        conditions:
          schedule: {days: [mon, tue, wed, thu, fri], hours: [9, 10, 11, 12, 13, 14, 15, 16], timezone: America/New_York}
  - name: dba-privileges
    principals: [{role: dba}]
    resources: [{type: database}]
    rules:
      - {action: [read, write], effect: allow}
      - action: destructive
        effect: allow
        conditions: {require_approval: true, approval_quorum: 2}
`,
		},
		{
			name:          "default allow fails open",
			defaultEffect: "allow",
			body: `
  - name: p
    resources: [{type: database}]
    rules: [{action: read, effect: allow}]
`,
			want: []string{"default_allow  -1 2: fail-open"},
		},
		{
			name:          "a rule after a catch-all is shadowed; a scheduled rule shadows nothing",
			defaultEffect: "deny",
			body: `
  - name: p
    resources: [{type: database}]
    rules:
      - action: write
        effect: deny
        conditions: {schedule: {hours: [9], timezone: UTC}}
      - {action: [read, write, destructive], effect: allow}
      - {action: write, effect: require_approval}
`,
			want: []string{"shadowed_rule p 2 12: rule 2 can never decide: rule 1 already takes write; delete it, or move it above rule 1"},
		},
		{
			name:          "a blast-radius limit does not stop a rule from shadowing",
			defaultEffect: "deny",
			body: `
  - name: p
    resources: [{type: database}]
    rules:
      - {action: write, effect: allow, conditions: {max_rows_affected: 10}}
      - {action: write, effect: deny}
`,
			want: []string{"shadowed_rule p 1 9: rule 0 already takes write"},
		},
		{
			name:          "shadowed by two earlier rules together",
			defaultEffect: "deny",
			body: `
  - name: p
    resources: [{type: database}]
    rules:
      - {action: read, effect: allow}
      - {action: write, effect: require_approval}
      - {action: [read, write], effect: deny}
`,
			want: []string{"shadowed_rule p 2 10: rule 0 already takes read, rule 1 already takes write; delete it, or move it above rules 0 and 1"},
		},
		{
			name:          "a schedule covering the whole week is no schedule",
			defaultEffect: "deny",
			body: `
  - name: p
    resources: [{type: database}]
    rules:
      - {action: write, effect: deny, conditions: {schedule: {timezone: UTC}}}
      - {action: write, effect: allow}
`,
			want: []string{"shadowed_rule p 1 9: rule 0 already takes write"},
		},
		{
			name:          "one action of a list is shadowed",
			defaultEffect: "deny",
			body: `
  - name: p
    resources: [{type: database}]
    rules:
      - {action: [read, destructive], effect: deny}
      - {action: [write, destructive], effect: require_approval}
`,
			want: []string{"shadowed_action p 1 9: destructive never reaches rule 1: rule 0 already takes destructive; remove destructive from this rule"},
		},
		{
			name:          "a disabled policy never applies, and its rules are not linted",
			defaultEffect: "deny",
			body: `
  - name: old
    enabled: false
    resources: [{type: database}]
    rules:
      - {action: read, effect: allow}
      - {action: read, effect: deny, conditions: {require_approval: true}}
`,
			want: []string{"unreachable_policy old -1 5: disabled"},
		},
		{
			name:          "quorum without approval",
			defaultEffect: "deny",
			body: `
  - name: p
    resources: [{type: database}]
    rules:
      - {action: read, effect: allow, conditions: {approval_quorum: 2}}
      - {action: write, effect: allow, conditions: {approval_quorum: 2, require_approval: true}}
      - {action: destructive, effect: require_approval, conditions: {approval_quorum: 3}}
`,
			want: []string{"approval_quorum_without_approval p 0 8: add require_approval: true or remove approval_quorum"},
		},
		{
			name:          "quorum on a deny rule",
			defaultEffect: "deny",
			body: `
  - name: p
    resources: [{type: database}]
    rules:
      - {action: destructive, effect: deny, conditions: {approval_quorum: 2}}
`,
			want: []string{"approval_quorum_without_approval p 0 8: effect is deny"},
		},
		{
			name:          "conditions on a deny rule; its schedule is fine",
			defaultEffect: "deny",
			body: `
  - name: p
    resources: [{type: database}]
    rules:
      - {action: write, effect: deny, conditions: {require_approval: true}}
      - action: destructive
        effect: deny
        conditions:
          max_rows_affected: 10
          max_pods_affected: 1
          schedule: {days: [sat], timezone: UTC}
`,
			want: []string{
				"condition_on_deny p 0 8: a deny is final, so this rule's require_approval cannot change anything; remove it",
				"condition_on_deny p 1 9: max_rows_affected and max_pods_affected cannot change anything; remove them",
			},
		},
		{
			name:          "blast radius on a read-only rule",
			defaultEffect: "deny",
			body: `
  - name: k
    resources: [{type: kubernetes}]
    rules:
      - {action: read, effect: allow, conditions: {max_pods_affected: 5}}
      - {action: [write, destructive], effect: allow, conditions: {max_pods_affected: 5}}
`,
			want: []string{"blast_radius_on_read k 0 8: move it to the write or destructive rule"},
		},
		{
			name:          "an audit policy alone turns the default deny into an enforced allow",
			defaultEffect: "deny",
			body: `
  - name: trial
    enforcement: audit
    resources: [{type: kubernetes, match: {tags: [production]}}]
    rules:
      - {action: destructive, effect: deny}
`,
			want: []string{"audit_policy_fails_open trial 0 9: a destructive request on type kubernetes tags production that no enforce policy decides"},
		},
		{
			name:          "an audit policy inside an enforce policy's reach is safe",
			defaultEffect: "deny",
			body: `
  - name: k8s
    principals: [{role: sre}, {service: agent}]
    resources: [{type: kubernetes, match: {tags: [production]}}]
    rules:
      - {action: [read, write, destructive], effect: require_approval}
  - name: trial
    enforcement: audit
    principals: [{service: agent}]
    resources: [{type: kubernetes, name: payments, match: {tags: [production, eu]}}]
    rules:
      - {action: destructive, effect: deny}
`,
		},
		{
			name:          "an enforce policy that is narrower, scheduled or for other principals does not cover",
			defaultEffect: "require_approval",
			body: `
  - name: narrower
    resources: [{type: database, name: "prod-*", match: {tags: [production, eu]}}]
    rules: [{action: write, effect: allow}]
  - name: scheduled
    resources: [{type: database}]
    rules: [{action: write, effect: deny, conditions: {schedule: {days: [sat], timezone: UTC}}}]
  - name: others
    principals: [{role: dba}]
    resources: [{type: database}]
    rules: [{action: write, effect: allow}]
  - name: trial
    enforcement: audit
    resources: [{type: database, match: {tags: [production]}}]
    rules:
      - {action: read, effect: allow}
      - {action: write, effect: deny}
`,
			want: []string{
				"audit_policy_fails_open trial 0 19: a read request",
				"audit_policy_fails_open trial 1 20: a write request on type database tags production that no enforce policy decides gets this audit rule's outcome, which is enforced as allow instead of default_effect require_approval",
			},
		},
		{
			name:          "with default allow an audit policy loosens nothing",
			defaultEffect: "allow",
			body: `
  - name: trial
    enforcement: audit
    resources: [{type: kubernetes}]
    rules: [{action: destructive, effect: deny}]
`,
			want: []string{"default_allow  -1 2: fail-open"},
		},
		{
			name:          "findings come sorted by line across policies",
			defaultEffect: "allow",
			body: `
  - name: a
    resources: [{type: database}]
    rules:
      - {action: read, effect: allow}
      - {action: read, effect: deny}
  - name: b
    enabled: false
    resources: [{type: database}]
    rules: [{action: read, effect: allow}]
`,
			want: []string{
				"default_allow  -1 2: default_effect allow",
				"shadowed_rule a 1 9: rule 0 already takes read",
				"unreachable_policy b -1 10: enabled: false",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := policy.Lint(loadPolicies(t, tt.defaultEffect, tt.body))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d findings, want %d:\n%s", len(got), len(tt.want), formatFindings(got))
			}
			for i, w := range tt.want {
				head, fragment, _ := strings.Cut(w, ": ")
				f := got[i]
				if gotHead := fmt.Sprintf("%s %s %d %d", f.Kind, f.Policy, f.Rule, f.Line); gotHead != head {
					t.Errorf("finding %d is %q, want %q", i, gotHead, head)
				}
				if !strings.Contains(f.Message, fragment) {
					t.Errorf("finding %d message %q lacks %q", i, f.Message, fragment)
				}
			}
		})
	}
}

func formatFindings(fs []policy.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %d %d: %s\n", f.Kind, f.Policy, f.Rule, f.Line, f.Message)
	}
	return b.String()
}
