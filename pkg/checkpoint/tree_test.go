package checkpoint_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/checkpoint"
)

// memTree is a tree's stored hashes in memory, as a store keeps them.
type memTree []tlog.Hash

func (m memTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		if idx < 0 || idx >= int64(len(m)) {
			return nil, fmt.Errorf("no stored hash %d (have %d)", idx, len(m))
		}
		out[i] = m[idx]
	}
	return out, nil
}

// eventHash is a made-up event_hash for seq.
func eventHash(seq int64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "event %d", seq))
	return hex.EncodeToString(sum[:])
}

// build appends records 1..n in batches of random sizes with Extend.
func build(t testing.TB, rng *rand.Rand, n int64) memTree {
	t.Helper()
	var m memTree
	for size := int64(0); size < n; {
		k := min(n-size, 1+rng.Int64N(40))
		leaves := make([]tlog.Hash, k)
		for i := range leaves {
			var err error
			if leaves[i], err = checkpoint.LeafHash(eventHash(size + int64(i) + 1)); err != nil {
				t.Fatal(err)
			}
		}
		hs, err := checkpoint.Extend(size, leaves, m)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(m)) != tlog.StoredHashCount(size) {
			t.Fatalf("before size %d: %d stored hashes, want %d", size, len(m), tlog.StoredHashCount(size))
		}
		for _, h := range hs {
			m = append(m, h...)
		}
		size += k
		if int64(len(m)) != tlog.StoredHashCount(size) {
			t.Fatalf("at size %d: %d stored hashes, want %d", size, len(m), tlog.StoredHashCount(size))
		}
	}
	return m
}

// mth is RFC 6962 §2.1's Merkle Tree Hash of the leaves of records
// lo+1..hi, written from the RFC, independently of tlog.
func mth(lo, hi int64) [32]byte {
	if hi-lo == 1 {
		b, _ := hex.DecodeString(eventHash(hi))
		return sha256.Sum256(append([]byte{0}, b...))
	}
	k := int64(1)
	for k*2 < hi-lo {
		k *= 2
	}
	l, r := mth(lo, lo+k), mth(lo+k, hi)
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

// TestTreeProperty: for random sizes, a tree built in random batches with
// Extend has the RFC 6962 root, and its inclusion and consistency proofs
// pass tlog's own checkers (issue 19: "verified against tlog's own checker
// for random sizes"), through Verify with checkpoints; a proof about
// another record or size fails.
func TestTreeProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 6962))
	for range 40 {
		size := 1 + rng.Int64N(600)
		m := build(t, rng, size)
		roots := map[int64]tlog.Hash{}
		root := func(n int64) tlog.Hash {
			if h, ok := roots[n]; ok {
				return h
			}
			h, err := tlog.TreeHash(n, m)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 && h != mth(0, n) {
				t.Fatalf("size %d: root %s is not RFC 6962's", n, h)
			}
			roots[n] = h
			return h
		}
		cp := func(n int64) checkpoint.Checkpoint {
			return checkpoint.Checkpoint{Origin: "test/log", Size: n, Root: root(n)}
		}
		for range 10 {
			// Inclusion of a random seq ≤ a random tree size ≤ size.
			treeSize := 1 + rng.Int64N(size)
			seq := 1 + rng.Int64N(treeSize)
			p, err := checkpoint.ProveInclusion(seq, eventHash(seq), treeSize, m)
			if err != nil {
				t.Fatal(err)
			}
			leaf, _ := checkpoint.LeafHash(eventHash(seq))
			if err := tlog.CheckRecord(p.Hashes, treeSize, root(treeSize), seq-1, leaf); err != nil {
				t.Fatalf("seq %d in size %d: tlog.CheckRecord: %v", seq, treeSize, err)
			}
			if err := p.Verify(cp(treeSize)); err != nil {
				t.Fatalf("seq %d in size %d: %v", seq, treeSize, err)
			}
			other := p
			other.EventHash = eventHash(seq + 1)
			if err := other.Verify(cp(treeSize)); !errors.Is(err, checkpoint.ErrProof) {
				t.Fatalf("seq %d in size %d with another event's hash: %v, want ErrProof", seq, treeSize, err)
			}
			if treeSize < size {
				if err := p.Verify(cp(treeSize + 1)); !errors.Is(err, checkpoint.ErrProof) {
					t.Fatalf("proof for size %d against size %d: %v, want ErrProof", treeSize, treeSize+1, err)
				}
			}

			// Consistency of random from ≤ to ≤ size.
			to := 1 + rng.Int64N(size)
			from := 1 + rng.Int64N(to)
			c, err := checkpoint.ProveConsistency(from, to, m)
			if err != nil {
				t.Fatal(err)
			}
			if err := tlog.CheckTree(c.Hashes, to, root(to), from, root(from)); err != nil {
				t.Fatalf("%d → %d: tlog.CheckTree: %v", from, to, err)
			}
			if err := c.Verify(cp(from), cp(to)); err != nil {
				t.Fatalf("%d → %d: %v", from, to, err)
			}
			if from < to && from > 1 {
				// A rewritten prefix: the old checkpoint's root is another tree's.
				forged := cp(from)
				forged.Root = root(from - 1)
				if err := c.Verify(forged, cp(to)); !errors.Is(err, checkpoint.ErrProof) {
					t.Fatalf("%d → %d with a forged old root: %v, want ErrProof", from, to, err)
				}
			}
		}
	}
}

