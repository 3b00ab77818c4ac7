// Package checkpoint is the audit log's Merkle tree (RFC 6962, over the
// events' hashes) and the signed checkpoints of its size and root (C2SP
// signed-note and checkpoint), which catch what a hash chain cannot: tail
// truncation and a consistent rewrite (issue 19).
package checkpoint

import (
	"crypto/sha256"
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
// in seq order) are appended to a tree of size n: hashes[i] are the stored
// hashes that leaf n+i completes, at stored indexes tlog.StoredHashIndex(0,
// n+i) onward — hashes[i][0] is its leaf hash, hashes[i][l] the hash of the
// subtree of height l it completes. Kept per leaf, they are one row per
// record (StoredAt finds a stored index's row). Extend reads from r only
// hashes of the tree of size n (at most log₂ n per leaf, about one on
// average), so appending stays O(log n) per record (issue 19).
func Extend(n int64, leaves []tlog.Hash, r tlog.HashReader) ([][]tlog.Hash, error) {
	if n < 0 {
		return nil, fmt.Errorf("checkpoint: extend: negative tree size %d", n)
	}
	out := make([][]tlog.Hash, 0, len(leaves))
	// Hashes this batch computed already are read from out; the others
	// from r.
	batch := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		hashes := make([]tlog.Hash, len(indexes))
		var old []int64
		for _, idx := range indexes {
			if leaf, _ := StoredAt(idx); leaf < n {
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
			if leaf, level := StoredAt(idx); leaf < n {
				hashes[i], got = got[0], got[1:]
			} else {
				hashes[i] = out[leaf-n][level]
			}
		}
		return hashes, nil
	})
	for i, leaf := range leaves {
		hs, err := tlog.StoredHashesForRecordHash(n+int64(i), leaf, batch)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: extend the tree at leaf %d: %w", n+int64(i), err)
		}
		out = append(out, hs)
	}
	return out, nil
}

// StoredAt returns which leaf's hashes (Extend) hold the stored index idx,
// and where among them: the subtree of height level whose last leaf is
// that one.
func StoredAt(idx int64) (leaf int64, level int) {
	level, m := tlog.SplitStoredHashIndex(idx)
	return (m+1)<<level - 1, level
}

// Row is how a store keeps the stored hashes Extend returns for one leaf:
// end to end, in one row per record (pkg/store/sqlite, pkg/store/postgres).
func Row(hs []tlog.Hash) []byte {
	b := make([]byte, 0, len(hs)*tlog.HashSize)
	for _, h := range hs {
		b = append(b, h[:]...)
	}
	return b
}

// RowHash returns the hash at level of a Row (StoredAt says which), and
// false when the row is too short to hold it.
func RowHash(row []byte, level int) (tlog.Hash, bool) {
	off := level * tlog.HashSize
	if len(row)%tlog.HashSize != 0 || off+tlog.HashSize > len(row) {
		return tlog.Hash{}, false
	}
	return tlog.Hash(row[off : off+tlog.HashSize]), true
}

// StoredLeaf is the leaf a store builds for a stored event when it
// rebuilds its tree from the events table: the leaf of its event_hash
// column, or, when that column is not a hash (edited under auditd), of the
// hash of its body, what the column should hold. Either way verify-chain
// reports the damage; the tree keeps every later record in its place.
func StoredLeaf(eventHash string, body []byte) tlog.Hash {
	if leaf, err := LeafHash(eventHash); err == nil {
		return leaf
	}
	sum := sha256.Sum256(body)
	return tlog.RecordHash(sum[:])
}

// HoleLeaf is the leaf of a seq missing from the events table (a deleted
// row): the zero hash's, so later records keep their places.
func HoleLeaf() tlog.Hash {
	return tlog.RecordHash(make([]byte, tlog.HashSize))
}
