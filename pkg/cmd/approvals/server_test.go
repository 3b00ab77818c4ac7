package approvals

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/token"
)

// startAuditd serves a real auditd (internal/auditdtest: a SQLite file in a
// temporary directory, loopback HTTP) until the test ends, and returns its
// URL. Its policy requires one approval for every action: auditd opens
// approval requests only when its policy requires them (DESIGN §11).
func startAuditd(t *testing.T, edit func(*auditd.Config)) string {
	t.Helper()
	return startGoverned(t, auditdtest.RequireApproval(t), edit)
}

// startGoverned is startAuditd with policy p in force (nil: none).
func startGoverned(t *testing.T, p *auditd.Policy, edit func(*auditd.Config)) string {
	t.Helper()
	return auditdtest.Start(t, auditdtest.Options{Config: noVerify(edit), Policy: p}).URL
}

// newAuditd is an auditd that does not serve, for tests that serve its
// Handler themselves; its policy is startAuditd's.
func newAuditd(t *testing.T, edit func(*auditd.Config)) *auditd.Server {
	t.Helper()
	srv := auditdtest.New(t, noVerify(edit))
	if err := srv.SetPolicy(*auditdtest.RequireApproval(t)); err != nil {
		t.Fatal(err)
	}
	return srv
}

// noVerify is edit after turning off the verification at start.
func noVerify(edit func(*auditd.Config)) func(*auditd.Config) {
	return func(c *auditd.Config) {
		c.VerifyOnStart = false
		if edit != nil {
			edit(c)
		}
	}
}

// run is one approvals invocation.
type run struct {
	user string
	now  func() time.Time // nil: time.Now
	ctx  context.Context  // nil: context.Background()
	tty  bool
	// pacing is the clock that paces requests to auditd; nil: the real one.
	pacing pacingClock

	stdout, stderr cli.SyncBuffer
	code           int
	elapsed        time.Duration
}

// approvals runs argv against url as user and returns when it exits.
func approvals(t *testing.T, url, user string, args ...string) *run {
	t.Helper()
	r := &run{user: user}
	r.exec(url, args...)
	return r
}

func (r *run) exec(url string, args ...string) {
	streams, _, _, _ := cli.Test()
	streams.Out, streams.ErrOut = &r.stdout, &r.stderr
	streams.SetStdoutTTY(r.tty)
	now := r.now
	if now == nil {
		now = time.Now
	}
	ctx := r.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	opts := &Options{IO: streams, Now: now, User: func() string { return r.user }, Context: ctx, pacing: r.pacing}
	start := time.Now()
	r.code = cli.Main("approvals", newCmdTree(opts), streams, append(args, "--url", url))
	r.elapsed = time.Since(start)
}

// background starts argv and returns at once; done is closed at its exit.
func background(t *testing.T, url, user string, args ...string) (r *run, done chan struct{}) {
	t.Helper()
	r = &run{user: user}
	return r, r.background(url, args...)
}

// background starts r with argv and returns at once; the channel is closed
// at its exit.
func (r *run) background(url string, args ...string) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.exec(url, args...)
	}()
	return done
}

// steppedClock paces a waiter under test: its time stands still except
// while the waiter sleeps between two requests, and each sleep waits for
// the test to take it (next), so a test sees every retry without waiting
// seconds of real time and counting what fit in them. After free, sleeps
// pass in real time.
type steppedClock struct {
	clock
	slept chan time.Duration
	wake  chan struct{}
	free  chan struct{}
	once  sync.Once
	held  bool // a sleep returned by next has not ended (the test's goroutine only)
}

func newSteppedClock(t time.Time) *steppedClock {
	return &steppedClock{clock: clock{t: t}, slept: make(chan time.Duration), wake: make(chan struct{}), free: make(chan struct{})}
}

func (c *steppedClock) Now() time.Time { return c.now() }

func (c *steppedClock) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case c.slept <- d:
		select {
		case <-c.wake:
		case <-c.free:
		case <-ctx.Done():
			return ctx.Err()
		}
	case <-c.free:
		if err := cli.Sleep(ctx, d); err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	c.advance(d)
	return nil
}

// next waits for the waiter's next sleep and returns its length; the
// waiter stays asleep until next is called again or the clock is freed.
func (c *steppedClock) next(t *testing.T, what string) time.Duration {
	t.Helper()
	if c.held {
		c.wake <- struct{}{} // the waiter is in the sleep next returned before
	}
	select {
	case d := <-c.slept:
		c.held = true
		return d
	case <-time.After(10 * time.Second):
		t.Fatalf("no sleep within 10s: %s", what)
		return 0
	}
}

// release ends the sleep in progress and lets later ones pass in real time.
func (c *steppedClock) release() { c.once.Do(func() { close(c.free) }) }

func (r *run) want(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout.String(), r.stderr.String())
	}
}

