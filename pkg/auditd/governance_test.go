package auditd_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/token"
)

// prodPolicy is seed 003's production-database-protection with a quorum of
// two for writes.
const prodPolicy = `version: "1"
default_effect: deny
policies:
  - name: prod-db-guard
    resources:
      - type: database
        match: {tags: [production]}
    rules:
      - action: read
        effect: allow
      - action: write
        effect: allow
        conditions:
          require_approval: true
          approval_quorum: 2
          max_rows_affected: 1000
      - action: destructive
        effect: deny
        message: Destructive operations on production databases are prohibited
`

// denyAllPolicy is a different policy, installed by a reload.
const denyAllPolicy = `version: "1"
default_effect: allow
policies:
  - name: freeze-everything
    resources: [{type: database}]
    rules:
      - action: [read, write, destructive]
        effect: deny
        message: Everything is frozen
`

const testInfra = `version: "1"
resources:
  - type: database
    name: prod-db
    tags: [production, critical]
  - type: database
    name: scratch-db
`

// loadPolicy parses a policy (and infra) document as auditd's command
// would hand it over.
func loadPolicy(t testing.TB, doc, infra string) auditd.Policy {
	t.Helper()
	cfg, err := policy.LoadNamed("policies.yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := auditd.Policy{Config: cfg, File: "policies.yaml", SHA256: strings.Repeat("ab", 32)}
	if infra != "" {
		if p.Infra, err = policy.LoadInfraNamed("infra.yaml", strings.NewReader(infra)); err != nil {
			t.Fatal(err)
		}
		p.InfraFile = "infra.yaml"
	}
	return p
}

// startGoverned is a daemon with prodPolicy and testInfra in force.
func startGoverned(t testing.TB, edit func(*auditd.Config)) *daemon {
	t.Helper()
	d := startDaemon(t, "", edit)
	if err := d.srv.SetPolicy(loadPolicy(t, prodPolicy, testInfra)); err != nil {
		t.Fatal(err)
	}
	return d
}

// call sends one request and returns the status and body.
func call(t testing.TB, method, u string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json") // header may replace it
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// prodWriteDecision names no principal and no agent: the caller's own
// (DESIGN §11; in local mode the X-Govkit-User name, with no roles).
func prodWriteDecision() govapi.DecisionRequest {
	return govapi.DecisionRequest{
		SessionID: "s-1", TraceID: "tr-1",
		Resource: govapi.Resource{Type: "database", Name: "prod-db"},
		Action:   "write",
		Tool:     &govapi.Tool{Name: "psql", RawCommand: "UPDATE orders SET state = 'paid' WHERE id = 7", Parameters: json.RawMessage(`{"db": "prod-db"}`)},
		Reason:   "customer refund",
	}
}

// errorOf is the message of an error answer (the body itself when it is
// not one).
func errorOf(body []byte) string {
	var e struct{ Error string }
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return string(body)
	}
	return e.Error
}

// stored returns the event with id, decoded.
func stored(t testing.TB, d *daemon, id string) audit.Event {
	t.Helper()
	ev, err := d.c.Get(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Decisions are evaluated with the policy in force and recorded, allowed and
// denied ones too (H-11, H-60); require_approval requests an approval that
// the event names.
func TestDecisionsAllowDenyRequireApproval(t *testing.T) {
	d := startGoverned(t, nil)
	ctx := ctxT(t)
	alice := d.as(t, "alice")

	// A write to prod-db: tags from the infra file, approval with quorum 2.
	res, err := alice.Decide(ctx, prodWriteDecision())
	if err != nil {
		t.Fatal(err)
	}
	dec := res.Decision
	if dec.EnforcedEffect != policy.EffectRequireApproval || dec.PolicyName != "prod-db-guard" || dec.RuleIndex != 1 || dec.ApprovalQuorum != 2 {
		t.Fatalf("decision = %+v", dec)
	}
	if res.ApprovalID == "" || res.ApprovalExpiresAt == nil || res.Event == nil || res.Event.Seq != 2 {
		t.Fatalf("result = approval %q expiring %v, event %+v: want an approval (seq 1) and the decision (seq 2)", res.ApprovalID, res.ApprovalExpiresAt, res.Event)
	}
	ap, err := alice.Approval(ctx, res.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	if ap.Status != approval.Pending || ap.Quorum != 2 || ap.RequestedBy != "alice" || ap.Action != "write" ||
		ap.Tool != "psql" || ap.RawCommand != prodWriteDecision().Tool.RawCommand || ap.Reason != "customer refund" ||
		!slices.Equal(ap.Resource.Tags, []string{"production", "critical"}) || !ap.ExpiresAt.Equal(*res.ApprovalExpiresAt) {
		t.Fatalf("approval = %+v", ap)
	}
	pending, err := d.c.GovernancePending(ctx)
	if err != nil || len(pending) != 1 || pending[0].ID != ap.ID {
		t.Fatalf("pending = %+v, %v", pending, err)
	}

	ev := stored(t, d, res.Event.EventID)
	if ev.EventType != audit.TypePolicyDecision || ev.ApprovalID != ap.ID || ev.Agent != "alice" || ev.SessionID != "s-1" ||
		ev.TraceID != "tr-1" || ev.ActionClass != "write" || ev.Outcome.Status != "require_approval" ||
		ev.Principal.UserID != "alice" || len(ev.Principal.Roles) != 0 || ev.Caller == nil || ev.Caller.Name != "alice" ||
		ev.Resource.Name != "prod-db" || !slices.Equal(ev.Resource.Tags, []string{"production", "critical"}) ||
		ev.Tool.Name != "psql" || string(ev.Tool.Parameters) != `{"db":"prod-db"}` {
		t.Fatalf("event = %+v", ev)
	}
	// Every field of seed 003 "Audit Enrichment" (H-60) is there.
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(ev.PolicyDecision, &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"resource_type", "resource_name", "action", "tags", "effect", "policy_name", "rule_index",
		"dry_run", "post_execution", "trace", "explanation", "enforced_effect", "default_applied", "policy_sha256"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("policy_decision has no %s: %s", k, ev.PolicyDecision)
		}
	}
	// The approval carries the same record.
	if string(ap.PolicyDecision) != string(ev.PolicyDecision) {
		t.Errorf("approval's policy_decision differs from the event's:\n%s\n%s", ap.PolicyDecision, ev.PolicyDecision)
	}
	var data govapi.DecisionEventData
	if err := json.Unmarshal(ev.Data, &data); err != nil || data.Caller != "alice" || data.Auth != "local" || data.RequestSHA256 == "" || data.Reason != "customer refund" {
		t.Errorf("data = %s (%v)", ev.Data, err)
	}

	// A read is allowed, and recorded without an approval.
	read := prodWriteDecision()
	read.Action = "read"
	res, err = alice.Decide(ctx, read)
	if err != nil || res.Decision.EnforcedEffect != policy.EffectAllow || res.ApprovalID != "" {
		t.Fatalf("read: %+v, %v", res, err)
	}
	if ev := stored(t, d, res.Event.EventID); ev.Outcome.Status != "allow" || ev.ApprovalID != "" || len(ev.PolicyDecision) == 0 {
		t.Errorf("allowed decision event = %+v", ev)
	}

	// A destructive action is denied by the rule, with its message.
	destroy := prodWriteDecision()
	destroy.Action = "destructive"
	res, err = alice.Decide(ctx, destroy)
	if err != nil || res.Decision.EnforcedEffect != policy.EffectDeny || res.Decision.Message != "Destructive operations on production databases are prohibited" || res.ApprovalID != "" {
		t.Fatalf("destructive: %+v, %v", res, err)
	}

	// A resource the infra file lacks has no tags: the default denies,
	// and the note says why.
	unknown := prodWriteDecision()
	unknown.Resource.Name = "mystery-db"
	res, err = alice.Decide(ctx, unknown)
	if err != nil || res.Decision.EnforcedEffect != policy.EffectDeny || !res.DefaultApplied ||
		res.Note != "resource database:mystery-db is not in the infra file infra.yaml, so it has no tags" {
		t.Fatalf("unknown resource: %+v, %v", res, err)
	}
	var unknownRec govapi.DecisionRecord
	if err := json.Unmarshal(stored(t, d, res.Event.EventID).PolicyDecision, &unknownRec); err != nil ||
		unknownRec.PolicyName != nil || unknownRec.RuleIndex != nil || unknownRec.Note != res.Note || !unknownRec.DefaultApplied {
		t.Errorf("default decision record = %+v, %v", unknownRec, err)
	}

	// The infra file is authoritative for the tags of what it lists
	// (DESIGN §11): before issue 13 a caller could send [] or [staging]
	// for prod-db and step outside its policies.
	untagged := prodWriteDecision()
	untagged.Resource.Tags = []string{}
	_, err = alice.Decide(ctx, untagged)
	refusal(t, err, http.StatusForbidden, govapi.CodeTagsNotAllowed)
	if !strings.Contains(err.Error(), "resource database:prod-db is listed in the infra file infra.yaml") {
		t.Errorf("err = %v", err)
	}
	// ... and tags for a resource it does not list come only from a gateway.
	staging := prodWriteDecision()
	staging.Resource = govapi.Resource{Type: "database", Name: "mystery-db", Tags: []string{"staging"}}
	_, err = alice.Decide(ctx, staging)
	refusal(t, err, http.StatusForbidden, govapi.CodeTagsNotAllowed)

	// After execution, too many rows deny, and no approval is requested.
	post := prodWriteDecision()
	post.PostExecution, post.RowsAffected = true, 1500
	res, err = alice.Decide(ctx, post)
	if err != nil || res.Decision.EnforcedEffect != policy.EffectDeny || !res.Decision.PostExecution || res.ApprovalID != "" {
		t.Fatalf("post-execution: %+v, %v", res, err)
	}
	post.RowsAffected = 10
	res, err = alice.Decide(ctx, post)
	if err != nil || res.Decision.EnforcedEffect != policy.EffectRequireApproval || res.ApprovalID != "" {
		t.Fatalf("post-execution within the limit: %+v, %v (settled before execution: no new approval)", res, err)
	}

	if got := metric(t, d, `govkit_auditd_policy_decisions_total{enforced_effect="deny"}`); got != "3" {
		t.Errorf("deny decisions metric = %q, want 3", got)
	}
	if got := metric(t, d, `govkit_auditd_policy_decisions_total{enforced_effect="require_approval"}`); got != "2" {
		t.Errorf("require_approval decisions metric = %q, want 2", got)
	}
	if l, _ := d.c.PendingApprovals(ctx); len(l) != 1 {
		t.Errorf("%d pending approvals, want the one", len(l))
	}
	if rep, err := d.c.GovernanceVerify(ctx); err != nil || !rep.Verified {
		t.Errorf("verify: %+v, %v", rep, err)
	}
}

// The dry-run of DESIGN §5: the effect is recorded, allow is enforced, and
// nothing waits for an approval.
func TestDecisionDryRun(t *testing.T) {
	d := startDaemon(t, "", nil)
	p := loadPolicy(t, prodPolicy, testInfra)
	p.DryRun = true
	if err := d.srv.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	res, err := d.as(t, "alice").Decide(ctxT(t), prodWriteDecision())
	if err != nil || res.Decision.Effect != policy.EffectRequireApproval || res.Decision.EnforcedEffect != policy.EffectAllow ||
		!res.Decision.DryRun || res.ApprovalID != "" {
		t.Fatalf("dry run: %+v, %v", res, err)
	}
}

// Each bad decision request gets a 400 naming the field, and records
// nothing: no event, no approval request.
func TestDecisionValidation(t *testing.T) {
	d := startGoverned(t, nil)
	good := func(edit func(m map[string]any)) []byte {
		m := map[string]any{}
		json.Unmarshal([]byte(jsonOf(t, prodWriteDecision())), &m)
		edit(m)
		return []byte(jsonOf(t, m))
	}
	res := func(m map[string]any) map[string]any { return m["resource"].(map[string]any) }
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"not JSON", []byte(`{"action":`), "request body: line 1, column 11: the JSON ends early"},
		{"two values", []byte(`{} {}`), "request body: line 1, column 4: data after the JSON value"},
		{"unknown field", good(func(m map[string]any) { m["effect"] = "allow" }), `unknown field "effect"`},
		{"unknown nested field", good(func(m map[string]any) { res(m)["owner"] = "x" }), `unknown field "resource.owner": resource takes {type, name, tags}`},
		{"no action", good(func(m map[string]any) { delete(m, "action") }), "action is required: read, write or destructive"},
		{"bad action", good(func(m map[string]any) { m["action"] = "WRTIE" }), `action "WRTIE" is not read, write or destructive`},
		{"no resource type", good(func(m map[string]any) { res(m)["type"] = "" }), "resource.type is required"},
		{"no resource name", good(func(m map[string]any) { delete(res(m), "name") }), "resource.name is required"},
		{"long resource name", good(func(m map[string]any) { res(m)["name"] = strings.Repeat("n", 257) }), "resource.name is 257 bytes long; the limit is 256"},
		{"empty tag", good(func(m map[string]any) { res(m)["tags"] = []string{"production", ""} }), "resource.tags[1] is required"},
		{"newline in agent", good(func(m map[string]any) { m["agent"] = "a\nb" }), "agent must be one line"},
		{"control in user", good(func(m map[string]any) { m["principal"] = map[string]any{"user_id": "al\x1bice"} }), "principal.user_id has a control character"},
		{"blank role", good(func(m map[string]any) { m["principal"] = map[string]any{"roles": []string{" "}} }), "principal.roles[0] is blank"},
		{"bad event_id", good(func(m map[string]any) { m["event_id"] = "a b" }), `event_id "a b" is not 1 to 128 of`},
		{"negative rows", good(func(m map[string]any) { m["rows_affected"] = -1 }), "rows_affected is -1"},
		{"bad ttl", good(func(m map[string]any) { m["approval_ttl"] = "soon" }), `approval_ttl "soon" is not a duration such as 15m`},
		{"ttl too long", good(func(m map[string]any) { m["approval_ttl"] = "800h" }), "approval_ttl 800h0m0s is not between 1s and 168h0m0s"},
		{"huge raw command", good(func(m map[string]any) {
			m["tool"] = map[string]any{"name": "sh", "raw_command": strings.Repeat("x", 64<<10+1)}
		}), "tool.raw_command is 65537 bytes long; the limit is 65536"},
		{"bad number in parameters", good(func(m map[string]any) { m["tool"] = map[string]any{"parameters": json.RawMessage(`{"n":1e999}`)} }), "number out of the range JSON readers hold (beyond ±1.8e308)"},
		{"long reason", good(func(m map[string]any) { m["reason"] = strings.Repeat("r", 4097) }), "reason is 4097 bytes long; the limit is 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, "POST", d.url+govapi.PathDecisions, tc.body)
			if code != http.StatusBadRequest || !strings.Contains(errorOf(body), tc.want) {
				t.Errorf("%d %s, want 400 with %q", code, body, tc.want)
			}
		})
	}
	big := append([]byte(`{"reason":"`), bytes.Repeat([]byte("x"), govapi.MaxBody)...)
	if code, body := call(t, "POST", d.url+govapi.PathDecisions, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 1 MiB: %d %s, want 413", code, body)
	}
	if seq, _ := d.srv.Head(); seq != 0 {
		t.Errorf("head seq %d after refused requests, want 0", seq)
	}
	if l, _ := d.c.Approvals(ctxT(t), govapi.ApprovalQuery{}); len(l.Approvals) != 0 {
		t.Errorf("refused requests left approvals: %+v", l.Approvals)
	}
}

