package policy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/policy"
)

// Two instants for the seed's change-freeze window (mon–fri 9–16 New York).
var (
	tuesdayMorning = time.Date(2026, 11, 24, 15, 30, 0, 0, time.UTC) // Tue 10:30 EST: inside
	saturdayNoon   = time.Date(2026, 11, 21, 17, 0, 0, 0, time.UTC)  // Sat 12:00 EST: outside
)

func mustLoad(t testing.TB, doc string) *policy.Config {
	t.Helper()
	cfg, err := policy.LoadNamed("test.yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return cfg
}

func seedEngine(t testing.TB, opts ...func(*policy.EngineConfig)) *policy.Engine {
	t.Helper()
	cfg, err := policy.LoadFile("testdata/seed003.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ec := policy.EngineConfig{PolicyConfig: cfg}
	for _, o := range opts {
		o(&ec)
	}
	e := policy.NewEngine(ec)
	if e.Err() != nil {
		t.Fatal(e.Err())
	}
	return e
}

func dba() policy.RequestPrincipal {
	return policy.RequestPrincipal{UserID: "alice@example.com", Roles: []string{"dba"}}
}

func prodDB(tags ...string) policy.RequestResource {
	if tags == nil {
		tags = []string{"production", "critical"}
	}
	return policy.RequestResource{Type: "database", Name: "prod-db", Tags: tags}
}

// want is the part of a Decision a table row checks.
type want struct {
	effect   policy.Effect
	enforced policy.Effect // "" means same as effect
	policy   string        // "" means the default applied
	rule     int
	quorum   int
	dryRun   bool
}

func check(t *testing.T, d policy.Decision, w want) {
	t.Helper()
	enforced := w.enforced
	if enforced == "" {
		enforced = w.effect
	}
	got := fmt.Sprintf("effect=%s enforced=%s policy=%q rule=%d quorum=%d dry_run=%v default=%v",
		d.Effect, d.EnforcedEffect, d.PolicyName, d.RuleIndex, d.ApprovalQuorum, d.DryRun, d.DefaultApplied)
	exp := fmt.Sprintf("effect=%s enforced=%s policy=%q rule=%d quorum=%d dry_run=%v default=%v",
		w.effect, enforced, w.policy, w.rule, w.quorum, w.dryRun, w.policy == "")
	if got != exp {
		t.Errorf("decision\n got %s\nwant %s\n(message %q)", got, exp, d.Message)
	}
}

// TestSeedPolicies runs seed 003's own policy file: DESIGN §5 points 2–4,
// including the change-freeze example of point 3 (a business-hours write
// is denied although dba-privileges allows it).
func TestSeedPolicies(t *testing.T) {
	e := seedEngine(t)
	bob := policy.RequestPrincipal{UserID: "bob@example.com", Roles: []string{"developer"}}
	staging := policy.RequestResource{Type: "database", Name: "staging-db", Tags: []string{"staging"}}
	tests := []struct {
		name string
		req  policy.Request
		want want
	}{
		{"change freeze beats dba-privileges in business hours",
			policy.Request{Principal: dba(), Resource: prodDB(), Action: policy.ActionWrite, Context: policy.RequestContext{Time: tuesdayMorning}},
			want{effect: policy.EffectDeny, policy: "change-freeze", rule: 0}},
		{"outside the freeze the production rule asks for approval",
			policy.Request{Principal: dba(), Resource: prodDB(), Action: policy.ActionWrite, Context: policy.RequestContext{Time: saturdayNoon}},
			want{effect: policy.EffectRequireApproval, policy: "production-database-protection", rule: 1, quorum: 1}},
		{"read on production is allowed",
			policy.Request{Principal: bob, Resource: prodDB(), Action: policy.ActionRead, Context: policy.RequestContext{Time: tuesdayMorning}},
			want{effect: policy.EffectAllow, policy: "production-database-protection", rule: 0}},
		{"destructive on production is denied even for a dba",
			policy.Request{Principal: dba(), Resource: prodDB(), Action: policy.ActionDestructive, Context: policy.RequestContext{Time: saturdayNoon}},
			want{effect: policy.EffectDeny, policy: "production-database-protection", rule: 2}},
		{"blast radius over the limit denies the write",
			policy.Request{Principal: dba(), Resource: prodDB(), Action: policy.ActionWrite, Context: policy.RequestContext{Time: saturdayNoon, RowsAffected: 1500}},
			want{effect: policy.EffectDeny, policy: "production-database-protection", rule: 1}},
		{"dba writes to staging",
			policy.Request{Principal: dba(), Resource: staging, Action: policy.ActionWrite},
			want{effect: policy.EffectAllow, policy: "dba-privileges", rule: 0}},
		{"dba destructive on staging needs two approvers",
			policy.Request{Principal: dba(), Resource: staging, Action: policy.ActionDestructive},
			want{effect: policy.EffectRequireApproval, policy: "dba-privileges", rule: 1, quorum: 2}},
		{"non-dba on staging: no policy applies, default deny",
			policy.Request{Principal: bob, Resource: staging, Action: policy.ActionRead},
			want{effect: policy.EffectDeny}},
		{"unknown database without tags: default deny",
			policy.Request{Principal: bob, Resource: policy.RequestResource{Type: "database", Name: "unknown-db"}, Action: policy.ActionWrite},
			want{effect: policy.EffectDeny}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, e.Evaluate(tt.req), tt.want)
		})
	}
}

