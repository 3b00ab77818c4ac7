package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/store"
)

var _ store.Tree = (*Store)(nil)

// treeVersion is the schema version that adds tree_hashes and checkpoints
// (migration 5).
const treeVersion = 5

// treeSizeSQL is how many records the tree holds: max(leaf)+1, which
// SQLite answers from the end of the primary key (the rows are dense:
// syncTree and Append write them in order).
const treeSizeSQL = "SELECT coalesce(max(leaf) + 1, 0) FROM tree_hashes"

// syncPage is how many records syncTree hashes per step.
const syncPage = 4096

// syncTree makes the tree hold exactly the events, at every read-write
// open, in one transaction:
//
//   - A database from before migration 5 gets its whole tree (the
//     migration's backfill, which needs SHA-256 and so is Go, not SQL).
//   - A tree longer than the events (rows deleted from the end of events,
//     then auditd restarted: tail truncation, issue 19) is cut back to
//     the events. The tree is derived from the events; what proves that
//     the log was longer is the signed checkpoints, kept in the
//     checkpoints table and, outside the database, in auditd's
//     --checkpoint-log, which verify-chain and auditor compare with it.
//     Cutting the tree keeps auditd writing on a tampered database, as it
//     did before (DESIGN §6 "Tampered database").
//
// The record with seq N is leaf N-1 (pkg/checkpoint). A seq without a row
// (one deleted before this database had a tree) gets the leaf of the zero
// hash, so later records keep their places; an event_hash column that is
// not a hash gets the hash of the row's body, what the column should hold.
// Both are broken links verify-chain reports.
func syncTree(ctx context.Context, db *sql.DB) (err error) {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the DSN's _txlock)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var head, n int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM events").Scan(&head); err != nil {
		return fmt.Errorf("merkle tree: %w", err)
	}
	if err := tx.QueryRowContext(ctx, treeSizeSQL).Scan(&n); err != nil {
		return fmt.Errorf("merkle tree: %w", err)
	}
	if n > head {
		if _, err := tx.ExecContext(ctx, "DELETE FROM tree_hashes WHERE leaf >= ?", head); err != nil {
			return fmt.Errorf("merkle tree: cutting back to %d records: %w", head, err)
		}
		n = head
	}
	if n == head {
		return tx.Commit()
	}
	read := func(indexes []int64) ([]tlog.Hash, error) { return readHashes(ctx, tx, indexes) }
	insert, err := tx.PrepareContext(ctx, "INSERT INTO tree_hashes (leaf, hashes) VALUES (?, ?)")
	if err != nil {
		return err
	}
	defer insert.Close()
	for n < head {
		leaves, err := leavesFrom(ctx, tx, n, min(head, n+syncPage))
		if err != nil {
			return err
		}
		hashes, err := checkpoint.Extend(n, leaves, tlog.HashReaderFunc(read))
		if err != nil {
			return fmt.Errorf("merkle tree: %w", err)
		}
		for i, hs := range hashes {
			if _, err := insert.ExecContext(ctx, n+int64(i), checkpoint.Row(hs)); err != nil {
				return fmt.Errorf("merkle tree: %w", err)
			}
		}
		n += int64(len(leaves))
	}
	return tx.Commit()
}

