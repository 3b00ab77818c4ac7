package approval

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func input() Input {
	return Input{
		Resource: audit.Resource{Type: "database", Name: "prod-db", Tags: []string{"production"}},
		Action:   "write", Tool: "psql", RawCommand: "DELETE FROM sessions", Reason: "cleanup",
	}
}

func mustNew(t *testing.T, in Input) Request {
	t.Helper()
	r, err := New(in, "req-1", "alice", t0, DefaultTTL)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNew(t *testing.T) {
	r := mustNew(t, input())
	if r.Status != Pending || r.Quorum != 1 || !r.ExpiresAt.Equal(t0.Add(DefaultTTL)) || r.Votes == nil || r.DecidedAt != nil {
		t.Errorf("New = %+v", r)
	}
	in := input()
	in.TTL, in.Quorum = "15m", 3
	if r := mustNew(t, in); !r.ExpiresAt.Equal(t0.Add(15*time.Minute)) || r.Quorum != 3 {
		t.Errorf("ttl/quorum not applied: %+v", r)
	}
}

func TestNewInvalid(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*Input)
	}{
		{"resource.type", func(in *Input) { in.Resource.Type = "" }},
		{"resource.name", func(in *Input) { in.Resource.Name = " " }},
		{"resource.name", func(in *Input) { in.Resource.Name = strings.Repeat("x", 300) }},
		{"resource.name", func(in *Input) { in.Resource.Name = "a\nb" }},
		{"resource.tags", func(in *Input) { in.Resource.Tags = []string{""} }},
		{"action", func(in *Input) { in.Action = "drop" }},
		{"tool", func(in *Input) { in.Tool = "a\x1b[2Jb" }},
		{"raw_command", func(in *Input) { in.RawCommand = "echo \x1b]0;pwned\x07" }},
		{"raw_command", func(in *Input) { in.RawCommand = string([]byte{0xff}) }},
		{"reason", func(in *Input) { in.Reason = strings.Repeat("r", 5000) }},
		{"quorum", func(in *Input) { in.Quorum = -1 }},
		{"quorum", func(in *Input) { in.Quorum = MaxQuorum + 1 }},
		{"ttl", func(in *Input) { in.TTL = "soon" }},
		{"ttl", func(in *Input) { in.TTL = "1ms" }},
		{"ttl", func(in *Input) { in.TTL = "9000h" }},
		{"policy_decision", func(in *Input) { in.PolicyDecision = json.RawMessage(`[1]`) }},
	} {
		in := input()
		tc.edit(&in)
		_, err := New(in, "id", "alice", t0, DefaultTTL)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: err = %v, want a FieldError for it", tc.field, err)
		}
	}
	if _, err := New(input(), "id", "", t0, DefaultTTL); err == nil {
		t.Error("a request without a requester was accepted")
	}
}