// request decodes a JSON request object from the run's stdout.
func (r *run) request(t *testing.T) approval.Request {
	t.Helper()
	var req approval.Request
	if err := json.Unmarshal([]byte(r.stdout.String()), &req); err != nil {
		t.Fatalf("stdout is not one request object: %v\n%s", err, r.stdout.String())
	}
	if req.SchemaVersion != 1 || req.ID == "" {
		t.Fatalf("request object without schema_version or id: %s", r.stdout.String())
	}
	return req
}

var waitingLine = regexp.MustCompile(`^waiting for approval (\S+) \(expires in ([^)]+)\); approve with: approvals approve (\S+) --url http://127\.0\.0\.1:\d+\n`)

// waitingFor waits for request --wait's first stderr line and returns the
// request's ID.
func waitingFor(t *testing.T, r *run, done chan struct{}) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := waitingLine.FindStringSubmatch(r.stderr.String()); m != nil {
			if m[1] != m[3] {
				t.Fatalf("waiting line names two IDs: %q", m[0])
			}
			return m[1]
		}
		select {
		case <-done:
			t.Fatalf("request exited %d before waiting:\n%s", r.code, r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no waiting line within 10s: %q", r.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func finish(t *testing.T, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not exit within 30s")
	}
}

var reqArgs = []string{"request", "--resource", "database:prod-db", "--action", "write", "--reason", "fix orders"}

func TestRequestApprovedWhileWaiting(t *testing.T) {
	isolate(t)
	url := startAuditd(t, nil)
	w, done := background(t, url, "alice", append(reqArgs, "--wait", "30s", "-o", "json")...)
	id := waitingFor(t, w, done)
	if !strings.Contains(w.stderr.String(), "(expires in 5m)") {
		t.Errorf("waiting line: %q", w.stderr.String())
	}

	a := approvals(t, url, "bob", "approve", id, "--reason", "checked", "-o", "text")
	a.want(t, 0)
	if want := "approved " + id + " — 1 of 1 approval; the request is approved\n"; a.stdout.String() != want {
		t.Errorf("approve printed %q, want %q", a.stdout.String(), want)
	}
	finish(t, done)
	w.want(t, 0)
	got := w.request(t)
	if got.ID != id || got.Status != approval.Approved || len(got.Votes) != 1 || got.Votes[0].By != "bob" || got.RequestedBy != "alice" {
		t.Errorf("final request: %+v", got)
	}
	// Exit 0 with the approved request: the waiter saw the approval before
	// its --wait 30s ran out (which is exit 2), however slow the machine.
}

func TestRequestDeniedWhileWaiting(t *testing.T) {
	isolate(t)
	url := startAuditd(t, nil)
	w, done := background(t, url, "alice", append(reqArgs, "--wait", "30s", "-o", "text")...)
	id := waitingFor(t, w, done)
	d := approvals(t, url, "bob", "deny", id, "--reason", "not during the freeze", "-o", "text")
	d.want(t, 0)
	if want := "denied " + id + " — the request is denied: not during the freeze\n"; d.stdout.String() != want {
		t.Errorf("deny printed %q, want %q", d.stdout.String(), want)
	}
	finish(t, done)
	w.want(t, exitDenied)
	if got := w.stdout.String(); got != "denied by bob: not during the freeze\n" {
		t.Errorf("waiter printed %q", got)
	}
}

func TestRequestExpiresWhileWaiting(t *testing.T) {
	isolate(t)
	url := startAuditd(t, nil)
	w := approvals(t, url, "alice", append(reqArgs, "--ttl", "1s", "--wait", "30s", "-o", "text")...)
	w.want(t, exitNoGrant)
	// "expired", not the end of --wait 30s: the waiter saw the expiry.
	if got := w.stdout.String(); got != "expired\n" || strings.Contains(w.stderr.String(), "within --wait") {
		t.Errorf("printed %q; stderr %q", got, w.stderr.String())
	}
}

