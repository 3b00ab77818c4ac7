package checkpoint_test

import (
	"math/rand/v2"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/checkpoint"
)

// TestFrontierProperty: the root a Frontier computes from the leaves alone
// is tlog.TreeHash's over the stored hashes and the RFC's own Merkle Tree
// Hash (mth), at every size up to a random bound (issue 19: verify-chain
// recomputes the root from the events, not from the stored tree).
func TestFrontierProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 62))
	for range 8 {
		n := 1 + rng.Int64N(300)
		m := build(t, rng, n)
		var f checkpoint.Frontier
		if f.Size() != 0 {
			t.Fatalf("zero Frontier: size %d", f.Size())
		}
		empty, _ := tlog.TreeHash(0, m)
		if f.Root() != empty {
			t.Fatalf("empty Frontier: root %v, want %v", f.Root(), empty)
		}
		for size := int64(1); size <= n; size++ {
			leaf, err := checkpoint.LeafHash(eventHash(size))
			if err != nil {
				t.Fatal(err)
			}
			f.Append(leaf)
			want, err := tlog.TreeHash(size, m)
			if err != nil {
				t.Fatal(err)
			}
			if f.Size() != size || f.Root() != want {
				t.Fatalf("size %d: Frontier (size %d) root %v, tlog %v", size, f.Size(), f.Root(), want)
			}
			if size <= 64 && [32]byte(f.Root()) != mth(0, size) {
				t.Fatalf("size %d: Frontier root %v is not RFC 6962's MTH", size, f.Root())
			}
		}
	}
}

func BenchmarkFrontierAppend(b *testing.B) {
	leaf, _ := checkpoint.LeafHash(eventHash(1))
	var f checkpoint.Frontier
	for b.Loop() {
		f.Append(leaf)
	}
}
