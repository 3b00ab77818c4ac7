package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/store"
)

// The Merkle tree (issue 19, store.Tree) is kept as pkg/store/sqlite keeps
// it: one row of tree_hashes per record, written in the transaction that
// inserts the record, under appendLock. Every instance extends the tree
// from the rows the previous holder of the lock committed, so the tree, as
// the chain, is one, however many instances write.

// treeSizeSQL is how many records the tree holds: max(leaf)+1, from the
// end of the primary key (the rows are dense).
const treeSizeSQL = "SELECT coalesce(max(leaf) + 1, 0) FROM tree_hashes"

// frontierSQL reads the rows that hold the roots of the complete subtrees
// of the tree as it is, the only older hashes that extending it reads: for
// each bit b set in the size n, the row of leaf (n>>b<<b)-1, which
// completed the subtree of 2^b leaves ending there (checkpoint.StoredAt).
// One statement, so that the append transaction reads the tree in the round
// trip that takes the lock and reads the head.
const frontierSQL = `SELECT leaf, hashes FROM tree_hashes WHERE leaf = ANY (
	SELECT ((t.n >> b) << b) - 1
	FROM (` + treeSizeSQL + `) AS t(n), generate_series(0, 62) AS b
	WHERE (t.n >> b) & 1 = 1)`

const treeInsertSQL = "INSERT INTO tree_hashes (leaf, hashes) SELECT * FROM unnest($1::bigint[], $2::bytea[])"

// syncPage is how many records syncTree hashes per step.
const syncPage = 4096

// treeRows are the tree_hashes rows a batch adds.
type treeRows struct {
	leaves []int64
	hashes [][]byte
}

// queueTreeSize queues the reads extendTree needs on b: the tree size and
// its frontier rows.
func queueTreeSize(b *pgx.Batch) {
	b.Queue(treeSizeSQL)
	b.Queue(frontierSQL)
}

// readTreeSize reads what queueTreeSize queued.
func readTreeSize(res pgx.BatchResults) (n int64, frontier map[int64][]byte, err error) {
	if err := res.QueryRow().Scan(&n); err != nil {
		return 0, nil, err
	}
	rows, err := res.Query()
	if err != nil {
		return 0, nil, err
	}
	frontier, err = collectRows(rows)
	return n, frontier, err
}

func collectRows(rows pgx.Rows) (map[int64][]byte, error) {
	defer rows.Close()
	out := map[int64][]byte{}
	for rows.Next() {
		var leaf int64
		var b []byte
		if err := rows.Scan(&leaf, &b); err != nil {
			return nil, err
		}
		out[leaf] = b
	}
	return out, rows.Err()
}

// extendTree returns the tree rows of recs, which must follow the tree of
// n records that frontier was read from, with no gap (store.BatchLeaves,
// as in SQLite).
func extendTree(ctx context.Context, tx pgx.Tx, n int64, frontier map[int64][]byte, recs []audit.Record) (treeRows, error) {
	leaves, err := store.BatchLeaves(n, recs)
	if err != nil {
		return treeRows{}, err
	}
	return extendLeaves(ctx, tx, n, frontier, leaves)
}

// extendLeaves returns the tree rows of leaves added to a tree of n.
func extendLeaves(ctx context.Context, tx pgx.Tx, n int64, frontier map[int64][]byte, leaves []tlog.Hash) (treeRows, error) {
	hashes, err := checkpoint.Extend(n, leaves, frontierReader(ctx, tx, frontier))
	if err != nil {
		return treeRows{}, err
	}
	out := treeRows{leaves: make([]int64, len(hashes)), hashes: make([][]byte, len(hashes))}
	for i, hs := range hashes {
		out.leaves[i], out.hashes[i] = n+int64(i), checkpoint.Row(hs)
	}
	return out, nil
}

