package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
)

// scanPage is how many rows Scan reads per query.
const scanPage = 4096

const columns = `seq, event_id, timestamp, event_type, trace_id, session_id,
	agent, action_class, tool_name, prev_hash, event_hash, body`

// insertSQL inserts a batch in one statement from one array per column:
// one round trip whatever the batch's size.
const insertSQL = `INSERT INTO events (` + columns + `, approval_id)
	SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
		$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::bytea[], $13::text[])`

// Append stores batch, numbered and chained by the caller, and extends the
// Merkle tree with it, in one transaction that holds the append lock
// (store.Store). It is durable when
// Append returns nil. A duplicate event_id (within the batch, too) stores
// nothing and returns an error wrapping store.ErrDuplicate; a seq stored
// already (a forked chain) an error of its own.
func (s *Store) Append(ctx context.Context, batch []audit.Record) error {
	if s.readOnly {
		return errReadOnly
	}
	if len(batch) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: append: %w", err)
	}
	seen := make(map[string]bool, len(batch))
	ids := make([]string, 0, len(batch))
	for i := range batch {
		r := &batch[i]
		if r.Seq <= 0 {
			return fmt.Errorf("store: append: event %q: seq %d, want > 0", r.EventID, r.Seq)
		}
		if r.EventID == "" {
			return fmt.Errorf("store: append: seq %d: empty event_id", r.Seq)
		}
		if seen[r.EventID] {
			return fmt.Errorf("%w: %q", store.ErrDuplicate, r.EventID)
		}
		seen[r.EventID] = true
		ids = append(ids, r.EventID)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue("SELECT pg_advisory_xact_lock($1)", appendLock)
		b.Queue("SELECT event_id FROM events WHERE event_id = ANY($1) LIMIT 1", ids)
		queueTreeSize(b)
		res := tx.SendBatch(ctx, b)
		_, err := res.Exec()
		var dup string
		if err == nil {
			err = res.QueryRow().Scan(&dup)
			if errors.Is(err, pgx.ErrNoRows) {
				err = nil
			} else if err == nil {
				err = fmt.Errorf("%w: %q", store.ErrDuplicate, dup)
			}
		}
		var n int64
		var frontier map[int64][]byte
		if err == nil {
			n, frontier, err = readTreeSize(res)
		}
		if cerr := res.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		tree, err := extendTree(ctx, tx, n, frontier, batch)
		if err != nil {
			return err
		}
		return insert(ctx, tx, batch, tree)
	})
	if err != nil {
		return appendError(err)
	}
	return nil
}

// insert stores recs and their tree rows and notifies listeners of the
// last seq (Appended): pipelined, one round trip. The notification is sent
// at COMMIT, in commit order, and never for a transaction rolled back.
func insert(ctx context.Context, tx pgx.Tx, recs []audit.Record, tree treeRows) error {
	n := len(recs)
	seqs := make([]int64, n)
	texts := make([][]string, 10)
	for i := range texts {
		texts[i] = make([]string, n)
	}
	bodies := make([][]byte, n)
	approvals := make([]*string, n)
	for i := range recs {
		r := &recs[i]
		seqs[i] = r.Seq
		for j, v := range [...]string{r.EventID, formatTime(r.Timestamp), r.EventType, r.TraceID, r.SessionID,
			r.Agent, r.ActionClass, r.ToolName, r.PrevHash, r.EventHash} {
			texts[j][i] = v
		}
		bodies[i] = r.Body
		if r.ApprovalID != "" {
			approvals[i] = &r.ApprovalID
		}
	}
	b := &pgx.Batch{}
	b.Queue(insertSQL, seqs, texts[0], texts[1], texts[2], texts[3], texts[4], texts[5], texts[6], texts[7], texts[8], texts[9], bodies, approvals)
	b.Queue(treeInsertSQL, tree.leaves, tree.hashes)
	b.Queue("SELECT pg_notify($1, $2)", notifyChannel, strconv.FormatInt(recs[n-1].Seq, 10))
	return tx.SendBatch(ctx, b).Close()
}

// appendError names what a failed append transaction ran into.
func appendError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		switch pe.ConstraintName {
		case "events_pkey":
			seq := pe.Detail
			if _, v, ok := strings.Cut(pe.Detail, "=("); ok {
				seq, _, _ = strings.Cut(v, ")")
			}
			return fmt.Errorf("store: append: seq %s is already stored", seq)
		case "events_event_id_key":
			return fmt.Errorf("%w: %s", store.ErrDuplicate, pe.Detail)
		}
	}
	if errors.Is(err, store.ErrDuplicate) {
		return err
	}
	return fmt.Errorf("store: append: %w", classify(err))
}

// Head returns the last record's seq and event hash, or (0, audit.ZeroHash)
// when the log is empty.
func (s *Store) Head(ctx context.Context) (int64, string, error) {
	var seq int64
	var hash string
	err := s.pool.QueryRow(ctx, "SELECT seq, event_hash FROM events ORDER BY seq DESC LIMIT 1").Scan(&seq, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, audit.ZeroHash, nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("store: head: %w", classify(err))
	}
	return seq, hash, nil
}

