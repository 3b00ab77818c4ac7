package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// The tree suite, as for SQLite (issue 19: one suite, two stores).
func TestTreeConformance(t *testing.T) {
	storetest.Tree(t, func(t *testing.T) storetest.TreeStore {
		s, _ := openTest(t)
		return s
	})
}

func exec(t *testing.T, s *Store, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := s.pool.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// frontierSQL reads exactly the rows frontierLeaves names, and they are
// all that extending the tree reads (no fallback query).
func TestFrontier(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	seq, prev := int64(0), audit.ZeroHash
	for _, k := range []int{1, 2, 1, 4, 3, 7, 13, 1, 1, 30} {
		recs := storetest.Records(t, seq, prev, k)
		if err := s.Append(ctx, recs); err != nil {
			t.Fatal(err)
		}
		seq, prev = recs[k-1].Seq, recs[k-1].EventHash
		rows, _ := s.pool.Query(ctx, frontierSQL)
		got, err := collectRows(rows)
		if err != nil {
			t.Fatal(err)
		}
		want := frontierLeaves(seq)
		if len(got) != len(want) {
			t.Fatalf("size %d: frontier rows %d, want %v", seq, len(got), want)
		}
		for _, leaf := range want {
			if got[leaf] == nil {
				t.Fatalf("size %d: frontier lacks leaf %d", seq, leaf)
			}
		}
		// Extending from the frontier alone: a reader that fails on any
		// other row.
		next := storetest.Records(t, seq, prev, 40)
		_, err = checkpoint.Extend(seq, storetest.Leaves(t, next), tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			return store.RowHashes(got, idx)
		}))
		if err != nil {
			t.Fatalf("size %d: extending from the frontier: %v", seq, err)
		}
	}
}