// frontierReader reads stored hashes from the rows read already, and any
// other from the transaction (which a tree extended as frontierSQL says
// never needs).
func frontierReader(ctx context.Context, tx pgx.Tx, rows map[int64][]byte) tlog.HashReader {
	return tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		var missing []int64
		for _, idx := range indexes {
			if leaf, _ := checkpoint.StoredAt(idx); rows[leaf] == nil {
				missing = append(missing, leaf)
			}
		}
		if len(missing) > 0 {
			more, err := readRows(ctx, tx, missing)
			if err != nil {
				return nil, err
			}
			for leaf, b := range more {
				rows[leaf] = b
			}
		}
		return store.RowHashes(rows, indexes)
	})
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func readRows(ctx context.Context, q querier, leaves []int64) (map[int64][]byte, error) {
	rows, err := q.Query(ctx, "SELECT leaf, hashes FROM tree_hashes WHERE leaf = ANY($1)", leaves)
	if err != nil {
		return nil, err
	}
	return collectRows(rows)
}

// frontierLeaves are the rows frontierSQL reads, for a tree of n.
func frontierLeaves(n int64) []int64 {
	var out []int64
	for b := range 63 {
		if n>>b&1 == 1 {
			out = append(out, n>>b<<b-1)
		}
	}
	return out
}

// syncTree makes the tree hold exactly the events, at every read-write
// open, in one transaction under appendLock (so that it never races an
// instance appending), as pkg/store/sqlite's syncTree does:
//
//   - a database from before migration 2 gets its whole tree (the
//     migration's backfill; it holds the append lock while it hashes,
//     once);
//   - a tree longer than the events (rows deleted from the end of events:
//     tail truncation) is cut back to the events; the signed checkpoints
//     stay, as the evidence verify-chain and auditor compare with it.
//
// A seq without a row gets the leaf of the zero hash, so later records keep
// their places; an event_hash column that is not a hash gets the hash of
// the row's body. Both are broken links verify-chain reports.
func syncTree(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var head, n int64
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", appendLock); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM events").Scan(&head); err != nil {
			return fmt.Errorf("merkle tree: %w", err)
		}
		if err := tx.QueryRow(ctx, treeSizeSQL).Scan(&n); err != nil {
			return fmt.Errorf("merkle tree: %w", err)
		}
		if n > head {
			if _, err := tx.Exec(ctx, "DELETE FROM tree_hashes WHERE leaf >= $1", head); err != nil {
				return fmt.Errorf("merkle tree: cutting back to %d records: %w", head, err)
			}
			n = head
		}
		for n < head {
			leaves, err := leavesFrom(ctx, tx, n, min(head, n+syncPage))
			if err != nil {
				return err
			}
			frontier, err := readRows(ctx, tx, frontierLeaves(n))
			if err != nil {
				return fmt.Errorf("merkle tree: %w", err)
			}
			rows, err := extendLeaves(ctx, tx, n, frontier, leaves)
			if err != nil {
				return fmt.Errorf("merkle tree: %w", err)
			}
			if _, err := tx.Exec(ctx, treeInsertSQL, rows.leaves, rows.hashes); err != nil {
				return fmt.Errorf("merkle tree: %w", err)
			}
			n += int64(len(leaves))
		}
		return nil
	})
}

// leavesFrom returns the leaves of the records with seq in (after, upTo],
// one per seq (see syncTree for rows missing or wrong).
func leavesFrom(ctx context.Context, tx pgx.Tx, after, upTo int64) ([]tlog.Hash, error) {
	hole := checkpoint.HoleLeaf()
	leaves := make([]tlog.Hash, upTo-after)
	for i := range leaves {
		leaves[i] = hole
	}
	rows, err := tx.Query(ctx, "SELECT seq, event_hash, body FROM events WHERE seq > $1 AND seq <= $2 ORDER BY seq", after, upTo)
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

// checkTree refuses tree operations on a database without a tree (a
// read-only Store of a database at schema version 1).
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
	if err := s.pool.QueryRow(ctx, treeSizeSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: tree size: %w", classify(err))
	}
	return n, nil
}

// ReadHashes returns the stored hashes at indexes (store.Tree): one query.
func (s *Store) ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	if err := s.checkTree(); err != nil {
		return nil, err
	}
	if len(indexes) == 0 {
		return nil, nil
	}
	leaves := make([]int64, len(indexes))
	for i, idx := range indexes {
		leaves[i], _ = checkpoint.StoredAt(idx)
	}
	rows, err := readRows(ctx, s.pool, leaves)
	if err != nil {
		return nil, fmt.Errorf("store: reading tree hashes: %w", classify(err))
	}
	return store.RowHashes(rows, indexes)
}