func TestRequestWaitTimesOut(t *testing.T) {
	isolate(t)
	url := startAuditd(t, nil)
	w := approvals(t, url, "alice", append(reqArgs, "--wait", "1500ms", "-o", "json")...)
	w.want(t, exitNoGrant)
	got := w.request(t)
	if got.Status != approval.Pending {
		t.Errorf("status %s after the wait", got.Status)
	}
	stderr := w.stderr.String()
	for _, want := range []string{
		"approvals: error: no decision on approval " + got.ID + " within --wait 1.5s\n",
		"approvals: hint: it stays pending until it expires in 4m5", // 4m58s or so
		"an approver can still run 'approvals approve " + got.ID + " --url ",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// The whole wait was waited (a lower bound, which no load can break;
	// how soon after it the command ends is no test's business).
	if w.elapsed < 1500*time.Millisecond {
		t.Errorf("a 1.5s wait took %s", w.elapsed)
	}
}

// Ctrl-C ends a wait at once: exit 2, the request left pending.
func TestRequestWaitInterrupted(t *testing.T) {
	isolate(t)
	url := startAuditd(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	w := &run{user: "alice", ctx: ctx}
	done := make(chan struct{})
	go func() { defer close(done); w.exec(url, append(reqArgs, "--wait", "1m", "-o", "text")...) }()
	id := waitingFor(t, w, done)
	cancel()
	finish(t, done) // long before --wait 1m, which would say "within --wait", not "interrupted"
	w.want(t, exitNoGrant)
	if !strings.Contains(w.stderr.String(), "approvals: error: interrupted while waiting for approval "+id+"\n") {
		t.Errorf("stderr: %s", w.stderr.String())
	}
	if w.stdout.String() != "" {
		t.Errorf("stdout: %q", w.stdout.String())
	}
}

func TestSelfApprovalRefused(t *testing.T) {
	isolate(t)
	url := startAuditd(t, nil)
	r := approvals(t, url, "alice", append(reqArgs, "-o", "json")...)
	r.want(t, 0)
	id := r.request(t).ID

	a := approvals(t, url, "alice", "approve", id, "-o", "text")
	a.want(t, 3)
	if a.stdout.String() != "" {
		t.Errorf("stdout: %q", a.stdout.String())
	}
	want := "approvals: error: alice requested approval " + id + " and cannot decide it; another approver must\n" +
		"approvals: hint: another approver must decide it: ask one to run 'approvals approve " + id + " --url " + url + "'\n"
	if a.stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", a.stderr.String(), want)
	}
	// Names compare case-insensitively: Alice is alice.
	approvals(t, url, "Alice", "deny", id, "--reason", "mine").want(t, 3)
}

func TestQuorumAndRefusals(t *testing.T) {
	isolate(t)
	// The quorum is the policy's (DESIGN §11), not the requester's.
	url := startGoverned(t, auditdtest.RequireQuorum(t, "database", "prod-db", 2), nil)
	r := approvals(t, url, "alice", append(reqArgs, "-o", "json")...)
	r.want(t, 0)
	id := r.request(t).ID

	b := approvals(t, url, "bob", "approve", id, "-o", "text")
	b.want(t, 0)
	if want := "recorded your approval of " + id + ": 1 of 2; waiting for 1 more\n"; b.stdout.String() != want {
		t.Errorf("first approval: %q", b.stdout.String())
	}
	again := approvals(t, url, "bob", "approve", id, "-o", "text")
	again.want(t, 3)
	if !strings.Contains(again.stderr.String(), "approvals: error: bob has already voted on approval "+id) ||
		!strings.Contains(again.stderr.String(), "approvals: hint: 'approvals show "+id+" --url ") {
		t.Errorf("second vote by bob: %s", again.stderr.String())
	}
	c := approvals(t, url, "carol", "approve", id, "-o", "json")
	c.want(t, 0)
	if got := c.request(t); got.Status != approval.Approved || got.Approvals() != 2 {
		t.Errorf("after carol: %+v", got)
	}
	late := approvals(t, url, "dave", "deny", id, "--reason", "too late")
	late.want(t, 3)
	if !strings.Contains(late.stderr.String(), "is approved already") ||
		!strings.Contains(late.stderr.String(), "shows how it was decided") {
		t.Errorf("vote on a decided request: %s", late.stderr.String())
	}
	missing := approvals(t, url, "bob", "approve", "evt_nope")
	missing.want(t, 3)
	if !strings.Contains(missing.stderr.String(), "approvals: hint: check the ID; 'approvals list --url ") {
		t.Errorf("unknown ID: %s", missing.stderr.String())
	}
}

func TestDecisionAfterExpiry(t *testing.T) {
	isolate(t)
	clock := newClock(time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC))
	url := startAuditd(t, func(c *auditd.Config) { c.Now = clock.now })
	r := approvals(t, url, "alice", append(reqArgs, "--ttl", "1m", "-o", "json")...)
	id := r.request(t).ID
	clock.advance(2 * time.Minute)
	a := approvals(t, url, "bob", "approve", id)
	a.want(t, 3)
	// auditd expires a request past its time before any decision, so the
	// refusal may be "expired" or "not pending"; both name the state.
	if !strings.Contains(a.stderr.String(), "expired") {
		t.Errorf("approve after expiry: %s", a.stderr.String())
	}
	s := &run{user: "bob", now: clock.now}
	s.exec(url, "show", id, "-o", "text")
	if want := "Status:        expired — 1m ago, with 0 of 1 approval (2026-03-09T12:01:00Z)\n"; !strings.Contains(s.stdout.String(), want) {
		t.Errorf("show lacks %q:\n%s", want, s.stdout.String())
	}
}

