package notify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
)

// created is when the sample request was made; now is one second later, so
// its five-minute TTL reads "expires in 4m59s, at 10:05:00 UTC".
var (
	created = time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	now     = created.Add(time.Second)
)

const (
	testID      = "apr_01HX"
	testBase    = "http://auditd.internal:1199"
	explanation = "Access to prod-db (tags: production) for write: REQUIRES APPROVAL from 2 approvers"
)

// pending is a real request from the approval package, as auditd makes it.
func pending(t *testing.T) approval.Request {
	t.Helper()
	pd, _ := json.Marshal(map[string]any{
		"decision":    map[string]any{"effect": "require_approval", "policy_name": "prod-db-guard", "rule_index": 1, "approval_quorum": 2},
		"explanation": explanation,
	})
	r, err := approval.New(approval.Input{
		Resource:       audit.Resource{Type: "database", Name: "prod-db", Tags: []string{"production", "pii"}},
		Action:         "write",
		Tool:           "psql",
		RawCommand:     `psql -c "UPDATE orders SET state='open' WHERE id=7"`,
		Reason:         "unstick order 7",
		Quorum:         2,
		PolicyDecision: pd,
	}, testID, "alice", created, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// denied is pending, denied by carol after bob approved.
func denied(t *testing.T) approval.Request {
	t.Helper()
	r := pending(t)
	if err := r.Decide("bob", approval.Approve, "looks fine", created.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := r.Decide("carol", approval.Deny, "not during the freeze", created.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return r
}

// approved is pending, approved by bob and then dave (quorum 2).
func approved(t *testing.T) approval.Request {
	t.Helper()
	r := pending(t)
	if err := r.Decide("bob", approval.Approve, "", created.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := r.Decide("dave", approval.Approve, "ticket OPS-12", created.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return r
}

func expired(t *testing.T) approval.Request {
	t.Helper()
	r := pending(t)
	if !r.Expire(created.Add(6 * time.Minute)) {
		t.Fatal("request did not expire")
	}
	return r
}