// A retried event_id gets the decision recorded first (200) and never a
// second approval, even when the retries race; a different request under
// the same event_id is refused.
func TestDecisionIdempotent(t *testing.T) {
	d := startGoverned(t, nil)
	req := prodWriteDecision()
	req.EventID = "decision-42"
	body := []byte(jsonOf(t, req))
	code1, first := call(t, "POST", d.url+govapi.PathDecisions, body, "X-Govkit-User", "alice")
	code2, again := call(t, "POST", d.url+govapi.PathDecisions, body, "X-Govkit-User", "alice")
	if code1 != http.StatusCreated || code2 != http.StatusOK || string(first) != string(again) {
		t.Fatalf("first %d %s\nretry %d %s\nwant 201 then 200 with the same body", code1, first, code2, again)
	}
	// Racing retries.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if code, b := call(t, "POST", d.url+govapi.PathDecisions, body, "X-Govkit-User", "alice"); code != http.StatusOK || string(b) != string(first) {
				t.Errorf("concurrent retry: %d %s", code, b)
			}
		})
	}
	wg.Wait()
	if l, _ := d.c.Approvals(ctxT(t), govapi.ApprovalQuery{}); len(l.Approvals) != 1 {
		t.Errorf("%d approval requests, want 1", len(l.Approvals))
	}
	if seq, _ := d.srv.Head(); seq != 2 {
		t.Errorf("head seq %d, want 2 (one approval, one decision)", seq)
	}

	// Racing first attempts of a new id: one decision, one approval.
	req.EventID = "decision-43"
	body = []byte(jsonOf(t, req))
	var mu sync.Mutex
	codes := map[int]int{}
	for range 8 {
		wg.Go(func() {
			code, _ := call(t, "POST", d.url+govapi.PathDecisions, body, "X-Govkit-User", "alice")
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[http.StatusCreated] != 1 || codes[http.StatusOK] != 7 {
		t.Errorf("status codes of 8 racing first attempts: %v, want one 201 and seven 200", codes)
	}
	if l, _ := d.c.Approvals(ctxT(t), govapi.ApprovalQuery{}); len(l.Approvals) != 2 {
		t.Errorf("%d approval requests, want 2", len(l.Approvals))
	}

	// The same id for another request: 409, nothing recorded.
	other := req
	other.Action = "read"
	code, b := call(t, "POST", d.url+govapi.PathDecisions, []byte(jsonOf(t, other)), "X-Govkit-User", "alice")
	if code != http.StatusConflict || !strings.Contains(string(b), `"code":"event_id_reused"`) || !strings.Contains(errorOf(b), "is taken by another event") {
		t.Errorf("reused event_id: %d %s", code, b)
	}
	// ... or an id that names an event of another kind.
	ev := toolEvent("sre-bot", "ls")
	ev.EventID = "tool-1"
	if _, err := d.c.Append(ctxT(t), ev); err != nil {
		t.Fatal(err)
	}
	other.EventID = "tool-1"
	code, b = call(t, "POST", d.url+govapi.PathDecisions, []byte(jsonOf(t, other)), "X-Govkit-User", "alice")
	if code != http.StatusConflict || !strings.Contains(errorOf(b), "is taken by another event") || strings.Contains(string(b), "tool_execution") {
		t.Errorf("event_id of a tool event: %d %s (it must not say what the event is)", code, b)
	}
	if seq, _ := d.srv.Head(); seq != 5 {
		t.Errorf("head seq %d, want 5", seq)
	}

	// A recorded decision is answered even when no policy is loaded now
	// (auditd restarted without --policy); a new one is 503.
	if err := d.srv.SetPolicy(auditd.Policy{}); err != nil {
		t.Fatal(err)
	}
	req.EventID = "decision-42"
	if code, b := call(t, "POST", d.url+govapi.PathDecisions, []byte(jsonOf(t, req)), "X-Govkit-User", "alice"); code != http.StatusOK || string(b) != string(first) {
		t.Errorf("retry without a policy: %d %s", code, b)
	}
	req.EventID = "decision-44"
	if code, b := call(t, "POST", d.url+govapi.PathDecisions, []byte(jsonOf(t, req)), "X-Govkit-User", "alice"); code != http.StatusServiceUnavailable {
		t.Errorf("new decision without a policy: %d %s", code, b)
	}
}

// TestDecisionRetrospectiveExplainEqualsReturned: /api/v1/decisions records
// a decision whose retrospective explain equals what was returned, and still
// equals it after a reload of a different policy (H-58: no re-evaluation).
func TestDecisionRetrospectiveExplainEqualsReturned(t *testing.T) {
	d := startGoverned(t, nil)
	ctx := ctxT(t)
	alice := d.as(t, "alice")
	var results []govapi.DecisionResult
	for _, action := range []string{"read", "write", "destructive"} {
		req := prodWriteDecision()
		req.Action = action
		res, err := alice.Decide(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	check := func(when string) {
		t.Helper()
		for _, res := range results {
			got, err := d.c.ExplainEvent(ctx, res.Event.EventID)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := jsonOf(t, got), jsonOf(t, res.Explanation); g != w {
				t.Errorf("%s: explain of %s\n got %s\nwant %s", when, res.Event.EventID, g, w)
			}
		}
	}
	check("before the reload")

	if err := d.srv.SetPolicy(loadPolicy(t, denyAllPolicy, testInfra)); err != nil {
		t.Fatal(err)
	}
	now, err := d.c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "read"})
	if err != nil || now.Decision.EnforcedEffect != policy.EffectDeny || now.Decision.PolicyName != "freeze-everything" {
		t.Fatalf("the reloaded policy is not in force: %+v, %v", now.Decision, err)
	}
	check("after the reload")
	if got := metric(t, d, `govkit_auditd_policy_reloads_total{result="success"}`); got != "1" {
		t.Errorf("reloads metric = %q, want 1", got)
	}
}

// A hypothetical explain evaluates like a decision and records nothing
// (H-59); its parameters are read strictly.
func TestHypotheticalExplain(t *testing.T) {
	d := startGoverned(t, nil)
	ctx := ctxT(t)
	if _, err := d.c.Append(ctx, toolEvent("sre-bot", "ls")); err != nil {
		t.Fatal(err)
	}
	headBefore, _ := d.srv.Head()

	// Tags from the infra file.
	ex, err := d.c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "write", UserID: "alice", Roles: []string{"dba", "oncall"}})
	if err != nil || ex.Decision.EnforcedEffect != policy.EffectRequireApproval || ex.Decision.ApprovalQuorum != 2 || ex.Event != nil || ex.Note != "" {
		t.Fatalf("explain: %+v, %v", ex, err)
	}
	if !strings.HasPrefix(ex.Explanation, "Access to prod-db (tags: production, critical) for write: REQUIRES APPROVAL") {
		t.Errorf("explanation = %q", ex.Explanation)
	}
	// tags= present but empty: no tags, whatever the infra file says.
	ex, err = d.c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "write", Tags: []string{}})
	if err != nil || ex.Decision.EnforcedEffect != policy.EffectDeny || !ex.DefaultApplied || ex.Note != "" {
		t.Fatalf("explain without tags: %+v, %v", ex, err)
	}
	// Not in the infra file: a note.
	ex, err = d.c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "unknown-db", Action: "read"})
	if err != nil || ex.Note != "resource database:unknown-db is not in the infra file infra.yaml, so it has no tags" {
		t.Fatalf("explain of an unknown resource: %+v, %v", ex, err)
	}
	// Counts make it the post-execution check, as govexplain --rows does.
	ex, err = d.c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "write", RowsAffected: 1500})
	if err != nil || ex.Decision.EnforcedEffect != policy.EffectDeny || !ex.Decision.PostExecution {
		t.Fatalf("explain with rows: %+v, %v", ex.Decision, err)
	}
	// The JSON is govexplain -o json's: schema_version and the trace's members.
	code, body := call(t, "GET", d.url+govapi.PathExplain+"?resource_type=database&resource_name=prod-db&action=read", nil)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); code != 200 || err != nil {
		t.Fatalf("%d %s", code, body)
	}
	var keys []string
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"decision", "default_applied", "explanation", "policies_evaluated", "schema_version"}; !slices.Equal(keys, want) {
		t.Errorf("members %v, want %v", keys, want)
	}

	for _, tc := range []struct{ query, want string }{
		{"resource_name=prod-db&action=read", "query parameter resource_type is required"},
		{"resource_type=database&action=read", "query parameter resource_name is required"},
		{"resource_type=database&resource_name=prod-db", "query parameter action is required"},
		{"resource_type=database&resource_name=prod-db&action=delete", `action "delete" is not read, write or destructive`},
		{"resource_type=database&resource_name=prod-db&action=read&verbose=1", `unknown query parameter "verbose"`},
		{"resource_type=database&resource_name=prod-db&action=read&role=a&role=b", `query parameter "role" given more than once`},
		{"resource_type=database&resource_name=prod-db&action=read&tags=a,,b", "tags[1] is required"},
		{"resource_type=database&resource_name=prod-db&action=read&rows_affected=-3", `rows_affected "-3" is not a count`},
		{"resource_type=database&resource_name=prod-db&action=read&user_id=" + url.QueryEscape("a\nb"), `query parameter "user_id" has a control character`},
		{"resource_type=database&resource_name=prod-db&action=read&as_caller=maybe", `as_caller "maybe" is not true or false`},
		{"resource_type=database&resource_name=prod-db&action=read&as_caller=true&user_id=alice", "leave out user_id, role and service"},
	} {
		code, body := call(t, "GET", d.url+govapi.PathExplain+"?"+tc.query, nil)
		if code != http.StatusBadRequest || !strings.Contains(errorOf(body), tc.want) {
			t.Errorf("?%s: %d %s, want 400 with %q", tc.query, code, body, tc.want)
		}
	}

	if head, _ := d.srv.Head(); head != headBefore {
		t.Errorf("head seq %d after hypothetical explains, want %d: nothing may be recorded", head, headBefore)
	}
	if l, _ := d.c.Approvals(ctx, govapi.ApprovalQuery{}); len(l.Approvals) != 0 {
		t.Errorf("explain requested approvals: %+v", l.Approvals)
	}
}

