package auditd_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/token"
)

// fakeClock is an injected clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// as returns a client acting as user in local mode.
func (d *daemon) as(t testing.TB, user string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(d.url, append([]client.Option{client.WithUser(user)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// approvalPolicy requires one approval for writes to production databases
// and two for destructive actions: approval requests come from policy
// (DESIGN §11), so the approvals tests run with one in force.
const approvalPolicy = `version: "1"
default_effect: deny
policies:
  - name: prod-db-approvals
    resources:
      - type: database
        match: {tags: [production]}
    rules:
      - action: read
        effect: allow
      - action: write
        effect: require_approval
      - action: destructive
        effect: require_approval
        conditions: {approval_quorum: 2}
`

// startApprovals is a daemon with approvalPolicy and testInfra in force.
func startApprovals(t testing.TB, db string, edit func(*auditd.Config)) *daemon {
	t.Helper()
	d := startDaemon(t, db, edit)
	if err := d.srv.SetPolicy(loadPolicy(t, approvalPolicy, testInfra)); err != nil {
		t.Fatal(err)
	}
	return d
}

func prodWrite() approval.Input {
	return approval.Input{
		Resource: audit.Resource{Type: "database", Name: "prod-db"}, // tags from the infra file
		Action:   "write", Tool: "psql", RawCommand: "UPDATE users SET plan = 'pro' WHERE id = 7",
		Reason: "customer upgrade",
	}
}

// refusal asserts err is auditd's answer with status and code.
func refusal(t *testing.T, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != status || e.Code != code {
		t.Fatalf("err = %v, want %d with code %q", err, status, code)
	}
}

// exactlyOne checks that of errs, the answers to one step raced through
// several callers, exactly one is nil and every other is the refusal
// status/code; what names the step in the failure.
func exactlyOne(t *testing.T, errs []error, status int, code, what string) {
	t.Helper()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			refusal(t, err, status, code)
		}
	}
	if ok != 1 {
		t.Fatalf("%s: %d succeeded, want exactly 1", what, ok)
	}
}

// approvalEvents returns the approval events in the chain, in seq order.
func approvalEvents(t *testing.T, d *daemon) []audit.Event {
	t.Helper()
	var evs []audit.Event
	for ev, err := range d.c.QueryAll(ctxT(t), govapi.EventQuery{Cursor: govapi.Cursor{Limit: 1000}}) {
		if err != nil {
			t.Fatal(err)
		}
		if approval.IsEventType(ev.EventType) {
			evs = append(evs, ev)
		}
	}
	return evs
}

func eventTypes(evs []audit.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.EventType + ":" + ev.Outcome.Status + ":" + ev.Principal.UserID
	}
	return out
}

func TestApprovalApprovedByAnotherUser(t *testing.T) {
	var mu sync.Mutex
	var changes []approval.Status
	d := startApprovals(t, "", func(c *auditd.Config) {
		c.OnApprovalChange = func(r approval.Request) {
			mu.Lock()
			changes = append(changes, r.Status)
			mu.Unlock()
		}
	})
	ctx := ctxT(t)
	alice, bob := d.as(t, "alice"), d.as(t, "bob")
	req, err := alice.RequestApproval(ctx, prodWrite())
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.Pending || req.RequestedBy != "alice" || req.Quorum != 1 || req.ID == "" {
		t.Fatalf("new request = %+v", req)
	}
	if got := req.ExpiresAt.Sub(req.CreatedAt); got != approval.DefaultTTL {
		t.Errorf("expiry after %s, want the default %s", got, approval.DefaultTTL)
	}
	if want := approval.ActionHash(prodWrite().Resource, "write", "psql", prodWrite().RawCommand); req.ActionHash != want {
		t.Errorf("action_hash = %s, want %s", req.ActionHash, want)
	}

	// The approver is who the request comes from, never a body field.
	got, err := bob.Approve(ctx, req.ID, "looks right")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != approval.Approved || len(got.Votes) != 1 || got.Votes[0].By != "bob" || got.DecidedAt == nil {
		t.Fatalf("after bob's approval: %+v", got)
	}
	read, err := alice.Approval(ctx, req.ID)
	if err != nil || read.Status != approval.Approved {
		t.Fatalf("Approval = %+v, %v", read.Status, err)
	}

	evs := approvalEvents(t, d)
	if want := []string{"approval_requested:pending:alice", "approval_decided:approved:bob"}; !slices.Equal(eventTypes(evs), want) {
		t.Errorf("chain records %v, want %v", eventTypes(evs), want)
	}
	for _, ev := range evs {
		if ev.ApprovalID != req.ID || ev.Resource.Name != "prod-db" || ev.ActionClass != "write" {
			t.Errorf("event %s does not describe the request: %+v", ev.EventType, ev)
		}
	}
	rep, err := d.c.Verify(ctx)
	if err != nil || !rep.Verified {
		t.Fatalf("chain after approvals: %+v, %v", rep, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []approval.Status{approval.Pending, approval.Approved}; !slices.Equal(changes, want) {
		t.Errorf("OnApprovalChange saw %v, want %v", changes, want)
	}
}

func TestApprovalRules(t *testing.T) {
	d := startApprovals(t, "", nil)
	ctx := ctxT(t)
	alice, bob, carol := d.as(t, "alice"), d.as(t, "bob"), d.as(t, "carol")

	t.Run("self-approval refused, by name in any case", func(t *testing.T) {
		req, err := alice.RequestApproval(ctx, prodWrite())
		if err != nil {
			t.Fatal(err)
		}
		_, err = alice.Approve(ctx, req.ID, "")
		refusal(t, err, http.StatusForbidden, approval.RefusedSelfApproval)
		if !strings.Contains(err.Error(), "alice requested approval") {
			t.Errorf("message = %v", err)
		}
		_, err = d.as(t, "ALICE").Approve(ctx, req.ID, "")
		refusal(t, err, http.StatusForbidden, approval.RefusedSelfApproval)
		if r, _ := bob.Approval(ctx, req.ID); r.Status != approval.Pending || len(r.Votes) != 0 {
			t.Errorf("a refused vote changed the request: %+v", r)
		}
	})

	t.Run("quorum 2 needs two distinct approvers", func(t *testing.T) {
		in := prodWrite()
		in.Action = "destructive" // quorum 2 by the policy
		req, err := alice.RequestApproval(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		r, err := bob.Approve(ctx, req.ID, "")
		if err != nil || r.Status != approval.Pending || r.Approvals() != 1 {
			t.Fatalf("first approval: %+v, %v", r, err)
		}
		_, err = bob.Approve(ctx, req.ID, "again")
		refusal(t, err, http.StatusConflict, approval.RefusedAlreadyVoted)
		if r, err = carol.Approve(ctx, req.ID, ""); err != nil || r.Status != approval.Approved {
			t.Fatalf("second approver: %+v, %v", r, err)
		}
	})

	t.Run("one deny ends it", func(t *testing.T) {
		in := prodWrite()
		in.Action = "destructive" // quorum 2 by the policy
		req, err := alice.RequestApproval(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bob.Approve(ctx, req.ID, ""); err != nil {
			t.Fatal(err)
		}
		_, err = carol.Deny(ctx, req.ID, "")
		var e *client.Error
		if !errors.As(err, &e) || e.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, "reason") {
			t.Fatalf("deny without a reason = %v, want 400 naming reason", err)
		}
		r, err := carol.Deny(ctx, req.ID, "not during the freeze")
		if err != nil || r.Status != approval.Denied {
			t.Fatalf("deny: %+v, %v", r, err)
		}
		_, err = d.as(t, "dave").Approve(ctx, req.ID, "")
		refusal(t, err, http.StatusConflict, approval.RefusedNotPending)
	})

	t.Run("unknown id and bad input", func(t *testing.T) {
		if _, err := bob.Approve(ctx, "nope", ""); !client.IsNotFound(err) {
			t.Errorf("approving an unknown id = %v, want 404", err)
		}
		bad := prodWrite()
		bad.Action = "drop"
		_, err := alice.RequestApproval(ctx, bad)
		var e *client.Error
		if !errors.As(err, &e) || e.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, "action") {
			t.Errorf("bad action = %v, want 400 naming action", err)
		}
		anon, _ := client.New(d.url)
		if _, err := anon.RequestApproval(ctx, prodWrite()); err == nil || !strings.Contains(err.Error(), "X-Govkit-User") {
			t.Errorf("request without a user = %v, want 400 naming the header", err)
		}
	})

	t.Run("clients cannot post approval events", func(t *testing.T) {
		_, err := d.c.Append(ctx, audit.Event{EventType: audit.TypeApprovalDecided, ApprovalID: "x"})
		var e *client.Error
		if !errors.As(err, &e) || e.StatusCode != http.StatusBadRequest {
			t.Fatalf("posting approval_decided = %v, want 400", err)
		}
	})
}

func TestApprovalExpiry(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	d := startApprovals(t, "", func(c *auditd.Config) {
		c.Now = clock.now
		c.SweepInterval = time.Hour // expiry on read, not by the sweeper
	})
	ctx := ctxT(t)
	alice, bob := d.as(t, "alice"), d.as(t, "bob")
	in := prodWrite()
	in.TTL = "1m"
	req, err := alice.RequestApproval(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	clock.add(61 * time.Second)
	r, err := alice.Approval(ctx, req.ID)
	if err != nil || r.Status != approval.Expired || r.DecidedAt == nil || !r.DecidedAt.Equal(req.ExpiresAt) {
		t.Fatalf("after expiry: %+v, %v", r, err)
	}
	_, err = bob.Approve(ctx, req.ID, "")
	refusal(t, err, http.StatusConflict, approval.RefusedNotPending)

	// A vote that arrives first after expiry is refused as late, and the
	// expiry is recorded.
	req2, err := alice.RequestApproval(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	clock.add(2 * time.Minute)
	_, err = bob.Approve(ctx, req2.ID, "")
	refusal(t, err, http.StatusConflict, approval.RefusedNotPending)
	if !strings.Contains(err.Error(), "expired") {
		t.Errorf("late approval message = %v", err)
	}
	want := []string{"approval_requested:pending:alice", "approval_expired:expired:auditd", "approval_requested:pending:alice", "approval_expired:expired:auditd"}
	if got := eventTypes(approvalEvents(t, d)); !slices.Equal(got, want) {
		t.Errorf("chain records %v, want %v", got, want)
	}
}

func TestApprovalSweeper(t *testing.T) {
	var mu sync.Mutex
	var expired []string
	d := startApprovals(t, "", func(c *auditd.Config) {
		c.SweepInterval = 20 * time.Millisecond
		c.OnApprovalChange = func(r approval.Request) {
			if r.Status == approval.Expired {
				mu.Lock()
				expired = append(expired, r.ID)
				mu.Unlock()
			}
		}
	})
	in := prodWrite()
	in.TTL = "1s"
	req, err := d.as(t, "alice").RequestApproval(ctxT(t), in)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sweeper to expire the request", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(expired, []string{req.ID})
	})
}

func TestApprovalRacingApprovers(t *testing.T) {
	d := startApprovals(t, "", nil)
	ctx := ctxT(t)
	for round := range 10 {
		req, err := d.as(t, "alice").RequestApproval(ctx, prodWrite())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i, who := range []string{"bob", "carol", "dave", "erin"} {
			wg.Go(func() {
				_, errs[i] = d.as(t, who).Approve(ctx, req.ID, "")
			})
		}
		wg.Wait()
		exactlyOne(t, errs, http.StatusConflict, approval.RefusedNotPending, fmt.Sprintf("round %d: approvals", round))
		r, _ := d.c.Approval(ctx, req.ID)
		if len(r.Votes) != 1 || r.Status != approval.Approved {
			t.Fatalf("round %d: %+v", round, r)
		}
	}
	decided := 0
	for _, ev := range approvalEvents(t, d) {
		if ev.EventType == audit.TypeApprovalDecided {
			decided++
		}
	}
	if decided != 10 {
		t.Errorf("%d approval_decided events, want 10", decided)
	}
}

func TestApprovalLongPoll(t *testing.T) {
	d := startApprovals(t, "", nil)
	ctx := ctxT(t)
	req, err := d.as(t, "alice").RequestApproval(ctx, prodWrite())
	if err != nil {
		t.Fatal(err)
	}
	list, err := d.c.Approvals(ctx, govapi.ApprovalQuery{})
	if err != nil || len(list.Approvals) != 1 || list.NextAfterSeq == 0 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	// auditd would hold both for MaxWait and then answer with what is
	// there by then, the decision included: the callers give up long
	// before, so that only a wake-up answers them.
	wctx, cancel := context.WithTimeout(ctx, govapi.MaxWait/2)
	defer cancel()
	got := make(chan approval.Request, 1)
	changes := make(chan govapi.ApprovalList, 1)
	go func() {
		r, err := d.as(t, "alice").WaitApproval(wctx, req.ID, govapi.MaxWait)
		if err != nil {
			t.Errorf("the request's long-poll was not woken by the decision: %v", err)
		}
		got <- r
	}()
	go func() {
		l, err := d.c.Approvals(wctx, govapi.ApprovalQuery{Wait: govapi.MaxWait, Cursor: govapi.Cursor{AfterSeq: list.NextAfterSeq}})
		if err != nil {
			t.Errorf("the list's long-poll was not woken by the decision: %v", err)
		}
		changes <- l
	}()
	// Both must be waiting before the decision, which is what the test is
	// about.
	waitFor(t, "both long-polls to start", func() bool {
		return metricAt(t, d.url, "govkit_auditd_approval_waiters") == "2"
	})
	if _, err := d.as(t, "bob").Approve(ctx, req.ID, ""); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Status != approval.Approved {
		t.Errorf("waiter got %s, want approved", r.Status)
	}
	l := <-changes
	if len(l.Approvals) != 1 || l.Approvals[0].Status != approval.Approved || l.NextAfterSeq <= list.NextAfterSeq {
		t.Errorf("watcher got %+v", l)
	}
}

func TestApprovalTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	mk := func(name string, roles ...token.Role) string {
		tok, err := token.Create(path, name, roles, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	agent7, agent8 := mk("agent-7", token.Agent), mk("agent-8", token.Agent)
	bob, auditor := mk("bob", token.Approver), mk("audit", token.Auditor)
	set, err := token.NewSet(path, t.Logf, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	d := startApprovals(t, "", func(c *auditd.Config) { c.Tokens = set })
	ctx := ctxT(t)
	as := func(tok string) *client.Client {
		// The header must not matter with tokens: the identity is the token's.
		return d.as(t, "someone-else", client.WithToken(tok))
	}

	_, err = d.c.RequestApproval(ctx, prodWrite())
	refusal(t, err, http.StatusUnauthorized, "")
	_, err = as("gk_not-a-token").RequestApproval(ctx, prodWrite())
	refusal(t, err, http.StatusUnauthorized, "")
	if _, err := d.c.Health(ctx); err != nil {
		t.Errorf("/health needs no token: %v", err)
	}

	req, err := as(agent7).RequestApproval(ctx, prodWrite())
	if err != nil {
		t.Fatal(err)
	}
	if req.RequestedBy != "agent-7" {
		t.Errorf("requested_by = %q, want the token's name", req.RequestedBy)
	}
	_, err = as(agent7).Approve(ctx, req.ID, "")
	refusal(t, err, http.StatusForbidden, "")
	if !strings.Contains(err.Error(), "approver") {
		t.Errorf("403 message = %v, want it to name the role", err)
	}
	if _, err := as(agent7).Approval(ctx, req.ID); err != nil {
		t.Errorf("an agent reads its own request: %v", err)
	}
	_, err = as(agent8).Approval(ctx, req.ID)
	refusal(t, err, http.StatusForbidden, "")
	if l, err := as(agent8).Approvals(ctx, govapi.ApprovalQuery{}); err != nil || len(l.Approvals) != 0 {
		t.Errorf("agent-8's list = %+v, %v; want empty", l, err)
	}
	_, err = as(auditor).Approve(ctx, req.ID, "")
	refusal(t, err, http.StatusForbidden, "")
	if _, err := as(auditor).Verify(ctx); err != nil {
		t.Errorf("auditor verifies: %v", err)
	}
	_, err = as(bob).Append(ctx, toolEvent("x", "ls"))
	refusal(t, err, http.StatusForbidden, "")

	r, err := as(bob).Approve(ctx, req.ID, "")
	if err != nil || r.Status != approval.Approved || r.Votes[0].By != "bob" {
		t.Fatalf("bob's approval: %+v, %v", r, err)
	}
}

func TestApprovalCatchUpAfterCrash(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	d := startApprovals(t, db, nil)
	ctx := ctxT(t)
	req, err := d.as(t, "alice").RequestApproval(ctx, prodWrite())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.as(t, "bob").Approve(ctx, req.ID, ""); err != nil {
		t.Fatal(err)
	}
	d.stop()

	// A crash between the commit of the decision and its put: the chain
	// has it, the table does not.
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("DELETE FROM approvals"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	d2 := startApprovals(t, db, nil)
	r, err := d2.c.Approval(ctx, req.ID)
	if err != nil || r.Status != approval.Approved || len(r.Votes) != 1 {
		t.Fatalf("after restart: %+v, %v", r, err)
	}
	if !slices.ContainsFunc(d2.log.all(), func(l string) bool { return strings.Contains(l, "applied 2 approval changes") }) {
		t.Errorf("log = %q, want the catch-up reported", d2.log.all())
	}
}

func TestApprovalLongPollEndsAtShutdown(t *testing.T) {
	d := startApprovals(t, "", nil)
	ctx := ctxT(t)
	req, err := d.as(t, "alice").RequestApproval(ctx, prodWrite())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.c.WaitApproval(ctx, req.ID, govapi.MaxWait)
		done <- err
	}()
	waitFor(t, "the long-poll to start", func() bool {
		return metricAt(t, d.url, "govkit_auditd_approval_waiters") == "1"
	})
	// A long-poll still held makes Run's graceful shutdown give up after
	// 10 s (less than the hold) and fail; d.stop reports that.
	d.stop()
	<-done
	for _, l := range d.log.all() {
		if strings.Contains(l, "stopping the HTTP server") {
			t.Errorf("log: %s", l)
		}
	}
}

// POST /v1/approvals takes an action in any case, as the decisions and
// explain endpoints do (issue 20), and records it lower-cased: the
// request's action_hash is that of the write an execution records.
func TestApprovalActionAnyCase(t *testing.T) {
	d := startApprovals(t, "", nil)
	ctx := ctxT(t)
	in := prodWrite()
	in.Action = "WRITE"
	req, err := d.as(t, "alice").RequestApproval(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	want := approval.ActionHash(in.Resource, "write", in.Tool, in.RawCommand)
	if req.Action != "write" || req.ActionHash != want {
		t.Fatalf("action %q, action_hash %s; want write, %s", req.Action, req.ActionHash, want)
	}
	in.Action = "WRTIE"
	_, err = d.as(t, "alice").RequestApproval(ctx, in)
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, `action "WRTIE" is not read, write or destructive`) {
		t.Errorf("action WRTIE = %v, want 400 naming action", err)
	}
}
