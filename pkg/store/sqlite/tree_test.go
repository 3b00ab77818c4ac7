package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

func TestTreeConformance(t *testing.T) {
	storetest.Tree(t, func(t *testing.T) storetest.TreeStore {
		s, _ := openTest(t)
		return s
	})
}

// Migration 5 backfills the tree of a database from before it, with a
// deleted row's seq kept as a hole (the zero hash's leaf) and an edited
// event_hash column replaced by its body's hash; Append then continues it.
func TestTreeBackfill(t *testing.T) {
	recs := storetest.Records(t, 0, audit.ZeroHash, 300)
	stored := append([]audit.Record(nil), recs...)
	stored = append(stored[:99], stored[100:]...) // seq 100 deleted
	stored[9].EventHash = "not a hash"            // seq 10's column edited
	path := oldDatabase(t, 4, stored)

	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	leaves := storetest.Leaves(t, recs)
	leaves[99], _ = checkpoint.LeafHash(audit.ZeroHash)
	n, root := storetest.StoreRoot(t, s)
	if n != 300 || root != storetest.Root(leaves) {
		t.Fatalf("backfilled tree: size %d, root %s; want 300, %s", n, root, storetest.Root(leaves))
	}
	more := storetest.Records(t, 300, recs[299].EventHash, 5)
	if err := s.Append(context.Background(), more); err != nil {
		t.Fatal(err)
	}
	if n, root := storetest.StoreRoot(t, s); n != 305 || root != storetest.Root(append(leaves, storetest.Leaves(t, more)...)) {
		t.Fatalf("after Append: size %d, root %s", n, root)
	}
}

// The tail of events deleted with SQL, and the store reopened (auditd
// restarted): the tree is cut back to the events, the checkpoints kept.
func TestTreeCutToTruncatedEvents(t *testing.T) {
	s, path := openTest(t)
	storetest.CutToTruncatedEvents(t, s, func([]audit.Record) storetest.TreeStore {
		s.Close()
		if _, err := rawDB(t, path).Exec("DELETE FROM events WHERE seq > 37"); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// A batch that fails (a duplicate event_id) leaves no tree hash behind.
func TestTreeRollback(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	recs := storetest.Records(t, 0, audit.ZeroHash, 10)
	appendAll(t, s, recs[:5])
	bad := append([]audit.Record(nil), recs[5:]...)
	bad[3].EventID = recs[0].EventID
	if err := s.Append(ctx, bad); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("Append with a duplicate = %v", err)
	}
	if n, err := s.TreeSize(ctx); err != nil || n != 5 {
		t.Fatalf("TreeSize after the failed batch = %d, %v; want 5", n, err)
	}
	appendAll(t, s, recs[5:])
	if n, root := storetest.StoreRoot(t, s); n != 10 || root != storetest.Root(storetest.Leaves(t, recs)) {
		t.Fatalf("size %d, root %s", n, root)
	}
}

// A read-only Store of a database older than the tree reads events as
// before, and says it has no tree.
func TestTreeReadOnlyOld(t *testing.T) {
	path := oldDatabase(t, 4, storetest.Records(t, 0, audit.ZeroHash, 3))
	s, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.TreeSize(context.Background()); !errors.Is(err, store.ErrNoTree) {
		t.Fatalf("TreeSize = %v, want ErrNoTree", err)
	}
	if _, _, err := s.LatestCheckpoint(context.Background()); !errors.Is(err, store.ErrNoTree) {
		t.Fatalf("LatestCheckpoint = %v, want ErrNoTree", err)
	}
}