// carolOnly lets only the user carol write to staging databases.
const carolOnly = `version: "1"
default_effect: deny
policies:
  - name: carol-writes
    principals: [{user: carol}]
    resources: [{type: database}]
    rules:
      - action: write
        effect: allow
`

// An explain with as_caller=true is evaluated for the principal a decision
// by the same caller gets: the X-Govkit-User name in local mode, the
// token's principal with tokens (whatever the request says). gate check
// asks it so: before, it explained for nobody while gate run decided for
// its user, and a policy naming users answered them differently.
func TestExplainAsCaller(t *testing.T) {
	q := govapi.ExplainQuery{ResourceType: "database", ResourceName: "staging-db", Action: "write", AsCaller: true}
	t.Run("local", func(t *testing.T) {
		d := startDaemon(t, "", nil)
		if err := d.srv.SetPolicy(loadPolicy(t, carolOnly, testInfra)); err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		for user, want := range map[string]policy.Effect{"carol": policy.EffectAllow, "dave": policy.EffectDeny} {
			ex, err := d.as(t, user).Explain(ctx, q)
			if err != nil || ex.Decision.EnforcedEffect != want {
				t.Errorf("as %s: %v (%q), %v; want %s", user, ex.Decision.EnforcedEffect, ex.Explanation, err, want)
			}
			dr, err := d.as(t, user).Decide(ctx, govapi.DecisionRequest{Resource: govapi.Resource{Type: "database", Name: "staging-db"}, Action: "write"})
			if err != nil || dr.Decision.EnforcedEffect != ex.Decision.EnforcedEffect {
				t.Errorf("as %s: decision %+v, %v; explain said %s", user, dr.Decision, err, ex.Decision.EnforcedEffect)
			}
		}
	})
	t.Run("tokens", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tokens.yaml")
		carol, err := token.Create(path, "carol", []token.Role{token.Agent}, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		dave, err := token.Create(path, "dave", []token.Role{token.Agent}, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		set, err := token.NewSet(path, t.Logf, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		d := startDaemon(t, "", func(c *auditd.Config) { c.Tokens = set })
		if err := d.srv.SetPolicy(loadPolicy(t, carolOnly, testInfra)); err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		// The header names carol; the token is dave's: dave it is.
		ex, err := d.as(t, "carol", client.WithToken(dave)).Explain(ctx, q)
		if err != nil || ex.Decision.EnforcedEffect != policy.EffectDeny || !strings.Contains(ex.Explanation, "user dave") {
			t.Errorf("dave's token: %v (%q), %v; want deny for user dave", ex.Decision.EnforcedEffect, ex.Explanation, err)
		}
		if ex, err := d.as(t, "dave", client.WithToken(carol)).Explain(ctx, q); err != nil || ex.Decision.EnforcedEffect != policy.EffectAllow {
			t.Errorf("carol's token: %v, %v; want allow", ex.Decision.EnforcedEffect, err)
		}
	})
}

// Without --policy, decisions and explain answer 503 naming the flag; the
// rest of the governance API works.
func TestGovernanceWithoutPolicy(t *testing.T) {
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	_, err := d.c.Decide(ctx, prodWriteDecision())
	refusal(t, err, http.StatusServiceUnavailable, "no_policy")
	if !strings.Contains(err.Error(), "no policy loaded: start auditd with --policy FILE") {
		t.Errorf("err = %v", err)
	}
	_, err = d.c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "read"})
	refusal(t, err, http.StatusServiceUnavailable, "no_policy")
	st, err := d.c.Governance(ctx)
	if err != nil || st.Policy.Loaded || st.Infra.Loaded || st.Policy.Policies == nil || st.Auth != "local" || st.SchemaVersion != 1 {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if seq, _ := d.srv.Head(); seq != 0 {
		t.Errorf("head seq %d, want 0", seq)
	}
	if got := metric(t, d, "govkit_auditd_policy_loaded"); got != "0" {
		t.Errorf("policy_loaded = %q, want 0", got)
	}
}

// The retrospective explain serves only policy decisions: 404 for an
// unknown event, 422 for another kind of event or a decision without trace.
func TestExplainEventErrors(t *testing.T) {
	d := startGoverned(t, nil)
	ctx := ctxT(t)
	_, err := d.c.ExplainEvent(ctx, "no-such-event")
	refusal(t, err, http.StatusNotFound, "")

	tool := toolEvent("sre-bot", "ls")
	tool.EventID = "tool-1"
	if _, err := d.c.Append(ctx, tool); err != nil {
		t.Fatal(err)
	}
	_, err = d.c.ExplainEvent(ctx, "tool-1")
	refusal(t, err, http.StatusUnprocessableEntity, "not_a_decision")
	if !strings.Contains(err.Error(), "event tool-1 is a tool_execution event, not a policy_decision") {
		t.Errorf("err = %v", err)
	}
	// Nobody but auditd records a decision, so none can claim an allow
	// that no policy gave.
	forged := audit.Event{EventID: "forged", EventType: audit.TypePolicyDecision, PolicyDecision: json.RawMessage(`{"effect":"allow"}`)}
	_, err = d.c.Append(ctx, forged)
	refusal(t, err, http.StatusBadRequest, govapi.CodeReservedEventType)
	if !strings.Contains(err.Error(), "ask for a decision with POST /api/v1/decisions") {
		t.Errorf("err = %v", err)
	}
}

// An incident is appended through the writer: chained, verified, streamed,
// and idempotent by incident_id.
func TestIncidents(t *testing.T) {
	d := startGoverned(t, nil)
	ctx := ctxT(t)
	sub := subscribe(t, d.sock, 0)
	in := govapi.IncidentInput{
		IncidentID: "inc-1", Type: "governance_unavailable", Severity: govapi.SeverityCritical, Source: "gate",
		Agent: "sre-bot", SessionID: "s-1", TraceID: "tr-1", Message: "fix mode: policy not loaded; tool blocked",
		EventIDs: []string{"evt_a", "evt_b"}, Details: json.RawMessage(`{"tool": "psql", "mode": "fix"}`),
	}
	inc, err := d.as(t, "gate-7").CreateIncident(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if inc.IncidentID != "inc-1" || inc.Event.EventID != "inc-1" || inc.Event.Seq != 1 || inc.Type != in.Type || string(inc.Details) != `{"mode":"fix","tool":"psql"}` {
		t.Fatalf("incident = %+v", inc)
	}
	ev := stored(t, d, "inc-1")
	var data govapi.IncidentInput
	if err := json.Unmarshal(ev.Data, &data); err != nil || ev.EventType != audit.TypeIncident || ev.Agent != "sre-bot" ||
		ev.SessionID != "s-1" || ev.TraceID != "tr-1" || ev.Principal.UserID != "gate-7" || data.Message != in.Message ||
		data.IncidentID != "" || data.Severity != "critical" || !slices.Equal(data.EventIDs, in.EventIDs) {
		t.Fatalf("event = %+v, data %+v (%v)", ev, data, err)
	}
	waitFor(t, "the incident on the stream", func() bool { return sub.len() == 1 })
	sub.check(t, 1, 1)
	if sub.events[0].EventType != audit.TypeIncident || sub.events[0].EventID != "inc-1" {
		t.Errorf("streamed %+v", sub.events[0])
	}
	if rep, err := d.c.Verify(ctx); err != nil || !rep.Verified || rep.TotalEvents != 1 {
		t.Errorf("verify: %+v, %v", rep, err)
	}

	// A retry from another caller: 409, and nothing of the stored incident.
	code, body := call(t, "POST", d.url+govapi.PathIncidents, []byte(jsonOf(t, in)))
	if code != http.StatusConflict || strings.Contains(string(body), "governance_unavailable") {
		t.Errorf("retry by another caller: %d %s", code, body)
	}
	// A retry: 200 and the original.
	code, body = call(t, "POST", d.url+govapi.PathIncidents, []byte(jsonOf(t, in)), "X-Govkit-User", "gate-7")
	var again govapi.Incident
	if err := json.Unmarshal(body, &again); code != http.StatusOK || err != nil || jsonOf(t, again) != jsonOf(t, inc) {
		t.Errorf("retry: %d %s", code, body)
	}
	// Without an incident_id auditd names it.
	in.IncidentID = ""
	inc2, err := d.c.CreateIncident(ctx, in)
	if err != nil || !strings.HasPrefix(inc2.IncidentID, "evt_") || inc2.Event.Seq != 2 {
		t.Errorf("second incident: %+v, %v", inc2, err)
	}
	if got := metric(t, d, `govkit_auditd_incidents_total{severity="critical"}`); got != "2" {
		t.Errorf("incidents metric = %q, want 2", got)
	}

	good := func(edit func(m map[string]any)) []byte {
		m := map[string]any{"type": "chain_tampering", "severity": "critical", "source": "auditor", "message": "hash mismatch at seq 3"}
		edit(m)
		return []byte(jsonOf(t, m))
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"unknown field", good(func(m map[string]any) { m["priority"] = 1 }), `unknown field "priority"`},
		{"no type", good(func(m map[string]any) { delete(m, "type") }), "type is required"},
		{"bad type", good(func(m map[string]any) { m["type"] = "Chain-Tampering" }), `type "Chain-Tampering" is not 1 to 64 of a-z 0-9 _`},
		{"long type", good(func(m map[string]any) { m["type"] = strings.Repeat("a", 65) }), "is not 1 to 64 of a-z 0-9 _"},
		{"bad severity", good(func(m map[string]any) { m["severity"] = "high" }), `severity "high" is not info, warning or critical`},
		{"no source", good(func(m map[string]any) { delete(m, "source") }), "source is required"},
		{"no message", good(func(m map[string]any) { m["message"] = " " }), "message is required"},
		{"long message", good(func(m map[string]any) { m["message"] = strings.Repeat("m", 8<<10+1) }), "message is 8193 bytes long; the limit is 8192"},
		{"details not an object", good(func(m map[string]any) { m["details"] = []int{1} }), "details must be a JSON object"},
		{"details too big", good(func(m map[string]any) { m["details"] = map[string]string{"x": strings.Repeat("d", 64<<10)} }), "details is 65544 bytes long; the limit is 65536"},
		{"too many event ids", good(func(m map[string]any) { m["event_ids"] = slices.Repeat([]string{"e"}, 101) }), "event_ids has 101 entries; the limit is 100"},
		{"bad event id", good(func(m map[string]any) { m["event_ids"] = []string{"ok", "not ok"} }), `event_ids[1] "not ok" is not`},
		{"bad incident id", good(func(m map[string]any) { m["incident_id"] = "a/b" }), `incident_id "a/b" is not`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, "POST", d.url+govapi.PathIncidents, tc.body)
			if code != http.StatusBadRequest || !strings.Contains(errorOf(body), tc.want) {
				t.Errorf("%d %s, want 400 with %q", code, body, tc.want)
			}
		})
	}
	// An incident_id that names another kind of event: 409.
	tool := toolEvent("sre-bot", "ls")
	tool.EventID = "tool-1"
	if _, err := d.c.Append(ctx, tool); err != nil {
		t.Fatal(err)
	}
	code, body = call(t, "POST", d.url+govapi.PathIncidents, good(func(m map[string]any) { m["incident_id"] = "tool-1" }))
	if code != http.StatusConflict || !strings.Contains(errorOf(body), "event_id tool-1 is taken by another event") {
		t.Errorf("reused id: %d %s", code, body)
	}
	if seq, _ := d.srv.Head(); seq != 3 {
		t.Errorf("head seq %d, want 3", seq)
	}
}

