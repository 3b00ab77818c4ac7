package detect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
)

var (
	destT0     = time.Date(2026, 2, 3, 10, 0, 0, 0, time.UTC)
	usersTable = audit.Resource{Type: "database", Name: "users"}
	ordersDB   = audit.Resource{Type: "database", Name: "orders"}
)

const (
	dropUsers  = "psql -c 'DROP TABLE users'"
	dropOrders = "psql -c 'DROP TABLE orders'"
)

// destructiveRun is agent's destructive run of cmd on res, written by the
// caller named caller, citing approval approvalID: as auditd stores it,
// with the action_hash it computes for an event that cites an approval
// (DESIGN §11).
func destructiveRun(id, agent, caller string, res audit.Resource, cmd, approvalID string, at time.Time) audit.Event {
	ev := audit.Event{SchemaVersion: 1, EventID: id, Timestamp: at, EventType: audit.TypeToolExecution,
		Agent: agent, ActionClass: audit.ActionDestructive, ApprovalID: approvalID,
		Resource: &res, Tool: &audit.Tool{Name: "bash", RawCommand: cmd}}
	if caller != "" {
		ev.Caller = &audit.Caller{Name: caller, Roles: []string{"agent"}}
	}
	if approvalID != "" {
		ev.ActionHash = approval.ActionHash(res, ev.ActionClass, "bash", cmd)
	}
	return ev
}

