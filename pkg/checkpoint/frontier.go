package checkpoint

import "golang.org/x/mod/sumdb/tlog"

// Frontier computes the Merkle tree's root from the leaves alone, one leaf
// at a time, in O(log n) memory: the right edge of the tree (a "compact
// range"), the roots of its complete subtrees from the largest to the
// smallest, one per set bit of the size. verify-chain uses it to recompute
// the root at each checkpointed size from the events themselves, not from
// the tree_hashes a database holds, which whoever can write the database
// controls (issue 19). The zero Frontier is the empty tree.
type Frontier struct {
	size  int64
	edges []tlog.Hash
}

// Append adds the next leaf (LeafHash, or tlog.RecordHash of an event's
// 32-byte hash).
func (f *Frontier) Append(leaf tlog.Hash) {
	h := leaf
	// Each trailing one bit of the old size is a subtree of the same
	// height as the one being completed: merge them, as RFC 6962 §2.1
	// pairs a left subtree with the right one that follows it.
	for s := f.size; s&1 == 1; s >>= 1 {
		h = tlog.NodeHash(f.edges[len(f.edges)-1], h)
		f.edges = f.edges[:len(f.edges)-1]
	}
	f.edges = append(f.edges, h)
	f.size++
}

// Size returns how many leaves were appended.
func (f *Frontier) Size() int64 { return f.size }

// Root returns the RFC 6962 root of the tree of Size leaves, what
// tlog.TreeHash returns for that size: the complete subtrees folded from
// the smallest (rightmost) to the largest. The empty tree's root is
// SHA-256 of nothing.
func (f *Frontier) Root() tlog.Hash {
	if len(f.edges) == 0 {
		h, _ := tlog.TreeHash(0, nil)
		return h
	}
	h := f.edges[len(f.edges)-1]
	for i := len(f.edges) - 2; i >= 0; i-- {
		h = tlog.NodeHash(f.edges[i], h)
	}
	return h
}