// clock is a settable clock shared by auditd and the CLI.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// listFixture is an auditd whose clock and IDs are fixed, with three
// requests: one approved, two pending.
func listFixture(t *testing.T) (url string, clk *clock, ids []string) {
	t.Helper()
	clk = newClock(time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC))
	url = startGoverned(t, auditdtest.RequireQuorum(t, "database", "prod-db", 2), func(c *auditd.Config) {
		c.Now = clk.now
		c.Rand = rand.NewChaCha8([32]byte{1})
		c.SweepInterval = time.Hour
	})
	for _, a := range [][]string{
		{"--resource", "database:prod-db", "--action", "write", "--ttl", "10m"},
		{"--resource", "kubernetes:web", "--action", "destructive"},
		{"--resource", "database:analytics", "--action", "read"},
	} {
		r := &run{user: "agent-7", now: clk.now}
		r.exec(url, append(append([]string{"request"}, a...), "-o", "json")...)
		r.want(t, 0)
		ids = append(ids, r.request(t).ID)
		clk.advance(time.Minute)
	}
	(&run{user: "bob", now: clk.now}).exec(url, "approve", ids[0])
	clk.advance(time.Minute)
	(&run{user: "bob", now: clk.now}).exec(url, "approve", ids[2])
	clk.advance(time.Minute)
	return url, clk, ids
}

func TestListTable(t *testing.T) {
	isolate(t)
	url, clk, ids := listFixture(t)
	r := &run{user: "bob", now: clk.now, tty: true}
	r.exec(url, "list")
	r.want(t, 0)
	// The latest change last: web was created at 12:01, prod-db voted on
	// at 12:03, analytics approved at 12:04.
	want := strings.Join([]string{
		"ID                              STATUS    RESOURCE            ACTION       REQUESTED BY  CREATED  EXPIRES  VOTES",
		ids[1] + "  pending   kubernetes:web      destructive  agent-7       4m ago   in 1m    0/1",
		ids[0] + "  pending   database:prod-db    write        agent-7       5m ago   in 5m    1/2",
		ids[2] + "  approved  database:analytics  read         agent-7       3m ago   -        1/1",
	}, "\n") + "\n"
	if got := r.stdout.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}

	// Later: one request expired (auditd expires it when read), shown so.
	clk.advance(2 * time.Minute)
	r = &run{user: "bob", now: clk.now, tty: true}
	r.exec(url, "list", "--pending")
	r.want(t, 0)
	if got := r.stdout.String(); !strings.HasPrefix(got, "ID ") || strings.Count(got, "\n") != 2 ||
		!strings.Contains(got, ids[0]+"  pending  database:prod-db  write   agent-7       7m ago   in 3m    1/2\n") {
		t.Errorf("pending table:\n%s", got)
	}
	r = &run{user: "bob", now: clk.now, tty: true}
	r.exec(url, "list", "--status", "expired")
	if got := r.stdout.String(); !strings.Contains(got, ids[1]+"  expired  kubernetes:web  destructive  agent-7       6m ago   expired 1m ago  0/1\n") {
		t.Errorf("expired table:\n%s", got)
	}
}

func TestListJSONLines(t *testing.T) {
	isolate(t)
	url, clk, ids := listFixture(t)
	r := &run{user: "bob", now: clk.now} // not a terminal: JSON Lines
	r.exec(url, "list", "--pending")
	r.want(t, 0)
	lines := strings.Split(strings.TrimSuffix(r.stdout.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), r.stdout.String())
	}
	for i, line := range lines {
		var req approval.Request
		if err := json.Unmarshal([]byte(line), &req); err != nil || req.SchemaVersion != 1 || req.ID != ids[i] ||
			req.Status != approval.Pending || !strings.HasPrefix(line, `{"schema_version":1,"id":"`) {
			t.Errorf("line %d: %v: %s", i+1, err, line)
		}
	}
	if r.stderr.String() != "" {
		t.Errorf("stderr: %q", r.stderr.String())
	}
}

func TestListEmpty(t *testing.T) {
	isolate(t)
	url := startAuditd(t, nil)
	r := &run{user: "bob", tty: true}
	r.exec(url, "list", "--pending")
	r.want(t, 0)
	if r.stdout.String() != "" || r.stderr.String() != "no pending approval requests\n" {
		t.Errorf("text: stdout %q, stderr %q", r.stdout.String(), r.stderr.String())
	}
	r = &run{user: "bob"}
	r.exec(url, "list", "--pending", "-o", "json")
	r.want(t, 0)
	if r.stdout.String() != "" || r.stderr.String() != "" {
		t.Errorf("json: stdout %q, stderr %q", r.stdout.String(), r.stderr.String())
	}
	r = &run{user: "bob"}
	r.exec(url, "list", "--status", "denied", "-o", "text")
	if r.stderr.String() != "no denied approval requests\n" {
		t.Errorf("denied: stderr %q", r.stderr.String())
	}
}

// showPolicy requires two approvals for writes to production databases,
// and showInfra tags prod-db: what TestShow's request is decided by.
const (
	showPolicy = `version: "1"
default_effect: deny
policies:
  - name: prod-writes
    resources:
      - type: database
        match: {tags: [production]}
    rules:
      - action: write
        effect: require_approval
        message: production writes need two DBAs
        conditions: {approval_quorum: 2}
`
	showInfra = `version: "1"
resources:
  - {type: database, name: prod-db, tags: [production, pci]}
`
)