// approvalAt is approval id, requested by requester at created for the
// destructive run of cmd on res, taken through the real state machine to
// st: approved by alice a second later, and consumed by the requester at
// consumedAt (st consumed).
func approvalAt(t testing.TB, id, requester string, res audit.Resource, cmd string, st approval.Status, created, consumedAt time.Time) approval.Request {
	t.Helper()
	r, err := approval.New(approval.Input{Resource: res, Action: audit.ActionDestructive, Tool: "bash", RawCommand: cmd, Reason: "cleanup"},
		id, requester, created, approval.DefaultTTL)
	if err != nil {
		t.Fatal(err)
	}
	decided := created.Add(time.Second)
	switch st {
	case approval.Pending:
	case approval.Approved:
		err = r.Decide("alice", approval.Approve, "", decided)
	case approval.Denied:
		err = r.Decide("alice", approval.Deny, "not today", decided)
	case approval.Expired:
		r.Expire(r.ExpiresAt)
	case approval.Cancelled:
		err = r.Cancel(requester, false, decided)
	case approval.Consumed:
		if err = r.Decide("alice", approval.Approve, "", decided); err == nil {
			err = r.Consume(requester, false, r.ActionHash, consumedAt)
		}
	default:
		t.Fatalf("status %q", st)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != st {
		t.Fatalf("approval %s is %s, want %s", id, r.Status, st)
	}
	return r
}

// The binding of DESIGN §11: a destructive action is authorized only by an
// approval consumed, before it, by its caller, for a request its agent
// made for exactly this action, and not used by an earlier event. Before
// issue 13 any approved approval silenced the alert: an approval for DROP
// TABLE orders covered DROP TABLE users, other agents, and any number of
// runs.
func TestCheckDestructive(t *testing.T) {
	at := destT0.Add(time.Minute) // the run; the approval was consumed just before
	consumed := func(t *testing.T, requester string, res audit.Resource, cmd string) *approval.Request {
		r := approvalAt(t, "apr-1", requester, res, cmd, approval.Consumed, destT0, at.Add(-time.Second))
		return &r
	}
	withStatus := func(t *testing.T, st approval.Status) *approval.Request {
		r := approvalAt(t, "apr-1", "ops", usersTable, dropUsers, st, destT0, at.Add(-time.Second))
		return &r
	}
	run := func(edit func(*audit.Event)) audit.Event {
		ev := destructiveRun("evt-run", "ops", "ops", usersTable, dropUsers, "apr-1", at)
		if edit != nil {
			edit(&ev)
		}
		return ev
	}
	tests := []struct {
		name  string
		ev    audit.Event
		grant func(t *testing.T) Grant
		why   string // "" = authorized (no alert); else a part of the alert message
	}{
		{"consumed for this action by its caller", run(nil),
			func(t *testing.T) Grant { return Grant{Request: consumed(t, "ops", usersTable, dropUsers)} }, ""},
		{"agent and caller compare case-insensitively", run(func(ev *audit.Event) { ev.Agent, ev.Caller.Name = "OPS", "Ops" }),
			func(t *testing.T) Grant { return Grant{Request: consumed(t, "ops", usersTable, dropUsers)} }, ""},
		{"the same event judged again (a replay after a restart)", run(nil),
			func(t *testing.T) Grant {
				return Grant{Request: consumed(t, "ops", usersTable, dropUsers), UsedBy: "evt-run"}
			}, ""},
		{"not destructive", run(func(ev *audit.Event) { ev.ActionClass, ev.ApprovalID = audit.ActionRead, "" }),
			func(t *testing.T) Grant { return Grant{} }, ""},
		{"a policy decision mentions the action", run(func(ev *audit.Event) { ev.EventType, ev.ApprovalID = audit.TypePolicyDecision, "" }),
			func(t *testing.T) Grant { return Grant{} }, ""},
		{"an approval change mentions the action", run(func(ev *audit.Event) { ev.EventType = audit.TypeApprovalConsumed }),
			func(t *testing.T) Grant { return Grant{} }, ""},

		{"no approval", run(func(ev *audit.Event) { ev.ApprovalID, ev.ActionHash = "", "" }),
			func(t *testing.T) Grant { return Grant{} }, "(no approval)"},
		{"unknown approval", run(nil),
			func(t *testing.T) Grant { return Grant{} }, "approval apr-1 is unknown"},
		{"pending", run(nil),
			func(t *testing.T) Grant { return Grant{Request: withStatus(t, approval.Pending)} }, "is pending, not consumed"},
		{"approved but not consumed", run(nil),
			func(t *testing.T) Grant { return Grant{Request: withStatus(t, approval.Approved)} }, "is approved, not consumed"},
		{"denied", run(nil),
			func(t *testing.T) Grant { return Grant{Request: withStatus(t, approval.Denied)} }, "is denied, not consumed"},
		{"expired", run(nil),
			func(t *testing.T) Grant { return Grant{Request: withStatus(t, approval.Expired)} }, "is expired, not consumed"},
		{"cancelled", run(nil),
			func(t *testing.T) Grant { return Grant{Request: withStatus(t, approval.Cancelled)} }, "is cancelled, not consumed"},

		// A foreign approval silences nothing.
		{"approval for another resource", run(nil),
			func(t *testing.T) Grant { return Grant{Request: consumed(t, "ops", ordersDB, dropUsers)} }, "given for another action"},
		{"approval for another command on the resource", run(nil),
			func(t *testing.T) Grant { return Grant{Request: consumed(t, "ops", usersTable, dropOrders)} }, "given for another action"},
		{"approval for another action class", run(nil),
			func(t *testing.T) Grant {
				r, err := approval.New(approval.Input{Resource: usersTable, Action: audit.ActionWrite, Tool: "bash", RawCommand: dropUsers},
					"apr-1", "ops", destT0, approval.DefaultTTL)
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Decide("alice", approval.Approve, "", destT0); err != nil {
					t.Fatal(err)
				}
				if err := r.Consume("ops", false, r.ActionHash, destT0); err != nil {
					t.Fatal(err)
				}
				return Grant{Request: &r}
			}, "given for another action"},
		{"event without an action_hash", run(func(ev *audit.Event) { ev.ActionHash = "" }),
			func(t *testing.T) Grant { return Grant{Request: consumed(t, "ops", usersTable, dropUsers)} }, "given for another action"},
		{"approval requested by another agent", run(nil),
			func(t *testing.T) Grant { return Grant{Request: consumed(t, "deploy-bot", usersTable, dropUsers)} }, "requested by deploy-bot, not by ops"},
		{"another agent cites it", run(func(ev *audit.Event) { ev.Agent, ev.Caller.Name = "mallory", "mallory" }),
			func(t *testing.T) Grant { return Grant{Request: consumed(t, "ops", usersTable, dropUsers)} }, "not by mallory"},
		{"consumed by another caller", run(func(ev *audit.Event) { ev.Caller.Name = "gateway-1" }),
			func(t *testing.T) Grant { return Grant{Request: consumed(t, "ops", usersTable, dropUsers)} }, "consumed by ops, not by this event's caller gateway-1"},
		{"no caller recorded", run(func(ev *audit.Event) { ev.Caller = nil }),
			func(t *testing.T) Grant { return Grant{Request: consumed(t, "ops", usersTable, dropUsers)} }, "(none recorded)"},
		{"consumed after the action", run(nil),
			func(t *testing.T) Grant {
				r := approvalAt(t, "apr-1", "ops", usersTable, dropUsers, approval.Consumed, destT0, at.Add(time.Second))
				return Grant{Request: &r}
			}, "consumed after the action"},
		{"second use", run(nil),
			func(t *testing.T) Grant {
				return Grant{Request: consumed(t, "ops", usersTable, dropUsers), UsedBy: "evt-first"}
			}, "used already by event evt-first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, bad := CheckDestructive(tt.ev, tt.grant(t), patNow)
			if tt.why == "" {
				if bad {
					t.Fatalf("alert: %s", a.Message)
				}
				return
			}
			if !bad {
				t.Fatal("no alert")
			}
			if a.Type != UnauthorizedDestructive || a.Severity != Critical || a.Agent != tt.ev.Agent || a.EventID != tt.ev.EventID ||
				!strings.Contains(a.Message, "on database:users") || !strings.Contains(a.Message, tt.why) {
				b, _ := json.Marshal(a)
				t.Errorf("alert %s; want a message with %q", b, tt.why)
			}
		})
	}
}

