package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/store"
)

// PutApproval upserts r's row unless the stored one is from a later event
// (store.Approvals).
func (s *Store) PutApproval(ctx context.Context, r approval.Request, seq int64) error {
	if s.writer == nil {
		return errReadOnly
	}
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("store: approval %s: %w", r.ID, err)
	}
	_, err = s.writer.ExecContext(ctx, `INSERT INTO approvals (id, status, requested_by, created_at, expires_at, seq, request)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, expires_at = excluded.expires_at,
			seq = excluded.seq, request = excluded.request
		WHERE excluded.seq > approvals.seq`,
		r.ID, string(r.Status), r.RequestedBy, formatTime(r.CreatedAt), formatTime(r.ExpiresAt), seq, body)
	if err != nil {
		return fmt.Errorf("store: put approval %s: %w", r.ID, err)
	}
	return nil
}

// GetApproval returns the request with id (store.Approvals).
func (s *Store) GetApproval(ctx context.Context, id string) (store.ApprovalRow, bool, error) {
	rows, err := s.listApprovals(ctx, "WHERE id = ?", []any{id}, "", 1)
	if err != nil || len(rows) == 0 {
		return store.ApprovalRow{}, false, err
	}
	return rows[0], true, nil
}

// ListApprovals returns the requests matching f (store.Approvals).
func (s *Store) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]store.ApprovalRow, error) {
	var where []string
	var args []any
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.RequestedBy != "" {
		where = append(where, "requested_by = ?")
		args = append(args, f.RequestedBy)
	}
	if f.AfterSeq > 0 {
		where = append(where, "seq > ?")
		args = append(args, f.AfterSeq)
	}
	if !f.DueBy.IsZero() {
		where = append(where, "status = 'pending' AND expires_at <= ?")
		args = append(args, formatTime(f.DueBy))
	}
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	limit := store.PageLimit(f.Limit)
	order := "seq"
	switch {
	case f.ByCreation:
		order = "created_at, id"
	case f.Newest:
		order = "seq DESC"
	}
	rows, err := s.listApprovals(ctx, cond, args, order, limit)
	if f.Newest && !f.ByCreation {
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
	}
	return rows, err
}

// ApprovalsSeq returns the highest seq put, or the head of the log when
// the approvals table was created if that is higher (store.Approvals).
func (s *Store) ApprovalsSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := s.reader.QueryRowContext(ctx, `SELECT max(
		(SELECT coalesce(max(seq), 0) FROM approvals),
		(SELECT coalesce(max(seq), 0) FROM approvals_origin))`).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("store: approvals seq: %w", err)
	}
	return seq, nil
}

// ApprovalsSnapshot reads the approvals table, its origin and the approval
// events in one read transaction (store.Approvals): a row put by a running
// auditd after the table was read cannot seem to come from nowhere. The
// events are found through the event_type index, not by decoding the log.
func (s *Store) ApprovalsSnapshot(ctx context.Context) (store.ApprovalsSnapshot, bool, error) {
	var snap store.ApprovalsSnapshot
	fail := func(err error) (store.ApprovalsSnapshot, bool, error) {
		return store.ApprovalsSnapshot{}, false, fmt.Errorf("store: approvals snapshot: %w", err)
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	var tables int
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
		WHERE type = 'table' AND name IN ('approvals', 'approvals_origin')`).Scan(&tables)
	if err != nil {
		return fail(err)
	}
	if tables < 2 {
		return snap, false, nil
	}
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM approvals_origin").Scan(&snap.Origin); err != nil {
		return fail(err)
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, status, requested_by, created_at, expires_at, seq, request FROM approvals ORDER BY seq")
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		var r approval.TableRow
		if err := rows.Scan(&r.ID, &r.Status, &r.RequestedBy, &r.CreatedAt, &r.ExpiresAt, &r.Seq, &r.Request); err != nil {
			rows.Close()
			return fail(err)
		}
		snap.Rows = append(snap.Rows, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fail(err)
	}
	args := []any{snap.Origin}
	for _, t := range approval.EventTypes {
		args = append(args, t)
	}
	q := "SELECT " + columns + " FROM events WHERE seq > ? AND event_type IN (?" + strings.Repeat(", ?", len(approval.EventTypes)-1) + ") ORDER BY seq"
	evs, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return fail(err)
	}
	defer evs.Close()
	for evs.Next() {
		rec, err := scanRecord(evs)
		if err != nil {
			return fail(err)
		}
		snap.Events = append(snap.Events, rec)
	}
	if err := evs.Err(); err != nil {
		return fail(err)
	}
	return snap, true, nil
}

func (s *Store) listApprovals(ctx context.Context, cond string, args []any, order string, limit int) ([]store.ApprovalRow, error) {
	q := "SELECT seq, request FROM approvals " + cond
	if order != "" {
		q += " ORDER BY " + order
	}
	q += fmt.Sprintf(" LIMIT %d", limit)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: approvals: %w", err)
	}
	defer rows.Close()
	var out []store.ApprovalRow
	for rows.Next() {
		var row store.ApprovalRow
		var body []byte
		if err := rows.Scan(&row.Seq, &body); err != nil {
			return nil, fmt.Errorf("store: approvals: %w", err)
		}
		if err := json.Unmarshal(body, &row.Request); err != nil {
			return nil, fmt.Errorf("store: approval row with seq %d is not a request (the database was modified?): %w", row.Seq, err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: approvals: %w", err)
	}
	return out, nil
}