func TestShow(t *testing.T) {
	isolate(t)
	clk := newClock(time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC))
	// The policy decision, the quorum and the resource's tags approvers
	// see come from auditd's policy and infra file (DESIGN §11).
	p := auditdtest.LoadPolicy(t, showPolicy, showInfra)
	url := startGoverned(t, p, func(c *auditd.Config) { c.Now = clk.now })
	c, err := client.New(url, client.WithUser("agent-7"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := c.RequestApproval(context.Background(), approval.Input{
		Resource:   audit.Resource{Type: "database", Name: "prod-db"},
		Action:     "write",
		Tool:       "psql",
		RawCommand: "psql -c 'UPDATE orders SET total = 0\nWHERE id = 7'",
		Reason:     "refund order 7",
		TTL:        "10m",
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(90 * time.Second)
	(&run{user: "bob", now: clk.now}).exec(url, "approve", req.ID, "--reason", "refund ok")
	clk.advance(30 * time.Second)

	r := &run{user: "carol", now: clk.now, tty: true}
	r.exec(url, "show", req.ID)
	r.want(t, 0)
	pad := strings.Repeat(" ", len("Requested by:  ")) // a blank line of the explanation
	want := `ID:            ` + req.ID + `
Status:        pending — 1 of 2 approvals so far; expires in 8m (2026-03-09T12:10:00Z)
Requested by:  agent-7, 2m ago (2026-03-09T12:00:00Z)
Resource:      database:prod-db (tags: production, pci)
Action:        write
Tool:          psql
Command:       psql -c 'UPDATE orders SET total = 0
               WHERE id = 7'
Reason:        refund order 7
Quorum:        2 approvals
Votes:         bob approved, 30s ago (2026-03-09T12:01:30Z): refund ok
Action hash:   ` + req.ActionHash + `
Policy:        require_approval by policy prod-writes, rule 0: production writes need two DBAs
               Access to prod-db (tags: production, pci) for write: REQUIRES APPROVAL
` + pad + `
               Policy "prod-writes" matched (type=database, tag=production):
                 Rule 0  write → require_approval  matched
                   Message: "production writes need two DBAs"
                 → REQUIRE_APPROVAL
` + pad + `
               Requires approval from 2 approvers. An approval request has been created: approvers see it with ` + "`approvals list --pending`" + `.

Approve:       approvals approve ` + req.ID + ` --url ` + url + `
Deny:          approvals deny ` + req.ID + ` --reason TEXT --url ` + url + `
`
	if got := r.stdout.String(); got != want {
		t.Errorf("show:\n%s\nwant:\n%s", got, want)
	}

	j := &run{user: "carol", now: clk.now}
	j.exec(url, "show", req.ID)
	j.want(t, 0)
	got := j.request(t)
	if got.ID != req.ID || got.Approvals() != 1 || got.ActionHash != req.ActionHash ||
		!strings.Contains(string(got.PolicyDecision), `"policy_name":"prod-writes"`) || strings.Count(j.stdout.String(), "\n") != 1 {
		t.Errorf("show -o json: %s", j.stdout.String())
	}

	// Decided: no commands to run.
	(&run{user: "dave", now: clk.now}).exec(url, "deny", req.ID, "--reason", "wrong order")
	r = &run{user: "carol", now: clk.now, tty: true}
	r.exec(url, "show", req.ID)
	for _, want := range []string{"Status:        denied — just now (2026-03-09T12:02:00Z)\n", "               dave denied, just now (2026-03-09T12:02:00Z): wrong order\n"} {
		if !strings.Contains(r.stdout.String(), want) {
			t.Errorf("denied request lacks %q:\n%s", want, r.stdout.String())
		}
	}
	if strings.Contains(r.stdout.String(), "Approve:") {
		t.Errorf("a decided request shows how to approve it:\n%s", r.stdout.String())
	}
}

func TestWatch(t *testing.T) {
	isolate(t)
	url := startAuditd(t, nil)
	old := approvals(t, url, "alice", "request", "--resource", "kubernetes:web", "--action", "destructive", "-o", "json")
	oldID := old.request(t).ID

	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &run{user: "carol", ctx: ctx}
			done := make(chan struct{})
			go func() { defer close(done); w.exec(url, "watch", "-o", format) }()
			waitOutput(t, &w.stdout, oldID)
			// The new request must reach watch through its long-poll.
			waitWaiters(t, url, "1")

			r := approvals(t, url, "agent-7", append(reqArgs, "-o", "json")...)
			id := r.request(t).ID
			waitOutput(t, &w.stdout, id)
			approvals(t, url, "bob", "approve", id).want(t, 0)
			waitOutput(t, &w.stdout, "approved")
			cancel()
			finish(t, done)
			w.want(t, 0)
			waitWaiters(t, url, "0") // auditd saw watch leave: the next subtest's long-poll is its own

			out := w.stdout.String()
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if format == "json" {
				var got []approval.Request
				for _, l := range lines {
					var req approval.Request
					if err := json.Unmarshal([]byte(l), &req); err != nil {
						t.Fatalf("%v: %s", err, l)
					}
					got = append(got, req)
				}
				if len(got) != 3 || got[0].ID != oldID || got[0].Status != approval.Pending ||
					got[1].ID != id || got[1].Status != approval.Pending ||
					got[2].ID != id || got[2].Status != approval.Approved {
					t.Errorf("watch -o json:\n%s", out)
				}
				return
			}
			re := []*regexp.Regexp{
				regexp.MustCompile(`^\d\d:\d\d:\d\d pending ` + oldID + ` destructive kubernetes:web by alice \(0 of 1 approvals, expires in (4m[45]\ds|5m)\)$`),
				regexp.MustCompile(`^\d\d:\d\d:\d\d requested ` + id + ` write database:prod-db by agent-7 \(quorum 1, expires in (4m5\ds|5m)\)$`),
				regexp.MustCompile(`^\d\d:\d\d:\d\d approved ` + id + ` write database:prod-db by bob \(1 of 1\)$`),
			}
			if len(lines) != len(re) {
				t.Fatalf("watch printed %d lines:\n%s", len(lines), out)
			}
			for i := range re {
				if !re[i].MatchString(lines[i]) {
					t.Errorf("line %d: %q does not match %s", i+1, lines[i], re[i])
				}
			}
			if !strings.Contains(w.stderr.String(), "1 request pending; watching "+url+" for changes (Ctrl-C to stop)\n") {
				t.Errorf("stderr: %q", w.stderr.String())
			}
		})
	}
}