// An ApprovalBook lets one consumption cover one event: the first event
// that the consumed approval authorizes uses it, later ones alert, and
// events it does not authorize (another agent's, another action's) use
// nothing.
func TestApprovalBook(t *testing.T) {
	at := destT0.Add(time.Minute)
	r := approvalAt(t, "apr-1", "ops", usersTable, dropUsers, approval.Consumed, destT0, at)
	ev, err := approval.Event(&r, "ops")
	if err != nil {
		t.Fatal(err)
	}
	ev.Seq, ev.EventID, ev.Timestamp = 4, "evt-consumed", at

	b := NewApprovalBook(10)
	if g, known := b.Grant(destructiveRun("evt-x", "ops", "ops", usersTable, dropUsers, "apr-1", at)); known || g.Request != nil {
		t.Fatalf("Grant before Observe: %+v, %v", g, known)
	}
	if g, known := b.Grant(destructiveRun("evt-x", "ops", "ops", usersTable, dropUsers, "", at)); !known || g.Request != nil {
		t.Fatalf("Grant without an approval: %+v, %v", g, known)
	}
	b.Observe(ev)
	if st, ok := b.Status("apr-1"); !ok || st != approval.Consumed {
		t.Fatalf("Status = %s, %v", st, ok)
	}

	steps := []struct {
		ev   audit.Event
		want string // "" = no alert
	}{
		{destructiveRun("evt-5", "mallory", "mallory", usersTable, dropUsers, "apr-1", at.Add(time.Second)), "not by mallory"},
		{destructiveRun("evt-6", "ops", "ops", usersTable, dropOrders, "apr-1", at.Add(time.Second)), "another action"},
		{destructiveRun("evt-7", "ops", "ops", usersTable, dropUsers, "apr-1", at.Add(time.Second)), ""},
		{destructiveRun("evt-8", "ops", "ops", usersTable, dropUsers, "apr-1", at.Add(2*time.Second)), "used already by event evt-7"},
		{destructiveRun("evt-7", "ops", "ops", usersTable, dropUsers, "apr-1", at.Add(time.Second)), ""}, // replayed
	}
	for _, s := range steps {
		g, known := b.Grant(s.ev)
		if !known {
			t.Fatalf("%s: approval unknown", s.ev.EventID)
		}
		a, bad := b.Judge(s.ev, g, patNow)
		switch {
		case s.want == "" && bad:
			t.Errorf("%s: alert %s", s.ev.EventID, a.Message)
		case s.want != "" && (!bad || !strings.Contains(a.Message, s.want)):
			t.Errorf("%s: alert %v %q, want one with %q", s.ev.EventID, bad, a.Message, s.want)
		}
	}

	// A later change seen on the stream keeps what the book knows of the
	// use: the approval stays spent.
	b.Remember(r)
	g, _ := b.Grant(steps[3].ev)
	if g.UsedBy != "evt-7" {
		t.Errorf("after Remember, UsedBy = %q", g.UsedBy)
	}

	// Capacity: the oldest approval is forgotten.
	small := NewApprovalBook(1)
	small.Remember(r)
	other := approvalAt(t, "apr-2", "ops", usersTable, dropUsers, approval.Approved, destT0, at)
	small.Remember(other)
	if _, ok := small.Status("apr-1"); ok {
		t.Error("capacity 1 remembers apr-1 after apr-2")
	}
	if st, ok := small.Status("apr-2"); !ok || st != approval.Approved {
		t.Errorf("apr-2: %s, %v", st, ok)
	}
}