func TestConsistencyFromZero(t *testing.T) {
	m := build(t, rand.New(rand.NewPCG(1, 2)), 5)
	p, err := checkpoint.ProveConsistency(0, 5, m)
	if err != nil || len(p.Hashes) != 0 {
		t.Fatalf("ProveConsistency(0, 5) = %v, %v; want an empty proof", p, err)
	}
	empty, _ := tlog.TreeHash(0, nil)
	r5, _ := tlog.TreeHash(5, m)
	if err := p.Verify(checkpoint.Checkpoint{Origin: "o", Root: empty}, checkpoint.Checkpoint{Origin: "o", Size: 5, Root: r5}); err != nil {
		t.Fatal(err)
	}
	if err := p.Verify(checkpoint.Checkpoint{Origin: "o", Root: r5}, checkpoint.Checkpoint{Origin: "o", Size: 5, Root: r5}); !errors.Is(err, checkpoint.ErrProof) {
		t.Fatalf("size 0 with a non-empty root: %v, want ErrProof", err)
	}
	if err := p.Verify(checkpoint.Checkpoint{Origin: "o", Root: empty}, checkpoint.Checkpoint{Origin: "other", Size: 5, Root: r5}); !errors.Is(err, checkpoint.ErrProof) {
		t.Fatalf("two origins: %v, want ErrProof", err)
	}
}

// StoredAt finds every stored index in the hashes of the leaf that wrote
// it, at its place there.
func TestStoredAt(t *testing.T) {
	for n := int64(0); n < 3000; n++ {
		count := tlog.StoredHashCount(n+1) - tlog.StoredHashCount(n)
		for l := range count {
			idx := tlog.StoredHashIndex(0, n) + l
			if leaf, level := checkpoint.StoredAt(idx); leaf != n || int64(level) != l {
				t.Fatalf("StoredAt(%d) = %d, %d; want leaf %d, level %d", idx, leaf, level, n, l)
			}
		}
	}
}

func TestLeafHash(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{eventHash(1), true},
		{"", false},
		{eventHash(1)[:63], false},
		{eventHash(1) + "0", false},
		{"ABCDEF" + eventHash(1)[6:], false}, // event hashes are lowercase (audit.IsHash)
		{"zz" + eventHash(1)[2:], false},
	} {
		h, err := checkpoint.LeafHash(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("LeafHash(%q) error = %v, want ok %v", tc.in, err, tc.ok)
		}
		if tc.ok {
			b, _ := hex.DecodeString(tc.in)
			if want := sha256.Sum256(append([]byte{0}, b...)); h != want {
				t.Errorf("LeafHash(%q) = %x, want SHA-256(0x00 || hash) %x", tc.in, h, want)
			}
		}
	}
}

func TestProveRefuses(t *testing.T) {
	m := build(t, rand.New(rand.NewPCG(3, 4)), 10)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"seq 0", func() error { _, err := checkpoint.ProveInclusion(0, eventHash(1), 10, m); return err }()},
		{"seq past size", func() error { _, err := checkpoint.ProveInclusion(11, eventHash(1), 10, m); return err }()},
		{"bad hash", func() error { _, err := checkpoint.ProveInclusion(1, "x", 10, m); return err }()},
		{"size past tree", func() error { _, err := checkpoint.ProveInclusion(1, eventHash(1), 11, m); return err }()},
		{"from > to", func() error { _, err := checkpoint.ProveConsistency(5, 4, m); return err }()},
		{"negative", func() error { _, err := checkpoint.ProveConsistency(-1, 4, m); return err }()},
		{"extend negative", func() error { _, err := checkpoint.Extend(-1, nil, m); return err }()},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func BenchmarkExtend(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := build(b, rng, 1)
	leaves := make([]tlog.Hash, 256)
	for i := range leaves {
		leaves[i], _ = checkpoint.LeafHash(eventHash(int64(i)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	size := int64(1)
	for b.Loop() {
		hs, err := checkpoint.Extend(size, leaves, m)
		if err != nil {
			b.Fatal(err)
		}
		for _, h := range hs {
			m = append(m, h...)
		}
		size += int64(len(leaves))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(leaves)), "ns/leaf")
}

// A store's row round-trips its hashes; a short or ragged row holds none
// at the missing level. A stored event's leaf is its event_hash's, or its
// body's hash's when the column was edited into something else.
func TestRowAndStoredLeaf(t *testing.T) {
	hs := []tlog.Hash{tlog.RecordHash([]byte("a")), tlog.RecordHash([]byte("b"))}
	row := checkpoint.Row(hs)
	for level, want := range hs {
		if got, ok := checkpoint.RowHash(row, level); !ok || got != want {
			t.Errorf("checkpoint.RowHash(row, %d) = %v, %v", level, got, ok)
		}
	}
	if _, ok := checkpoint.RowHash(row, 2); ok {
		t.Error("a level beyond the row")
	}
	if _, ok := checkpoint.RowHash(row[:len(row)-1], 0); ok {
		t.Error("a ragged row")
	}
	body := []byte(`{"seq":1}`)
	sum := sha256.Sum256(body)
	good, _ := checkpoint.LeafHash(hex.EncodeToString(sum[:]))
	if checkpoint.StoredLeaf(hex.EncodeToString(sum[:]), []byte("ignored")) != good {
		t.Error("a valid event_hash is not its own leaf")
	}
	if checkpoint.StoredLeaf("edited", body) != good {
		t.Error("an edited event_hash does not fall back to the body's hash")
	}
	if zero, _ := checkpoint.LeafHash(strings.Repeat("0", 64)); checkpoint.HoleLeaf() != zero {
		t.Error("the hole is not the zero hash's leaf")
	}
}