// engineFor loads doc and builds an engine with a fixed clock.
func engineFor(t testing.TB, doc string, opts ...func(*policy.EngineConfig)) *policy.Engine {
	t.Helper()
	ec := policy.EngineConfig{PolicyConfig: mustLoad(t, doc), Clock: func() time.Time { return saturdayNoon }}
	for _, o := range opts {
		o(&ec)
	}
	return policy.NewEngine(ec)
}

const matchingDoc = `
version: "1"
policies:
  - name: by-role
    principals: [{role: dba}]
    resources: [{type: database}]
    rules: [{action: read, effect: allow}]
  - name: by-user
    principals: [{user: alice@example.com}]
    resources: [{type: database}]
    rules: [{action: write, effect: allow}]
  - name: by-service
    principals: [{service: db-agent}]
    resources: [{type: database}]
    rules: [{action: destructive, effect: allow}]
  - name: glob
    resources: [{type: kubernetes, name: "prod-*"}]
    rules: [{action: read, effect: allow}]
  - name: glob-class
    resources: [{type: kubernetes, name: "team-[ab]?"}]
    rules: [{action: write, effect: allow}]
  - name: all-tags
    resources: [{type: cache, match: {tags: [production, pci]}}]
    rules: [{action: read, effect: allow}]
  - name: any-selector
    resources: [{type: queue, name: orders}, {type: queue, match: {tags: [shared]}}]
    rules: [{action: write, effect: allow}]
`