// GET /api/v1/governance says what governs: the policy, its reload error,
// the infra file, the chain and the pending approvals.
func TestGovernanceStatus(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)}
	d := startGoverned(t, func(c *auditd.Config) { c.Now = clock.now })
	ctx := ctxT(t)
	if _, err := d.as(t, "alice").Decide(ctx, prodWriteDecision()); err != nil {
		t.Fatal(err)
	}
	st, err := d.c.Governance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := st.Policy
	if !p.Loaded || p.File != "policies.yaml" || p.SHA256 != strings.Repeat("ab", 32) || p.DefaultEffect != "deny" || p.DryRun ||
		p.LoadedAt == nil || !p.LoadedAt.Equal(clock.now()) || p.ReloadError != "" || len(p.Policies) != 1 {
		t.Fatalf("policy = %+v", p)
	}
	if want := (govapi.PolicySummary{Name: "prod-db-guard", Enabled: true, Enforcement: "enforce", Resources: []string{"database[production]"}, Rules: 3}); jsonOf(t, p.Policies[0]) != jsonOf(t, want) {
		t.Errorf("summary = %+v", p.Policies[0])
	}
	if !st.Infra.Loaded || st.Infra.File != "infra.yaml" || st.Infra.Resources != 2 {
		t.Errorf("infra = %+v", st.Infra)
	}
	seq, hash := d.srv.Head()
	if st.Chain.HeadSeq != seq || st.Chain.HeadHash != hash || seq != 2 || st.Approvals.Pending != 1 || st.Auth != "local" || st.Version == "" || !st.StartedAt.Equal(clock.now()) {
		t.Errorf("status = %+v", st)
	}

	// A failed reload keeps the old policy and says so; a good one clears it.
	clock.add(time.Minute)
	d.srv.PolicyReloadFailed(&policy.LoadError{File: "policies.yaml", Line: 7, Field: "policies[0].rules", Msg: "bad"})
	st, _ = d.c.Governance(ctx)
	if !st.Policy.Loaded || st.Policy.SHA256 != strings.Repeat("ab", 32) || st.Policy.ReloadError != "policies.yaml:7: policies[0].rules: bad" ||
		st.Policy.ReloadErrorAt == nil || !st.Policy.ReloadErrorAt.Equal(clock.now()) {
		t.Errorf("after a failed reload: %+v", st.Policy)
	}
	if got := metric(t, d, "govkit_auditd_policy_reload_failing"); got != "1" {
		t.Errorf("policy_reload_failing = %q", got)
	}
	if ex, err := d.c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "read"}); err != nil || ex.Decision.PolicyName != "prod-db-guard" {
		t.Errorf("the old policy is not in force: %+v, %v", ex.Decision, err)
	}
	if err := d.srv.SetPolicy(loadPolicy(t, denyAllPolicy, "")); err != nil {
		t.Fatal(err)
	}
	st, _ = d.c.Governance(ctx)
	if st.Policy.ReloadError != "" || st.Policy.ReloadErrorAt != nil || st.Policy.DefaultEffect != "allow" || st.Infra.Loaded {
		t.Errorf("after a good reload: %+v %+v", st.Policy, st.Infra)
	}
	if got := metric(t, d, `govkit_auditd_policy_reloads_total{result="failure"}`); got != "1" {
		t.Errorf("failed reloads metric = %q", got)
	}
	// An engine that cannot be built is refused, and nothing changes.
	bad := loadPolicy(t, prodPolicy, "")
	bad.DefaultEffect = "maybe"
	if err := d.srv.SetPolicy(bad); err == nil {
		t.Error("SetPolicy took an invalid default effect")
	}
	if st, _ := d.c.Governance(ctx); st.Policy.Policies[0].Name != "freeze-everything" {
		t.Errorf("a refused SetPolicy changed the policy: %+v", st.Policy)
	}
}

