package auditd_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
)

// approveFully approves id with as many approvers as its quorum needs.
func approveFully(t *testing.T, d *daemon, id string) {
	t.Helper()
	for _, by := range []string{"bob", "carol", "dave"} {
		r, err := d.as(t, by).Approve(ctxT(t), id, "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == approval.Approved {
			return
		}
	}
	t.Fatalf("approval %s not approved by three approvers", id)
}

// The approvals table edited under a running auditd (DESIGN §11, issue 13:
// the chain is the source of truth for approvals): GET /api/verify
// replays the approval events and reports an approval_mismatch for each
// request whose row disagrees, including a row rolled back to the state
// before its last change, which auditd, holding its approvals lock, knows
// is no change in flight, and an edit that a later vote carried into the
// chain, where the row now agrees with it.
func TestVerifyApprovalMismatch(t *testing.T) {
	d := startGoverned(t, nil)
	ctx := ctxT(t)
	in := approval.Input{Resource: audit.Resource{Type: "database", Name: "prod-db"}, Action: "write", Tool: "psql",
		RawCommand: "UPDATE users SET plan = 'pro' WHERE id = 7", Reason: "customer upgrade"}
	alice := d.as(t, "alice")
	pending, err := alice.RequestApproval(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	approved, err := alice.RequestApproval(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	approveFully(t, d, approved.ID)
	laundered, err := alice.RequestApproval(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := d.c.Verify(ctx); err != nil || !rep.Verified || len(rep.BrokenLinks) != 0 {
		t.Fatalf("before the edit: %+v, %v", rep, err)
	}

	raw, err := sql.Open("sqlite", d.db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// One request approved by hand; the other rolled back to the state its
	// request event recorded, pending and approvable again.
	if _, err := raw.Exec(`UPDATE approvals SET status = 'approved', request = json_set(request, '$.status', 'approved') WHERE id = ?`, pending.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE approvals SET (seq, status, request) = (
		SELECT seq, 'pending', json_extract(CAST(body AS TEXT), '$.data') FROM events
		WHERE event_type = 'approval_requested' AND json_extract(CAST(body AS TEXT), '$.approval_id') = approvals.id)
		WHERE id = ?`, approved.ID); err != nil {
		t.Fatal(err)
	}
	if r, err := alice.Approval(ctx, approved.ID); err != nil || r.Status != approval.Pending {
		t.Fatalf("rolled back row served as %+v, %v", r.Status, err)
	}
	// A made-up vote, then a real one: auditd decides on the row it reads
	// and records the made-up vote in the chain with the real one.
	if _, err := raw.Exec(`UPDATE approvals SET request = json_set(request, '$.votes', json('[{"by":"mallory","decision":"approve","at":"2026-01-01T00:00:00Z"}]')) WHERE id = ?`, laundered.ID); err != nil {
		t.Fatal(err)
	}
	if r, err := d.as(t, "bob").Approve(ctx, laundered.ID, ""); err != nil || len(r.Votes) != 2 {
		t.Fatalf("vote on the edited row: %+v, %v", r, err)
	}

	rep, err := d.c.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verified || len(rep.BrokenLinks) != 3 {
		t.Fatalf("after the edit: %+v", rep)
	}
	got := map[string]audit.BrokenLink{}
	for _, l := range rep.BrokenLinks {
		if l.Kind != audit.KindApprovalMismatch || l.EventID == "" {
			t.Errorf("link %+v", l)
		}
		got[l.ApprovalID] = l
	}
	if l := got[pending.ID]; !strings.HasPrefix(l.Detail, "status, column.status differ from the chain at seq ") {
		t.Errorf("approved by hand: %+v", l)
	}
	if l := got[approved.ID]; !strings.HasPrefix(l.Detail, "stale: the row is the state of seq ") || !strings.Contains(l.Detail, `status "pending" in the table, "approved" in the chain`) {
		t.Errorf("rolled back: %+v", l)
	}
	if l := got[laundered.ID]; !strings.HasPrefix(l.Detail, "history: the event at seq ") || !strings.Contains(l.Detail, "votes none at seq ") ||
		!strings.Contains(l.Detail, "[mallory:approve, bob:approve] at seq ") {
		t.Errorf("laundered: %+v", l)
	}
	if h, err := d.c.Health(ctx); err != nil || h.Chain != "broken" {
		t.Errorf("health = %+v, %v; want the chain broken", h, err)
	}
}
