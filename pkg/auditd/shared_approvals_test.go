package auditd_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

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
	servers := []sharedServer{startSharedWith(t, dsn, nil), startSharedWith(t, dsn, nil)}
	for _, d := range servers {
		if err := d.srv.SetPolicy(loadPolicy(t, approvalPolicy, testInfra)); err != nil {
			t.Fatal(err)
		}
	}
	as := func(d sharedServer, user string) *client.Client {
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
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				refusal(t, err, http.StatusConflict, approval.RefusedNotPending)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d approvals succeeded, want exactly 1", round, ok)
		}
		hash := approval.ActionHash(prodWrite().Resource, "write", "psql", prodWrite().RawCommand)
		errs = errs[:2]
		for i := range errs {
			wg.Go(func() { _, errs[i] = as(servers[i], "alice").ConsumeApproval(ctx, req.ID, hash) })
		}
		wg.Wait()
		ok = 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				refusal(t, err, http.StatusConflict, approval.RefusedConsumed)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d consumptions succeeded, want exactly 1", round, ok)
		}
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
