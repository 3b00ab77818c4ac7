package sqlite

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// The approval_id filter (DESIGN §11 "one use per approval", issue 13),
// as SQLite answers it: by its partial index, with NULL for events that
// cite none. What it returns is the conformance suite's QueryApprovalID.
func TestApprovalIDIndex(t *testing.T) {
	s, path := openTest(t)
	appendAll(t, s, storetest.Citing(t, 30, storetest.Every3))
	// The partial index answers it: most events cite no approval.
	var plan strings.Builder
	rows, err := rawDB(t, path).Query("EXPLAIN QUERY PLAN SELECT seq FROM events WHERE approval_id = ? ORDER BY seq", "apr-1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, parent, notused int
		var detail string
		rows.Scan(&id, &parent, &notused, &detail)
		plan.WriteString(detail + "; ")
	}
	if !strings.Contains(plan.String(), "events_approval_id") {
		t.Errorf("query plan %q does not use events_approval_id", plan.String())
	}
	var nulls int
	if err := rawDB(t, path).QueryRow("SELECT count(*) FROM events WHERE approval_id IS NULL").Scan(&nulls); err != nil || nulls != 10 {
		t.Errorf("rows with a NULL approval_id = %d, %v; want 10 (none is stored as '')", nulls, err)
	}
}

// Migration 4 on a database of version 3 fills approval_id from the
// stored bodies, and leaves a body that is not JSON alone rather than
// failing (verify-chain reports it).
func TestMigrateApprovalID(t *testing.T) {
	ctx := context.Background()
	recs := storetest.Citing(t, 30, storetest.Every3)
	// A tampered row: not JSON, though it names an approval_id.
	recs[3].Body = []byte(`{"approval_id":"apr-1",`)
	path := oldDatabase(t, 3, recs)

	// Read-only, it stays version 3: filtering on approval_id is refused
	// in words, other queries work.
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Query(ctx, store.Filter{ApprovalID: "apr-1"}); err == nil || !strings.Contains(err.Error(), "older than version 4") {
		t.Errorf("read-only Query by approval_id on version 3 = %v", err)
	}
	if got, err := ro.Query(ctx, store.Filter{Limit: 5}); err != nil || len(got) != 5 {
		t.Errorf("read-only Query on version 3 = %v, %v", storetest.Seqs(got), err)
	}
	ro.Close()

	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("migrating version 3: %v", err)
	}
	defer s.Close()
	if have, _ := schemaVersion(ctx, rawDB(t, path)); have != SchemaVersion() {
		t.Errorf("schema version %d after Open, want %d", have, SchemaVersion())
	}
	want := slices.DeleteFunc(storetest.CitingSeqs(storetest.Every3, "apr-1", 30), func(seq int64) bool { return seq == 4 })
	if got, err := s.Query(ctx, store.Filter{ApprovalID: "apr-1"}); err != nil || !slices.Equal(storetest.Seqs(got), want) {
		t.Errorf("apr-1 after migration = %v, %v; want %v", storetest.Seqs(got), err, want)
	}
	if got, err := s.Query(ctx, store.Filter{ApprovalID: "apr-2"}); err != nil || !slices.Equal(storetest.Seqs(got), storetest.CitingSeqs(storetest.Every3, "apr-2", 30)) {
		t.Errorf("apr-2 after migration = %v, %v", storetest.Seqs(got), err)
	}
	// And appends after the migration fill it.
	more := storetest.Citing(t, 31, func(int) string { return "apr-3" })[30:]
	more[0].PrevHash = recs[29].EventHash // not a valid chain; storage does not check
	appendAll(t, s, more)
	if got, err := s.Query(ctx, store.Filter{ApprovalID: "apr-3"}); err != nil || !slices.Equal(storetest.Seqs(got), []int64{31}) {
		t.Errorf("apr-3 = %v, %v; want [31]", storetest.Seqs(got), err)
	}
}

// verdicts verifies s's chain both ways verification reads a database:
// VerifyChain (verify-chain) and Scan feeding a Verifier (auditd's GET
// /api/verify). Both must give the same report.
func verdicts(t *testing.T, s *Store) audit.Report {
	t.Helper()
	ctx := context.Background()
	v, err := s.VerifyChain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scanned := audit.NewVerifier()
	if err := s.Scan(ctx, math.MinInt64, func(r audit.Record) error {
		scanned.Add(r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rep := v.Report()
	if got := scanned.Report(); !reflect.DeepEqual(got, rep) {
		t.Fatalf("Scan's verdict\n%+v\ndiffers from VerifyChain's\n%+v", got, rep)
	}
	return rep
}

// Verification compares the approval_id column with the body (DESIGN §11
// "one use per approval", issue 13): a writer with database access who
// clears or changes it to hide an earlier use from the watchers, which
// find it by GET /api/events?approval_id=, breaks the chain at that seq.
// NULL and ” both mean none for a body that cites none. A database older
// than the column (migration 4), opened read-only, verifies as before; once
// migrated, its backfilled column agrees.
func TestVerifyApprovalIDColumn(t *testing.T) {
	ctx := context.Background()
	recs := storetest.Citing(t, 30, storetest.Every3)
	s, path := openTest(t)
	appendAll(t, s, recs)
	if rep := verdicts(t, s); !rep.Verified {
		t.Fatalf("intact chain: %+v", rep.BrokenLinks)
	}
	// seq 4, 7 and 10 cite apr-1; seq 2 and 3 cite none.
	db := rawDB(t, path)
	for _, q := range []string{
		`UPDATE events SET approval_id = NULL WHERE seq = 4`,
		`UPDATE events SET approval_id = '' WHERE seq = 7`,
		`UPDATE events SET approval_id = 'apr-2' WHERE seq = 10`,
		`UPDATE events SET approval_id = '' WHERE seq = 2`,      // none either way
		`UPDATE events SET approval_id = 'apr-1' WHERE seq = 3`, // a use that is not
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	rep := verdicts(t, s)
	var got []string
	for _, l := range rep.BrokenLinks {
		got = append(got, fmt.Sprintf("%d %s", l.Seq, l.Kind))
	}
	want := []string{"3 column_mismatch", "4 column_mismatch", "7 column_mismatch", "10 column_mismatch"}
	if rep.Verified || !slices.Equal(got, want) {
		t.Errorf("broken links %v, verified %v; want %v", got, rep.Verified, want)
	}
	// The watchers' query no longer finds the cleared uses: what the check
	// is for.
	if found, err := s.Query(ctx, store.Filter{ApprovalID: "apr-1"}); err != nil || slices.Contains(storetest.Seqs(found), 4) {
		t.Errorf("Query apr-1 = %v, %v", storetest.Seqs(found), err)
	}

	// Version 3, read-only: no column, no check, verified as before.
	old := oldDatabase(t, 3, recs)
	ro, err := Open(old, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep := verdicts(t, ro); !rep.Verified || rep.TotalEvents != 30 {
		t.Errorf("version 3 read-only: %+v", rep)
	}
	ro.Close()
	// Migrated: the backfill agrees with the bodies.
	rw, err := Open(old, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if rep := verdicts(t, rw); !rep.Verified {
		t.Errorf("after migration 4: %+v", rep.BrokenLinks)
	}
}
