package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
)

// Tree is a Store that keeps the log's Merkle tree beside its events, and
// the signed checkpoints of it (issue 19; pkg/checkpoint says what the tree
// is). Append writes the tree's new stored hashes in the transaction that
// stores the records, so the tree always holds exactly the committed
// records, leaf seq-1 for the record with seq. Stored hashes never change
// once written: a tree of size n serves proofs for every size ≤ n while
// appends go on.
type Tree interface {
	// TreeSize returns how many records the tree holds: the committed
	// head's seq on an untampered log.
	TreeSize(ctx context.Context) (int64, error)
	// ReadHashes returns the stored hashes at indexes
	// (tlog.StoredHashIndex), in the order asked, or an error when any is
	// missing (wrapping ErrTreeBroken). It reads only committed hashes. A
	// store may keep them as it likes; SQLite keeps one row per record
	// with the hashes checkpoint.Extend returns for it (checkpoint.StoredAt
	// finds an index's row).
	ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
	// PutCheckpoint stores a signed checkpoint. One checkpoint per size:
	// putting the same note again does nothing; another note of a size
	// already stored is an error wrapping ErrCheckpointExists, and the
	// first one is kept (the history of what was signed never changes).
	PutCheckpoint(ctx context.Context, c StoredCheckpoint) error
	// LatestCheckpoint returns the checkpoint of the largest size; ok is
	// false when none is stored.
	LatestCheckpoint(ctx context.Context) (c StoredCheckpoint, ok bool, err error)
	// Checkpoint returns the checkpoint of size exactly.
	Checkpoint(ctx context.Context, size int64) (c StoredCheckpoint, ok bool, err error)
	// Checkpoints returns up to limit checkpoints with size > afterSize,
	// in size order (limit 0 means DefaultLimit, never more than
	// MaxLimit).
	Checkpoints(ctx context.Context, afterSize int64, limit int) ([]StoredCheckpoint, error)
}

// StoredCheckpoint is a signed checkpoint as a store keeps it: the signed
// note, by the size it commits to. The store does not verify the note; its
// readers do, with the keys they trust (pkg/checkpoint.Open).
type StoredCheckpoint struct {
	Size      int64
	Note      []byte    // the C2SP signed note: body, blank line, signatures
	CreatedAt time.Time // when auditd signed it
}

var (
	// ErrNoTree: the database has no Merkle tree (a read-only store of a
	// database from before issue 19; opening it read-write once adds it).
	ErrNoTree = errors.New("the database has no Merkle tree")
	// ErrTreeBroken: the stored tree does not match the events: rows of
	// either were deleted or added outside auditd. Append refuses to
	// extend such a tree, so that auditd never signs over a log that
	// forked from what it signed before.
	ErrTreeBroken = errors.New("the Merkle tree does not match the events")
	// ErrCheckpointExists: another checkpoint of the same size is stored.
	ErrCheckpointExists = errors.New("another checkpoint of this size is stored")
)

// HashReader adapts t's ReadHashes, with ctx, to tlog's HashReader, which
// pkg/checkpoint's proofs read through.
func HashReader(ctx context.Context, t Tree) tlog.HashReader {
	return tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		return t.ReadHashes(ctx, indexes)
	})
}

// BatchLeaves returns the tree leaves of batch (checkpoint.LeafHash of each
// event hash), which Append adds to a tree of n records in the transaction
// that stores them. The batch must continue the tree, with seqs n+1, n+2,
// … in order: a tree that does not end where the batch starts (rows of
// events or of the tree deleted or added outside auditd) is an error
// wrapping ErrTreeBroken, so that a store never extends a tree that forked
// from the one it signed; a seq the tree holds already is a forked chain.
func BatchLeaves(n int64, batch []audit.Record) ([]tlog.Hash, error) {
	first := batch[0].Seq
	if n != first-1 {
		return nil, fmt.Errorf("%w: the tree holds %d records, the batch starts at seq %d", ErrTreeBroken, n, first)
	}
	leaves := make([]tlog.Hash, len(batch))
	for i := range batch {
		r := &batch[i]
		switch {
		case r.Seq <= n:
			// A forked chain: the error the events' primary key gives.
			return nil, fmt.Errorf("seq %d is already stored", r.Seq)
		case r.Seq != first+int64(i):
			return nil, fmt.Errorf("seq %d follows seq %d in one batch", r.Seq, first+int64(i)-1)
		}
		var err error
		if leaves[i], err = checkpoint.LeafHash(r.EventHash); err != nil {
			return nil, fmt.Errorf("seq %d: %w", r.Seq, err)
		}
	}
	return leaves, nil
}

// RowHashes picks the stored hashes at indexes (tlog.StoredHashIndex), in
// the order asked, out of rows: a store's tree rows (checkpoint.Row) by
// their leaf, read for those indexes (checkpoint.StoredAt). A missing one
// is an error wrapping ErrTreeBroken.
func RowHashes(rows map[int64][]byte, indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		leaf, level := checkpoint.StoredAt(idx)
		h, ok := checkpoint.RowHash(rows[leaf], level)
		if !ok {
			return nil, fmt.Errorf("store: %w: no stored hash %d (leaf %d, level %d)", ErrTreeBroken, idx, leaf, level)
		}
		out[i] = h
	}
	return out, nil
}

// Elector is a store that several auditd instances share: one of them at a
// time signs checkpoints (issue 19), so that each size is signed once and
// the checkpoint log of one instance holds the whole sequence while it
// leads. A store one process owns (SQLite) is not one: its process always
// signs.
type Elector interface {
	// CheckpointLeader returns this instance's candidacy, not yet
	// leading.
	CheckpointLeader() Leader
}

// Leader is one instance's candidacy for signing checkpoints.
type Leader interface {
	// Lead reports whether this instance leads now. Not leading, it
	// tries to take the lead without waiting; leading, it checks that it
	// still does (the lead is lost with the database session that holds
	// it, and another instance may have taken it over).
	Lead(ctx context.Context) (bool, error)
	// Resign gives the lead up at once, so that another instance takes
	// it over at its next try, and ends the candidacy.
	Resign() error
}
