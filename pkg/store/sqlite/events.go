package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
)

// scanPage is how many rows Scan reads per query (about 4 MB of 600-byte
// events).
const scanPage = 4096

const columns = `seq, event_id, timestamp, event_type, trace_id, session_id,
	agent, action_class, tool_name, prev_hash, event_hash, body`

// readColumns are columns and, as column 12, approval_id: what Scan and
// VerifyChain read, so that verification compares approval_id with the
// body (a cleared column would hide an approval's earlier use from the
// watchers: DESIGN §11 "one use per approval", issue 13). A database
// older than the column (a read-only Store, oldSchema) reads NULL there
// and says so (audit.Row.HasApprovalID): it verifies as before.
func readColumns(hasApprovalID bool) string {
	if hasApprovalID {
		return columns + ", approval_id"
	}
	return columns + ", NULL"
}

// insertSQL also fills approval_id (migration 4), which reads do not
// select: a read-only Store opens databases older than that column.
const insertSQL = `INSERT INTO events (` + columns + `, approval_id)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// errReadOnly is what a read-only Store's writes return.
var errReadOnly = fmt.Errorf("store: append: %w", store.ErrReadOnly)

// Append stores batch in one transaction, which is durable when Append
// returns nil: synchronous=FULL syncs the WAL at every commit. A duplicate
// event_id (within the batch, too) rolls back the whole batch and returns an
// error wrapping store.ErrDuplicate. A seq that is already stored rolls it
// back too, with an error of its own: the seq primary key is what stops a
// second writer from forking the chain. ctx is checked before the
// transaction starts; a transaction under way finishes.
func (s *Store) Append(ctx context.Context, batch []audit.Record) error {
	if s.app == nil {
		return errReadOnly
	}
	if len(batch) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: append: %w", err)
	}
	return s.app.append(batch)
}

// Head returns the last record's seq and event hash, or (0, audit.ZeroHash)
// when the log is empty.
func (s *Store) Head(ctx context.Context) (int64, string, error) {
	var seq int64
	var hash string
	err := s.reader.QueryRowContext(ctx, "SELECT seq, event_hash FROM events ORDER BY seq DESC LIMIT 1").Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, audit.ZeroHash, nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("store: head: %w", err)
	}
	return seq, hash, nil
}

// getSQL is Get's statement, prepared once by Open (Store.get): SQLite
// compiling it again for every lookup cost more than the lookup.
const getSQL = "SELECT " + columns + " FROM events WHERE event_id = ?"

// getManySQL is GetMany's statement, prepared once by Open: the ids arrive
// as one JSON array (json_each), so that any number of them is one
// statement, which probes the event_id index once per id.
const getManySQL = "SELECT " + columns + " FROM events WHERE event_id IN (SELECT value FROM json_each(?)) ORDER BY seq"

// GetMany returns the records stored under any of eventIDs, in seq order.
func (s *Store) GetMany(ctx context.Context, eventIDs []string) ([]audit.Record, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	ids, err := json.Marshal(eventIDs)
	if err != nil {
		return nil, fmt.Errorf("store: get: %w", err)
	}
	rows, err := s.getMany.QueryContext(ctx, string(ids))
	if err != nil {
		return nil, fmt.Errorf("store: get: %w", err)
	}
	defer rows.Close()
	var out []audit.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("store: get: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: get: %w", err)
	}
	return out, nil
}

// Get returns the record with eventID.
func (s *Store) Get(ctx context.Context, eventID string) (audit.Record, bool, error) {
	row := s.get.QueryRowContext(ctx, eventID)
	r, err := scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		return audit.Record{}, false, nil
	}
	if err != nil {
		return audit.Record{}, false, fmt.Errorf("store: get: %w", err)
	}
	return r, true, nil
}

// Query returns the records matching f in seq order, at most f.Limit
// (store.DefaultLimit when 0, never more than store.MaxLimit). The next
// page is f with AfterSeq set to the last record's seq.
func (s *Store) Query(ctx context.Context, f store.Filter) ([]audit.Record, error) {
	if f.ApprovalID != "" && s.oldSchema {
		return nil, fmt.Errorf("store: query: the database's schema is older than version %d, which indexes approval_id: open it read-write once to migrate it", approvalIDVersion)
	}
	var where []string
	var args []any
	equal := func(column, value string) {
		if value != "" {
			where = append(where, column+" = ?")
			args = append(args, value)
		}
	}
	equal("agent", f.Agent)
	equal("trace_id", f.TraceID)
	equal("session_id", f.SessionID)
	equal("action_class", f.ActionClass)
	equal("tool_name", f.ToolName)
	equal("event_type", f.EventType)
	equal("approval_id", f.ApprovalID)
	// A time window is a seq range (timeBounds): there is no timestamp
	// index. The timestamp terms stay, so that a row out of time order (a
	// modified database) inside the range is still filtered exactly.
	after := f.AfterSeq
	if !f.Since.IsZero() || !f.Until.IsZero() {
		bounds, err := s.timeBounds(ctx, f.Since, f.Until)
		if err != nil {
			return nil, fmt.Errorf("store: query: %w", err)
		}
		if !f.Since.IsZero() {
			after = max(after, bounds[0]-1)
			where = append(where, "timestamp >= ?")
			args = append(args, formatTime(f.Since))
		}
		if !f.Until.IsZero() {
			where = append(where, "timestamp < ?", "seq < ?")
			args = append(args, formatTime(f.Until), bounds[1])
		}
	}
	if after > 0 {
		where = append(where, "seq > ?")
		args = append(args, after)
	}
	limit := store.PageLimit(f.Limit)

	q := "SELECT " + columns + " FROM events"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY seq LIMIT ?"
	args = append(args, limit)
	records, err := s.query(ctx, make([]audit.Record, 0, min(limit, 64)), q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query: %w", err)
	}
	return records, nil
}

// Scan calls fn for every record with seq > afterSeq in seq order, until fn
// returns an error (returned as is) or the records end. Records appended
// while it runs are included.
//
// It reads scanPage rows per query, each query its own short read
// transaction, so a scan over millions of rows does not pin the WAL (a
// checkpoint cannot go past the oldest reader's snapshot) and no
// transaction is open while fn runs. The next page is read while fn works
// through the current one: reading a row costs a few microseconds of CPU
// in modernc.org/sqlite, as much as verifying it, so on two cores a
// verifier runs at the speed of the slower of the two instead of their sum.
func (s *Store) Scan(ctx context.Context, afterSeq int64, fn func(audit.Record) error) error {
	type page struct {
		records []audit.Record
		after   int64
		err     error
	}
	readCtx, cancel := context.WithCancel(ctx)
	pages := make(chan page, 1) // one page ahead, one being read
	go func() {
		defer close(pages)
		d, err := s.openDirect()
		if err != nil {
			select {
			case pages <- page{nil, afterSeq, err}:
			case <-readCtx.Done():
			}
			return
		}
		defer d.close()
		after := afterSeq
		for {
			records, err := d.page(make([]audit.Record, 0, scanPage), after, scanPage)
			select {
			case pages <- page{records, after, err}:
			case <-readCtx.Done():
				return
			}
			if err != nil || len(records) < scanPage {
				return
			}
			after = records[len(records)-1].Seq
		}
	}()
	defer func() {
		cancel()
		for range pages { // wait for the reader to finish
		}
	}()

	last := afterSeq
	for p := range pages {
		if err := ctx.Err(); err != nil {
			break
		}
		if p.err != nil {
			return fmt.Errorf("store: scan after seq %d: %w", p.after, p.err)
		}
		for _, r := range p.records {
			if err := fn(r); err != nil {
				return err
			}
			last = r.Seq
		}
	}
	// The reader stops early only when ctx is done.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: scan after seq %d: %w", last, err)
	}
	return nil
}

// timeBounds returns, for each of times, the lowest seq whose event has a
// timestamp at or after it: every event before that seq is older. Past the
// last event it is the last seq + 1; on an empty log, 1. A zero time gets
// 0 and costs nothing.
//
// Timestamps never go backwards along the chain (auditd's writer stamps an
// event no earlier than the one before it), so the time order is the seq
// order and a binary search over seq finds a bound in ~log2(events)
// lookups by primary key. That is why the schema has no timestamp index
// (migration 3): it cost every append an insert into one more b-tree, on
// the serial path of ingest (docs/BENCHMARKS.md).
func (s *Store) timeBounds(ctx context.Context, times ...time.Time) ([]int64, error) {
	conn, err := s.reader.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// One read transaction: every probe sees one snapshot.
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// Two subqueries: SQLite answers a bare min() or max() from the end of
	// the primary key, but scans the table for both in one SELECT.
	var first, last sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT (SELECT min(seq) FROM events), (SELECT max(seq) FROM events)").Scan(&first, &last); err != nil {
		return nil, err
	}
	probe, err := tx.PrepareContext(ctx, "SELECT seq, timestamp FROM events WHERE seq >= ? ORDER BY seq LIMIT 1")
	if err != nil {
		return nil, err
	}
	defer probe.Close()
	bounds := make([]int64, len(times))
	for i, t := range times {
		switch {
		case t.IsZero():
			continue
		case !first.Valid:
			bounds[i] = 1
			continue
		}
		want := formatTime(t)
		// Invariant: the events before lo are older than t; the first
		// event at or after hi (if any) is not.
		lo, hi := first.Int64, last.Int64+1
		for lo < hi {
			mid := lo + (hi-lo)/2
			var seq int64
			var ts string
			if err := probe.QueryRowContext(ctx, mid).Scan(&seq, &ts); err != nil {
				return nil, err // mid < hi <= max(seq) + 1: a row exists
			}
			if ts < want {
				lo = seq + 1
			} else {
				hi = mid
			}
		}
		bounds[i] = lo
	}
	return bounds, nil
}

// query appends the records q selects to dst.
func (s *Store) query(ctx context.Context, dst []audit.Record, q string, args ...any) ([]audit.Record, error) {
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return dst, err
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return dst, err
		}
		dst = append(dst, r)
	}
	return dst, rows.Err()
}

// scanRecord reads one row of columns. It returns what is stored, even when
// it is wrong: a timestamp that does not parse becomes the zero time, which
// verification reports as a column mismatch against the body, rather than
// an error that would stop verification at the tampered row.
func scanRecord(row interface{ Scan(...any) error }) (audit.Record, error) {
	var r audit.Record
	var ts string
	err := row.Scan(&r.Seq, &r.EventID, &ts, &r.EventType, &r.TraceID, &r.SessionID,
		&r.Agent, &r.ActionClass, &r.ToolName, &r.PrevHash, &r.EventHash, &r.Body)
	if err != nil {
		return audit.Record{}, err
	}
	r.Timestamp, _ = time.Parse(time.RFC3339Nano, ts)
	return r, nil
}

func formatTime(t time.Time) string {
	return t.UTC().Format(store.TimestampLayout)
}