// The governance aliases answer exactly as the endpoints they stand for.
func TestGovernanceAliases(t *testing.T) {
	d := startGoverned(t, nil)
	ctx := ctxT(t)
	if _, err := d.as(t, "alice").Decide(ctx, prodWriteDecision()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Append(ctx, toolEvent("sre-bot", "ls")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ alias, orig string }{
		{govapi.PathGovernanceEvents + "?event_type=policy_decision", "/api/events?event_type=policy_decision"},
		{govapi.PathGovernanceEvents + "?limit=2", "/api/events?limit=2"},
		{govapi.PathGovernancePending, "/v1/approvals/pending"},
		{govapi.PathGovernanceVerify, "/api/verify"},
		{govapi.PathGovernanceEvents + "?bogus=1", "/api/events?bogus=1"},
	} {
		c1, b1 := call(t, "GET", d.url+p.alias, nil)
		c2, b2 := call(t, "GET", d.url+p.orig, nil)
		if c1 != c2 || string(b1) != string(b2) {
			t.Errorf("%s: %d %s\n%s: %d %s", p.alias, c1, b1, p.orig, c2, b2)
		}
	}
	page, err := d.c.GovernanceEvents(ctx, govapi.EventQuery{EventType: audit.TypePolicyDecision})
	if err != nil || len(page.Events) != 1 {
		t.Errorf("governance events: %+v, %v", page, err)
	}
	if code, _ := call(t, "POST", d.url+govapi.PathGovernance, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST status: %d, want 405", code)
	}
	if code, _ := call(t, "GET", d.url+govapi.PathDecisions, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET decisions: %d, want 405", code)
	}
}

// With a tokens file the new routes authenticate (401) and authorize
// (403) like the others; a decision's agent and user default to the
// caller, who is recorded beside what it asserts.
func TestGovernanceTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	mk := func(name string, roles ...token.Role) string {
		tok, err := token.Create(path, name, roles, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	agent, approver, auditor := mk("agent-7", token.Agent), mk("bob", token.Approver), mk("audit", token.Auditor)
	set, err := token.NewSet(path, t.Logf, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	d := startGoverned(t, func(c *auditd.Config) { c.Tokens = set })
	ctx := ctxT(t)
	as := func(tok string) *client.Client { return d.as(t, "someone-else", client.WithToken(tok)) }

	req := prodWriteDecision()
	req.Agent, req.Principal.UserID = "", ""
	res, err := as(agent).Decide(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := as(auditor).Get(ctx, res.Event.EventID)
	if err != nil {
		t.Fatal(err)
	}
	var data govapi.DecisionEventData
	json.Unmarshal(ev.Data, &data)
	if ev.Agent != "agent-7" || ev.Principal.UserID != "agent-7" || data.Caller != "agent-7" || !slices.Equal(data.CallerRoles, []string{"agent"}) || data.Auth != "tokens" {
		t.Errorf("event agent %q, principal %+v, data %s", ev.Agent, ev.Principal, ev.Data)
	}
	ap, err := as(agent).Approval(ctx, res.ApprovalID)
	if err != nil || ap.RequestedBy != "agent-7" {
		t.Errorf("approval requested by %q (%v), want the token's name", ap.RequestedBy, err)
	}
	// An agent token cannot assert another principal (DESIGN §11).
	req.Principal.UserID = "alice@example.com"
	_, err = as(agent).Decide(ctx, req)
	refusal(t, err, http.StatusForbidden, govapi.CodePrincipalNotAllowed)
	req.Principal.UserID = ""

	inc := []byte(`{"type":"x","severity":"info","source":"t","message":"m"}`)
	dec := []byte(jsonOf(t, prodWriteDecision()))
	explainQ := govapi.PathExplain + "?resource_type=database&resource_name=prod-db&action=read"
	eventExplain := strings.Replace(govapi.PathEventExplain, "{id}", res.Event.EventID, 1)
	routes := []struct {
		method, path string
		body         []byte
		allowed      map[string]bool // token → allowed
	}{
		{"GET", govapi.PathGovernance, nil, map[string]bool{agent: true, approver: true, auditor: true}},
		{"GET", govapi.PathGovernanceEvents, nil, map[string]bool{auditor: true}},
		{"GET", govapi.PathGovernancePending, nil, map[string]bool{agent: true, approver: true, auditor: true}},
		{"GET", govapi.PathGovernanceVerify, nil, map[string]bool{auditor: true}},
		{"GET", explainQ, nil, map[string]bool{agent: true, approver: true, auditor: true}},
		{"GET", eventExplain, nil, map[string]bool{approver: true, auditor: true}},
		{"POST", govapi.PathDecisions, dec, map[string]bool{agent: true}},
		// An agent may not raise incidents (govbot exits 2 on a critical one).
		{"POST", govapi.PathIncidents, inc, map[string]bool{auditor: true}},
	}
	for _, rt := range routes {
		if code, body := call(t, rt.method, d.url+rt.path, rt.body); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d %s, want 401", rt.method, rt.path, code, body)
		}
		if code, _ := call(t, rt.method, d.url+rt.path, rt.body, "Authorization", "Bearer gk_nope"); code != http.StatusUnauthorized {
			t.Errorf("%s %s with a bad token: %d, want 401", rt.method, rt.path, code)
		}
		for _, tok := range []string{agent, approver, auditor} {
			code, body := call(t, rt.method, d.url+rt.path, rt.body, "Authorization", "Bearer "+tok)
			if ok := code/100 == 2; ok != rt.allowed[tok] || (!ok && code != http.StatusForbidden) {
				t.Errorf("%s %s as %s: %d %s", rt.method, rt.path, tok[:6], code, body)
			}
		}
	}
}

// A trace too large for an approval request (thousands of policies) still
// gets its approval: the request carries the decision without the
// per-policy trace, and the event keeps all of it.
func TestDecisionLargeTrace(t *testing.T) {
	var b strings.Builder
	b.WriteString(prodPolicy)
	for i := range 3000 {
		fmt.Fprintf(&b, "  - name: unrelated-policy-number-%04d\n    resources: [{type: kubernetes, name: cluster-%04d}]\n    rules: [{action: read, effect: allow}]\n", i, i)
	}
	d := startDaemon(t, "", nil)
	if err := d.srv.SetPolicy(loadPolicy(t, b.String(), testInfra)); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	res, err := d.as(t, "alice").Decide(ctx, prodWriteDecision())
	if err != nil || res.ApprovalID == "" || len(res.PoliciesEvaluated) != 3001 {
		t.Fatalf("decide: %v (approval %q, %d policies)", err, res.ApprovalID, len(res.PoliciesEvaluated))
	}
	ev := stored(t, d, res.Event.EventID)
	if len(ev.PolicyDecision) <= audit.MaxJSONField {
		t.Fatalf("the record is %d bytes: not large enough to test anything", len(ev.PolicyDecision))
	}
	ap, err := d.c.Approval(ctx, res.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	var rec govapi.DecisionRecord
	if err := json.Unmarshal(ap.PolicyDecision, &rec); err != nil || rec.Trace.PoliciesEvaluated != nil || rec.EnforcedEffect != "require_approval" ||
		rec.Explanation == "" || !strings.Contains(rec.Note, "the full trace is too large for the approval request") {
		t.Errorf("approval's record: %v %+v", err, rec)
	}
	if ex, err := d.c.ExplainEvent(ctx, res.Event.EventID); err != nil || len(ex.PoliciesEvaluated) != 3001 {
		t.Errorf("explain event: %v", err)
	}
}

// An action in any case is the action (issue 20: the engine matches
// "READ" as read, so the API takes it too), recorded lower-cased; a retry
// spelt otherwise is the same request.
func TestDecisionActionAnyCase(t *testing.T) {
	d := startGoverned(t, nil)
	ctx := ctxT(t)
	for _, a := range []string{"READ", "Write", "DESTRUCTIVE"} {
		ex, err := d.c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: a})
		if err != nil {
			t.Fatalf("explain action=%s: %v", a, err)
		}
		if got := ex.Decision.Effect; got == "" {
			t.Fatalf("explain action=%s: no effect: %+v", a, ex)
		}
		want, err := d.c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: strings.ToLower(a)})
		if err != nil || want.Decision != ex.Decision || want.Explanation != ex.Explanation {
			t.Errorf("explain action=%s = %+v\nwant as %s: %+v (%v)", a, ex.Decision, strings.ToLower(a), want.Decision, err)
		}
	}
	req := prodWriteDecision()
	req.EventID, req.Action = "dec-case-1", "WRITE"
	res, err := d.as(t, "alice").Decide(ctx, req)
	if err != nil || res.Decision.EnforcedEffect != policy.EffectRequireApproval {
		t.Fatalf("decide WRITE: %+v, %v", res, err)
	}
	if ev := stored(t, d, res.Event.EventID); ev.ActionClass != "write" {
		t.Errorf("recorded action_class %q, want write", ev.ActionClass)
	}
	req.Action = "write" // the same request, so the decision recorded first
	again, err := d.as(t, "alice").Decide(ctx, req)
	if err != nil || again.Event.EventID != res.Event.EventID || again.ApprovalID != res.ApprovalID {
		t.Fatalf("retry as write: %+v, %v; want the first decision", again, err)
	}
}
