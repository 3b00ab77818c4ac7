package policy

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// updateGolden is the -update flag (go test ./pkg/policy -run
// TestExplainGolden -update). It is looked up before being defined so that
// another test file of the package may define -update too.
var updateGolden = func() func() bool {
	if f := flag.Lookup("update"); f != nil {
		return func() bool { return f.Value.String() == "true" }
	}
	b := flag.Bool("update", false, "rewrite the golden files in testdata/explain")
	return func() bool { return *b }
}()

var (
	saturday = time.Date(2026, 11, 21, 17, 0, 0, 0, time.UTC)  // Sat 12:00 EST
	tuesday  = time.Date(2026, 11, 24, 15, 30, 0, 0, time.UTC) // Tue 10:30 EST
)

func seed(t *testing.T, opts ...func(*EngineConfig)) *Engine {
	t.Helper()
	cfg, err := LoadFile("testdata/seed003.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ec := EngineConfig{PolicyConfig: cfg, Clock: func() time.Time { return saturday }}
	for _, o := range opts {
		o(&ec)
	}
	return NewEngine(ec)
}

func fromFile(t *testing.T, file string, opts ...func(*EngineConfig)) *Engine {
	t.Helper()
	cfg, err := LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ec := EngineConfig{PolicyConfig: cfg, Clock: func() time.Time { return saturday }}
	for _, o := range opts {
		o(&ec)
	}
	return NewEngine(ec)
}

// TestExplainGolden pins the explanation texts: the seed's four examples
// (blast radius, explicit deny, approval, default deny) and what govkit
// adds to them.
func TestExplainGolden(t *testing.T) {
	alice := RequestPrincipal{UserID: "alice@example.com", Roles: []string{"dba"}}
	bob := RequestPrincipal{UserID: "bob@example.com"}
	prod := RequestResource{Type: "database", Name: "prod-db", Tags: []string{"production", "critical"}}
	prodOnly := RequestResource{Type: "database", Name: "prod-db", Tags: []string{"production"}}
	globalDryRun := func(c *EngineConfig) { c.DryRun = true }
	invalid := NewEngine(EngineConfig{PolicyConfig: &Config{Version: "1", Policies: []Policy{
		{Name: "x", Line: 3, Resources: []ResourceSelector{{Type: "database"}}, Rules: []Rule{{Line: 5, Actions: []Action{"write"}, Effect: "alow"}}},
	}}})
	tests := []struct {
		name string
		e    *Engine
		req  Request
		post bool
	}{
		{"seed-blast-radius", seed(t), Request{Principal: bob, Resource: prod, Action: ActionWrite, Context: RequestContext{RowsAffected: 1500}}, false},
		{"seed-explicit-deny", seed(t), Request{Principal: bob, Resource: prodOnly, Action: ActionDestructive}, false},
		{"seed-approval", seed(t), Request{Principal: bob, Resource: prodOnly, Action: ActionWrite, Context: RequestContext{RowsAffected: 50}}, false},
		{"seed-default-deny", seed(t), Request{Principal: bob, Resource: RequestResource{Type: "database", Name: "unknown-db"}, Action: ActionWrite}, false},
		{"change-freeze", seed(t), Request{Principal: alice, Resource: prod, Action: ActionWrite, Context: RequestContext{Time: tuesday}}, false},
		{"dba-destructive-staging", seed(t), Request{Principal: alice, Resource: RequestResource{Type: "database", Name: "staging-db", Tags: []string{"staging"}}, Action: ActionDestructive}, false},
		{"principal-mismatch", seed(t), Request{Principal: bob, Resource: RequestResource{Type: "database", Name: "staging-db", Tags: []string{"staging"}}, Action: ActionWrite}, false},
		{"global-dry-run", seed(t, globalDryRun), Request{Principal: bob, Resource: prodOnly, Action: ActionDestructive}, false},
		{"post-execution-deny", seed(t), Request{Principal: bob, Resource: prodOnly, Action: ActionWrite, Context: RequestContext{RowsAffected: 1500}}, true},
		{"post-execution-allow", seed(t), Request{Principal: alice, Resource: RequestResource{Type: "database", Name: "staging-db", Tags: []string{"staging"}}, Action: ActionWrite, Context: RequestContext{RowsAffected: 12}}, true},
		{"unknown-action", seed(t), Request{Principal: bob, Resource: prodOnly, Action: "drop"}, false},
		{"invalid-config", invalid, Request{Principal: bob, Resource: prodOnly, Action: ActionRead}, false},
		{"audit-deny", fromFile(t, "testdata/explain/policies.yaml"), Request{Principal: RequestPrincipal{Service: "k8s-agent"}, Resource: RequestResource{Type: "kubernetes", Name: "prod", Tags: []string{"production"}}, Action: ActionDestructive}, false},
		// Issue 20: an audit-only policy's outcome is labelled, and the
		// headline leads with the enforced effect.
		{"audit-only-fails-open", fromFile(t, "testdata/explain/policies.yaml"), Request{Principal: bob, Resource: RequestResource{Type: "kubernetes", Name: "prod", Tags: []string{"production"}}, Action: ActionDestructive}, false},
		{"audit-deny-after-execution", fromFile(t, "testdata/explain/policies.yaml"), Request{Principal: RequestPrincipal{Service: "k8s-agent"}, Resource: RequestResource{Type: "kubernetes", Name: "prod", Tags: []string{"production"}}, Action: ActionDestructive, Context: RequestContext{PodsAffected: 3}}, true},
		{"allow-with-limit", fromFile(t, "testdata/explain/policies.yaml"), Request{Principal: RequestPrincipal{Service: "k8s-agent"}, Resource: RequestResource{Type: "kubernetes", Name: "prod", Tags: []string{"production"}}, Action: ActionWrite}, false},
		{"window-opens", fromFile(t, "testdata/explain/policies.yaml"), Request{Principal: bob, Resource: RequestResource{Type: "kubernetes", Name: "staging"}, Action: ActionWrite, Context: RequestContext{Time: tuesday}}, false},
		{"no-rule-for-action", fromFile(t, "testdata/explain/policies.yaml"), Request{Principal: bob, Resource: RequestResource{Type: "kubernetes", Name: "staging"}, Action: ActionRead}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr DecisionTrace
			if tt.post {
				tr = tt.e.CheckPostExecution(tt.req)
			} else {
				tr = tt.e.Explain(tt.req)
			}
			got := tr.Explanation + "\n"
			path := filepath.Join("testdata", "explain", tt.name+".golden")
			if updateGolden() {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("explanation differs from %s (-update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
			}
			// Evaluate keeps the trace and builds the same text on demand.
			var d Decision
			if tt.post {
				d = tt.e.evaluate(tt.req, true).trace.Decision
			} else {
				d = tt.e.Evaluate(tt.req)
			}
			if d.eval.text != "" {
				t.Error("Evaluate built the explanation")
			}
			if err := d.MustAllow(); err != nil && err.Error()+"\n" != got {
				t.Errorf("MustAllow text differs:\n%s", err)
			}
		})
	}
}

// TestExplainSeedExamples checks the seed's own lines verbatim where
// govkit keeps them.
func TestExplainSeedExamples(t *testing.T) {
	e := seed(t)
	bob := RequestPrincipal{UserID: "bob@example.com"}
	prodOnly := RequestResource{Type: "database", Name: "prod-db", Tags: []string{"production"}}
	text := e.Explain(Request{Principal: bob, Resource: prodOnly, Action: ActionDestructive}).Explanation
	for _, want := range []string{
		"Access to prod-db (tags: production) for destructive: DENIED\n\n",
		`Policy "production-database-protection" matched (type=database, tag=production):` + "\n" +
			"  Rule 0  read → allow         skipped — action is destructive\n" +
			"  Rule 1  write → allow        skipped — action is destructive\n" +
			"  Rule 2  destructive → deny   matched\n" +
			`    Message: "Destructive operations on production databases are prohibited"` + "\n" +
			"  → DENY\n",
		"This rule cannot be overridden by approval.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
	text = e.Explain(Request{Principal: bob, Resource: RequestResource{Type: "database", Name: "unknown-db"}, Action: ActionWrite}).Explanation
	if !strings.HasPrefix(text, "Access to unknown-db (tags: none) for write: DENIED\n\nNo policy matched this resource — default effect is deny.\n") ||
		!strings.Contains(text, "--infra") {
		t.Errorf("default deny:\n%s", text)
	}
}

// TestApprovalRequested: once an enforcement point has opened the approval
// request, the text says so (seed 003: "An approval request has been
// created") instead of telling the caller to request one.
func TestApprovalRequested(t *testing.T) {
	e := seed(t)
	for _, name := range []string{"prod-db", "prod-db\x1b[2J"} {
		req := Request{Resource: RequestResource{Type: "database", Name: name, Tags: []string{"production"}}, Action: ActionWrite,
			Principal: RequestPrincipal{UserID: "bob@example.com"}}
		tr := e.Explain(req)
		if tr.Decision.Effect != EffectRequireApproval || !strings.Contains(tr.Explanation, "Request it with `approvals request") {
			t.Fatalf("%q: %s\n%s", name, tr.Decision.Effect, tr.Explanation)
		}
		got := tr.ApprovalRequested(req)
		if strings.Contains(got.Explanation, "Request it with") ||
			!strings.Contains(got.Explanation, "Requires approval from 1 approver. An approval request has been created: approvers see it with `approvals list --pending`.") {
			t.Errorf("%q:\n%s", name, got.Explanation)
		}
	}
}

// TestExplainAuditOnly: when an enforcement: audit policy's outcome is
// stricter than what is enforced, the text never says the request is
// denied or that no approval can release it (issue 20), and once auditd
// has opened the approval request the text says so.
func TestExplainAuditOnly(t *testing.T) {
	e := fromFile(t, "testdata/explain/policies.yaml")
	req := Request{Principal: RequestPrincipal{Service: "k8s-agent"}, Resource: RequestResource{Type: "kubernetes", Name: "prod", Tags: []string{"production"}}, Action: ActionDestructive}
	tr := e.Explain(req)
	if d := tr.Decision; d.Effect != EffectDeny || d.EnforcedEffect != EffectRequireApproval || d.ApprovalQuorum != 2 || !d.DryRun {
		t.Fatalf("decision %+v", d)
	}
	head, _, _ := strings.Cut(tr.Explanation, "\n")
	if want := `Access to prod (tags: production) for destructive: REQUIRES APPROVAL (enforced); audit-only policy "destructive-trial" would deny`; head != want {
		t.Errorf("headline %q, want %q", head, want)
	}
	if strings.Contains(tr.Explanation, "cannot be overridden by approval") || strings.Contains(tr.Explanation, "DENIED") {
		t.Errorf("the text contradicts the enforced effect:\n%s", tr.Explanation)
	}
	got := tr.ApprovalRequested(req).Explanation
	if !strings.Contains(got, "Requires approval from 2 approvers. An approval request has been created: approvers see it with `approvals list --pending`.") {
		t.Errorf("after the request was opened:\n%s", got)
	}
	// MustAllow acts on the enforced effect, with the same text.
	var ae *ApprovalRequiredError
	if err := e.Evaluate(req).MustAllow(); !errors.As(err, &ae) || err.Error() != tr.Explanation {
		t.Errorf("MustAllow: %v", err)
	}
}

// TestExplainLargeConfig: with many policies the text stays bounded.
func TestExplainLargeConfig(t *testing.T) {
	cfg := benchConfig(1000)
	e := NewEngine(EngineConfig{PolicyConfig: cfg})
	tr := e.Explain(Request{Resource: RequestResource{Type: "database", Name: "nothing"}, Action: ActionWrite})
	if n := strings.Count(tr.Explanation, "\n"); n > 40 || !strings.Contains(tr.Explanation, "… and 980 more") {
		t.Errorf("%d lines:\n%s", n, tr.Explanation)
	}
}

// TestExplainEscapesRequest: request strings come from the agent; the
// text must not carry their control characters to a terminal.
func TestExplainEscapesRequest(t *testing.T) {
	e := seed(t)
	name := "prod-db\x1b[2J\nrm -rf /" + strings.Repeat("x", 500)
	text := e.Explain(Request{Resource: RequestResource{Type: "database", Name: name, Tags: []string{"a\tb"}}, Action: ActionWrite}).Explanation
	if strings.ContainsAny(text, "\x1b\t") || strings.Contains(text, "\nrm -rf") || len(text) > 4000 {
		t.Errorf("unescaped or unbounded:\n%s", text)
	}
	if !strings.HasPrefix(text, `Access to prod-db\x1b[2J\nrm -rf /xxx`) {
		t.Errorf("headline: %.80q", text)
	}
}

// TestConcurrentUse: one Engine, many goroutines, Decisions explained
// from several goroutines at once (go test -race).
func TestConcurrentUse(t *testing.T) {
	e := seed(t)
	d := e.Evaluate(Request{Resource: RequestResource{Type: "database", Name: "x"}, Action: ActionWrite})
	done := make(chan string)
	for i := 0; i < 8; i++ {
		go func() {
			e.Explain(Request{Principal: RequestPrincipal{Roles: []string{"dba"}}, Resource: RequestResource{Type: "database", Name: "prod-db", Tags: []string{"production"}}, Action: ActionWrite})
			done <- d.MustAllow().Error()
		}()
	}
	first := <-done
	for i := 1; i < 8; i++ {
		if got := <-done; got != first {
			t.Errorf("explanations differ")
		}
	}
}
