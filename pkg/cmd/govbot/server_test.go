package govbot

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/govreport"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/token"
)

// End-to-end: govbot against a real auditd (a SQLite file, a loopback
// listener) in the test process. Only Slack is a fake (httptest).

// daemon is a running auditd (auditdtest) with a client.
type daemon struct {
	*auditdtest.Daemon
	c *client.Client
}

// daemonOpts configure startAuditd.
type daemonOpts struct {
	db       string // "" = a new file
	noPolicy bool   // no --policy
	tokens   auditd.Authenticator
}

// startAuditd runs auditd on a database with policies.example.yaml and
// examples/infra.yaml loaded (auditd --policy --infra) until Stop or the
// end of the test.
func startAuditd(t *testing.T, o daemonOpts) *daemon {
	t.Helper()
	ao := auditdtest.Options{DB: o.db, Config: func(c *auditd.Config) { c.Tokens = o.tokens }}
	if !o.noPolicy {
		pol, err := policy.LoadFile("../../../policies.example.yaml")
		if err != nil {
			t.Fatal(err)
		}
		infra, err := policy.LoadInfraFile("../../../examples/infra.yaml")
		if err != nil {
			t.Fatal(err)
		}
		ao.Policy = &auditd.Policy{Config: pol, File: "policies.example.yaml", SHA256: strings.Repeat("5", 64),
			Infra: infra, InfraFile: "examples/infra.yaml"}
	}
	d := &daemon{Daemon: auditdtest.Start(t, ao)}
	var err error
	d.c, err = client.New(d.URL, client.WithUser("agent-7"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// as is a client of d for user in local mode: auditd takes the principal
// and the agent from the X-Govkit-User header (DESIGN §11), so whoever a
// test records speaks for itself.
func (d *daemon) as(t *testing.T, user string) *client.Client {
	t.Helper()
	c, err := client.New(d.URL, client.WithUser(user))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// decide asks for a decision as its principal.
func (d *daemon) decide(t *testing.T, req govapi.DecisionRequest) govapi.DecisionResult {
	t.Helper()
	res, err := d.as(t, req.Principal.UserID).Decide(ctxT(t), req)
	if err != nil {
		t.Fatalf("decision: %v", err)
	}
	return res
}

// append records ev as its agent.
func (d *daemon) append(t *testing.T, ev audit.Event) audit.Event {
	t.Helper()
	got, err := d.as(t, ev.Agent).Append(ctxT(t), ev)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return got
}

// roleTokens is a tokens file for tests whose decisions need policy roles,
// which only a token's principal carries (DESIGN §11): the agent k8s-agent
// acting for sam with role sre, the approvers bob and carol, and govbot's
// auditor token.
type roleTokens struct {
	set                       auditd.Authenticator
	agent, bob, carol, govbot string
}

func newRoleTokens(t *testing.T) roleTokens {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	create := func(name string, role token.Role, p *token.Principal) string {
		tok, err := token.CreateFor(path, name, []token.Role{role}, p, crand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	rt := roleTokens{
		agent:  create("k8s-agent", token.Agent, &token.Principal{UserID: "sam", Roles: []string{"sre"}}),
		bob:    create("bob", token.Approver, nil),
		carol:  create("carol", token.Approver, nil),
		govbot: create("govbot", token.Auditor, nil),
	}
	set, err := token.NewSet(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt.set = set
	return rt
}

// with is a client of d with tok.
func (d *daemon) with(t *testing.T, tok string) *client.Client {
	t.Helper()
	c, err := client.New(d.URL, client.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readProdDB() govapi.DecisionRequest {
	return govapi.DecisionRequest{Principal: policy.RequestPrincipal{UserID: "bob"},
		Resource: govapi.Resource{Type: "database", Name: "prod-db"}, Action: "read"}
}

func tool(agent, command string) audit.Event {
	return audit.Event{EventType: audit.TypeToolExecution, Agent: agent, ActionClass: audit.ActionRead,
		Tool: &audit.Tool{Name: "bash", RawCommand: command}, Outcome: &audit.Outcome{Status: "success"}}
}

// result is one govbot run.
type result struct {
	code           int
	stdout, stderr string
}

// report decodes the JSON report.
func (r result) report(t *testing.T) govreport.Report {
	t.Helper()
	var rep govreport.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout is not a report: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return rep
}

func (r result) want(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
}

// govbot runs govbot with args; edit sets what flags cannot (the clock).
func govbot(t *testing.T, edit func(*Options), args ...string) result {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, v := range []string{"GOVKIT_AUDIT_URL", "GOVKIT_TOKEN", "GOVKIT_OUTPUT", "GOVKIT_GOVBOT_WEBHOOK", "GOVKIT_CONFIG", "GOVKIT_HISTORY", "GOVKIT_HISTORY_RETENTION", "GOVKIT_POLICY"} {
		t.Setenv(v, "")
	}
	streams, _, stdout, stderr := cli.Test()
	opts := &Options{IO: streams, Now: time.Now, Context: ctxT(t)}
	if edit != nil {
		edit(opts)
	}
	code := cli.Main("govbot", newCmd(opts, nil), streams, args)
	return result{code, stdout.String(), stderr.String()}
}

func codes(fs []govreport.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

func TestHealthy(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	d.decide(t, readProdDB())
	d.append(t, tool("agent-a", "ls -l"))
	d.append(t, tool("agent-b", "uptime"))
	head, err := d.c.Health(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}

	r := govbot(t, nil, "--gateway", d.URL, "-o", "json")
	r.want(t, 0)
	if r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}
	rep := r.report(t)
	if rep.SchemaVersion != 1 || rep.Summary.Status != govreport.StatusHealthy || len(rep.Summary.Warnings) != 0 {
		t.Errorf("summary = %+v", rep.Summary)
	}
	if !rep.Governance.PolicyLoaded || !rep.Governance.InfraLoaded || rep.Governance.InfraResources != 6 || rep.Governance.Auth != "local" {
		t.Errorf("governance = %+v", rep.Governance)
	}
	if len(rep.Policy.Policies) != 6 || rep.Policy.DefaultEffect != "deny" || rep.Policy.Policies[0].Decisions != 1 {
		t.Errorf("policy = %+v", rep.Policy)
	}
	if rep.Activity.Events != 3 || rep.Activity.ByEventType["tool_execution"] != 2 || rep.Activity.ByAgent["agent-b"] != 1 {
		t.Errorf("activity = %+v", rep.Activity)
	}
	if rep.Decisions.Allow != 1 || len(rep.Decisions.Resources) != 1 || rep.Decisions.Resources[0].Resource != "database:prod-db" {
		t.Errorf("decisions = %+v", rep.Decisions)
	}
	if !rep.Chain.Verified || rep.Chain.TotalEvents != 3 {
		t.Errorf("chain = %+v", rep.Chain)
	}

	// Text: the seven phases and the verdict.
	r = govbot(t, nil, "--gateway", d.URL, "-o", "text")
	r.want(t, 0)
	for i, phase := range []string{"Governance status", "Policy overview", "Audit activity", "Policy decisions per resource",
		"Pending approvals", "Chain integrity", "Summary"} {
		if !strings.Contains(r.stdout, "\nPhase "+strconv.Itoa(i+1)+" - "+phase+"\n") {
			t.Errorf("no phase %d (%s) in\n%s", i+1, phase, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "status: HEALTHY (0 alerts, 0 warnings; exit 0)") {
		t.Errorf("text report:\n%s", r.stdout)
	}

	// Read-only (seed 003: "stateless and read-only"): nothing was written.
	after, err := d.c.Health(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if after.HeadSeq != head.HeadSeq {
		t.Errorf("govbot wrote to the log: head %d → %d", head.HeadSeq, after.HeadSeq)
	}
}

// A tampered database (one event body changed with plain SQL, auditd
// restarted, DESIGN §6 "Tampered database") is an alert: exit 2.
func TestTamperedChain(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	for _, c := range []string{"echo 1", "echo 2", "echo 3"} {
		d.append(t, tool("agent-a", c))
	}
	d.Stop()

	db, err := sql.Open("sqlite", "file:"+d.DB)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`UPDATE events SET body = CAST(replace(CAST(body AS TEXT), 'echo 2', 'echo X') AS BLOB) WHERE seq = 2`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tampered %d rows, want 1", n)
	}
	db.Close()

	d = startAuditd(t, daemonOpts{db: d.DB})
	r := govbot(t, nil, "--gateway", d.URL, "-o", "json")
	r.want(t, 2)
	rep := r.report(t)
	if got := codes(rep.Summary.Alerts); len(got) != 1 || got[0] != govreport.CodeChainBroken {
		t.Errorf("alerts = %v, want [%s]", got, govreport.CodeChainBroken)
	}
	if rep.Chain.Verified || rep.Chain.BrokenLinksTotal == 0 || rep.Chain.BrokenLinks[0].Seq != 2 {
		t.Errorf("chain = %+v", rep.Chain)
	}
	if rep.Summary.Status != govreport.StatusAlerts || rep.Summary.ExitCode != 2 {
		t.Errorf("summary = %+v", rep.Summary)
	}

	r = govbot(t, nil, "--gateway", d.URL, "-o", "text")
	r.want(t, 2)
	for _, want := range []string{"  BROKEN: ", "  ALERT    CHAIN_BROKEN  the audit chain does not verify", "first at seq 2 (hash_mismatch)", "status: ALERTS"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text lacks %q:\n%s", want, r.stdout)
		}
	}
}

// Tampering incidents in the window are alerts; other incidents are
// warnings.
func TestIncidentsEndToEnd(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	ctx := ctxT(t)
	if _, err := d.c.CreateIncident(ctx, govapi.IncidentInput{Type: "potential_sql_injection", Severity: "warning", Source: "secbot",
		Message: "SQL syntax error in tool output"}); err != nil {
		t.Fatal(err)
	}
	r := govbot(t, nil, "--gateway", d.URL, "-o", "json")
	r.want(t, 0)
	if got := codes(r.report(t).Summary.Warnings); len(got) != 1 || got[0] != govreport.CodeIncidents {
		t.Errorf("warnings = %v", got)
	}

	if _, err := d.c.CreateIncident(ctx, govapi.IncidentInput{Type: "hash_mismatch", Severity: "critical", Source: "secbot",
		Message: "event 2 does not hash to its event_hash"}); err != nil {
		t.Fatal(err)
	}
	r = govbot(t, nil, "--gateway", d.URL, "-o", "json")
	r.want(t, 2)
	rep := r.report(t)
	if got := codes(rep.Summary.Alerts); len(got) != 1 || got[0] != govreport.CodeTamperingIncident {
		t.Errorf("alerts = %v", got)
	}
	if !strings.Contains(rep.Summary.Alerts[0].Message, "1 hash_mismatch incident in the window") ||
		!strings.Contains(rep.Summary.Alerts[0].Message, "from secbot: event 2 does not hash") {
		t.Errorf("alert = %q", rep.Summary.Alerts[0].Message)
	}
	// Out of the window, it is not reported.
	r = govbot(t, func(o *Options) { o.Now = func() time.Time { return time.Now().Add(48 * time.Hour) } }, "--gateway", d.URL, "-o", "json")
	r.want(t, 0)
	if rep := r.report(t); rep.Activity.Events != 0 {
		t.Errorf("events outside the window were read: %+v", rep.Activity)
	}
}

// A stopped auditd (a closed port) is exit 1, naming the URL and the flag
// and variable that set it.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()

	r := govbot(t, nil, "--gateway", url, "-o", "json")
	r.want(t, 1)
	if r.stdout != "" {
		t.Errorf("stdout: %s", r.stdout)
	}
	want := "govbot: error: cannot reach auditd at " + url + ": connection refused\n" +
		"govbot: hint: start auditd there, or point govbot at a running one with --url URL or GOVKIT_URL\n"
	if r.stderr != want {
		t.Errorf("stderr =\n%s\nwant\n%s", r.stderr, want)
	}

	// From the environment, the hint says so.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	streams, _, _, stderr := cli.Test()
	t.Setenv("GOVKIT_AUDIT_URL", url)
	code := cli.Main("govbot", newCmd(&Options{IO: streams, Now: time.Now}, nil), streams, nil)
	if code != 1 || !strings.Contains(stderr.String(), "(the URL came from GOVKIT_AUDIT_URL)") {
		t.Errorf("exit %d, stderr %s", code, stderr.String())
	}
}

// Something that is not auditd answers: exit 1, saying so.
func TestNotAuditd(t *testing.T) {
	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			"does not serve auditd's governance API: GET /api/v1/governance answered 404"},
		{"html", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>hello</html>") },
			"does not answer like auditd: GET /api/v1/governance did not return auditd's JSON"},
		{"other json", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) },
			"does not answer like auditd"},
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, `{"error":"database is locked"}`, 500) },
			"answered GET /api/v1/governance with 500: database is locked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			r := govbot(t, nil, "--gateway", srv.URL)
			r.want(t, 1)
			if !strings.Contains(r.stderr, "govbot: error: auditd at "+srv.URL+" "+tt.want) || !strings.Contains(r.stderr, "--url URL or GOVKIT_URL") {
				t.Errorf("stderr = %s", r.stderr)
			}
		})
	}
}

// An approval pending longer than --stale-after is a warning; the exit
// status stays 0 (seed 003 "Phase 5 — Stale approvals").
func TestStaleApproval(t *testing.T) {
	rt := newRoleTokens(t)
	d := startAuditd(t, daemonOpts{tokens: rt.set})
	res, err := d.with(t, rt.agent).Decide(ctxT(t), govapi.DecisionRequest{
		Resource: govapi.Resource{Type: "kubernetes", Name: "payments"}, Action: "destructive", ApprovalTTL: "2h"})
	if err != nil || res.ApprovalID == "" {
		t.Fatalf("no approval requested: %+v, %v", res, err)
	}
	requested := time.Now() // the approval is at least as old as this

	// Now: pending for seconds, not stale.
	r := govbot(t, nil, "--gateway", d.URL, "--token", rt.govbot, "-o", "json")
	r.want(t, 0)
	if rep := r.report(t); rep.Approvals.Pending != 1 || rep.Approvals.Stale != 0 || len(rep.Summary.Warnings) != 0 {
		t.Errorf("approvals = %+v, warnings %v", rep.Approvals, rep.Summary.Warnings)
	}

	// 45 minutes later (an injected clock): stale over the default 30m.
	later := func(o *Options) { o.Now = func() time.Time { return time.Now().Add(45 * time.Minute) } }
	r = govbot(t, later, "--gateway", d.URL, "--token", rt.govbot, "-o", "json")
	r.want(t, 0)
	rep := r.report(t)
	if got := codes(rep.Summary.Warnings); len(got) != 1 || got[0] != govreport.CodeStaleApproval {
		t.Fatalf("warnings = %v", got)
	}
	if msg := rep.Summary.Warnings[0].Message; !strings.Contains(msg, "approval "+res.ApprovalID+" (destructive kubernetes:payments, requested by k8s-agent) has been pending for 45m, over 30m") {
		t.Errorf("warning = %q", msg)
	}
	if rep.Summary.Status != govreport.StatusWarnings || rep.Summary.ExitCode != 0 || !rep.Approvals.Requests[0].Stale {
		t.Errorf("summary = %+v", rep.Summary)
	}

	// Or a short --stale-after on the real clock, once the approval is
	// older than that (the runs above usually took longer already).
	for time.Since(requested) <= 20*time.Millisecond {
		time.Sleep(time.Millisecond)
	}
	r = govbot(t, nil, "--gateway", d.URL, "--token", rt.govbot, "--stale-after", "10ms", "-o", "text")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "WARNING  STALE_APPROVAL  approval "+res.ApprovalID) || !strings.Contains(r.stdout, "status: WARNINGS") {
		t.Errorf("text:\n%s", r.stdout)
	}
}

