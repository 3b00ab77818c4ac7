package toolgov_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/token"
	"github.com/govkit/govkit/pkg/toolgov"
)

// testPolicy protects files tagged protected in the infra file: reads are
// allowed, writes need one approval, deletes are denied. Anything else is
// allowed, except the tool "Danger", which is denied.
const testPolicy = `version: "1"
default_effect: allow
policies:
  - name: protected-files
    resources:
      - type: file
        match: {tags: [protected]}
    rules:
      - action: read
        effect: allow
      - action: write
        effect: require_approval
      - action: destructive
        effect: deny
        message: Protected files are never deleted by agents
  - name: dangerous-tools
    resources:
      - type: tool
        name: Danger
    rules:
      - action: [read, write, destructive]
        effect: deny
`

const testInfra = `version: "1"
resources:
  - type: file
    name: /srv/app/config.yaml
    tags: [protected]
`

// governed is a real auditd with testPolicy and a tokens file: the agent
// (gate's token, role agent) and an approver.
type governed struct {
	d        *auditdtest.Daemon
	agent    *client.Client // what toolgov talks through
	approver *client.Client // bob, role approver
	auditor  *client.Client
	gov      *toolgov.Gov
}

func start(t testing.TB) *governed {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	mk := func(name string, roles ...token.Role) string {
		tok, err := token.Create(path, name, roles, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	agentTok, bobTok, auditTok := mk("agent-7", token.Agent), mk("bob", token.Approver), mk("audit", token.Auditor)
	set, err := token.NewSet(path, t.Logf, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	d := auditdtest.Start(t, auditdtest.Options{
		Policy: auditdtest.LoadPolicy(t, testPolicy, testInfra),
		Config: func(c *auditd.Config) { c.VerifyOnStart = false; c.Tokens = set },
	})
	g := &governed{d: d}
	for _, x := range []struct {
		c   **client.Client
		tok string
	}{{&g.agent, agentTok}, {&g.approver, bobTok}, {&g.auditor, auditTok}} {
		if *x.c, err = client.New(d.URL, client.WithToken(x.tok)); err != nil {
			t.Fatal(err)
		}
	}
	g.gov = toolgov.New(g.agent, time.Now, rand.Reader)
	return g
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func editConfig(cmd string) toolgov.Call {
	return toolgov.Call{
		SessionID: "sess-1", CallID: "toolu_01", Agent: "claude", Tool: "Edit", Action: "write",
		Resource:   govapi.Resource{Type: "file", Name: "/srv/app/config.yaml"},
		RawCommand: cmd,
	}
}

func decide(t *testing.T, g *governed, c toolgov.Call) toolgov.Verdict {
	t.Helper()
	v, err := g.gov.Decide(ctxT(t), c)
	if err != nil {
		t.Fatalf("Decide(%+v): %v", c, err)
	}
	return v
}

func wantEffect(t *testing.T, v toolgov.Verdict, effect policy.Effect, code string) {
	t.Helper()
	t.Logf("%s: %s", v.Effect, v.Reason)
	if v.Effect != effect || v.Code != code {
		t.Fatalf("verdict %+v, want %s with code %q", v, effect, code)
	}
}

// Allow and deny come from the policy, recorded as policy_decision events
// of the session; a deny's reason says an approval cannot help.
func TestAllowAndDeny(t *testing.T) {
	g := start(t)
	for _, tc := range []struct {
		name   string
		call   toolgov.Call
		effect policy.Effect
		code   string
		reason string
	}{
		{"read of a protected file", func() toolgov.Call { c := editConfig(""); c.Tool, c.Action = "Read", "read"; return c }(),
			policy.EffectAllow, "", `read on file:/srv/app/config.yaml allowed (policy "protected-files")`},
		{"write of another file", func() toolgov.Call { c := editConfig(`{"x":1}`); c.Resource.Name = "/tmp/x"; return c }(),
			policy.EffectAllow, "", "allowed (the policy's default effect)"},
		{"delete of a protected file", func() toolgov.Call {
			c := editConfig("rm /srv/app/config.yaml")
			c.Tool, c.Action = "Bash", "destructive"
			return c
		}(),
			policy.EffectDeny, "POLICY_BLOCKED", "Protected files are never deleted by agents); an approval cannot override a deny"},
		{"a tool without a resource", toolgov.Call{SessionID: "sess-1", Tool: "Danger", Action: "write", RawCommand: "{}"},
			policy.EffectDeny, "POLICY_BLOCKED", `write on tool:Danger denied (policy "dangerous-tools")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decide(t, g, tc.call)
			wantEffect(t, v, tc.effect, tc.code)
			if !strings.Contains(v.Reason, tc.reason) || v.EventID == "" || v.ApprovalID != "" || v.Consumed {
				t.Errorf("verdict %+v, want reason with %q", v, tc.reason)
			}
			ev, err := g.auditor.Get(ctxT(t), v.EventID)
			if err != nil {
				t.Fatal(err)
			}
			if ev.EventType != audit.TypePolicyDecision || ev.SessionID != "sess-1" || ev.Outcome.Status != string(tc.effect) || ev.Agent != "agent-7" {
				t.Errorf("decision event %+v", ev)
			}
		})
	}
}

// require_approval → an approver approves → the same call consumes it
// exactly once; the identical call after needs a new approval. A
// different call with the approved id is not released by it.
func TestApprovalConsumedOnce(t *testing.T) {
	g := start(t)
	ctx := ctxT(t)
	call := editConfig(`{"file_path":"/srv/app/config.yaml","old_string":"a","new_string":"b"}`)

	v := decide(t, g, call)
	wantEffect(t, v, policy.EffectRequireApproval, "APPROVAL_REQUIRED")
	id := v.ApprovalID
	if id == "" || !strings.Contains(v.Reason, "approvals approve "+id) || !strings.Contains(v.Reason, "approval "+id+" is pending") {
		t.Fatalf("verdict %+v: the reason must name the approval and how to approve it", v)
	}

	// Still pending: the same id, nothing new opened.
	call.ApprovalID = id
	v = decide(t, g, call)
	wantEffect(t, v, policy.EffectRequireApproval, "APPROVAL_REQUIRED")
	if v.ApprovalID != id || !strings.Contains(v.Reason, "still pending") || !strings.Contains(v.Reason, "approvals approve "+id) {
		t.Fatalf("while pending: %+v", v)
	}

	if _, err := g.approver.Approve(ctx, id, "ok"); err != nil {
		t.Fatal(err)
	}

	// Another command with the approved id: a new request, and the
	// approval stays unconsumed for the call it was given for.
	other := call
	other.RawCommand = `{"file_path":"/srv/app/config.yaml","old_string":"a","new_string":"EVIL"}`
	v = decide(t, g, other)
	wantEffect(t, v, policy.EffectRequireApproval, "APPROVAL_REQUIRED")
	if v.Consumed || v.ApprovalID == id || v.ApprovalID == "" || !strings.Contains(v.Reason, "given for another call") {
		t.Fatalf("a mismatching call with approval %s: %+v", id, v)
	}
	if ap, err := g.agent.Approval(ctx, id); err != nil || ap.Status != approval.Approved {
		t.Fatalf("approval %s after the mismatch: %s, %v", id, ap.Status, err)
	}

	// The approved call: consumed, once.
	v = decide(t, g, call)
	wantEffect(t, v, policy.EffectAllow, "")
	if !v.Consumed || v.ApprovalID != id || v.EventID == "" {
		t.Fatalf("the approved call: %+v", v)
	}
	ap, err := g.agent.Approval(ctx, id)
	if err != nil || ap.Status != approval.Consumed || ap.ConsumedBy != "agent-7" {
		t.Fatalf("approval after the call: %s by %q, %v", ap.Status, ap.ConsumedBy, err)
	}

	// The identical call again, still citing the spent approval: a new one.
	v = decide(t, g, call)
	wantEffect(t, v, policy.EffectRequireApproval, "APPROVAL_REQUIRED")
	if v.Consumed || v.ApprovalID == id || !strings.Contains(v.Reason, "consumed already") || !strings.Contains(v.Reason, "approvals approve "+v.ApprovalID) {
		t.Fatalf("the call again with a spent approval: %+v", v)
	}

	// The outcome, recorded citing the consumed approval: auditd's action
	// hash of the event is the approval's.
	if err := g.gov.Record(ctx, toolgov.Record{Call: call, Type: toolgov.TypeToolExecution, Status: "success", ApprovalID: id, ReceiptID: "rcpt_1", Result: "ok"}); err != nil {
		t.Fatal(err)
	}
	page, err := g.auditor.Query(ctx, govapi.EventQuery{SessionID: "sess-1", EventType: audit.TypeToolExecution})
	if err != nil || len(page.Events) != 1 {
		t.Fatalf("tool_execution events: %+v, %v", page, err)
	}
	if ev := page.Events[0]; ev.ActionHash != ap.ActionHash || ev.ApprovalID != id || ev.TraceID != "toolu_01" {
		t.Errorf("the outcome event: action hash %s approval %s trace %s; want %s %s toolu_01", ev.ActionHash, ev.ApprovalID, ev.TraceID, ap.ActionHash, id)
	}

	// In the chain: a decision for each call that reached policy (not
	// the pending retry), all of the session; one consumption; and the
	// chain verifies.
	for typ, want := range map[string]int{audit.TypePolicyDecision: 4, audit.TypeApprovalConsumed: 1} {
		q := govapi.EventQuery{EventType: typ}
		if typ == audit.TypePolicyDecision {
			q.SessionID = "sess-1"
		}
		if page, err := g.auditor.Query(ctx, q); err != nil || len(page.Events) != want {
			t.Errorf("%s events: %d, %v; want %d", typ, len(page.Events), err, want)
		}
	}
	if rep, err := g.auditor.Verify(ctx); err != nil || !rep.Verified {
		t.Errorf("the chain: %+v, %v", rep, err)
	}
}

// A denied approval denies the call, naming who denied it; an approval the
// policy no longer needs is left unconsumed.
func TestApprovalDenied(t *testing.T) {
	g := start(t)
	ctx := ctxT(t)
	call := editConfig("sed -i s/a/b/ /srv/app/config.yaml")
	call.Tool = "Bash"
	id := decide(t, g, call).ApprovalID
	if _, err := g.approver.Deny(ctx, id, "not during the freeze"); err != nil {
		t.Fatal(err)
	}
	call.ApprovalID = id
	v := decide(t, g, call)
	wantEffect(t, v, policy.EffectDeny, "POLICY_BLOCKED")
	if v.ApprovalID != id || !strings.Contains(v.Reason, "denied by bob (not during the freeze)") {
		t.Fatalf("verdict %+v", v)
	}
}

// Record appends tool_execution and hook_decision events of the session,
// with the excerpts in the tool member (redacted by auditd) and the rest in
// data; a hook_decision carries no action class.
func TestRecord(t *testing.T) {
	g := start(t)
	ctx := ctxT(t)
	call := editConfig("psql postgres://admin:hunter2@db/prod -c 'select 1'")
	call.Tool = "Bash"
	long := strings.Repeat("é", toolgov.MaxExcerpt) // 2 bytes each
	for _, r := range []toolgov.Record{
		{Call: call, Type: toolgov.TypeToolExecution, Status: "error", Error: "password=hunter2 rejected", Result: long, ReceiptID: "rcpt_9"},
		{Call: call, Type: toolgov.TypeHookDecision, Status: "deny", Code: "FSM_BLOCKED", Reason: "read the file you wrote first"},
		{Call: toolgov.Call{SessionID: "sess-1", Agent: "claude"}, Type: toolgov.TypeHookDecision, Status: "deny", Code: "FSM_BLOCKED", Reason: "stop refused while verifying"},
	} {
		if err := g.gov.Record(ctx, r); err != nil {
			t.Fatalf("Record(%+v): %v", r, err)
		}
	}
	page, err := g.auditor.Query(ctx, govapi.EventQuery{SessionID: "sess-1"})
	if err != nil || len(page.Events) != 3 {
		t.Fatalf("events: %+v, %v", page, err)
	}
	exec, hook, stop := page.Events[0], page.Events[1], page.Events[2]
	if exec.EventType != "tool_execution" || exec.ActionClass != "write" || exec.Outcome.Status != "error" || exec.Agent != "agent-7" {
		t.Errorf("tool_execution %+v", exec)
	}
	if strings.Contains(exec.Tool.RawCommand, "hunter2") || strings.Contains(exec.Tool.Error, "hunter2") || len(exec.Redactions) == 0 {
		t.Errorf("secrets reached the chain: %+v", exec.Tool)
	}
	if n := len([]rune(exec.Tool.Result)); n > audit.MaxResult {
		t.Errorf("result of %d characters", n)
	}
	var data map[string]string
	json.Unmarshal(exec.Data, &data)
	if data["agent"] != "claude" || data["call_id"] != "toolu_01" || data["receipt_id"] != "rcpt_9" || data["action"] != "write" {
		t.Errorf("tool_execution data %s", exec.Data)
	}
	if hook.EventType != "hook_decision" || hook.ActionClass != "" || hook.Outcome.Status != "deny" || hook.Resource.Name != "/srv/app/config.yaml" {
		t.Errorf("hook_decision %+v", hook)
	}
	json.Unmarshal(hook.Data, &data)
	if data["code"] != "FSM_BLOCKED" || data["action"] != "write" || data["reason"] != "read the file you wrote first" {
		t.Errorf("hook_decision data %s", hook.Data)
	}
	if stop.Tool != nil || stop.Resource != nil || stop.SessionID != "sess-1" {
		t.Errorf("a decision without a tool: %+v", stop)
	}
}

// Calls auditd would refuse are refused here, saying which field, with
// nothing sent.
func TestInvalidCall(t *testing.T) {
	gov := toolgov.New(nil, nil, nil) // nothing may be sent
	ctx := context.Background()
	good := editConfig("x")
	for _, tc := range []struct {
		name string
		edit func(*toolgov.Call)
		want string
	}{
		{"no session", func(c *toolgov.Call) { c.SessionID = "" }, "no session id"},
		{"no tool", func(c *toolgov.Call) { c.Tool = "" }, "no tool name"},
		{"bad action", func(c *toolgov.Call) { c.Action = "delete" }, `action "delete"`},
		{"long command", func(c *toolgov.Call) { c.RawCommand = strings.Repeat("x", toolgov.MaxRawCommand+1) }, "at most 65536"},
		{"half a resource", func(c *toolgov.Call) { c.Resource.Type = "" }, "needs both"},
		{"a resource name of two lines", func(c *toolgov.Call) { c.Resource.Name = "a\nb" }, "resource name"},
		{"a long session id", func(c *toolgov.Call) { c.SessionID = strings.Repeat("s", 257) }, "session id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			_, err := gov.Decide(ctx, c)
			if !errors.Is(err, toolgov.ErrInvalidCall) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decide: %v, want ErrInvalidCall with %q", err, tc.want)
			}
		})
	}
	for _, r := range []toolgov.Record{
		{Call: good, Type: "policy_decision", Status: "allow"},
		{Call: good, Type: toolgov.TypeHookDecision},
		{Call: toolgov.Call{SessionID: "s"}, Type: toolgov.TypeToolExecution, Status: "success"},
	} {
		if err := gov.Record(ctx, r); !errors.Is(err, toolgov.ErrInvalidCall) {
			t.Errorf("Record(%+v): %v, want ErrInvalidCall", r, err)
		}
	}
}

// With auditd down, Decide and Record fail (the caller fails closed), and
// a held approval cannot be settled either.
func TestAuditdDown(t *testing.T) {
	g := start(t)
	g.d.Stop()
	for _, c := range []toolgov.Call{editConfig("x"), func() toolgov.Call { c := editConfig("x"); c.ApprovalID = "apr_1"; return c }()} {
		if v, err := g.gov.Decide(ctxT(t), c); err == nil || errors.Is(err, toolgov.ErrInvalidCall) || !client.IsTransient(err) {
			t.Errorf("Decide with auditd down: %+v, %v", v, err)
		}
	}
	if err := g.gov.Record(ctxT(t), toolgov.Record{Call: editConfig("x"), Type: toolgov.TypeToolExecution, Status: "success"}); err == nil {
		t.Error("Record with auditd down succeeded")
	}
}

// One decision and one outcome record per governed write: what gate hook
// adds to a write with --url (two durable appends on a loopback auditd).
func BenchmarkDecideRecord(b *testing.B) {
	g := start(b)
	ctx := context.Background()
	call := editConfig(`{"file_path":"/tmp/x"}`)
	call.Resource.Name = "/tmp/x"
	for b.Loop() {
		v, err := g.gov.Decide(ctx, call)
		if err != nil || v.Effect != policy.EffectAllow {
			b.Fatal(v, err)
		}
		if err := g.gov.Record(ctx, toolgov.Record{Call: call, Type: toolgov.TypeToolExecution, Status: "success", Result: "ok"}); err != nil {
			b.Fatal(err)
		}
	}
}