// Migration 2 backfills the tree of a database from before it (across
// syncTree's pages), with a deleted row's seq kept as a hole and an edited
// event_hash column replaced by its body's hash; a read-only store of the
// old database has no tree; Append then continues the backfilled one.
func TestTreeBackfill(t *testing.T) {
	ctx := context.Background()
	s, dsn := openTest(t)
	recs := storetest.Records(t, 0, audit.ZeroHash, syncPage+300)
	if err := s.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// Back to schema version 1, with two rows tampered with.
	exec(t, s, "DROP TABLE tree_hashes, checkpoints", "DELETE FROM schema_migrations WHERE version >= 2",
		"DELETE FROM events WHERE seq = 100", "UPDATE events SET event_hash = 'not a hash' WHERE seq = 10")
	s.Close()

	ro, err := Open(ctx, dsn, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.TreeSize(ctx); !errors.Is(err, store.ErrNoTree) {
		t.Errorf("read-only TreeSize of a version 1 database = %v, want ErrNoTree", err)
	}
	if seq, _, err := ro.Head(ctx); err != nil || seq != int64(len(recs)) {
		t.Errorf("read-only Head = %d, %v", seq, err)
	}
	ro.Close()

	s, err = Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	leaves := storetest.Leaves(t, recs)
	leaves[99], _ = checkpoint.LeafHash(audit.ZeroHash)
	n, root := storetest.StoreRoot(t, s)
	if want := storetest.Root(leaves); n != int64(len(recs)) || root != want {
		t.Fatalf("backfilled tree: size %d, root %s; want %d, %s", n, root, len(recs), want)
	}
	more := storetest.Records(t, int64(len(recs)), recs[len(recs)-1].EventHash, 5)
	if _, err := s.Sequence(ctx, drafts(t, more)); err != nil {
		t.Fatal(err)
	}
	got, _, _ := s.Head(ctx)
	stored, err := s.Query(ctx, store.Filter{AfterSeq: int64(len(recs))})
	if err != nil || int64(len(stored)) != got-int64(len(recs)) {
		t.Fatal(err)
	}
	if n, root := storetest.StoreRoot(t, s); n != got || root != storetest.Root(append(leaves, storetest.Leaves(t, stored)...)) {
		t.Fatalf("after Sequence: size %d, root %s", n, root)
	}
}

// drafts re-prepares recs' events as drafts for Sequence.
func drafts(t *testing.T, recs []audit.Record) []store.Draft {
	out := make([]store.Draft, len(recs))
	for i, r := range recs {
		d, err := audit.Prepare(audit.Event{SchemaVersion: audit.SchemaVersion, EventID: r.EventID,
			EventType: audit.TypeToolExecution, Agent: "agent-tree"})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = store.Draft{EventID: r.EventID, Draft: d, Received: r.Timestamp}
	}
	return out
}

// The tail of events deleted with SQL, and the store reopened: the tree is
// cut back to the events, the checkpoints kept, as in SQLite.
func TestTreeCutToTruncatedEvents(t *testing.T) {
	ctx := context.Background()
	s, dsn := openTest(t)
	storetest.CutToTruncatedEvents(t, s, func(recs []audit.Record) storetest.TreeStore {
		exec(t, s, "DELETE FROM events WHERE seq > 37")
		// While it runs, the store refuses to extend a tree that no
		// longer matches the events.
		if _, err := s.Sequence(ctx, drafts(t, storetest.Records(t, 37, recs[36].EventHash, 1))); !errors.Is(err, store.ErrTreeBroken) {
			t.Fatalf("Sequence over a truncated log = %v, want ErrTreeBroken", err)
		}
		s.Close()
		s, err := Open(ctx, dsn, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// Several stores sequencing at once on one database extend one tree: its
// root is the one over the chain they made.
func TestTreeConcurrentSequencers(t *testing.T) {
	ctx := context.Background()
	_, dsn := openTest(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for w := range errs {
		wg.Go(func() {
			s, err := Open(ctx, dsn, Options{MaxConns: 2})
			if err != nil {
				errs[w] = err
				return
			}
			defer s.Close()
			for i := range 20 {
				var ds []store.Draft
				for j := range 1 + i%5 {
					d, _ := audit.Prepare(audit.Event{SchemaVersion: audit.SchemaVersion, EventID: fmt.Sprintf("w%d-%d-%d", w, i, j),
						EventType: audit.TypeToolExecution, Agent: "agent-tree"})
					ds = append(ds, store.Draft{EventID: fmt.Sprintf("w%d-%d-%d", w, i, j), Draft: d})
				}
				if _, err := s.Sequence(ctx, ds); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, dsn, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all, err := s.Query(ctx, store.Filter{Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if n, root := storetest.StoreRoot(t, s); n != int64(len(all)) || root != storetest.Root(storetest.Leaves(t, all)) {
		t.Fatalf("tree of %d events: size %d, root %s", len(all), n, root)
	}
}

// One leader at a time for checkpoints: a second candidate is refused while
// the first leads; it takes over when the first resigns, and when the
// first's session is killed (the leader died), which the first then sees.
func TestCheckpointLeader(t *testing.T) {
	ctx := context.Background()
	s, dsn := openTest(t)
	other, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a, b := s.CheckpointLeader(), other.CheckpointLeader()
	defer a.Resign()
	defer b.Resign()
	lead := func(l store.Leader, want bool, what string) {
		t.Helper()
		if got, err := l.Lead(ctx); err != nil && want || got != want {
			t.Fatalf("%s: Lead = %v, %v; want %v", what, got, err, want)
		}
	}
	lead(a, true, "a first")
	lead(a, true, "a again")
	lead(b, false, "b while a leads")
	a.Resign()
	lead(b, true, "b after a resigned")
	lead(a, false, "a after b took over")
	// b's session dies (its process was killed): a takes over, and b,
	// asked, knows it no longer leads.
	// A bigint key is (classid, objid) = (high, low 32 bits) in pg_locks.
	exec(t, s, fmt.Sprintf("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = %d AND objid = %d AND objsubid = 1 AND granted",
		CheckpointLock>>32, CheckpointLock&0xffffffff))
	// pg_terminate_backend signals the backend, which releases the lock
	// as it exits, a moment later.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok, _ := a.Lead(ctx); ok {
			break
		}
	}
	lead(a, true, "a after b's session ended")
	lead(b, false, "b after its session ended")
	lead(b, false, "b tries again")
}