// leavesFrom returns the leaves of the records with seq in (after, upTo],
// one per seq (see syncTree for rows missing or wrong).
func leavesFrom(ctx context.Context, tx *sql.Tx, after, upTo int64) ([]tlog.Hash, error) {
	hole := checkpoint.HoleLeaf()
	leaves := make([]tlog.Hash, upTo-after)
	for i := range leaves {
		leaves[i] = hole
	}
	rows, err := tx.QueryContext(ctx, "SELECT seq, event_hash, body FROM events WHERE seq > ? AND seq <= ? ORDER BY seq", after, upTo)
	if err != nil {
		return nil, fmt.Errorf("merkle tree: reading events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var hash string
		var body []byte
		if err := rows.Scan(&seq, &hash, &body); err != nil {
			return nil, fmt.Errorf("merkle tree: reading events: %w", err)
		}
		leaves[seq-after-1] = checkpoint.StoredLeaf(hash, body)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("merkle tree: reading events: %w", err)
	}
	return leaves, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readHashes reads the stored hashes at indexes through q, in the order
// asked; a missing one is an error wrapping store.ErrTreeBroken.
func readHashes(ctx context.Context, q querier, indexes []int64) ([]tlog.Hash, error) {
	if len(indexes) == 0 {
		return nil, nil
	}
	args := make([]any, len(indexes))
	for i, idx := range indexes {
		args[i], _ = checkpoint.StoredAt(idx)
	}
	rows, err := q.QueryContext(ctx, "SELECT leaf, hashes FROM tree_hashes WHERE leaf IN (?"+strings.Repeat(", ?", len(indexes)-1)+")", args...)
	if err != nil {
		return nil, fmt.Errorf("store: reading tree hashes: %w", err)
	}
	defer rows.Close()
	found := make(map[int64][]byte, len(indexes))
	for rows.Next() {
		var leaf int64
		var b []byte
		if err := rows.Scan(&leaf, &b); err != nil {
			return nil, fmt.Errorf("store: reading tree hashes: %w", err)
		}
		found[leaf] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading tree hashes: %w", err)
	}
	return store.RowHashes(found, indexes)
}

// checkTree refuses tree operations on a database without a tree (a
// read-only Store of a database older than migration 5).
func (s *Store) checkTree() error {
	if s.noTree {
		return fmt.Errorf("store: %w (schema version %d; auditd adds it when it opens the database)", store.ErrNoTree, s.version)
	}
	return nil
}

// TreeSize returns how many records the tree holds (store.Tree).
func (s *Store) TreeSize(ctx context.Context) (int64, error) {
	if err := s.checkTree(); err != nil {
		return 0, err
	}
	var n int64
	if err := s.reader.QueryRowContext(ctx, treeSizeSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: tree size: %w", err)
	}
	return n, nil
}

// ReadHashes returns the stored hashes at indexes (store.Tree).
func (s *Store) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	if err := s.checkTree(); err != nil {
		return nil, err
	}
	return readHashes(ctx, s.reader, indexes)
}

// PutCheckpoint stores a signed checkpoint (store.Tree).
func (s *Store) PutCheckpoint(ctx context.Context, c store.StoredCheckpoint) error {
	if s.writer == nil {
		return fmt.Errorf("store: put checkpoint: %w", store.ErrReadOnly)
	}
	if c.Size < 0 || len(c.Note) == 0 {
		return fmt.Errorf("store: put checkpoint: size %d with a note of %d bytes", c.Size, len(c.Note))
	}
	res, err := s.writer.ExecContext(ctx, "INSERT INTO checkpoints (size, note, created_at) VALUES (?, ?, ?) ON CONFLICT (size) DO NOTHING",
		c.Size, string(c.Note), formatTime(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("store: put checkpoint: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var stored string
	if err := s.writer.QueryRowContext(ctx, "SELECT note FROM checkpoints WHERE size = ?", c.Size).Scan(&stored); err != nil {
		return fmt.Errorf("store: put checkpoint: %w", err)
	}
	if stored != string(c.Note) {
		return fmt.Errorf("store: put checkpoint of size %d: %w", c.Size, store.ErrCheckpointExists)
	}
	return nil
}

const checkpointColumns = "size, note, created_at"

// LatestCheckpoint returns the checkpoint of the largest size (store.Tree).
func (s *Store) LatestCheckpoint(ctx context.Context) (store.StoredCheckpoint, bool, error) {
	return s.oneCheckpoint(ctx, "SELECT "+checkpointColumns+" FROM checkpoints ORDER BY size DESC LIMIT 1")
}

// Checkpoint returns the checkpoint of a size (store.Tree).
func (s *Store) Checkpoint(ctx context.Context, size int64) (store.StoredCheckpoint, bool, error) {
	return s.oneCheckpoint(ctx, "SELECT "+checkpointColumns+" FROM checkpoints WHERE size = ?", size)
}

func (s *Store) oneCheckpoint(ctx context.Context, q string, args ...any) (store.StoredCheckpoint, bool, error) {
	if err := s.checkTree(); err != nil {
		return store.StoredCheckpoint{}, false, err
	}
	c, err := scanCheckpoint(s.reader.QueryRowContext(ctx, q, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return store.StoredCheckpoint{}, false, nil
	}
	if err != nil {
		return store.StoredCheckpoint{}, false, fmt.Errorf("store: reading a checkpoint: %w", err)
	}
	return c, true, nil
}

// Checkpoints returns checkpoints with size > afterSize in size order
// (store.Tree).
func (s *Store) Checkpoints(ctx context.Context, afterSize int64, limit int) ([]store.StoredCheckpoint, error) {
	if err := s.checkTree(); err != nil {
		return nil, err
	}
	limit = store.PageLimit(limit)
	rows, err := s.reader.QueryContext(ctx, "SELECT "+checkpointColumns+" FROM checkpoints WHERE size > ? ORDER BY size LIMIT ?", afterSize, limit)
	if err != nil {
		return nil, fmt.Errorf("store: reading checkpoints: %w", err)
	}
	defer rows.Close()
	var out []store.StoredCheckpoint
	for rows.Next() {
		c, err := scanCheckpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("store: reading checkpoints: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading checkpoints: %w", err)
	}
	return out, nil
}

func scanCheckpoint(row interface{ Scan(...any) error }) (store.StoredCheckpoint, error) {
	var c store.StoredCheckpoint
	var note, created string
	if err := row.Scan(&c.Size, &note, &created); err != nil {
		return store.StoredCheckpoint{}, err
	}
	c.Note = []byte(note)
	c.CreatedAt, _ = time.Parse(time.RFC3339Nano, created) // as stored, even when wrong
	return c, nil
}