func TestDecide(t *testing.T) {
	type vote struct {
		by     string
		d      Decision
		reason string
		after  time.Duration
		code   string // refusal code, or "field" for a FieldError
	}
	for _, tc := range []struct {
		name   string
		quorum int
		votes  []vote
		want   Status
		nvotes int
	}{
		{"one approval", 1, []vote{{by: "bob", d: Approve}}, Approved, 1},
		{"self approval", 1, []vote{{by: "alice", d: Approve, code: RefusedSelfApproval}}, Pending, 0},
		{"self approval, other case", 1, []vote{{by: "Alice", d: Approve, code: RefusedSelfApproval}}, Pending, 0},
		{"self deny is refused too", 1, []vote{{by: "alice", d: Deny, reason: "oops", code: RefusedSelfApproval}}, Pending, 0},
		{"quorum 2", 2, []vote{{by: "bob", d: Approve}, {by: "carol", d: Approve}}, Approved, 2},
		{"same approver twice counts once", 2, []vote{{by: "bob", d: Approve}, {by: "BOB", d: Approve, code: RefusedAlreadyVoted}}, Pending, 1},
		{"deny ends it", 2, []vote{{by: "bob", d: Approve}, {by: "carol", d: Deny, reason: "no"}, {by: "dave", d: Approve, code: RefusedNotPending}}, Denied, 2},
		{"deny needs a reason", 1, []vote{{by: "bob", d: Deny, code: "field"}}, Pending, 0},
		{"unknown decision", 1, []vote{{by: "bob", d: "maybe", code: "field"}}, Pending, 0},
		{"decided is final", 1, []vote{{by: "bob", d: Approve}, {by: "carol", d: Deny, reason: "late", code: RefusedNotPending}}, Approved, 1},
		{"after expiry", 1, []vote{{by: "bob", d: Approve, after: DefaultTTL, code: RefusedExpired}}, Pending, 0},
		{"just before expiry", 1, []vote{{by: "bob", d: Approve, after: DefaultTTL - time.Nanosecond}}, Approved, 1},
		{"empty approver", 1, []vote{{by: "", d: Approve, code: "field"}}, Pending, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input()
			in.Quorum = tc.quorum
			r := mustNew(t, in)
			for _, v := range tc.votes {
				before := len(r.Votes)
				err := r.Decide(v.by, v.d, v.reason, t0.Add(v.after))
				var fe *FieldError
				var ref *Refusal
				switch {
				case v.code == "" && err != nil:
					t.Fatalf("%s %s: %v", v.by, v.d, err)
				case v.code == "field" && !errors.As(err, &fe):
					t.Fatalf("%s %s: err = %v, want a FieldError", v.by, v.d, err)
				case v.code != "" && v.code != "field" && (!errors.As(err, &ref) || ref.Code != v.code):
					t.Fatalf("%s %s: err = %v, want refusal %s", v.by, v.d, err, v.code)
				}
				if err != nil && len(r.Votes) != before {
					t.Fatalf("a refused vote was recorded")
				}
			}
			if r.Status != tc.want || len(r.Votes) != tc.nvotes {
				t.Errorf("status %s with %d votes, want %s with %d", r.Status, len(r.Votes), tc.want, tc.nvotes)
			}
			if (r.Status == Pending) != (r.DecidedAt == nil) {
				t.Errorf("decided_at = %v for status %s", r.DecidedAt, r.Status)
			}
		})
	}
}

// TestDenial: the deny vote that ended a request, after approvals; none
// for a request still pending or approved.
func TestDenial(t *testing.T) {
	in := input()
	in.Quorum = 2
	r := mustNew(t, in)
	if _, ok := r.Denial(); ok {
		t.Error("a new request has a denial")
	}
	if err := r.Decide("bob", Approve, "", t0); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Denial(); ok {
		t.Error("an approval is a denial")
	}
	if err := r.Decide("carol", Deny, "not now", t0); err != nil {
		t.Fatal(err)
	}
	if v, ok := r.Denial(); !ok || v.By != "carol" || v.Reason != "not now" {
		t.Errorf("Denial = %+v, %v; want carol's vote", v, ok)
	}
}

func TestExpire(t *testing.T) {
	r := mustNew(t, input())
	if r.Expire(t0.Add(DefaultTTL - 1)) {
		t.Fatal("expired early")
	}
	if !r.Expire(t0.Add(DefaultTTL)) || r.Status != Expired || !r.DecidedAt.Equal(r.ExpiresAt) {
		t.Fatalf("Expire at expiry: %+v", r)
	}
	if r.Expire(t0.Add(time.Hour)) {
		t.Error("expired twice")
	}
	a := mustNew(t, input())
	a.Decide("bob", Approve, "", t0)
	if a.Expire(t0.Add(time.Hour)) || a.Status != Approved {
		t.Error("an approved request expired")
	}
}

func TestActionHash(t *testing.T) {
	res := audit.Resource{Type: "database", Name: "prod-db"}
	h := ActionHash(res, "write", "psql", "UPDATE t SET x = 1")
	if len(h) != 64 || !audit.IsHash(h) {
		t.Fatalf("hash %q", h)
	}
	tagged := res
	tagged.Tags = []string{"production"}
	if ActionHash(tagged, "write", "psql", "UPDATE t SET x = 1") != h {
		t.Error("tags changed the action hash")
	}
	for _, other := range []string{
		ActionHash(res, "destructive", "psql", "UPDATE t SET x = 1"),
		ActionHash(res, "write", "mysql", "UPDATE t SET x = 1"),
		ActionHash(res, "write", "psql", "UPDATE t SET x = 2"),
		ActionHash(audit.Resource{Type: "database", Name: "prod-db2"}, "write", "psql", "UPDATE t SET x = 1"),
		// Field boundaries cannot be shifted: "a"+"bc" is not "ab"+"c".
		ActionHash(audit.Resource{Type: "databasep", Name: "rod-db"}, "write", "psql", "UPDATE t SET x = 1"),
	} {
		if other == h {
			t.Error("a different action has the same hash")
		}
	}
}

