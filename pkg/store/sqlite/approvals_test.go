package sqlite

import (
	"context"
	"slices"
	"testing"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// The snapshot holds the table and the approval events, and an edit with
// plain SQL shows as a mismatch.
func TestApprovalsSnapshot(t *testing.T) {
	s, path := openTest(t)
	id := storetest.ApprovalLog(t, s).ID
	ctx := context.Background()
	snap, ok, err := s.ApprovalsSnapshot(ctx)
	if err != nil || !ok {
		t.Fatalf("ApprovalsSnapshot = %v, %v", ok, err)
	}
	var seqs []int64
	for _, rec := range snap.Events {
		seqs = append(seqs, rec.Seq)
	}
	if snap.Origin != 0 || len(snap.Rows) != 1 || snap.Rows[0].ID != id || snap.Rows[0].Seq != 3 || snap.Rows[0].Status != "approved" ||
		!slices.Equal(seqs, []int64{2, 3}) {
		t.Fatalf("snapshot: origin %d, rows %+v, event seqs %v", snap.Origin, snap.Rows, seqs)
	}
	if ms, err := snap.Mismatches(true); err != nil || len(ms) != 0 {
		t.Fatalf("intact: %+v, %v", ms, err)
	}

	db := rawDB(t, path)
	defer db.Close()
	if _, err := db.Exec(`UPDATE approvals SET request = json_set(request, '$.quorum', 0) WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	snap, _, err = s.ApprovalsSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := snap.Mismatches(true)
	if err != nil || len(ms) != 1 || ms[0].ApprovalID != id || ms[0].Kind != approval.MismatchDiffers ||
		!slices.Equal(ms[0].Fields, []string{"quorum"}) || ms[0].Seq != 3 || ms[0].EventID != "evt_3" {
		t.Fatalf("quorum edited: %+v, %v", ms, err)
	}
}

// An old database opened read-only has no approvals table: nothing to
// compare, and no error.
func TestApprovalsSnapshotOlderSchema(t *testing.T) {
	path := oldDatabase(t, 1, sealed(t, 3))
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if snap, ok, err := ro.ApprovalsSnapshot(context.Background()); ok || err != nil || snap.Rows != nil {
		t.Fatalf("ApprovalsSnapshot on version 1 = %+v, %v, %v", snap, ok, err)
	}
}