// A decision no policy matched (a resource missing from the infra file) is
// a warning telling the operator to add it (seed 003 "Phase 4").
func TestNoMatch(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	d.decide(t, readProdDB())
	d.decide(t, govapi.DecisionRequest{Principal: policy.RequestPrincipal{UserID: "bob"},
		Resource: govapi.Resource{Type: "database", Name: "legacy-db"}, Action: "read"})

	r := govbot(t, nil, "--gateway", d.URL, "-o", "json")
	r.want(t, 0)
	rep := r.report(t)
	if rep.Decisions.NoMatch != 1 || rep.Decisions.Allow != 1 || rep.Decisions.Total != 2 {
		t.Errorf("decisions = %+v", rep.Decisions)
	}
	if got := codes(rep.Summary.Warnings); len(got) != 1 || got[0] != govreport.CodeNoMatchDecisions {
		t.Fatalf("warnings = %v", got)
	}
	msg := rep.Summary.Warnings[0].Message
	for _, want := range []string{"database:legacy-db: 1 decision matched no policy, so the default effect (deny) applied",
		"add the resource to the infra file (auditd --infra)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("warning %q lacks %q", msg, want)
		}
	}
}

// auditd without --policy: a warning, exit 0.
func TestNoPolicy(t *testing.T) {
	d := startAuditd(t, daemonOpts{noPolicy: true})
	r := govbot(t, nil, "--gateway", d.URL, "-o", "json")
	r.want(t, 0)
	rep := r.report(t)
	if got := codes(rep.Summary.Warnings); len(got) != 1 || got[0] != govreport.CodeNoPolicy {
		t.Errorf("warnings = %v", got)
	}
	if rep.Governance.PolicyLoaded || rep.Policy.Loaded || rep.Policy.Policies == nil {
		t.Errorf("policy = %+v", rep.Policy)
	}
}

