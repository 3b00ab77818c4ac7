// Package checkpoint is the audit log's Merkle tree (RFC 6962, over the
// events' hashes) and the signed checkpoints of its size and root (C2SP
// signed-note and checkpoint), which catch what a hash chain cannot: tail
// truncation and a consistent rewrite (issue 19).
package checkpoint

import (
	"encoding/hex"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// The tree: the record with seq N (1-based, DESIGN §6) is the tree's leaf
// N-1, and the leaf's data is the event's 32-byte hash (its event_hash
// column, hex-decoded), so that its RFC 6962 leaf hash is
// SHA-256(0x00 || event hash). The tree is kept as tlog's stored hashes:
// every complete subtree's hash, at the index tlog.StoredHashIndex gives it,
// written once when the subtree completes and never changed after. Hashes
// of a tree of size n therefore serve every proof about any size ≤ n,
// however far the log has grown since.

// LeafIndex is the tree index of the record with seq (1-based).
func LeafIndex(seq int64) int64 { return seq - 1 }

// LeafHash is the RFC 6962 leaf hash of the record whose event_hash is
// eventHash (64 lowercase hex digits).
func LeafHash(eventHash string) (tlog.Hash, error) {
	var data [tlog.HashSize]byte
	if len(eventHash) != 2*tlog.HashSize || !isLowerHex(eventHash) {
		return tlog.Hash{}, fmt.Errorf("checkpoint: event hash %.70q is not 64 lowercase hex digits", eventHash)
	}
	hex.Decode(data[:], []byte(eventHash))
	return tlog.RecordHash(data[:]), nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Extend returns the hashes to store when leaves (LeafHash of each record,
// in seq order) are appended to a tree of size n: hashes[i] belongs at
// stored index tlog.StoredHashCount(n)+i, and after them the tree has size
// n+len(leaves). It reads from r only hashes of the tree of size n (at most
// log₂ n per leaf, about one on average), so appending stays O(log n) per
// record (issue 19).
func Extend(n int64, leaves []tlog.Hash, r tlog.HashReader) ([]tlog.Hash, error) {
	if n < 0 {
		return nil, fmt.Errorf("checkpoint: extend: negative tree size %d", n)
	}
	first := tlog.StoredHashCount(n)
	var out []tlog.Hash
	// Hashes this batch wrote already are read back from out; the others
	// from r.
	batch := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		hashes := make([]tlog.Hash, len(indexes))
		var old []int64
		for _, idx := range indexes {
			if idx < first {
				old = append(old, idx)
			}
		}
		var got []tlog.Hash
		if len(old) > 0 {
			var err error
			if got, err = r.ReadHashes(old); err != nil {
				return nil, err
			}
			if len(got) != len(old) {
				return nil, fmt.Errorf("checkpoint: read %d hashes, asked for %d", len(got), len(old))
			}
		}
		for i, idx := range indexes {
			if idx < first {
				hashes[i], got = got[0], got[1:]
			} else {
				hashes[i] = out[idx-first]
			}
		}
		return hashes, nil
	})
	for i, leaf := range leaves {
		hs, err := tlog.StoredHashesForRecordHash(n+int64(i), leaf, batch)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: extend the tree at leaf %d: %w", n+int64(i), err)
		}
		out = append(out, hs...)
	}
	return out, nil
}

// SizeOf returns the tree size whose stored hashes number count (the
// inverse of tlog.StoredHashCount), and false when no size has exactly
// that many: a tree cut in the middle of a leaf's hashes.
func SizeOf(count int64) (int64, bool) {
	if count <= 0 {
		return 0, count == 0
	}
	// StoredHashCount(n) ≥ n and grows with n: binary search in [0, count].
	lo, hi := int64(0), count
	for lo < hi {
		mid := lo + (hi-lo)/2
		if tlog.StoredHashCount(mid) < count {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, tlog.StoredHashCount(lo) == count
}