// waitWaiters waits up to 10 seconds for auditd at url to report n
// approval long-polls in progress (the metric govkit_auditd_approval_waiters).
func waitWaiters(t *testing.T, url, n string) {
	t.Helper()
	const name = "govkit_auditd_approval_waiters "
	deadline := time.Now().Add(10 * time.Second)
	var last string
	for {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, name); ok {
				last = v
			}
		}
		if last == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("auditd reports %q approval long-polls after 10s, want %s", last, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitOutput waits up to 10 seconds for s in b.
func waitOutput(t *testing.T, b *cli.SyncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within 10s in:\n%s", s, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestUnreachable(t *testing.T) {
	isolate(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{{"list"}, {"show", "evt_1"}, {"approve", "evt_1"}, append(reqArgs, "--wait", "1m")} {
		r := approvals(t, url, "bob", args...)
		r.want(t, 3)
		if want := "approvals: error: cannot reach auditd at " + url + ": connection refused\n" +
			"approvals: hint: start auditd, or pass --url (or set GOVKIT_URL) naming a running one\n"; r.stderr.String() != want {
			t.Errorf("%v: stderr %q", args, r.stderr.String())
		}
	}
	r := approvals(t, "ftp://example.com", "bob", "list")
	r.want(t, 3)
	if !strings.Contains(r.stderr.String(), "hint: pass --url http://HOST:PORT (or set GOVKIT_URL)") {
		t.Errorf("bad URL: %s", r.stderr.String())
	}
}

// auditd going away while a request is waited on: the waiter says so once,
// retries no faster than once a second, and sees the decision made after
// auditd is back. The address stays bound throughout (a restartable front):
// closing the listener and listening again on its port would race with any
// other process given that port meanwhile (issue 20 "tests that don't
// flake").
func TestWaitSurvivesRestart(t *testing.T) {
	isolate(t)
	srv := newAuditd(t, nil)
	front := newRestartable(t)
	url := "http://" + front.addr()
	front.start(srv.Handler())

	clk := newSteppedClock(time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC))
	t.Cleanup(clk.release)
	w := &run{user: "alice", pacing: clk}
	done := w.background(url, append(reqArgs, "--wait", "30s", "-o", "text")...)
	id := waitingFor(t, w, done)
	front.stop() // the server and the long-poll in flight
	// A few retries while auditd is away, each a second after the last
	// (refusals take no time on the waiter's clock).
	for i := range 3 {
		if d := clk.next(t, "a retry while auditd is away"); d != time.Second {
			t.Errorf("retry %d: slept %s, want 1s", i+1, d)
		}
	}
	front.start(srv.Handler())
	clk.release()
	approvals(t, url, "bob", "approve", id).want(t, 0)
	finish(t, done)
	w.want(t, 0)
	if w.stdout.String() != "approved by bob\n" {
		t.Errorf("stdout %q", w.stdout.String())
	}
	stderr := w.stderr.String()
	if strings.Count(stderr, "cannot reach auditd") != 1 ||
		!strings.Contains(stderr, "; retrying every 1s until the wait ends\n") ||
		!strings.Contains(stderr, "approvals: auditd answers again; still waiting for approval "+id+"\n") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// restartable is a loopback address that stays bound while the HTTP server
// behind it stops and starts again, as auditd restarting would look to a
// client: while no server runs, each connection is reset at once.
type restartable struct {
	ln  net.Listener
	mu  sync.Mutex
	cur *connQueue   // the running server's listener; nil while stopped
	hs  *http.Server // the running server
}

func newRestartable(t *testing.T) *restartable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &restartable{ln: ln}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			q := r.cur
			r.mu.Unlock()
			if q == nil {
				reset(c)
				continue
			}
			select {
			case q.conns <- c:
			case <-q.closed:
				reset(c)
			}
		}
	}()
	t.Cleanup(func() {
		r.stop()
		ln.Close()
		<-accepted
	})
	return r
}