// More events than --max-events: the latest are analysed, and the report
// says so.
func TestEventCap(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	for i := range 10 {
		d.append(t, tool("agent-a", "echo "+strconv.Itoa(i)))
	}
	r := govbot(t, nil, "--gateway", d.URL, "--max-events", "3", "-o", "json")
	r.want(t, 0)
	rep := r.report(t)
	a := rep.Activity
	if !a.Capped || a.Events != 3 || a.FirstSeq != 8 || a.LastSeq != 10 {
		t.Errorf("activity = %+v", a)
	}
	if got := codes(rep.Summary.Warnings); len(got) != 1 || got[0] != govreport.CodeEventsCapped {
		t.Errorf("warnings = %v", got)
	}
}

// Unapproved destructive actions are warnings. An approval releases one
// execution of exactly its action (DESIGN §11): approved but not consumed,
// or cited a second time, the action is still unapproved; consumed for it,
// by its requester, it is not.
func TestUnapprovedDestructiveEndToEnd(t *testing.T) {
	rt := newRoleTokens(t)
	d := startAuditd(t, daemonOpts{tokens: rt.set})
	ctx := ctxT(t)
	agent := d.with(t, rt.agent)
	res, err := agent.Decide(ctx, govapi.DecisionRequest{Resource: govapi.Resource{Type: "kubernetes", Name: "payments"},
		Action: "destructive", Tool: &govapi.Tool{Name: "bash", RawCommand: "kubectl delete pod a"}})
	if err != nil || res.ApprovalID == "" {
		t.Fatalf("no approval requested: %+v, %v", res, err)
	}
	for _, tok := range []string{rt.bob, rt.carol} { // production-kubernetes: quorum 2
		if _, err := d.with(t, tok).Approve(ctx, res.ApprovalID, "ok"); err != nil {
			t.Fatal(err)
		}
	}
	destructive := func(command, approvalID string) {
		t.Helper()
		ev := tool("k8s-agent", command)
		ev.ActionClass, ev.ApprovalID = audit.ActionDestructive, approvalID
		ev.Resource = &audit.Resource{Type: "kubernetes", Name: "payments"}
		if _, err := agent.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	destructive("kubectl delete pod a", res.ApprovalID) // seq 5: approved, not consumed
	req, err := agent.Approval(ctx, res.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.ConsumeApproval(ctx, res.ApprovalID, req.ActionHash); err != nil {
		t.Fatal(err)
	}
	destructive("kubectl delete pod a", res.ApprovalID) // seq 7: released by the consumption
	destructive("kubectl delete pod a", res.ApprovalID) // seq 8: a second execution
	destructive("kubectl delete pod b", "")             // seq 9: no approval

	// Seq 9 ran with no decision at all: an alert (issue 20 "policy
	// coverage"); seqs 5, 7 and 8 cite an approval a decision opened.
	r := govbot(t, nil, "--gateway", d.URL, "--token", rt.govbot, "-o", "json")
	r.want(t, 2)
	rep := r.report(t)
	cv := rep.Decisions.Coverage
	if cv.Executions != 4 || cv.Covered != 3 || cv.UncoveredTotal != 1 || cv.Uncovered[0].Seq != 9 {
		t.Errorf("coverage = %+v", cv)
	}
	if got := codes(rep.Summary.Alerts); len(got) != 1 || got[0] != govreport.CodeUncoveredExecutions {
		t.Errorf("alerts = %v", got)
	}
	var got []int64
	for _, u := range rep.Activity.Unapproved {
		got = append(got, u.Seq)
	}
	if rep.Activity.UnapprovedTotal != 3 || !slices.Equal(got, []int64{5, 8, 9}) || rep.Activity.Unapproved[2].Command != "kubectl delete pod b" {
		t.Errorf("unapproved = %+v", rep.Activity.Unapproved)
	}
	if got := codes(rep.Summary.Warnings); len(got) != 1 || got[0] != govreport.CodeUnapprovedDestructive {
		t.Errorf("warnings = %v", got)
	}
}

// auditd with a tokens file: govbot needs an auditor token.
func TestTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	auditor, err := token.Create(path, "govbot", []token.Role{token.Auditor}, crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set, err := token.NewSet(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := startAuditd(t, daemonOpts{tokens: set})

	r := govbot(t, nil, "--gateway", d.URL, "-o", "json")
	r.want(t, 3)
	if !strings.Contains(r.stderr, "govbot: error: auditd at "+d.URL+" refused govbot's credentials") ||
		!strings.Contains(r.stderr, "govbot: hint: pass --token TOKEN (or set GOVKIT_TOKEN) with a token that has the auditor role") {
		t.Errorf("stderr = %s", r.stderr)
	}
	r = govbot(t, nil, "--gateway", d.URL, "--token", "wrong", "-o", "json")
	r.want(t, 3)
	if strings.Contains(r.stderr, "wrong") || !strings.Contains(r.stderr, "the token was refused") {
		t.Errorf("stderr = %s", r.stderr)
	}
	r = govbot(t, nil, "--gateway", d.URL, "--token", auditor, "-o", "json")
	r.want(t, 0)
	if rep := r.report(t); rep.Governance.Auth != "tokens" {
		t.Errorf("auth = %q", rep.Governance.Auth)
	}
}

// slackReceiver is a local stand-in for a Slack incoming webhook.
type slackReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	status int
}

func newSlackReceiver(t *testing.T, status int) *slackReceiver {
	s := &slackReceiver{status: status}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if r.Method != http.MethodPost || r.URL.Path != "/services/T0/B0/SECRET" || json.NewDecoder(r.Body).Decode(&m) != nil {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, m)
		s.mu.Unlock()
		w.WriteHeader(s.status)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *slackReceiver) url() string { return s.srv.URL + "/services/T0/B0/SECRET" }

func (s *slackReceiver) posted() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

func TestWebhook(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	d.decide(t, govapi.DecisionRequest{Principal: policy.RequestPrincipal{UserID: "bob"},
		Resource: govapi.Resource{Type: "database", Name: "legacy-db"}, Action: "read"})
	slack := newSlackReceiver(t, http.StatusOK)

	r := govbot(t, nil, "--gateway", d.URL, "--webhook", slack.url(), "-o", "text")
	r.want(t, 0)
	if r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}
	got := slack.posted()
	if len(got) != 1 {
		t.Fatalf("%d posts, want 1", len(got))
	}
	b, _ := json.Marshal(got[0])
	body := string(b)
	for _, want := range []string{`"text":"govbot compliance report: WARNINGS (0 alerts, 1 warning, 1 notice)"`, `"type":"header"`,
		"NO_MATCH_DECISIONS", "database:legacy-db", "• *notice* `DEAD_RULES` 6 enabled policies decided nothing", "gateway " + d.URL} {
		if !strings.Contains(body, want) {
			t.Errorf("posted message lacks %q: %s", want, body)
		}
	}
}

// A webhook that fails is reported on stderr; the report and the exit
// status are unchanged, and the secret URL is never printed.
func TestWebhookFailure(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	slack := newSlackReceiver(t, http.StatusNotFound)
	r := govbot(t, nil, "--gateway", d.URL, "--webhook", slack.url(), "-o", "json")
	r.want(t, 0)
	if r.report(t).Summary.Status != govreport.StatusHealthy {
		t.Errorf("report: %s", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "govbot: error: posting the summary to --webhook ("+slack.srv.URL+"/…): ") || !strings.Contains(r.stderr, "404") {
		t.Errorf("stderr = %s", r.stderr)
	}
	if strings.Contains(r.stderr, "SECRET") || strings.Contains(r.stderr, "/services/") {
		t.Errorf("stderr shows the webhook URL: %s", r.stderr)
	}

	// An unreachable webhook too (a closed port).
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/services/T0/B0/SECRET"
	ln.Close()
	r = govbot(t, nil, "--gateway", d.URL, "--webhook", dead, "-o", "json")
	r.want(t, 0)
	if !strings.Contains(r.stderr, "connection refused") || strings.Contains(r.stderr, "SECRET") {
		t.Errorf("stderr = %s", r.stderr)
	}
}

// When the gateway is down, the Slack channel hears about it too: a dead
// auditd must not make the daily report silently stop.
func TestWebhookUnreachableGateway(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + ln.Addr().String()
	ln.Close()
	slack := newSlackReceiver(t, http.StatusOK)
	r := govbot(t, nil, "--gateway", url, "--webhook", slack.url())
	r.want(t, 1)
	got := slack.posted()
	if len(got) != 1 {
		t.Fatalf("%d posts, want 1", len(got))
	}
	if text, _ := got[0]["text"].(string); !strings.Contains(text, "govbot could not make the compliance report: cannot reach auditd at "+url+": connection refused") {
		t.Errorf("text = %q", text)
	}
}