// TestMatching covers DESIGN §5 point 1: principals (role, user, service,
// absent = anyone), resource type, name globs and tags (all required),
// any selector of a policy — and the skip reasons recorded.
func TestMatching(t *testing.T) {
	e := engineFor(t, matchingDoc)
	anyone := policy.RequestPrincipal{UserID: "carol"}
	tests := []struct {
		name   string
		req    policy.Request
		policy string // deciding policy; "" default
		skips  map[string]string
	}{
		{"role matches", policy.Request{Principal: policy.RequestPrincipal{Roles: []string{"ops", "dba"}}, Resource: policy.RequestResource{Type: "database"}, Action: policy.ActionRead},
			"by-role", nil},
		{"role case-insensitive", policy.Request{Principal: policy.RequestPrincipal{Roles: []string{"DBA"}}, Resource: policy.RequestResource{Type: "Database"}, Action: policy.ActionRead},
			"by-role", nil},
		{"no role", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "database"}, Action: policy.ActionRead},
			"", map[string]string{"by-role": policy.SkipPrincipalMismatch, "glob": policy.SkipResourceMismatch}},
		{"user matches", policy.Request{Principal: policy.RequestPrincipal{UserID: "Alice@Example.com"}, Resource: policy.RequestResource{Type: "database"}, Action: policy.ActionWrite},
			"by-user", nil},
		{"service matches", policy.Request{Principal: policy.RequestPrincipal{Service: "db-agent"}, Resource: policy.RequestResource{Type: "database"}, Action: policy.ActionDestructive},
			"by-service", nil},
		{"service is not a user", policy.Request{Principal: policy.RequestPrincipal{UserID: "db-agent"}, Resource: policy.RequestResource{Type: "database"}, Action: policy.ActionDestructive},
			"", map[string]string{"by-service": policy.SkipPrincipalMismatch}},
		{"glob matches", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "kubernetes", Name: "prod-payments"}, Action: policy.ActionRead},
			"glob", nil},
		{"glob is anchored", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "kubernetes", Name: "staging-prod-x"}, Action: policy.ActionRead},
			"", map[string]string{"glob": policy.SkipResourceMismatch}},
		{"glob star stops at slash", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "kubernetes", Name: "prod-a/b"}, Action: policy.ActionRead},
			"", map[string]string{"glob": policy.SkipResourceMismatch}},
		{"glob class and ?", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "kubernetes", Name: "team-b7"}, Action: policy.ActionWrite},
			"glob-class", nil},
		{"glob class miss", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "kubernetes", Name: "team-c7"}, Action: policy.ActionWrite},
			"", map[string]string{"glob-class": policy.SkipResourceMismatch}},
		{"all tags present", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "cache", Tags: []string{"PCI", "eu", "production"}}, Action: policy.ActionRead},
			"all-tags", nil},
		{"one tag missing", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "cache", Tags: []string{"production"}}, Action: policy.ActionRead},
			"", map[string]string{"all-tags": policy.SkipResourceMismatch}},
		{"second selector", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "queue", Name: "billing", Tags: []string{"shared"}}, Action: policy.ActionWrite},
			"any-selector", nil},
		{"no selector", policy.Request{Principal: anyone, Resource: policy.RequestResource{Type: "queue", Name: "billing"}, Action: policy.ActionWrite},
			"", map[string]string{"any-selector": policy.SkipResourceMismatch}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := e.Explain(tt.req)
			if tr.Decision.PolicyName != tt.policy || tr.DefaultApplied != (tt.policy == "") {
				t.Fatalf("decided by %q (default %v), want %q", tr.Decision.PolicyName, tr.DefaultApplied, tt.policy)
			}
			if len(tr.PoliciesEvaluated) != 7 {
				t.Fatalf("%d policy traces, want one per policy (7)", len(tr.PoliciesEvaluated))
			}
			for _, pt := range tr.PoliciesEvaluated {
				if want, ok := tt.skips[pt.PolicyName]; ok && pt.SkipReason != want {
					t.Errorf("%s: skip reason %q, want %q", pt.PolicyName, pt.SkipReason, want)
				}
				if pt.Matched != (pt.SkipReason == "") {
					t.Errorf("%s: matched %v with skip reason %q", pt.PolicyName, pt.Matched, pt.SkipReason)
				}
			}
		})
	}
}

// TestDisabledAndOrder: a disabled policy is skipped even when it would
// deny; inside a policy the first rule for the action decides; a policy
// whose rules all skip produces no outcome (DESIGN §5 points 1–2, 6).
func TestDisabledAndOrder(t *testing.T) {
	e := engineFor(t, `
version: "1"
policies:
  - name: off
    enabled: false
    resources: [{type: database}]
    rules: [{action: [read, write, destructive], effect: deny}]
  - name: ordered
    resources: [{type: database}]
    rules:
      - {action: write, effect: allow}
      - {action: [write, destructive], effect: deny}
      - {action: read, effect: require_approval}
`)
	db := policy.RequestResource{Type: "database", Name: "db"}
	tr := e.Explain(policy.Request{Resource: db, Action: policy.ActionWrite})
	check(t, tr.Decision, want{effect: policy.EffectAllow, policy: "ordered", rule: 0})
	if got := tr.PoliciesEvaluated[0]; got.Matched || got.SkipReason != policy.SkipDisabled || got.Rules != nil {
		t.Errorf("disabled policy trace = %+v", got)
	}
	if rules := tr.PoliciesEvaluated[1].Rules; len(rules) != 1 || !rules[0].Matched {
		t.Errorf("rules after the deciding one are traced: %+v", rules)
	}

	tr = e.Explain(policy.Request{Resource: db, Action: policy.ActionDestructive})
	check(t, tr.Decision, want{effect: policy.EffectDeny, policy: "ordered", rule: 1})
	rules := tr.PoliciesEvaluated[1].Rules
	if len(rules) != 2 || rules[0].SkipReason != policy.SkipActionMismatch || rules[0].Matched || !rules[1].Matched {
		t.Errorf("rule traces = %+v", rules)
	}

	tr = e.Explain(policy.Request{Resource: db, Action: policy.ActionRead})
	check(t, tr.Decision, want{effect: policy.EffectRequireApproval, policy: "ordered", rule: 2, quorum: 1})
}

