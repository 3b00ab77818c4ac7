package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/store"
)

// TreeStore is a store that keeps the Merkle tree.
type TreeStore interface {
	store.Store
	store.Tree
}

// Records returns n sealed records continuing a chain after (seq, prev),
// as auditd's writer makes them.
func Records(t testing.TB, seq int64, prev string, n int) []audit.Record {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := make([]audit.Record, n)
	for i := range out {
		d, err := audit.Prepare(audit.Event{
			SchemaVersion: audit.SchemaVersion,
			EventID:       fmt.Sprintf("evt-tree-%08d", seq+1),
			EventType:     audit.TypeToolExecution,
			Agent:         "agent-tree",
		})
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = d.Seal(seq+1, prev, at.Add(time.Duration(seq)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		seq, prev = out[i].Seq, out[i].EventHash
	}
	return out
}

// Tree checks a store's Merkle tree and checkpoints (store.Tree, issue 19)
// on a new, empty store that open returns (and the caller closes):
// Append extends the tree in the records' transaction, its root and
// proofs are RFC 6962's as pkg/checkpoint computes them, a batch that
// does not continue the tree is refused whole, and checkpoints are kept
// one per size, never replaced.
func Tree(t *testing.T, open func(t *testing.T) TreeStore) {
	ctx := context.Background()
	t.Run("Grows", func(t *testing.T) {
		s := open(t)
		if n, err := s.TreeSize(ctx); err != nil || n != 0 {
			t.Fatalf("TreeSize of an empty store = %d, %v", n, err)
		}
		rng := rand.New(rand.NewPCG(19, 1))
		var mem []tlog.Hash // the same tree, in memory
		memReader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(idx))
			for i, x := range idx {
				out[i] = mem[x]
			}
			return out, nil
		})
		var all []audit.Record
		seq, prev := int64(0), audit.ZeroHash
		for range 25 {
			batch := Records(t, seq, prev, 1+rng.IntN(40))
			if err := s.Append(ctx, batch); err != nil {
				t.Fatal(err)
			}
			hs, err := checkpoint.Extend(seq, Leaves(t, batch), memReader)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hs {
				mem = append(mem, h...)
			}
			all = append(all, batch...)
			seq, prev = batch[len(batch)-1].Seq, batch[len(batch)-1].EventHash

			n, err := s.TreeSize(ctx)
			if err != nil || n != seq {
				t.Fatalf("TreeSize = %d, %v; want %d", n, err, seq)
			}
			got, err := tlog.TreeHash(n, store.HashReader(ctx, s))
			want, _ := tlog.TreeHash(n, memReader)
			if err != nil || got != want {
				t.Fatalf("root at %d = %s, %v; want %s", n, got, err, want)
			}
		}
		// Proofs from the store check against roots of any earlier size.
		r := store.HashReader(ctx, s)
		for range 30 {
			size := 1 + rng.Int64N(seq)
			rec := all[rng.Int64N(size)]
			root, err := tlog.TreeHash(size, r)
			if err != nil {
				t.Fatal(err)
			}
			cp := checkpoint.Checkpoint{Origin: "storetest", Size: size, Root: root}
			p, err := checkpoint.ProveInclusion(rec.Seq, rec.EventHash, size, r)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Verify(cp); err != nil {
				t.Fatal(err)
			}
			from := 1 + rng.Int64N(size)
			oldRoot, _ := tlog.TreeHash(from, r)
			c, err := checkpoint.ProveConsistency(from, size, r)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Verify(checkpoint.Checkpoint{Origin: "storetest", Size: from, Root: oldRoot}, cp); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.ReadHashes(ctx, []int64{tlog.StoredHashCount(seq)}); !errors.Is(err, store.ErrTreeBroken) {
			t.Errorf("ReadHashes past the tree = %v, want ErrTreeBroken", err)
		}
	})

	t.Run("RefusesGap", func(t *testing.T) {
		s := open(t)
		first := Records(t, 0, audit.ZeroHash, 3)
		if err := s.Append(ctx, first); err != nil {
			t.Fatal(err)
		}
		// A batch starting past the tree's end: refused, nothing stored.
		gap := Records(t, 4, first[2].EventHash, 2)
		if err := s.Append(ctx, gap); !errors.Is(err, store.ErrTreeBroken) {
			t.Fatalf("Append after a gap = %v, want ErrTreeBroken", err)
		}
		if seq, _, err := s.Head(ctx); err != nil || seq != 3 {
			t.Fatalf("Head after the refused batch = %d, %v; want 3", seq, err)
		}
		if n, err := s.TreeSize(ctx); err != nil || n != 3 {
			t.Fatalf("TreeSize after the refused batch = %d, %v; want 3", n, err)
		}
		if err := s.Append(ctx, Records(t, 3, first[2].EventHash, 2)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Checkpoints", func(t *testing.T) {
		s := open(t)
		if _, ok, err := s.LatestCheckpoint(ctx); ok || err != nil {
			t.Fatalf("LatestCheckpoint of an empty store: %v, %v", ok, err)
		}
		at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
		put := func(size int64, note string) error {
			return s.PutCheckpoint(ctx, store.StoredCheckpoint{Size: size, Note: []byte(note), CreatedAt: at.Add(time.Duration(size) * time.Second)})
		}
		for _, size := range []int64{10, 30, 20} {
			if err := put(size, fmt.Sprintf("note %d\n", size)); err != nil {
				t.Fatal(err)
			}
		}
		if err := put(20, "note 20\n"); err != nil {
			t.Errorf("putting the same note again: %v", err)
		}
		if err := put(20, "another note 20\n"); !errors.Is(err, store.ErrCheckpointExists) {
			t.Errorf("another note of size 20: %v, want ErrCheckpointExists", err)
		}
		c, ok, err := s.LatestCheckpoint(ctx)
		if err != nil || !ok || c.Size != 30 || string(c.Note) != "note 30\n" || !c.CreatedAt.Equal(at.Add(30*time.Second)) {
			t.Fatalf("LatestCheckpoint = %+v, %v, %v", c, ok, err)
		}
		c, ok, err = s.Checkpoint(ctx, 20)
		if err != nil || !ok || string(c.Note) != "note 20\n" {
			t.Fatalf("Checkpoint(20) = %+v, %v, %v", c, ok, err)
		}
		if _, ok, err := s.Checkpoint(ctx, 21); ok || err != nil {
			t.Fatalf("Checkpoint(21) = %v, %v", ok, err)
		}
		list, err := s.Checkpoints(ctx, 10, 0)
		if err != nil || len(list) != 2 || list[0].Size != 20 || list[1].Size != 30 {
			t.Fatalf("Checkpoints(after 10) = %+v, %v", list, err)
		}
		if list, err := s.Checkpoints(ctx, 0, 1); err != nil || len(list) != 1 || list[0].Size != 10 {
			t.Fatalf("Checkpoints(limit 1) = %+v, %v", list, err)
		}
	})
}

// CutToTruncatedEvents checks what a store does when the tail of its
// events is deleted with SQL and the store is opened again (auditd
// restarted; tail truncation, issue 19): the tree is cut back to the
// events, the checkpoints are kept (the evidence that the log was longer,
// which verify-chain and auditor compare), and appends continue from
// there. s is a new, empty store; truncate, given the 50 records appended,
// deletes the events after seq 37, closes s and returns the store opened
// again, which it closes at the end of the test.
func CutToTruncatedEvents(t *testing.T, s TreeStore, truncate func(recs []audit.Record) TreeStore) {
	ctx := context.Background()
	recs := Records(t, 0, audit.ZeroHash, 50)
	if err := s.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCheckpoint(ctx, store.StoredCheckpoint{Size: 50, Note: []byte("signed 50\n")}); err != nil {
		t.Fatal(err)
	}
	s = truncate(recs)
	if n, root := StoreRoot(t, s); n != 37 || root != Root(Leaves(t, recs[:37])) {
		t.Fatalf("tree after the truncation: size %d, root %s", n, root)
	}
	if c, ok, err := s.LatestCheckpoint(ctx); err != nil || !ok || c.Size != 50 {
		t.Fatalf("LatestCheckpoint = %+v, %v, %v; want the one of size 50, kept", c, ok, err)
	}
	if err := s.Append(ctx, Records(t, 37, recs[36].EventHash, 3)); err != nil {
		t.Fatal(err)
	}
	if n, _ := StoreRoot(t, s); n != 40 {
		t.Fatalf("tree size after appending = %d, want 40", n)
	}
}

// Leaves are the tree's leaves of records, from their event hashes.
func Leaves(t testing.TB, recs []audit.Record) []tlog.Hash {
	t.Helper()
	out := make([]tlog.Hash, len(recs))
	for i, r := range recs {
		var err error
		if out[i], err = checkpoint.LeafHash(r.EventHash); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Root is the RFC 6962 root over leaves, computed in memory by
// checkpoint.Frontier, independently of any store's tree.
func Root(leaves []tlog.Hash) tlog.Hash {
	var f checkpoint.Frontier
	for _, l := range leaves {
		f.Append(l)
	}
	return f.Root()
}

// StoreRoot is the size of s's tree and its root, read from the store.
func StoreRoot(t testing.TB, s store.Tree) (int64, tlog.Hash) {
	t.Helper()
	ctx := context.Background()
	n, err := s.TreeSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tlog.TreeHash(n, store.HashReader(ctx, s))
	if err != nil {
		t.Fatal(err)
	}
	return n, h
}
