package govexplain

import (
	"testing"

	"github.com/govkit/govkit/pkg/policy"
)

func TestFindingLine(t *testing.T) {
	tests := []struct {
		f    policy.Finding
		want string
	}{
		{policy.Finding{Kind: "default_allow", Rule: -1, Message: "m"}, "p.yaml: default_allow: m"},
		{policy.Finding{Kind: "default_allow", Rule: -1, Line: 2, Message: "m"}, "p.yaml:2: default_allow: m"},
		{policy.Finding{Kind: "unreachable_policy", Policy: "old", Rule: -1, Line: 9, Message: "m"}, `p.yaml:9: unreachable_policy: policy "old": m`},
		{policy.Finding{Kind: "shadowed_rule", Policy: "db", Rule: 0, Line: 7, Message: "m"}, `p.yaml:7: shadowed_rule: policy "db" rule 0: m`},
		{policy.Finding{Kind: "guardrail_short_window", Rule: -1, Line: 14, Message: "m"}, "p.yaml:14: guardrail_short_window: guardrails: m"},
	}
	for _, tt := range tests {
		if got := findingLine("p.yaml", tt.f); got != tt.want {
			t.Errorf("findingLine(%+v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}