// TestQuorum covers require_approval: as a condition on allow, as an
// effect, the quorum default of 1, and "most restrictive" between two
// require_approval outcomes (the larger quorum; equal ones keep the
// earliest policy).
func TestQuorum(t *testing.T) {
	doc := `
version: "1"
policies:
  - name: cond
    resources: [{type: database, name: a}]
    rules: [{action: write, effect: allow, conditions: {require_approval: true, approval_quorum: 2}}]
  - name: effect-default
    resources: [{type: database, name: b}]
    rules: [{action: write, effect: require_approval}]
  - name: effect-quorum
    resources: [{type: database, name: c}]
    rules: [{action: write, effect: require_approval, conditions: {approval_quorum: 3}}]
  - name: first-one
    resources: [{type: database, name: "[de]"}]
    rules: [{action: write, effect: require_approval}]
  - name: second-three
    resources: [{type: database, name: d}]
    rules: [{action: write, effect: require_approval, conditions: {approval_quorum: 3}}]
  - name: third-one
    resources: [{type: database, name: e}]
    rules: [{action: write, effect: allow, conditions: {require_approval: true}}]
  - name: quorum-on-deny
    resources: [{type: database, name: f}]
    rules: [{action: write, effect: deny, conditions: {require_approval: true, approval_quorum: 2}}]
`
	e := engineFor(t, doc)
	for name, w := range map[string]want{
		"a": {effect: policy.EffectRequireApproval, policy: "cond", quorum: 2},
		"b": {effect: policy.EffectRequireApproval, policy: "effect-default", quorum: 1},
		"c": {effect: policy.EffectRequireApproval, policy: "effect-quorum", quorum: 3},
		"d": {effect: policy.EffectRequireApproval, policy: "second-three", quorum: 3},
		"e": {effect: policy.EffectRequireApproval, policy: "first-one", quorum: 1},
		"f": {effect: policy.EffectDeny, policy: "quorum-on-deny"},
	} {
		t.Run(name, func(t *testing.T) {
			check(t, e.Evaluate(policy.Request{Resource: policy.RequestResource{Type: "database", Name: name}, Action: policy.ActionWrite}), w)
		})
	}
}

const blastDoc = `
version: "1"
policies:
  - name: db-limit
    resources: [{type: database}]
    rules:
      - action: write
        effect: allow
        conditions: {max_rows_affected: 1000}
  - name: k8s-limit
    resources: [{type: kubernetes}]
    rules:
      - action: [write, destructive]
        effect: allow
        conditions: {max_pods_affected: 10, require_approval: true}
`

