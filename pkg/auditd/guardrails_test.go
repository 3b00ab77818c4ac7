package auditd_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
)

// guardedPolicy allows reads and writes, asks approval for destructive
// actions, and has both guardrails (issue 15; DESIGN §12).
const guardedPolicy = `version: "1"
policies:
  - name: ops
    resources: [{type: database}]
    rules:
      - {action: [read, write], effect: allow}
      - {action: destructive, effect: require_approval}
guardrails:
  rate_limit: {writes_per_minute: 3, scope: session}
  circuit_breaker: {consecutive_errors: 3, window: 10m, cooldown: 15m}
`

func startGuarded(t *testing.T, dryRun bool) (*daemon, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)}
	d := startDaemon(t, "", func(c *auditd.Config) { c.Now = clock.now })
	p := loadPolicy(t, guardedPolicy, "")
	p.DryRun = dryRun
	if err := d.srv.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	return d, clock
}

func guardedDecision(session, action string) govapi.DecisionRequest {
	return govapi.DecisionRequest{
		SessionID: session, Resource: govapi.Resource{Type: "database", Name: "scratch-db"}, Action: action,
		Tool: &govapi.Tool{Name: "psql", RawCommand: "UPDATE t SET x = 1 WHERE id = 7"},
	}
}

// The rate limit: the fourth write of a session in a minute is refused
// with RATE_LIMITED and the time until it lifts; reads, other sessions and
// requests without a session are not counted against it; a minute later
// it has lifted.
func TestGuardrailsRateLimit(t *testing.T) {
	d, clock := startGuarded(t, false)
	c := d.as(t, "alice")
	ctx := ctxT(t)
	for i := range 3 {
		res, err := c.Decide(ctx, guardedDecision("s1", "write"))
		if err != nil || res.Decision.EnforcedEffect != policy.EffectAllow || res.Decision.Code != "" {
			t.Fatalf("write %d: %+v, %v", i, res.Decision, err)
		}
		if g := res.Guardrails; g == nil || !g.Evaluated || g.Checks[0].Passed != true {
			t.Fatalf("write %d: guardrails %+v", i, g)
		}
		clock.add(10 * time.Second)
	}
	// 14:00:30, writes at :00, :10, :20.
	res, err := c.Decide(ctx, guardedDecision("s1", "write"))
	if err != nil {
		t.Fatal(err)
	}
	d0 := res.Decision
	g := res.Guardrails
	if d0.Effect != policy.EffectDeny || d0.EnforcedEffect != policy.EffectDeny || d0.Code != policy.CodeRateLimited ||
		g.Code != policy.CodeRateLimited || g.RetryAfterSeconds != 30 || !g.LiftsAt.Equal(time.Date(2026, 3, 9, 14, 1, 0, 0, time.UTC)) {
		t.Fatalf("fourth write: %+v %+v", d0, g)
	}
	if g.Checks[0].Detail != "3 writes in the last minute, limit 3: writes are refused until 2026-03-09T14:01:00Z (in 30s)" {
		t.Errorf("detail %q", g.Checks[0].Detail)
	}
	if !strings.Contains(res.DecisionTrace.Explanation, "Refused by guardrail RATE_LIMITED for session s1 until 2026-03-09T14:01:00Z (retry in 30s).") {
		t.Errorf("explanation:\n%s", res.DecisionTrace.Explanation)
	}
	// Recorded with its code and trace; the retrospective answer is it.
	ev := stored(t, d, res.Event.EventID)
	var rec govapi.DecisionRecord
	if err := json.Unmarshal(ev.PolicyDecision, &rec); err != nil || rec.Code != policy.CodeRateLimited ||
		rec.EnforcedEffect != "deny" || rec.Trace.Guardrails == nil || ev.Outcome.Status != "deny" || ev.SessionID != "s1" {
		t.Fatalf("stored %+v, %v", rec, err)
	}
	// A refused write is not a write: still three in the minute.
	clock.add(time.Second)
	if res, _ := c.Decide(ctx, guardedDecision("s1", "write")); res.Decision.Code != policy.CodeRateLimited ||
		res.Guardrails.Checks[0].Detail[:8] != "3 writes" {
		t.Fatalf("fifth write: %+v", res.Guardrails)
	}
	// Reads are not rate-limited; other sessions have their own count;
	// without a session the guardrails are not evaluated.
	if res, _ := c.Decide(ctx, guardedDecision("s1", "read")); res.Decision.EnforcedEffect != policy.EffectAllow {
		t.Errorf("read: %+v", res.Decision)
	}
	if res, _ := c.Decide(ctx, guardedDecision("s2", "write")); res.Decision.EnforcedEffect != policy.EffectAllow {
		t.Errorf("other session: %+v", res.Decision)
	}
	res, err = c.Decide(ctx, guardedDecision("", "write"))
	if err != nil || res.Decision.EnforcedEffect != policy.EffectAllow || res.Guardrails == nil || res.Guardrails.Evaluated ||
		!strings.HasPrefix(res.Guardrails.Detail, "no session_id") {
		t.Errorf("no session: %+v %+v, %v", res.Decision, res.Guardrails, err)
	}
	// 14:01:00: the write of 14:00:00 is a minute old; the limit lifts.
	clock.add(29 * time.Second)
	if res, _ := c.Decide(ctx, guardedDecision("s1", "write")); res.Decision.EnforcedEffect != policy.EffectAllow || res.Decision.Code != "" {
		t.Errorf("after a minute: %+v %+v", res.Decision, res.Guardrails)
	}
	if res, _ := c.Decide(ctx, guardedDecision("s1", "destructive")); res.Decision.Code != policy.CodeRateLimited || res.ApprovalID != "" {
		t.Errorf("destructive at the limit again: %+v, approval %q", res.Decision, res.ApprovalID)
	}
}