func (r *restartable) addr() string { return r.ln.Addr().String() }

// start serves h behind the address.
func (r *restartable) start(h http.Handler) {
	q := &connQueue{conns: make(chan net.Conn), closed: make(chan struct{}), addr: r.ln.Addr()}
	hs := &http.Server{Handler: h}
	go hs.Serve(q)
	r.mu.Lock()
	r.cur, r.hs = q, hs
	r.mu.Unlock()
}

// stop closes the server and every connection it holds (a long-poll in
// flight too); the address stays bound, and refuses until start.
func (r *restartable) stop() {
	r.mu.Lock()
	hs := r.hs
	r.cur, r.hs = nil, nil
	r.mu.Unlock()
	if hs != nil {
		hs.Close()
	}
}

// reset closes c with a TCP reset, the nearest a bound port comes to
// refusing a connection.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// connQueue is a net.Listener whose connections restartable hands over.
type connQueue struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	addr   net.Addr
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.closed:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.closed) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

// With tokens, the identity is the token's name; a refused token ends a
// wait at once (no retries), and the token is never printed.
func TestTokens(t *testing.T) {
	isolate(t)
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	agent, err := token.Create(path, "agent-7", []token.Role{token.Agent}, crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := token.Create(path, "agent-8", []token.Role{token.Agent}, crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := token.Create(path, "bob", []token.Role{token.Approver}, crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set, err := token.NewSet(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := startAuditd(t, func(c *auditd.Config) { c.Tokens = set })

	// $USER is ignored: the requester is the token's name.
	r := approvals(t, url, "mallory", append(reqArgs, "--token", agent, "-o", "json")...)
	r.want(t, 0)
	req := r.request(t)
	if req.RequestedBy != "agent-7" {
		t.Errorf("requested_by %q", req.RequestedBy)
	}

	bad := approvals(t, url, "bob", "list", "--token", "not-a-token")
	bad.want(t, 3)
	if !strings.Contains(bad.stderr.String(), "approvals: hint: the token was refused: check --token (or GOVKIT_TOKEN)") ||
		strings.Contains(bad.stderr.String(), "not-a-token") {
		t.Errorf("bad token: %s", bad.stderr.String())
	}
	none := approvals(t, url, "bob", "list")
	none.want(t, 3)
	if !strings.Contains(none.stderr.String(), "approvals: hint: pass --token TOKEN (or set GOVKIT_TOKEN)") {
		t.Errorf("no token: %s", none.stderr.String())
	}
	// An agent may not decide.
	decide := approvals(t, url, "bob", "approve", req.ID, "--token", other)
	decide.want(t, 3)
	if !strings.Contains(decide.stderr.String(), "approvals: hint: use a token with the right role") || strings.Contains(decide.stderr.String(), other) {
		t.Errorf("agent deciding: %s", decide.stderr.String())
	}

	// Following a request with a token that may not read it ends the wait
	// with exit 3, not with retries until the deadline (exit 2): the exit
	// status says which, without timing it.
	for _, tc := range []struct {
		name, token string
	}{
		{"unknown token", "revoked-or-wrong"},
		// auditd checks that an agent reads only its own requests after
		// holding the long-poll, so the refusal comes when the hold ends.
		{"another agent's token", other},
	} {
		streams, _, _, errOut := cli.Test()
		o := &RequestOptions{Options: &Options{IO: streams, URL: url, Token: tc.token, Now: time.Now}, Wait: 3 * time.Second}
		c, err := o.client()
		if err != nil {
			t.Fatal(err)
		}
		_, err = o.follow(context.Background(), c, req, o.Wait, "--wait")
		if code := exitCodeOf(err); code != 3 || strings.Contains(errOut.String(), "retrying") {
			t.Errorf("%s: exit %d (%v); stderr %q", tc.name, code, err, errOut.String())
		}
	}

	a := approvals(t, url, "alice", "approve", req.ID, "--token", bob, "-o", "json")
	a.want(t, 0)
	if got := a.request(t); got.Votes[0].By != "bob" {
		t.Errorf("vote by %q", got.Votes[0].By)
	}
}

func exitCodeOf(err error) int {
	var ee *cli.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	}
	return 3
}

// A proxy in front of auditd that answers 503 at once while auditd
// restarts: the waiter retries no faster than once a second, says so once,
// and sees the decision when auditd is back.
func TestWaitPacesRetries(t *testing.T) {
	isolate(t)
	srv := newAuditd(t, nil)
	// Each 503 takes 300ms on the waiter's clock, which stands still
	// otherwise: the waiter must sleep the rest of each second.
	const answer = 300 * time.Millisecond
	clk := newSteppedClock(time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC))
	t.Cleanup(clk.release)
	var down atomic.Bool
	var refused atomic.Int32
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			refused.Add(1)
			clk.advance(answer)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"schema_version":1,"error":"auditd is restarting"}`))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })

	w := &run{user: "alice", pacing: clk}
	done := w.background(ts.URL, append(reqArgs, "--wait", "30s", "-o", "text")...)
	id := waitingFor(t, w, done)
	down.Store(true)
	ts.CloseClientConnections() // the long-poll in flight
	// The closed long-poll fails at once, or net/http retries it into a
	// first 503; either way the next request starts 1s after it did.
	d := clk.next(t, "the retry after the long-poll failed")
	if want := time.Second - time.Duration(refused.Load())*answer; d != want {
		t.Errorf("after the long-poll failed (%d 503s): slept %s, want %s", refused.Load(), d, want)
	}
	for i := range 3 {
		before := refused.Load()
		d := clk.next(t, "a retry while auditd answers 503")
		if n := refused.Load() - before; n != 1 {
			t.Errorf("retry %d: %d requests between two sleeps, want 1", i+1, n)
		}
		if d != time.Second-answer {
			t.Errorf("retry %d: slept %s after a 503 that took %s, want %s", i+1, d, answer, time.Second-answer)
		}
	}
	down.Store(false)
	clk.release()
	approvals(t, ts.URL, "bob", "approve", id).want(t, 0)
	finish(t, done)
	w.want(t, 0)
	stderr := w.stderr.String()
	// The first failure is the closed long-poll (or, when net/http retries
	// it, the first 503): said once either way.
	if strings.Count(stderr, "retrying") != 1 || !strings.Contains(stderr, "; retrying every 1s until the wait ends\n") ||
		!strings.Contains(stderr, "auditd answers again") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// An approval may be consumed only within auditd's validity window after
// it was approved (DESIGN §11: 410 approval_stale); consume exits 1, as for
// every refusal, and says why.
func TestConsumeStale(t *testing.T) {
	isolate(t)
	clk := newClock(time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC))
	url := startAuditd(t, func(c *auditd.Config) { c.Now = clk.now; c.ApprovalValidFor = 10 * time.Minute })
	r := &run{user: "alice", now: clk.now}
	r.exec(url, append(reqArgs, "--command", "psql -f fix.sql", "-o", "json")...)
	r.want(t, 0)
	req := r.request(t)
	(&run{user: "bob", now: clk.now}).exec(url, "approve", req.ID)
	clk.advance(10*time.Minute + time.Second)

	c := &run{user: "alice", now: clk.now}
	c.exec(url, "consume", req.ID, "--action-hash", req.ActionHash, "-o", "json")
	c.want(t, exitRefused)
	if c.stdout.String() != "" || !strings.Contains(c.stderr.String(), "approvals: error: approval "+req.ID+" was valid until 2026-03-09T12:10:00Z; request a new one (approval_stale)\n") {
		t.Errorf("stdout %q, stderr %q", c.stdout.String(), c.stderr.String())
	}
	// Within the window it is released, once.
	clk = newClock(time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC))
	url = startAuditd(t, func(c *auditd.Config) { c.Now = clk.now; c.ApprovalValidFor = 10 * time.Minute })
	r = &run{user: "alice", now: clk.now}
	r.exec(url, append(reqArgs, "-o", "json")...)
	req = r.request(t)
	(&run{user: "bob", now: clk.now}).exec(url, "approve", req.ID)
	clk.advance(9 * time.Minute)
	c = &run{user: "alice", now: clk.now}
	c.exec(url, "consume", req.ID, "--action-hash", req.ActionHash, "-o", "json")
	c.want(t, 0)
	if got := c.request(t); got.Status != approval.Consumed || got.ConsumedBy != "alice" || got.ConsumedAt == nil || !got.ConsumedAt.Equal(clk.now()) {
		t.Errorf("consumed: %+v", got)
	}
	again := &run{user: "alice", now: clk.now}
	again.exec(url, "consume", req.ID, "--action-hash", req.ActionHash)
	again.want(t, exitRefused)
	if !strings.Contains(again.stderr.String(), "(approval_consumed)") {
		t.Errorf("second consume: %s", again.stderr.String())
	}
}