// TestBlastRadius covers seed 003 "Guardrails": unknown counts are not
// evaluated before execution, a count over the limit denies (before or
// after execution), a count at the limit passes.
func TestBlastRadius(t *testing.T) {
	e := engineFor(t, blastDoc)
	db := policy.RequestResource{Type: "database", Name: "prod-db"}
	ns := policy.RequestResource{Type: "kubernetes", Name: "prod"}
	tests := []struct {
		name   string
		req    policy.Request
		post   bool
		effect policy.Effect
		cond   policy.ConditionTrace
	}{
		{"rows unknown", policy.Request{Resource: db, Action: policy.ActionWrite}, false, policy.EffectAllow,
			policy.ConditionTrace{Name: "max_rows_affected", Passed: true, Detail: "not evaluated: rows_affected unknown before execution", Limit: 1000}},
		{"rows under", policy.Request{Resource: db, Action: policy.ActionWrite, Context: policy.RequestContext{RowsAffected: 50}}, false, policy.EffectAllow,
			policy.ConditionTrace{Name: "max_rows_affected", Passed: true, Detail: "rows_affected=50 <= limit=1000", Limit: 1000}},
		{"rows at limit", policy.Request{Resource: db, Action: policy.ActionWrite, Context: policy.RequestContext{RowsAffected: 1000}}, false, policy.EffectAllow,
			policy.ConditionTrace{Name: "max_rows_affected", Passed: true, Detail: "rows_affected=1000 <= limit=1000", Limit: 1000}},
		{"rows over", policy.Request{Resource: db, Action: policy.ActionWrite, Context: policy.RequestContext{RowsAffected: 1500}}, false, policy.EffectDeny,
			policy.ConditionTrace{Name: "max_rows_affected", Passed: false, Detail: "rows_affected=1500 > limit=1000", Limit: 1000}},
		{"rows over after execution", policy.Request{Resource: db, Action: policy.ActionWrite, Context: policy.RequestContext{RowsAffected: 1001}}, true, policy.EffectDeny,
			policy.ConditionTrace{Name: "max_rows_affected", Passed: false, Detail: "rows_affected=1001 > limit=1000", Limit: 1000}},
		{"rows fine after execution", policy.Request{Resource: db, Action: policy.ActionWrite, Context: policy.RequestContext{RowsAffected: 7}}, true, policy.EffectAllow,
			policy.ConditionTrace{Name: "max_rows_affected", Passed: true, Detail: "rows_affected=7 <= limit=1000", Limit: 1000}},
		{"rows not reported after execution", policy.Request{Resource: db, Action: policy.ActionWrite}, true, policy.EffectAllow,
			policy.ConditionTrace{Name: "max_rows_affected", Passed: true, Detail: "not evaluated: no rows_affected count after execution", Limit: 1000}},
		{"negative count fails closed", policy.Request{Resource: db, Action: policy.ActionWrite, Context: policy.RequestContext{RowsAffected: -1}}, false, policy.EffectDeny,
			policy.ConditionTrace{Name: "max_rows_affected", Passed: false, Detail: "rows_affected=-1 is not a count", Limit: 1000}},
		{"pods unknown, approval", policy.Request{Resource: ns, Action: policy.ActionDestructive}, false, policy.EffectRequireApproval,
			policy.ConditionTrace{Name: "max_pods_affected", Passed: true, Detail: "not evaluated: pods_affected unknown before execution", Limit: 10}},
		{"pods over beats approval", policy.Request{Resource: ns, Action: policy.ActionWrite, Context: policy.RequestContext{PodsAffected: 11}}, true, policy.EffectDeny,
			policy.ConditionTrace{Name: "max_pods_affected", Passed: false, Detail: "pods_affected=11 > limit=10", Limit: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr policy.DecisionTrace
			if tt.post {
				tr = e.CheckPostExecution(tt.req)
			} else {
				tr = e.Explain(tt.req)
			}
			d := tr.Decision
			if d.Effect != tt.effect || d.EnforcedEffect != tt.effect || d.PostExecution != tt.post {
				t.Errorf("effect %s enforced %s post %v, want %s post %v", d.Effect, d.EnforcedEffect, d.PostExecution, tt.effect, tt.post)
			}
			if tt.effect == policy.EffectDeny && !strings.HasPrefix(d.Message, "blast radius exceeded: ") {
				t.Errorf("message %q", d.Message)
			}
			var conds []policy.ConditionTrace
			for _, pt := range tr.PoliciesEvaluated {
				for _, rt := range pt.Rules {
					conds = append(conds, rt.Conditions...)
				}
			}
			if len(conds) == 0 || conds[0] != tt.cond {
				t.Errorf("conditions %+v, want first %+v", conds, tt.cond)
			}
		})
	}
}