// A tripped guardrail refuses in front of require_approval and opens no
// approval request (H-18); a check after execution is not subject to it.
func TestGuardrailsBeforeApproval(t *testing.T) {
	d, _ := startGuarded(t, false)
	c := d.as(t, "alice")
	ctx := ctxT(t)
	res, err := c.Decide(ctx, guardedDecision("s1", "destructive"))
	if err != nil || res.Decision.EnforcedEffect != policy.EffectRequireApproval || res.ApprovalID == "" {
		t.Fatalf("first: %+v, %v", res, err)
	}
	for range 2 {
		if _, err := c.Decide(ctx, guardedDecision("s1", "write")); err != nil {
			t.Fatal(err)
		}
	}
	res, err = c.Decide(ctx, guardedDecision("s1", "destructive"))
	if err != nil || res.Decision.EnforcedEffect != policy.EffectDeny || res.Decision.Code != policy.CodeRateLimited ||
		res.ApprovalID != "" || res.Decision.ApprovalQuorum != 0 {
		t.Fatalf("at the limit: %+v, %v", res, err)
	}
	post := guardedDecision("s1", "write")
	post.PostExecution, post.RowsAffected = true, 5
	res, err = c.Decide(ctx, post)
	if err != nil || res.Decision.EnforcedEffect != policy.EffectAllow || res.Decision.Code != "" ||
		res.Guardrails == nil || res.Guardrails.Evaluated {
		t.Fatalf("after execution: %+v %+v, %v", res.Decision, res.Guardrails, err)
	}
	pending, err := c.PendingApprovals(ctx)
	if err != nil || len(pending) != 1 {
		t.Errorf("pending approvals: %d, %v", len(pending), err)
	}
}