// GetMany returns the records stored under any of eventIDs, in seq order,
// in one round trip.
func (s *Store) GetMany(ctx context.Context, eventIDs []string) ([]audit.Record, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT "+columns+" FROM events WHERE event_id = ANY($1) ORDER BY seq", eventIDs)
	if err != nil {
		return nil, fmt.Errorf("store: get: %w", classify(err))
	}
	defer rows.Close()
	var out []audit.Record
	for rows.Next() {
		r, err := scanRecord(rows, false)
		if err != nil {
			return nil, fmt.Errorf("store: get: %w", classify(err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: get: %w", classify(err))
	}
	return out, nil
}

// Get returns the record with eventID.
func (s *Store) Get(ctx context.Context, eventID string) (audit.Record, bool, error) {
	r, err := scanRecord(s.pool.QueryRow(ctx, "SELECT "+columns+" FROM events WHERE event_id = $1", eventID), false)
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.Record{}, false, nil
	}
	if err != nil {
		return audit.Record{}, false, fmt.Errorf("store: get: %w", classify(err))
	}
	return r, true, nil
}

// Query returns the records matching f in seq order, at most f.Limit
// (store.DefaultLimit when 0, never more than store.MaxLimit).
func (s *Store) Query(ctx context.Context, f store.Filter) ([]audit.Record, error) {
	var where []string
	var args []any
	cond := func(term string, value any) {
		args = append(args, value)
		where = append(where, fmt.Sprintf(term, len(args)))
	}
	for _, c := range []struct{ column, value string }{
		{"agent", f.Agent}, {"trace_id", f.TraceID}, {"session_id", f.SessionID},
		{"action_class", f.ActionClass}, {"tool_name", f.ToolName}, {"event_type", f.EventType},
		{"approval_id", f.ApprovalID},
	} {
		if c.value != "" {
			cond(c.column+" = $%d", c.value)
		}
	}
	if !f.Since.IsZero() {
		cond("timestamp >= $%d", formatTime(f.Since))
	}
	if !f.Until.IsZero() {
		cond("timestamp < $%d", formatTime(f.Until))
	}
	if f.AfterSeq > 0 {
		cond("seq > $%d", f.AfterSeq)
	}
	limit := store.PageLimit(f.Limit)
	q := "SELECT " + columns + " FROM events"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += fmt.Sprintf(" ORDER BY seq LIMIT %d", limit)
	records, err := s.query(ctx, make([]audit.Record, 0, min(limit, 64)), false, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query: %w", classify(err))
	}
	return records, nil
}

// Scan calls fn for every record with seq > afterSeq in seq order, until fn
// returns an error (returned as is) or the records end. Records appended
// while it runs are included. It reads scanPage rows per query, so no
// transaction stays open while fn runs. Records carry approval_id
// (HasApprovalID) for verification.
func (s *Store) Scan(ctx context.Context, afterSeq int64, fn func(audit.Record) error) error {
	after := afterSeq
	q := "SELECT " + columns + ", approval_id FROM events WHERE seq > $1 ORDER BY seq LIMIT " + strconv.Itoa(scanPage)
	page := make([]audit.Record, 0, scanPage)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("store: scan after seq %d: %w", after, err)
		}
		var err error
		page, err = s.query(ctx, page[:0], true, q, after)
		if err != nil {
			return fmt.Errorf("store: scan after seq %d: %w", after, classify(err))
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
			after = r.Seq
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("store: scan after seq %d: %w", after, err)
			}
		}
		if len(page) < scanPage {
			return nil
		}
	}
}

func (s *Store) query(ctx context.Context, dst []audit.Record, approvalID bool, q string, args ...any) ([]audit.Record, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return dst, err
	}
	defer rows.Close()
	return collect(dst, rows, approvalID)
}

// collect appends the records rows holds to dst.
func collect(dst []audit.Record, rows pgx.Rows, approvalID bool) ([]audit.Record, error) {
	for rows.Next() {
		r, err := scanRecord(rows, approvalID)
		if err != nil {
			return dst, err
		}
		dst = append(dst, r)
	}
	return dst, rows.Err()
}

// scanRecord reads one row of columns (and approval_id, as column 13,
// when approvalID). It returns what is stored, even when it is wrong: a
// timestamp that does not parse becomes the zero time, which verification
// reports as a column mismatch against the body.
func scanRecord(row pgx.Row, approvalID bool) (audit.Record, error) {
	var r audit.Record
	var ts string
	var apr *string
	dst := []any{&r.Seq, &r.EventID, &ts, &r.EventType, &r.TraceID, &r.SessionID,
		&r.Agent, &r.ActionClass, &r.ToolName, &r.PrevHash, &r.EventHash, &r.Body}
	if approvalID {
		dst = append(dst, &apr)
	}
	if err := row.Scan(dst...); err != nil {
		return audit.Record{}, err
	}
	r.Timestamp, _ = time.Parse(time.RFC3339Nano, ts)
	if approvalID {
		r.HasApprovalID = true
		if apr != nil {
			r.ApprovalID = *apr
		}
	}
	return r, nil
}

func formatTime(t time.Time) string {
	return t.UTC().Format(store.TimestampLayout)
}