// TestDefaultEffect covers DESIGN §5 points 4 and 6: the default decides
// when no applying policy produced an outcome; EngineConfig overrides the
// file; nothing at all means deny.
func TestDefaultEffect(t *testing.T) {
	doc := func(def string) string {
		return `
version: "1"
` + def + `
policies:
  - name: reads-only
    resources: [{type: database}]
    rules: [{action: read, effect: allow}]
`
	}
	db := policy.RequestResource{Type: "database", Name: "db"}
	tests := []struct {
		name     string
		file     string
		override policy.Effect
		want     policy.Effect
	}{
		{"unset is deny", "", "", policy.EffectDeny},
		{"file allow", "default_effect: allow", "", policy.EffectAllow},
		{"file require_approval", "default_effect: require_approval", "", policy.EffectRequireApproval},
		{"engine overrides file", "default_effect: allow", policy.EffectDeny, policy.EffectDeny},
		{"engine sets it", "", policy.EffectAllow, policy.EffectAllow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engineFor(t, doc(tt.file), func(c *policy.EngineConfig) { c.DefaultEffect = tt.override })
			// The policy applies but has no rule for write: still the default.
			tr := e.Explain(policy.Request{Resource: db, Action: policy.ActionWrite})
			if !tr.DefaultApplied || !tr.Decision.DefaultApplied || !tr.PoliciesEvaluated[0].Matched {
				t.Fatalf("default_applied %v / %v, policy matched %v", tr.DefaultApplied, tr.Decision.DefaultApplied, tr.PoliciesEvaluated[0].Matched)
			}
			w := want{effect: tt.want}
			if tt.want == policy.EffectRequireApproval {
				w.quorum = 1
			}
			check(t, tr.Decision, w)
			// A decided request is not a default.
			check(t, e.Evaluate(policy.Request{Resource: db, Action: policy.ActionRead}), want{effect: policy.EffectAllow, policy: "reads-only"})
		})
	}
	t.Run("no config", func(t *testing.T) {
		check(t, policy.NewEngine(policy.EngineConfig{}).Evaluate(policy.Request{Action: policy.ActionRead}), want{effect: policy.EffectDeny})
	})
	t.Run("unknown action fails closed", func(t *testing.T) {
		e := engineFor(t, doc("default_effect: allow"))
		d := e.Evaluate(policy.Request{Resource: db, Action: "delete"})
		check(t, d, want{effect: policy.EffectDeny})
		if !strings.Contains(d.Message, "unknown action") {
			t.Errorf("message %q", d.Message)
		}
	})
}

const dryRunDoc = `
version: "1"
policies:
  - name: audit-deny
    enforcement: audit
    resources: [{type: database, name: a*}]
    rules: [{action: write, effect: deny}]
  - name: enforce-approval
    resources: [{type: database, name: ab}]
    rules: [{action: write, effect: require_approval, conditions: {approval_quorum: 2}}]
  - name: audit-allow
    enforcement: audit
    resources: [{type: database, name: c*}]
    rules: [{action: write, effect: allow}]
  - name: enforce-deny
    resources: [{type: database, name: cd}]
    rules: [{action: write, effect: deny}]
`

// TestDryRun covers DESIGN §5 point 5: effect is the outcome over all
// applying policies; enforced_effect is allow under global dry-run, else
// the most restrictive enforce outcome with audit outcomes counting as
// allow; the default applies only when nothing produced an outcome.
func TestDryRun(t *testing.T) {
	e := engineFor(t, dryRunDoc)
	global := engineFor(t, dryRunDoc, func(c *policy.EngineConfig) { c.DryRun = true })
	req := func(name string) policy.Request {
		return policy.Request{Resource: policy.RequestResource{Type: "database", Name: name}, Action: policy.ActionWrite}
	}
	tests := []struct {
		name string
		e    *policy.Engine
		res  string
		want want
	}{
		{"audit deny alone is not enforced", e, "a", want{effect: policy.EffectDeny, enforced: policy.EffectAllow, policy: "audit-deny", dryRun: true}},
		{"audit deny over enforced approval", e, "ab", want{effect: policy.EffectDeny, enforced: policy.EffectRequireApproval, policy: "audit-deny", quorum: 2, dryRun: true}},
		{"audit allow alone: no default deny", e, "c", want{effect: policy.EffectAllow, policy: "audit-allow", dryRun: true}},
		{"enforce deny decides over audit allow", e, "cd", want{effect: policy.EffectDeny, policy: "enforce-deny", rule: 0}},
		{"nothing applies: default", e, "z", want{effect: policy.EffectDeny}},
		{"global: enforced allow", global, "cd", want{effect: policy.EffectDeny, enforced: policy.EffectAllow, policy: "enforce-deny", dryRun: true}},
		{"global: default not enforced", global, "z", want{effect: policy.EffectDeny, enforced: policy.EffectAllow, dryRun: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.e.Evaluate(req(tt.res))
			check(t, d, tt.want)
			if err := d.MustAllow(); (err == nil) != (d.EnforcedEffect == policy.EffectAllow) {
				t.Errorf("MustAllow = %v for enforced %s", err, d.EnforcedEffect)
			}
		})
	}
}

