package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
)

// Sequence numbers, chains and stores drafts after the head the database
// holds (store.Sequencer), in one transaction:
//
//  1. take appendLock (pg_advisory_xact_lock), then read the head (the last
//     row's seq, hash and timestamp), the drafts' event ids already stored
//     and the Merkle tree's size and frontier: one round trip;
//  2. seal the drafts that are new, and hash them into the tree;
//  3. insert them and their tree rows, and notify listeners: one round
//     trip;
//  4. COMMIT, which releases the lock.
//
// The lock is held from before the head is read until the commit is
// visible, so the next writer, in this process or another, reads this
// batch's last event as its head: no two transactions can chain onto the
// same event, and seq order is commit order. An advisory lock rather than
// SELECT … FOR UPDATE on a head row: the chain's head is already the last
// row of events, and a second copy of it (a head table) would be one more
// thing to keep consistent and one more row to update per batch.
func (s *Store) Sequence(ctx context.Context, drafts []store.Draft) ([]store.Sealed, error) {
	if s.readOnly {
		return nil, errReadOnly
	}
	if len(drafts) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: append: %w", err)
	}
	ids := make([]string, len(drafts))
	for i, d := range drafts {
		if d.EventID == "" || d.Draft == nil {
			return nil, fmt.Errorf("store: append: draft %d: empty event_id or draft", i)
		}
		ids[i] = d.EventID
	}
	var out []store.Sealed
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		h, err := lockHead(ctx, tx, ids)
		if err != nil {
			return err
		}
		seq, prev, last, stored := h.seq, h.prev, h.last, h.stored
		out = make([]store.Sealed, len(drafts))
		recs := make([]audit.Record, 0, len(drafts))
		for i, d := range drafts {
			if rec, ok := stored[d.EventID]; ok {
				if !d.Idempotent {
					return fmt.Errorf("%w: %q", store.ErrDuplicate, d.EventID)
				}
				out[i] = store.Sealed{Record: rec, Stored: true}
				continue
			}
			at := d.Received
			if at.Before(last) {
				at = last
			}
			rec, err := d.Draft.Seal(seq+1, prev, at)
			if err != nil {
				out[i] = store.Sealed{Err: err}
				continue
			}
			seq++
			prev, last = rec.EventHash, rec.Timestamp
			out[i] = store.Sealed{Record: rec}
			recs = append(recs, rec)
			// A second draft with this id in the batch is its retry.
			stored[d.EventID] = rec
		}
		if len(recs) == 0 {
			return nil
		}
		tree, err := extendTree(ctx, tx, h.treeSize, h.frontier, recs)
		if err != nil {
			return err
		}
		return insert(ctx, tx, recs, tree)
	})
	if err != nil {
		return nil, appendError(err)
	}
	return out, nil
}

// head is what lockHead reads under the append lock.
type head struct {
	seq    int64     // the last record's seq
	prev   string    // the hash to chain on
	last   time.Time // the last record's timestamp
	stored map[string]audit.Record
	// treeSize and frontier are the Merkle tree's (queueTreeSize).
	treeSize int64
	frontier map[int64][]byte
}

// lockHead takes the append lock and reads the head of the log (its seq,
// the hash to chain on and its timestamp), the records stored under ids
// and the tree's size and frontier: one round trip.
func lockHead(ctx context.Context, tx pgx.Tx, ids []string) (h head, err error) {
	b := &pgx.Batch{}
	b.Queue("SELECT pg_advisory_xact_lock($1)", appendLock)
	b.Queue("SELECT seq, event_hash, timestamp, body FROM events ORDER BY seq DESC LIMIT 1")
	b.Queue("SELECT "+columns+" FROM events WHERE event_id = ANY($1)", ids)
	queueTreeSize(b)
	res := tx.SendBatch(ctx, b)
	defer func() {
		if cerr := res.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err = res.Exec(); err != nil {
		return
	}
	var ts string
	var body []byte
	h.seq, h.prev = 0, audit.ZeroHash
	switch err = res.QueryRow().Scan(&h.seq, &h.prev, &ts, &body); {
	case errors.Is(err, pgx.ErrNoRows):
		err = nil
	case err != nil:
		return
	default:
		h.last, _ = time.Parse(time.RFC3339Nano, ts)
		if !audit.IsHash(h.prev) {
			// Someone edited the column: the chain continues from what
			// the stored body hashes to, as auditd's own writer does,
			// and verification reports the edit.
			h.prev = audit.Hash(body)
		}
	}
	rows, err := res.Query()
	if err != nil {
		return
	}
	recs, err := collect(nil, rows, false)
	rows.Close()
	if err != nil {
		return
	}
	h.stored = make(map[string]audit.Record, len(recs))
	for _, r := range recs {
		h.stored[r.EventID] = r
	}
	h.treeSize, h.frontier, err = readTreeSize(res)
	return
}

// Appended returns a channel that receives a value after any writer
// committed events (store.AppendNotifier): a connection of its own LISTENs
// to the channel every append transaction notifies. When the connection
// is lost it reconnects, every second at most, and sends a value each time
// it listens again, since commits may have been missed meanwhile.
func (s *Store) Appended(ctx context.Context) <-chan struct{} {
	c := make(chan struct{}, 1)
	signal := func() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(c)
		for ctx.Err() == nil {
			s.listen(ctx, signal)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return c
}

// listen LISTENs on one pooled connection until ctx ends or the
// connection fails, calling signal once it listens and on every
// notification.
func (s *Store) listen(ctx context.Context, signal func()) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return
	}
	// A connection that listened is not returned to the pool: it would
	// keep receiving notifications for whoever uses it next.
	conn := pc.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return
	}
	signal()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return
		}
		signal()
	}
}
