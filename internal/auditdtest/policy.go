package auditdtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/policy"
)

// RequireApprovalPolicy is a policy file under which every action on every
// resource needs one approval. auditd opens an approval request only when
// its policy requires one (DESIGN §11 "Approvals come from policy"), so a
// test that requests approvals runs with such a policy in force.
const RequireApprovalPolicy = `version: "1"
default_effect: require_approval
policies: []
`

// LoadPolicy is the policy file doc, and the infra file infra when not
// empty, as auditd --policy policies.yaml --infra infra.yaml loads them.
func LoadPolicy(t testing.TB, doc, infra string) *auditd.Policy {
	t.Helper()
	cfg, err := policy.LoadNamed("policies.yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := &auditd.Policy{Config: cfg, File: "policies.yaml", SHA256: strings.Repeat("ab", 32)}
	if infra != "" {
		if p.Infra, err = policy.LoadInfraNamed("infra.yaml", strings.NewReader(infra)); err != nil {
			t.Fatal(err)
		}
		p.InfraFile = "infra.yaml"
	}
	return p
}

// RequireApproval is RequireApprovalPolicy: every action needs one
// approval.
func RequireApproval(t testing.TB) *auditd.Policy {
	t.Helper()
	return LoadPolicy(t, RequireApprovalPolicy, "")
}

// RequireQuorum is RequireApprovalPolicy, except that every action on the
// resource typ:name needs quorum approvals (the policy's approval_quorum:
// a requester cannot choose it).
func RequireQuorum(t testing.TB, typ, name string, quorum int) *auditd.Policy {
	t.Helper()
	return LoadPolicy(t, RequireApprovalPolicy[:strings.Index(RequireApprovalPolicy, "policies:")]+fmt.Sprintf(`policies:
  - name: quorum-%[1]s-%[2]s
    resources:
      - {type: %[1]q, name: %[2]q}
    rules:
      - action: [read, write, destructive]
        effect: require_approval
        conditions: {approval_quorum: %[3]d}
`, typ, name, quorum), "")
}