// TestInvalidConfigFailsClosed: a Config built in code that does not
// validate makes an engine that denies everything and says why.
func TestInvalidConfigFailsClosed(t *testing.T) {
	cfg := &policy.Config{Version: "1", Policies: []policy.Policy{{
		Name: "bad", Resources: []policy.ResourceSelector{{Type: "database"}},
		Rules: []policy.Rule{{Actions: []policy.Action{"write"}, Effect: "alow"}},
	}}}
	e := policy.NewEngine(policy.EngineConfig{PolicyConfig: cfg, DefaultEffect: policy.EffectAllow})
	if e.Err() == nil || !strings.Contains(e.Err().Error(), `policies[0].rules[0].effect: "alow" is not one of`) {
		t.Fatalf("Err() = %v", e.Err())
	}
	tr := e.Explain(policy.Request{Resource: policy.RequestResource{Type: "database"}, Action: policy.ActionRead})
	check(t, tr.Decision, want{effect: policy.EffectDeny})
	if !strings.Contains(tr.Explanation, "fail closed") {
		t.Errorf("explanation:\n%s", tr.Explanation)
	}
	bad := policy.NewEngine(policy.EngineConfig{DefaultEffect: "maybe"})
	if bad.Err() == nil || bad.Evaluate(policy.Request{Action: policy.ActionRead}).Effect != policy.EffectDeny {
		t.Errorf("invalid default effect accepted: %v", bad.Err())
	}
}

