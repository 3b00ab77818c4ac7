package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/store"
)

// PutApproval upserts r's row unless the stored one is from a later event
// (store.Approvals).
func (s *Store) PutApproval(ctx context.Context, r approval.Request, seq int64) error {
	if s.readOnly {
		return errReadOnly
	}
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("store: approval %s: %w", r.ID, err)
	}
	put := func() error {
		_, err := s.pool.Exec(ctx, `INSERT INTO approvals (id, status, requested_by, created_at, expires_at, seq, request)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, expires_at = excluded.expires_at,
			seq = excluded.seq, request = excluded.request
		WHERE excluded.seq > approvals.seq`,
			r.ID, string(r.Status), r.RequestedBy, formatTime(r.CreatedAt), formatTime(r.ExpiresAt), seq, body)
		return err
	}
	err = put()
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "approvals_seq" {
		// Two instances put the same change at once (the one that
		// committed it, and one that followed it from the log): ON
		// CONFLICT (id) covers only its own index, so the loser of a
		// race on a new row trips seq's. Once more, the row is there and
		// the put is the no-op it should have been.
		err = put()
	}
	if err != nil {
		return fmt.Errorf("store: put approval %s: %w", r.ID, classify(err))
	}
	return nil
}

// GetApproval returns the request with id (store.Approvals).
func (s *Store) GetApproval(ctx context.Context, id string) (store.ApprovalRow, bool, error) {
	rows, err := s.listApprovals(ctx, "WHERE id = $1", []any{id}, "", 1)
	if err != nil || len(rows) == 0 {
		return store.ApprovalRow{}, false, err
	}
	return rows[0], true, nil
}

// ListApprovals returns the requests matching f (store.Approvals).
func (s *Store) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]store.ApprovalRow, error) {
	var where []string
	var args []any
	cond := func(term string, value any) {
		args = append(args, value)
		where = append(where, fmt.Sprintf(term, len(args)))
	}
	if f.Status != "" {
		cond("status = $%d", string(f.Status))
	}
	if f.RequestedBy != "" {
		cond("requested_by = $%d", f.RequestedBy)
	}
	if f.AfterSeq > 0 {
		cond("seq > $%d", f.AfterSeq)
	}
	if !f.DueBy.IsZero() {
		cond("status = 'pending' AND expires_at <= $%d", formatTime(f.DueBy))
	}
	clause := ""
	if len(where) > 0 {
		clause = "WHERE " + strings.Join(where, " AND ")
	}
	limit := store.PageLimit(f.Limit)
	order := "seq"
	switch {
	case f.ByCreation:
		order = "created_at, id"
	case f.Newest:
		order = "seq DESC"
	}
	rows, err := s.listApprovals(ctx, clause, args, order, limit)
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
	err := s.pool.QueryRow(ctx, `SELECT greatest(
		(SELECT coalesce(max(seq), 0) FROM approvals),
		(SELECT coalesce(max(seq), 0) FROM approvals_origin))`).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("store: approvals seq: %w", classify(err))
	}
	return seq, nil
}

// ApprovalsSnapshot reads the approvals table, its origin and the approval
// events in one REPEATABLE READ transaction, one snapshot however many
// instances write meanwhile (store.Approvals).
func (s *Store) ApprovalsSnapshot(ctx context.Context) (store.ApprovalsSnapshot, bool, error) {
	var snap store.ApprovalsSnapshot
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM approvals_origin").Scan(&snap.Origin); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT id, status, requested_by, created_at, expires_at, seq, request FROM approvals ORDER BY seq")
		if err != nil {
			return err
		}
		snap.Rows, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (approval.TableRow, error) {
			var r approval.TableRow
			err := row.Scan(&r.ID, &r.Status, &r.RequestedBy, &r.CreatedAt, &r.ExpiresAt, &r.Seq, &r.Request)
			return r, err
		})
		if err != nil {
			return err
		}
		evs, err := tx.Query(ctx, "SELECT "+columns+" FROM events WHERE seq > $1 AND event_type = ANY($2) ORDER BY seq",
			snap.Origin, approval.EventTypes)
		if err != nil {
			return err
		}
		defer evs.Close()
		snap.Events, err = collect(nil, evs, false)
		return err
	})
	if err != nil {
		return store.ApprovalsSnapshot{}, false, fmt.Errorf("store: approvals snapshot: %w", classify(err))
	}
	return snap, true, nil
}

func (s *Store) listApprovals(ctx context.Context, where string, args []any, order string, limit int) ([]store.ApprovalRow, error) {
	q := "SELECT seq, request FROM approvals " + where
	if order != "" {
		q += " ORDER BY " + order
	}
	q += fmt.Sprintf(" LIMIT %d", limit)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: approvals: %w", classify(err))
	}
	defer rows.Close()
	var out []store.ApprovalRow
	for rows.Next() {
		var row store.ApprovalRow
		var body []byte
		if err := rows.Scan(&row.Seq, &body); err != nil {
			return nil, fmt.Errorf("store: approvals: %w", classify(err))
		}
		if err := json.Unmarshal(body, &row.Request); err != nil {
			return nil, fmt.Errorf("store: approval row with seq %d is not a request (the database was modified?): %w", row.Seq, err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: approvals: %w", classify(err))
	}
	return out, nil
}

// SetApprovalsOrigin sets the head of the log at which the store started
// keeping approvals (store.ApprovalsSnapshot.Origin): auditd migrate
// copies it from the SQLite database, whose approval events before it were
// posted by clients of versions without approvals.
func (s *Store) SetApprovalsOrigin(ctx context.Context, seq int64) error {
	if s.readOnly {
		return errReadOnly
	}
	if _, err := s.pool.Exec(ctx, "UPDATE approvals_origin SET seq = $1", seq); err != nil {
		return fmt.Errorf("store: approvals origin: %w", classify(err))
	}
	return nil
}

var _ store.ApprovalLocker = (*Store)(nil)

// approvalLockClass is the first key of the per-approval advisory locks,
// (approvalLockClass, hashtext(id)): the two-key form, which PostgreSQL
// keeps apart from the one-key locks above (objsubid 2, not 1). Two ids
// with one hash share a lock, which only serialises them.
const approvalLockClass int32 = 0x676f7601 // "gov" 0x01

// LockApproval takes the advisory lock of approval id in a transaction of
// its own, held until unlock (store.ApprovalLocker): the instance changing
// the request reads its row, appends the change to the chain and puts the
// row while every other instance's change of it waits. A lock, not
// SELECT … FOR UPDATE on the row: the row is written meanwhile by
// PutApproval on another connection, which a row lock would block.
func (s *Store) LockApproval(ctx context.Context, id string) (func(), error) {
	if s.readOnly {
		return nil, errReadOnly
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: locking approval %s: %w", id, classify(err))
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", approvalLockClass, id); err != nil {
		tx.Rollback(context.Background())
		return nil, fmt.Errorf("store: locking approval %s: %w", id, classify(err))
	}
	return func() { tx.Rollback(context.Background()) }, nil
}
