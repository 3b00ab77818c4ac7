package convstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Create stores a new conversation. Its parent and the conversation it
// continues from, when named, must be stored already: the executor
// persists a conversation before it spawns or continues from it (B-07a).
// A zero CreatedAt is now; a zero UpdatedAt is CreatedAt. An id already
// stored is ErrExists.
func (s *Store) Create(ctx context.Context, c Conversation) (err error) {
	defer wrap(&err, "create conversation")
	if err := checkConversation(c); err != nil {
		return err
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.now()
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return writeError(err)
	}
	defer tx.Rollback()
	for _, f := range []struct{ field, id string }{{"parent_id", c.ParentID}, {"continued_from", c.ContinuedFrom}} {
		if f.id == "" {
			continue
		}
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM conversations WHERE id = ?", f.id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s %q", ErrNotFound, f.field, f.id)
		}
		if err != nil {
			return err
		}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO conversations
		(id, parent_id, continued_from, subagent, owner, cwd, model, mode, state, created_at, updated_at, snapshot)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`,
		c.ID, c.ParentID, c.ContinuedFrom, c.Subagent, c.Owner, c.Cwd, c.Model, c.Mode, c.State,
		formatTime(c.CreatedAt), formatTime(c.UpdatedAt), []byte(c.Snapshot))
	if err != nil {
		return writeError(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%w: conversation %q", ErrExists, c.ID)
	}
	return writeError(tx.Commit())
}

// Save writes a conversation's new state and appends its new messages in
// one transaction, synced to disk before it returns: the executor runs a
// transition's effects only after Save of its persist effect (REQ-BED-007,
// B-07a), and a crash leaves either all of it or none. It writes the
// conversation's snapshot, state, mode and updated_at (a zero UpdatedAt is
// now); the other fields never change. A message whose seq is stored
// already with the same role and body is skipped, so that a Save retried
// after an error that hid its commit is harmless; with another body it is
// ErrConflict, naming the seq, and nothing is written. A conversation not
// created is ErrNotFound.
func (s *Store) Save(ctx context.Context, c Conversation, msgs []Message) (err error) {
	defer wrap(&err, "save conversation")
	if err := checkState(c); err != nil {
		return err
	}
	for _, m := range msgs {
		if err := checkMessage(c.ID, m); err != nil {
			return err
		}
	}
	now := s.now()
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = now
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return writeError(err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx,
		"UPDATE conversations SET mode = ?, state = ?, updated_at = ?, snapshot = ? WHERE id = ?",
		c.Mode, c.State, formatTime(c.UpdatedAt), []byte(c.Snapshot), c.ID)
	if err != nil {
		return writeError(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%w: conversation %q", ErrNotFound, c.ID)
	}
	for _, m := range msgs {
		at := m.At
		if at.IsZero() {
			at = now
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO messages (conversation_id, seq, role, at, body)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation_id, seq) DO NOTHING`,
			c.ID, m.Seq, m.Role, formatTime(at), []byte(m.Body))
		if err != nil {
			return writeError(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			continue
		}
		var role string
		var body []byte
		err = tx.QueryRowContext(ctx, "SELECT role, body FROM messages WHERE conversation_id = ? AND seq = ?", c.ID, m.Seq).Scan(&role, &body)
		if err != nil {
			return err
		}
		if role != m.Role || !bytes.Equal(body, m.Body) {
			return fmt.Errorf("%w: conversation %q already has message %d with another body", ErrConflict, c.ID, m.Seq)
		}
	}
	return writeError(tx.Commit())
}

// Get returns one conversation with its snapshot, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (_ Conversation, err error) {
	defer wrap(&err, "get conversation")
	if err := checkID("id", id); err != nil {
		return Conversation{}, err
	}
	rows, err := s.reader.QueryContext(ctx, "SELECT "+columns+", snapshot FROM conversations WHERE id = ?", id)
	if err != nil {
		return Conversation{}, err
	}
	out, err := scanConversations(rows, true)
	if err != nil {
		return Conversation{}, err
	}
	if len(out) == 0 {
		return Conversation{}, fmt.Errorf("%w: conversation %q", ErrNotFound, id)
	}
	return out[0], nil
}