// The circuit breaker: three failed tool executions of the session in a
// row open it; every action of the session is refused, reads too, until
// the cooldown after the last error has passed. The hypothetical explain
// with session_id says the same and records nothing.
func TestGuardrailsCircuitBreaker(t *testing.T) {
	d, clock := startGuarded(t, false)
	c := d.as(t, "alice")
	ctx := ctxT(t)
	post := func(session, status string) {
		t.Helper()
		ev := toolEvent("", "psql -c 'select 1'")
		ev.SessionID, ev.Outcome = session, &audit.Outcome{Status: status}
		if _, err := c.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
		clock.add(time.Minute)
	}
	for _, st := range []string{"error", "success", "error", "refused", "error", "timeout"} {
		post("s1", st)
	}
	for _, st := range []string{"error", "error", "success", "error"} { // a success resets
		post("s2", st)
	}
	// 14:10, errors at :00 (reset), :02, :04, :05 — open until 14:20.
	res, err := c.Decide(ctx, guardedDecision("s1", "read"))
	if err != nil {
		t.Fatal(err)
	}
	g := res.Guardrails
	if res.Decision.EnforcedEffect != policy.EffectDeny || res.Decision.Code != policy.CodeCircuitOpen ||
		g.Code != policy.CodeCircuitOpen || g.RetryAfterSeconds != 600 || !g.LiftsAt.Equal(time.Date(2026, 3, 9, 14, 20, 0, 0, time.UTC)) {
		t.Fatalf("open: %+v %+v", res.Decision, g)
	}
	if want := "3 errors in a row within 10m, the last at 2026-03-09T14:05:00Z: open, every action of the session is refused until 2026-03-09T14:20:00Z (in 10m)"; g.Checks[1].Detail != want {
		t.Errorf("detail %q\nwant   %q", g.Checks[1].Detail, want)
	}
	if res, _ := c.Decide(ctx, guardedDecision("s2", "write")); res.Decision.EnforcedEffect != policy.EffectAllow {
		t.Errorf("s2: %+v %+v", res.Decision, res.Guardrails)
	}

	// Hypothetical: the same answer, nothing recorded.
	head := func() int64 {
		st, err := c.Governance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Chain.HeadSeq
	}
	before := head()
	ex, err := c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "scratch-db", Action: "write", SessionID: "s1"})
	if err != nil || ex.Decision.Code != policy.CodeCircuitOpen || ex.Guardrails.RetryAfterSeconds != 600 {
		t.Fatalf("explain: %+v, %v", ex.Decision, err)
	}
	ex, err = c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "scratch-db", Action: "write"})
	if err != nil || ex.Decision.Code != "" || ex.Guardrails == nil || ex.Guardrails.Evaluated {
		t.Fatalf("explain without a session: %+v %+v, %v", ex.Decision, ex.Guardrails, err)
	}
	if after := head(); after != before {
		t.Errorf("explain recorded: head %d → %d", before, after)
	}
	code, body := call(t, "GET", d.url+govapi.PathExplain+"?"+url.Values{"resource_type": {"database"}, "resource_name": {"x"}, "action": {"read"}, "session_id": {" "}}.Encode(), nil)
	if code != 400 || !strings.Contains(errorOf(body), "session_id") {
		t.Errorf("blank session_id: %d %s", code, body)
	}

	// Outcomes while open neither close nor extend it; after the cooldown
	// it has lifted and the count starts again.
	post("s1", "success")
	post("s1", "error")
	clock.add(8 * time.Minute) // 14:20
	res, err = c.Decide(ctx, guardedDecision("s1", "write"))
	if err != nil || res.Decision.EnforcedEffect != policy.EffectAllow || res.Decision.Code != "" {
		t.Fatalf("after the cooldown: %+v %+v, %v", res.Decision, res.Guardrails, err)
	}
	if det := res.Guardrails.Checks[1].Detail; !strings.HasPrefix(det, "0 errors in a row in the last 10m, opens at 3 (it was open until 2026-03-09T14:20:00Z)") {
		t.Errorf("detail %q", det)
	}
}

// Global dry-run: the trip is recorded (effect deny, code) and allow is
// enforced, as for every decision under dry-run (DESIGN §5.5).
func TestGuardrailsDryRun(t *testing.T) {
	d, _ := startGuarded(t, true)
	c := d.as(t, "alice")
	ctx := ctxT(t)
	for range 3 {
		if _, err := c.Decide(ctx, guardedDecision("s1", "write")); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.Decide(ctx, guardedDecision("s1", "write"))
	if err != nil || res.Decision.Effect != policy.EffectDeny || res.Decision.EnforcedEffect != policy.EffectAllow ||
		res.Decision.Code != policy.CodeRateLimited || !res.Decision.DryRun {
		t.Fatalf("%+v, %v", res.Decision, err)
	}
}

// A policy file without guardrails decides as before: no guardrails
// member, no code, whatever the session did.
func TestNoGuardrails(t *testing.T) {
	d := startGoverned(t, nil)
	c := d.as(t, "alice")
	for range 5 {
		req := prodWriteDecision()
		req.Action = "read"
		res, err := c.Decide(ctxT(t), req)
		if err != nil || res.Guardrails != nil || res.Decision.Code != "" {
			t.Fatalf("%+v, %v", res, err)
		}
	}
}