// PutCheckpoint stores a signed checkpoint (store.Tree).
func (s *Store) PutCheckpoint(ctx context.Context, c store.StoredCheckpoint) error {
	if s.readOnly {
		return fmt.Errorf("store: put checkpoint: %w", store.ErrReadOnly)
	}
	if c.Size < 0 || len(c.Note) == 0 {
		return fmt.Errorf("store: put checkpoint: size %d with a note of %d bytes", c.Size, len(c.Note))
	}
	// One statement: the row inserted, or the note stored before.
	var stored string
	err := s.pool.QueryRow(ctx, `WITH ins AS (
			INSERT INTO checkpoints (size, note, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (size) DO NOTHING RETURNING note)
		SELECT note FROM ins UNION ALL SELECT note FROM checkpoints WHERE size = $1 LIMIT 1`,
		c.Size, string(c.Note), formatTime(c.CreatedAt)).Scan(&stored)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another instance put this size meanwhile: the statement's
		// snapshot is from before its commit.
		err = s.pool.QueryRow(ctx, "SELECT note FROM checkpoints WHERE size = $1", c.Size).Scan(&stored)
	}
	if err != nil {
		return fmt.Errorf("store: put checkpoint: %w", classify(err))
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
	return s.oneCheckpoint(ctx, "SELECT "+checkpointColumns+" FROM checkpoints WHERE size = $1", size)
}

func (s *Store) oneCheckpoint(ctx context.Context, q string, args ...any) (store.StoredCheckpoint, bool, error) {
	if err := s.checkTree(); err != nil {
		return store.StoredCheckpoint{}, false, err
	}
	c, err := scanCheckpoint(s.pool.QueryRow(ctx, q, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.StoredCheckpoint{}, false, nil
	}
	if err != nil {
		return store.StoredCheckpoint{}, false, fmt.Errorf("store: reading a checkpoint: %w", classify(err))
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
	rows, err := s.pool.Query(ctx, "SELECT "+checkpointColumns+" FROM checkpoints WHERE size > $1 ORDER BY size LIMIT $2", afterSize, limit)
	if err != nil {
		return nil, fmt.Errorf("store: reading checkpoints: %w", classify(err))
	}
	defer rows.Close()
	var out []store.StoredCheckpoint
	for rows.Next() {
		c, err := scanCheckpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("store: reading checkpoints: %w", classify(err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading checkpoints: %w", classify(err))
	}
	return out, nil
}

func scanCheckpoint(row pgx.Row) (store.StoredCheckpoint, error) {
	var c store.StoredCheckpoint
	var note, created string
	if err := row.Scan(&c.Size, &note, &created); err != nil {
		return store.StoredCheckpoint{}, err
	}
	c.Note = []byte(note)
	c.CreatedAt, _ = time.Parse(time.RFC3339Nano, created) // as stored, even when wrong
	return c, nil
}

// Import stores records exactly as another store holds them (auditd
// migrate), in one transaction under the append lock: any seq, event_hash
// and body, without the checks Append makes of the chain and the tree it
// continues, since a tampered original must be copied as it is and
// verification report it. It does not extend the tree: SyncTree builds it
// from the imported events afterwards, as the backfill of an old database
// does (a missing seq a hole, an edited event_hash its body's hash).
func (s *Store) Import(ctx context.Context, batch []audit.Record) error {
	if s.readOnly {
		return errReadOnly
	}
	if len(batch) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", appendLock); err != nil {
			return err
		}
		return insert(ctx, tx, batch, treeRows{})
	})
	if err != nil {
		return appendError(err)
	}
	return nil
}

// SyncTree makes the tree hold exactly the events (syncTree), as opening
// the store read-write does: after Import.
func (s *Store) SyncTree(ctx context.Context) error {
	if s.readOnly {
		return errReadOnly
	}
	if err := syncTree(ctx, s.pool); err != nil {
		return fmt.Errorf("store: %w", classify(err))
	}
	return nil
}