// List returns conversations newest first (by creation, then id), without
// their snapshots (Get has them). A normal listing leaves sub-agents out
// (B-09b); IncludeSubagents or a ParentID brings them in.
func (s *Store) List(ctx context.Context, o ListOptions) (_ []Conversation, err error) {
	defer wrap(&err, "list conversations")
	limit, err := checkLimit(o.Limit)
	if err != nil {
		return nil, err
	}
	var where []string
	var args []any
	switch {
	case o.ParentID != "":
		if err := checkID("parent_id", o.ParentID); err != nil {
			return nil, err
		}
		where, args = append(where, "parent_id = ?"), append(args, o.ParentID)
	case !o.IncludeSubagents:
		where = append(where, "subagent = 0")
	}
	if o.Owner != "" {
		where, args = append(where, "owner = ?"), append(args, o.Owner)
	}
	q := "SELECT " + columns + " FROM conversations"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.reader.QueryContext(ctx, q+" ORDER BY created_at DESC, id DESC LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, err
	}
	return scanConversations(rows, false)
}

// All returns every conversation with its snapshot, sub-agents included,
// oldest first (a parent before its children): gate serve restores each to
// idle at start-up (REQ-BED-007, B-07b).
func (s *Store) All(ctx context.Context) (_ []Conversation, err error) {
	defer wrap(&err, "read all conversations")
	rows, err := s.reader.QueryContext(ctx, "SELECT "+columns+", snapshot FROM conversations ORDER BY created_at, id")
	if err != nil {
		return nil, err
	}
	return scanConversations(rows, true)
}

// MaxMessagesBytes bounds the bodies one Messages call returns: it stops
// after the message that crosses it, and the caller pages on from the last
// seq.
const MaxMessagesBytes = 16 << 20

// Messages returns a conversation's messages after afterSeq in seq order,
// at most limit of them (0 means DefaultLimit, at most MaxLimit) and
// stopping after MaxMessagesBytes of bodies: the SSE stream replays them to
// a client that connects or reconnects (B-11). An empty result means there
// is nothing after afterSeq; a conversation not stored is ErrNotFound.
func (s *Store) Messages(ctx context.Context, id string, afterSeq int64, limit int) (_ []Message, err error) {
	defer wrap(&err, "read messages")
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	if afterSeq < 0 {
		return nil, fmt.Errorf("%w: after_seq %d is negative", ErrInvalid, afterSeq)
	}
	if limit, err = checkLimit(limit); err != nil {
		return nil, err
	}
	var one int
	err = s.reader.QueryRowContext(ctx, "SELECT 1 FROM conversations WHERE id = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: conversation %q", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx,
		"SELECT seq, role, at, body FROM messages WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?",
		id, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	size := 0
	for rows.Next() && size < MaxMessagesBytes {
		m := Message{ConversationID: id}
		var at string
		var body []byte
		if err := rows.Scan(&m.Seq, &m.Role, &at, &body); err != nil {
			return nil, err
		}
		if m.At, err = parseTime("at", at); err != nil {
			return nil, err
		}
		m.Body = body
		size += len(body)
		out = append(out, m)
	}
	return out, rows.Err()
}

// columns are the conversation columns scanConversations reads, in order.
const columns = "id, parent_id, continued_from, subagent, owner, cwd, model, mode, state, created_at, updated_at"

func scanConversations(rows *sql.Rows, snapshot bool) ([]Conversation, error) {
	defer rows.Close()
	var out []Conversation
	for rows.Next() {
		var c Conversation
		var created, updated string
		dest := []any{&c.ID, &c.ParentID, &c.ContinuedFrom, &c.Subagent, &c.Owner, &c.Cwd, &c.Model, &c.Mode, &c.State, &created, &updated}
		var snap []byte
		if snapshot {
			dest = append(dest, &snap)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		var err error
		if c.CreatedAt, err = parseTime("created_at", created); err != nil {
			return nil, err
		}
		if c.UpdatedAt, err = parseTime("updated_at", updated); err != nil {
			return nil, err
		}
		if snapshot {
			c.Snapshot = snap
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// checkLimit applies DefaultLimit and MaxLimit.
func checkLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%w: limit %d is negative", ErrInvalid, limit)
	case limit == 0:
		return DefaultLimit, nil
	}
	return min(limit, MaxLimit), nil
}

// wrap prefixes a method's error with what it was doing.
func wrap(err *error, what string) {
	if *err != nil {
		*err = fmt.Errorf("convstore: %s: %w", what, *err)
	}
}