// A watcher that learns an approval from auditd replays the events that
// cited it before the one it judges (DESIGN §11 "one use per approval",
// issue 13): the first that the approval released used its consumption,
// whatever order they come in, and the judged event alerts unless it is
// that one. Citations the approval did not release use nothing.
func TestApprovalBookLearn(t *testing.T) {
	at := destT0.Add(time.Minute) // the consumption
	r := approvalAt(t, "apr-1", "ops", usersTable, dropUsers, approval.Consumed, destT0, at)
	run := func(seq int64, agent, cmd, id string, ts time.Time) audit.Event {
		ev := destructiveRun(fmt.Sprintf("evt-%d", seq), agent, agent, usersTable, cmd, id, ts)
		ev.Seq = seq
		return ev
	}
	later := at.Add(time.Second)
	judged := run(10, "ops", dropUsers, "apr-1", at.Add(time.Minute))
	decision := run(3, "ops", dropUsers, "apr-1", later)
	decision.EventType = audit.TypePolicyDecision

	for _, tt := range []struct {
		name    string
		r       approval.Request
		earlier []audit.Event
		want    string // "" = the judged event passes
	}{
		{"no earlier citation", r, nil, ""},
		{"an earlier use", r, []audit.Event{run(5, "ops", dropUsers, "apr-1", later)}, "used already by event evt-5"},
		{"the first of two, out of order", r,
			[]audit.Event{run(7, "ops", dropUsers, "apr-1", later), run(6, "ops", dropUsers, "apr-1", later)}, "used already by event evt-6"},
		{"citations it did not release", r, []audit.Event{
			run(4, "mallory", dropUsers, "apr-1", later),            // another agent
			run(5, "ops", dropOrders, "apr-1", later),               // another action
			run(6, "ops", dropUsers, "apr-1", at.Add(-time.Second)), // before the consumption
			run(7, "ops", dropUsers, "apr-2", later),                // another approval
			run(8, "ops", dropUsers, "", later),                     // none
			decision,                                                // not an action
		}, ""},
		{"a refused citation, then a use", r, []audit.Event{
			run(4, "mallory", dropUsers, "apr-1", later), run(5, "ops", dropUsers, "apr-1", later),
		}, "used already by event evt-5"},
		{"the judged event itself", r, []audit.Event{judged}, ""},
		{"approved, not consumed: nothing was used", approvalAt(t, "apr-1", "ops", usersTable, dropUsers, approval.Approved, destT0, at),
			[]audit.Event{run(5, "ops", dropUsers, "apr-1", later)}, "not consumed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := NewApprovalBook(10)
			if _, known := b.Grant(judged); known {
				t.Fatal("a new book knows apr-1")
			}
			b.Learn(tt.r, tt.earlier)
			g, known := b.Grant(judged)
			if !known {
				t.Fatal("apr-1 unknown after Learn")
			}
			a, bad := b.Judge(judged, g, patNow)
			switch {
			case tt.want == "" && bad:
				t.Errorf("alert %q", a.Message)
			case tt.want != "" && (!bad || !strings.Contains(a.Message, tt.want)):
				t.Errorf("alert %v %q, want one with %q", bad, a.Message, tt.want)
			}
		})
	}
}
