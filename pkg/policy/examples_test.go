package policy_test

import (
	"os"
	"testing"

	"github.com/govkit/govkit/pkg/policy"
)

// The repository's example policy file and its tests are documentation, so
// they are tested like code (DESIGN §2: "a complete, commented policy file
// that loads and lints clean").
const (
	examplePolicies = "../../policies.example.yaml"
	exampleCases    = "../../examples/policy-tests.yaml"
)

func TestExamplePoliciesLintClean(t *testing.T) {
	cfg, err := policy.LoadFile(examplePolicies)
	if err != nil {
		t.Fatal(err)
	}
	if findings := policy.Lint(cfg); len(findings) > 0 {
		t.Errorf("%s has lint findings:\n%s", examplePolicies, formatFindings(findings))
	}
}

func TestExamplePolicyTests(t *testing.T) {
	cfg, err := policy.LoadFile(examplePolicies)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exampleCases)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := policy.LoadCases(exampleCases, f)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cases); n < 10 || n > 20 {
		t.Errorf("%s has %d cases; keep it a readable 10–20", exampleCases, n)
	}
	rep := policy.RunCases(policy.NewEngine(policy.EngineConfig{PolicyConfig: cfg}), cfg, cases)
	for _, c := range rep.Cases {
		if !c.Pass {
			t.Errorf("%s:%d: case %q failed: %v\n%s", exampleCases, c.Line, c.Name, c.Differences, c.Explanation)
		}
	}
	// Every rule of the example is exercised, so the tests document all of it.
	for _, u := range rep.Unreached() {
		t.Errorf("%s: no case reaches %s", exampleCases, u)
	}
}
