package store

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
)

// BatchLeaves accepts a batch that continues the tree and names what is
// wrong with any other; both stores' appends rely on it (issue 19).
func TestBatchLeaves(t *testing.T) {
	hash := func(b byte) string { return strings.Repeat(string("0123456789abcdef"[b%16]), 64) }
	recs := func(seqs ...int64) []audit.Record {
		out := make([]audit.Record, len(seqs))
		for i, s := range seqs {
			out[i] = audit.Record{Seq: s, EventHash: hash(byte(s))}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		n      int64
		batch  []audit.Record
		broken bool
		want   string // in the error; "" for none
	}{
		{"continues", 3, recs(4, 5, 6), false, ""},
		{"first of the log", 0, recs(1), false, ""},
		{"gap", 3, recs(5, 6), true, "the tree holds 3 records, the batch starts at seq 5"},
		{"behind the tree", 3, recs(3, 4), true, "the tree holds 3 records, the batch starts at seq 3"},
		{"seq the tree holds", 3, recs(4, 5, 2), false, "seq 2 is already stored"},
		{"out of order", 3, recs(4, 6, 5), false, "seq 6 follows seq 4 in one batch"},
		{"not a hash", 3, []audit.Record{{Seq: 4, EventHash: "not a hash"}}, false, "seq 4: checkpoint: event hash"},
	} {
		leaves, err := BatchLeaves(tc.n, tc.batch)
		if tc.want == "" {
			if err != nil || len(leaves) != len(tc.batch) {
				t.Errorf("%s: %d leaves, %v; want %d", tc.name, len(leaves), err, len(tc.batch))
				continue
			}
			for i, r := range tc.batch {
				if want, _ := checkpoint.LeafHash(r.EventHash); leaves[i] != want {
					t.Errorf("%s: leaf %d is not seq %d's", tc.name, i, r.Seq)
				}
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrTreeBroken) != tc.broken {
			t.Errorf("%s: %v; want an error containing %q, ErrTreeBroken %v", tc.name, err, tc.want, tc.broken)
		}
	}
}

// RowHashes reads each stored index from its leaf's row at its level, and
// a row missing or too short is ErrTreeBroken.
func TestRowHashes(t *testing.T) {
	var mem []tlog.Hash
	rows := map[int64][]byte{}
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = mem[x]
		}
		return out, nil
	})
	for i := range int64(9) {
		leaf, _ := checkpoint.LeafHash(strings.Repeat("ab", 31) + string("0123456789"[i]) + "0")
		hs, err := checkpoint.Extend(i, []tlog.Hash{leaf}, r)
		if err != nil {
			t.Fatal(err)
		}
		mem = append(mem, hs[0]...)
		rows[i] = checkpoint.Row(hs[0])
	}
	indexes := []int64{7, 0, int64(len(mem)) - 1, 2}
	got, err := RowHashes(rows, indexes)
	if err != nil {
		t.Fatal(err)
	}
	for i, idx := range indexes {
		if got[i] != mem[idx] {
			t.Errorf("stored hash %d differs", idx)
		}
	}
	if _, err := RowHashes(rows, []int64{int64(len(mem))}); !errors.Is(err, ErrTreeBroken) {
		t.Errorf("an index past the rows: %v, want ErrTreeBroken", err)
	}
	rows[7] = rows[7][:tlog.HashSize] // leaf 7 completes subtrees up to height 3
	if _, err := RowHashes(rows, []int64{tlog.StoredHashIndex(3, 0)}); !errors.Is(err, ErrTreeBroken) {
		t.Errorf("a row too short: %v, want ErrTreeBroken", err)
	}
}