// TestDecisionJSON checks the DESIGN §5 decision object: policy_name and
// rule_index present (rule_index even when 0) unless the default applied,
// approval_quorum present for require_approval; and the round trip.
func TestDecisionJSON(t *testing.T) {
	e := seedEngine(t)
	tests := []struct {
		name string
		req  policy.Request
		want string
	}{
		{"rule 0", policy.Request{Resource: prodDB(), Action: policy.ActionRead},
			`{"effect":"allow","enforced_effect":"allow","policy_name":"production-database-protection","rule_index":0,"dry_run":false}`},
		{"approval", policy.Request{Resource: prodDB(), Action: policy.ActionWrite, Context: policy.RequestContext{Time: saturdayNoon}},
			`{"effect":"require_approval","enforced_effect":"require_approval","policy_name":"production-database-protection","rule_index":1,"approval_quorum":1,"dry_run":false}`},
		{"default", policy.Request{Resource: policy.RequestResource{Type: "database", Name: "x"}, Action: policy.ActionRead},
			`{"effect":"deny","enforced_effect":"deny","message":"no policy produced an outcome; default effect is deny","dry_run":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.Evaluate(tt.req)
			got, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var back policy.Decision
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back)
			if string(again) != string(got) || back.DefaultApplied != d.DefaultApplied {
				t.Errorf("round trip: %s (default %v)", again, back.DefaultApplied)
			}
		})
	}
	t.Run("trace", func(t *testing.T) {
		tr := e.Explain(policy.Request{Principal: dba(), Resource: prodDB(), Action: policy.ActionDestructive, Context: policy.RequestContext{Time: saturdayNoon}})
		raw, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		var generic map[string]any
		if err := json.Unmarshal(raw, &generic); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"decision", "policies_evaluated", "default_applied", "explanation"} {
			if _, ok := generic[key]; !ok {
				t.Errorf("trace JSON lacks %q: %s", key, raw)
			}
		}
		var back policy.DecisionTrace
		if err := json.Unmarshal(raw, &back); err != nil || back.Decision.PolicyName != "production-database-protection" || back.Decision.RuleIndex != 2 {
			t.Errorf("trace round trip: %v %+v", err, back.Decision)
		}
	})
}

// TestMustAllow: refusals are typed errors whose message is the
// explanation, built lazily from the trace Evaluate kept.
func TestMustAllow(t *testing.T) {
	e := seedEngine(t)
	d := e.Evaluate(policy.Request{Resource: prodDB("production"), Action: policy.ActionDestructive, Context: policy.RequestContext{Time: saturdayNoon}})
	err := d.MustAllow()
	var denied *policy.DeniedError
	if !errors.As(err, &denied) {
		t.Fatalf("MustAllow = %T %v", err, err)
	}
	if !strings.HasPrefix(err.Error(), "Access to prod-db (tags: production) for destructive: DENIED") ||
		denied.Trace.Explanation != err.Error() || len(denied.Trace.PoliciesEvaluated) != 3 {
		t.Errorf("error text:\n%s", err)
	}
	if denied.Decision.Message != "Destructive operations on production databases are prohibited" {
		t.Errorf("message %q", denied.Decision.Message)
	}

	d = e.Evaluate(policy.Request{Resource: prodDB(), Action: policy.ActionWrite, Context: policy.RequestContext{Time: saturdayNoon}})
	var approval *policy.ApprovalRequiredError
	if err := d.MustAllow(); !errors.As(err, &approval) || approval.Decision.ApprovalQuorum != 1 ||
		!strings.Contains(err.Error(), "REQUIRES APPROVAL") {
		t.Errorf("MustAllow = %v", err)
	}
	if err := e.Evaluate(policy.Request{Resource: prodDB(), Action: policy.ActionRead}).MustAllow(); err != nil {
		t.Errorf("read: %v", err)
	}
	// A decision that did not come from an engine still explains itself.
	hand := policy.Decision{Effect: policy.EffectDeny, PolicyName: "p", RuleIndex: 3, Message: "no"}
	if err := hand.MustAllow(); err == nil || err.Error() != `denied by policy "p" rule 3: no` {
		t.Errorf("hand-made: %v", err)
	}
	if err := (policy.Decision{}).MustAllow(); err == nil {
		t.Error("zero Decision allowed")
	}
}

// TestClock: a request's own time wins over the engine clock; with
// neither, a schedule cannot be checked: the pure package reads no clock
// of its own, and says so by panicking (a caller's programming error).
func TestClock(t *testing.T) {
	calls := 0
	e := seedEngine(t, func(c *policy.EngineConfig) {
		c.Clock = func() time.Time { calls++; return tuesdayMorning }
	})
	write := policy.Request{Principal: dba(), Resource: prodDB(), Action: policy.ActionWrite}
	check(t, e.Evaluate(write), want{effect: policy.EffectDeny, policy: "change-freeze"})
	write.Context.Time = saturdayNoon
	check(t, e.Evaluate(write), want{effect: policy.EffectRequireApproval, policy: "production-database-protection", rule: 1, quorum: 1})
	if calls != 1 {
		t.Errorf("clock called %d times, want 1", calls)
	}
	// Reads never reach a schedule: the clock is not consulted.
	e.Evaluate(policy.Request{Resource: prodDB(), Action: policy.ActionRead})
	if calls != 1 {
		t.Errorf("clock called for a request without schedules")
	}

	clockless := seedEngine(t)
	clockless.Evaluate(policy.Request{Resource: prodDB(), Action: policy.ActionRead}) // no schedule: no time needed
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "EngineConfig.Clock") {
			t.Errorf("a schedule without a time or clock: recovered %v, want the panic naming EngineConfig.Clock", r)
		}
	}()
	write.Context.Time = time.Time{}
	clockless.Evaluate(write)
}

// requestApproval stands in for the approval workflow of seed 003.
func requestApproval(d policy.Decision) error {
	return fmt.Errorf("approval requested (quorum %d)", d.ApprovalQuorum)
}

// seedExample is seed 003's "Implementation" snippet, verbatim from
// "Evaluate a request" on.
func seedExample(engine *policy.Engine) error {
	// Evaluate a request
	decision := engine.Evaluate(policy.Request{
		Principal: policy.RequestPrincipal{
			UserID: "alice@example.com",
			Roles:  []string{"dba"},
		},
		Resource: policy.RequestResource{
			Type: "database",
			Name: "prod-db",
			Tags: []string{"production"},
		},
		Action: policy.ActionWrite,
		Context: policy.RequestContext{
			RowsAffected: 50,
		},
	})

	// Check decision
	if err := decision.MustAllow(); err != nil {
		switch e := err.(type) {
		case *policy.DeniedError:
			return fmt.Errorf("denied: %s", e.Decision.Message)
		case *policy.ApprovalRequiredError:
			return requestApproval(e.Decision)
		}
	}
	return nil
}

// Example is seed 003's policy engine example. The clock is fixed on a
// Saturday so the seed's change-freeze window is closed.
func Example() {
	// Load policies from file
	cfg, err := policy.LoadFile("testdata/seed003.yaml")
	if err != nil {
		log.Fatal(err)
	}

	// Create engine
	engine := policy.NewEngine(policy.EngineConfig{
		PolicyConfig:  cfg,
		DefaultEffect: policy.EffectDeny,
		DryRun:        false,
		Clock:         func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) },
	})

	fmt.Println(seedExample(engine))
	// Output: approval requested (quorum 1)
}