func TestEventRoundTrip(t *testing.T) {
	r := mustNew(t, input())
	r.PolicyDecision = json.RawMessage(`{"effect":"require_approval","explanation":"needs a human"}`)
	steps := []struct {
		change func()
		typ    string
		actor  string
	}{
		{func() {}, audit.TypeApprovalRequested, "alice"},
		{func() { r.Quorum = 2; r.Decide("bob", Approve, "", t0) }, audit.TypeApprovalVoted, "bob"},
		{func() { r.Decide("carol", Approve, "", t0) }, audit.TypeApprovalDecided, "carol"},
	}
	for _, s := range steps {
		s.change()
		ev, err := Event(&r, s.actor)
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType != s.typ || ev.ApprovalID != r.ID || ev.Principal.UserID != s.actor || ev.Outcome.Status != string(r.Status) {
			t.Errorf("%s: event %+v", s.typ, ev)
		}
		if (ev.PolicyDecision != nil) != (s.typ == audit.TypeApprovalRequested) {
			t.Errorf("%s: policy_decision %s", s.typ, ev.PolicyDecision)
		}
		back, err := FromEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(back)
		b, _ := json.Marshal(r)
		if string(a) != string(b) {
			t.Errorf("%s: round trip\n got %s\nwant %s", s.typ, a, b)
		}
	}
	r2 := mustNew(t, input())
	r2.Expire(t0.Add(time.Hour))
	if ev, _ := Event(&r2, "auditd"); ev.EventType != audit.TypeApprovalExpired {
		t.Errorf("expiry recorded as %s", ev.EventType)
	}
	for _, bad := range []audit.Event{
		{EventType: audit.TypeToolExecution, ApprovalID: "x", Data: json.RawMessage(`{}`)},
		{EventType: audit.TypeApprovalDecided, ApprovalID: "x", Data: json.RawMessage(`{"id":"y","status":"approved"}`)},
		{EventType: audit.TypeApprovalDecided, ApprovalID: "x", Data: json.RawMessage(`{"id":"x","status":"maybe"}`)},
		{EventType: audit.TypeApprovalDecided, ApprovalID: "x", Data: json.RawMessage(`[`)},
	} {
		if _, err := FromEvent(bad); err == nil {
			t.Errorf("FromEvent(%s %s) accepted", bad.EventType, bad.Data)
		}
	}
}

