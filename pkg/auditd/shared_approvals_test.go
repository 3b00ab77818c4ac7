package auditd_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/pgtest"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/postgres"
)

// Votes and consumptions of one request through two auditd servers on one
// PostgreSQL database, at once (issue 19): the request's lock in the
// database serialises them as auditd's own lock does within one process.
// Each round, four approvers vote through both servers: exactly one vote
// decides, the others are refused as not pending; then the requester
// consumes it through both servers at once: exactly one consumption, the
// other refused as consumed. The chain records one decision and one
// consumption per request, and the approvals table verifies against it.
func TestSharedApprovalRace(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	servers := []served{startSharedWith(t, dsn, nil), startSharedWith(t, dsn, nil)}
	for _, d := range servers {
		if err := d.srv.SetPolicy(loadPolicy(t, approvalPolicy, testInfra)); err != nil {
			t.Fatal(err)
		}
	}
	as := func(d served, user string) *client.Client {
		c, err := client.New(d.url, client.WithUser(user))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := ctxT(t)
	const rounds = 8
	for round := range rounds {
		req, err := as(servers[round%2], "alice").RequestApproval(ctx, prodWrite())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i, who := range []string{"bob", "carol", "dave", "erin"} {
			wg.Go(func() { _, errs[i] = as(servers[i%2], who).Approve(ctx, req.ID, "") })
		}
		wg.Wait()
		exactlyOne(t, errs, http.StatusConflict, approval.RefusedNotPending, fmt.Sprintf("round %d: approvals", round))
		hash := approval.ActionHash(prodWrite().Resource, "write", "psql", prodWrite().RawCommand)
		errs = errs[:2]
		for i := range errs {
			wg.Go(func() { _, errs[i] = as(servers[i], "alice").ConsumeApproval(ctx, req.ID, hash) })
		}
		wg.Wait()
		exactlyOne(t, errs, http.StatusConflict, approval.RefusedConsumed, fmt.Sprintf("round %d: consumptions", round))
		for _, d := range servers {
			r, err := d.c.Approval(ctx, req.ID)
			if err != nil || r.Status != approval.Consumed || len(r.Votes) != 1 {
				t.Fatalf("round %d through %s: %+v, %v", round, d.url, r, err)
			}
		}
	}

	db, err := postgres.Open(ctx, dsn, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := map[string]int{}
	for _, typ := range []string{audit.TypeApprovalDecided, audit.TypeApprovalConsumed} {
		recs, err := db.Query(ctx, store.Filter{EventType: typ, Limit: store.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		count[typ] = len(recs)
	}
	if want := (map[string]int{audit.TypeApprovalDecided: rounds, audit.TypeApprovalConsumed: rounds}); fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("approval events: %v, want %v", count, want)
	}
	rep, err := servers[0].c.Verify(ctx)
	if err != nil || !rep.Verified {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// A requester long-polling one instance learns of a decision made through
// another at once (issue 19): the follower that streams other instances'
// events also wakes the approval waiters. Before, the waiter slept until
// its wait ran out.
func TestSharedApprovalWaitWakes(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	servers := []served{startSharedWith(t, dsn, nil), startSharedWith(t, dsn, nil)}
	for _, d := range servers {
		if err := d.srv.SetPolicy(loadPolicy(t, approvalPolicy, testInfra)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxT(t)
	alice, err := client.New(servers[1].url, client.WithUser("alice"))
	if err != nil {
		t.Fatal(err)
	}
	bob, err := client.New(servers[0].url, client.WithUser("bob"))
	if err != nil {
		t.Fatal(err)
	}
	for _, decide := range []func(id string) error{
		func(id string) error { _, err := bob.Approve(ctx, id, "ok"); return err },
		func(id string) error { _, err := bob.Deny(ctx, id, "no"); return err },
	} {
		req, err := alice.RequestApproval(ctx, prodWrite())
		if err != nil {
			t.Fatal(err)
		}
		type answer struct {
			r   approval.Request
			err error
		}
		done := make(chan answer, 1)
		go func() {
			// The server would hold the wait for a minute and then
			// answer with the row as it is then, approved or not: the
			// caller gives up after 20 s, long before, so that only a
			// wake-up answers it.
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			r, err := alice.WaitApproval(wctx, req.ID, time.Minute)
			done <- answer{r, err}
		}()
		// The wait must be in place before the decision; the decision
		// itself is what the test is about, so poll server 1's view of
		// its own waiters instead of sleeping.
		waitFor(t, "the long-poll to start", func() bool {
			return metricAt(t, servers[1].url, "govkit_auditd_approval_waiters") == "1"
		})
		if err := decide(req.ID); err != nil {
			t.Fatal(err)
		}
		a := <-done
		if a.err != nil {
			t.Fatalf("the long-poll on the other instance was not woken by the decision: %v", a.err)
		}
		if a.r.Status == approval.Pending {
			t.Fatalf("the long-poll on the other instance answered %s: the decision did not wake it", a.r.Status)
		}
	}
}