func approved(t *testing.T) Request {
	t.Helper()
	r := mustNew(t, input())
	if err := r.Decide("bob", Approve, "", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestConsume is DESIGN §11: an approval releases one execution of exactly
// its action, by its requester, within its validity window. Before issue 13
// an approval could be used any number of times, for any action.
func TestConsume(t *testing.T) {
	hash := mustNew(t, input()).ActionHash
	at := t0.Add(2 * time.Minute)
	for _, tc := range []struct {
		name      string
		prepare   func(*Request)
		by        string
		gateway   bool
		hash      string
		now       time.Time
		wantCode  string
		wantState Status
	}{
		{name: "requester", by: "alice", hash: hash, now: at, wantState: Consumed},
		{name: "requester, other case", by: "ALICE", hash: hash, now: at, wantState: Consumed},
		{name: "gateway for the requester", by: "gate", gateway: true, hash: hash, now: at, wantState: Consumed},
		{name: "someone else", by: "mallory", hash: hash, now: at, wantCode: RefusedNotRequester},
		{name: "another action", by: "alice", hash: ActionHash(input().Resource, "write", "psql", "DROP TABLE users"), now: at, wantCode: RefusedMismatch},
		{name: "after the window", by: "alice", hash: hash, now: t0.Add(time.Minute + DefaultValidFor + time.Second), wantCode: RefusedStale},
		{name: "a shorter window", prepare: func(r *Request) { until := t0.Add(90 * time.Second); r.ValidUntil = &until }, by: "alice", hash: hash, now: at, wantCode: RefusedStale},
		{name: "second use", prepare: func(r *Request) { _ = r.Consume("alice", false, hash, at) }, by: "alice", hash: hash, now: at, wantCode: RefusedConsumed},
		{name: "pending", prepare: func(r *Request) { *r = mustNew(t, input()) }, by: "alice", hash: hash, now: at, wantCode: RefusedNotApproved},
		{name: "cancelled", prepare: func(r *Request) { _ = r.Cancel("alice", false, at) }, by: "alice", hash: hash, now: at, wantCode: RefusedNotApproved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := approved(t)
			if tc.prepare != nil {
				tc.prepare(&r)
			}
			before := r
			err := r.Consume(tc.by, tc.gateway, tc.hash, tc.now)
			var ref *Refusal
			switch {
			case tc.wantCode == "" && err != nil:
				t.Fatalf("Consume = %v", err)
			case tc.wantCode == "":
				if r.Status != tc.wantState || r.ConsumedBy != tc.by || r.ConsumedAt == nil || ChangeType(&r) != audit.TypeApprovalConsumed {
					t.Errorf("after Consume: %+v", r)
				}
			case !errors.As(err, &ref) || ref.Code != tc.wantCode:
				t.Fatalf("Consume = %v, want refusal %s", err, tc.wantCode)
			case r.Status != before.Status || r.ConsumedBy != before.ConsumedBy:
				t.Errorf("a refused Consume changed the request: %+v", r)
			}
		})
	}
}

func TestValidUntil(t *testing.T) {
	r := mustNew(t, input())
	r.ValidFor = "2m"
	if err := r.Decide("bob", Approve, "", t0); err != nil {
		t.Fatal(err)
	}
	if r.ValidUntil == nil || !r.ValidUntil.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("valid_until = %v, want approval time + 2m", r.ValidUntil)
	}
	r = mustNew(t, input())
	r.ValidFor = "48h" // beyond MaxValidFor: never longer than the default
	_ = r.Decide("bob", Approve, "", t0)
	if !r.ValidUntil.Equal(t0.Add(DefaultValidFor)) {
		t.Errorf("valid_until = %v, want the default window", r.ValidUntil)
	}
}

func TestCancel(t *testing.T) {
	at := t0.Add(time.Minute)
	r := mustNew(t, input())
	var ref *Refusal
	if err := r.Cancel("mallory", false, at); !errors.As(err, &ref) || ref.Code != RefusedNotRequester {
		t.Fatalf("Cancel by another = %v", err)
	}
	if err := r.Cancel("alice", false, at); err != nil || r.Status != Cancelled || r.CancelledBy != "alice" || r.DecidedAt == nil {
		t.Fatalf("Cancel by the requester = %v, %+v", err, r)
	}
	if ChangeType(&r) != audit.TypeApprovalCancelled {
		t.Errorf("ChangeType = %s", ChangeType(&r))
	}
	if err := r.Cancel("alice", false, at); !errors.As(err, &ref) || ref.Code != RefusedNotPending {
		t.Errorf("second Cancel = %v", err)
	}
	// An admin may withdraw an approved request nobody has used yet.
	r = approved(t)
	if err := r.Cancel("root", true, at); err != nil || r.Status != Cancelled {
		t.Errorf("admin Cancel of an approved request = %v, %+v", err, r)
	}
	if err := r.Decide("carol", Approve, "", at); !errors.As(err, &ref) || ref.Code != RefusedNotPending {
		t.Errorf("vote on a cancelled request = %v", err)
	}
}

func TestRequestedForCannotApprove(t *testing.T) {
	r := mustNew(t, input())
	r.RequestedFor = "carol@example.com"
	var ref *Refusal
	if err := r.Decide("Carol@example.com", Approve, "", t0); !errors.As(err, &ref) || ref.Code != RefusedSelfApproval {
		t.Errorf("the principal approving a request made for it = %v", err)
	}
}
