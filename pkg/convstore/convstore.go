// Package convstore keeps gate serve's conversations in SQLite, each state written durably before its effects run (REQ-BED-007).
package convstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	sqlite "modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	lib "modernc.org/sqlite/lib"

	"github.com/govkit/govkit/internal/sqlitefile"
	"github.com/govkit/govkit/pkg/store"
)

// Bounds on what a Store accepts. A conversation's snapshot holds its whole
// history, so it bounds the history too; attachments are images a user
// sent, resized before they are stored.
const (
	MaxSnapshotBytes   = 16 << 20
	MaxMessageBytes    = 4 << 20
	MaxAttachmentBytes = 20 << 20
	MaxIDBytes         = 128
	maxFieldBytes      = 4096 // cwd, model, mode, state, role, media type
)

// Listing limits.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Errors a caller tells apart: the HTTP API answers ErrNotFound with 404,
// ErrExists and ErrConflict with 409, ErrInvalid with 400 and ErrTooLarge
// with 413. A store that cannot write wraps store.ErrReadOnly or
// store.ErrFull.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrConflict = errors.New("conflicts with what is stored")
	ErrInvalid  = errors.New("invalid")
	ErrTooLarge = errors.New("too large")
)

// DefaultBusyTimeout is how long a connection waits for a lock another
// connection (or process) holds before it fails with SQLITE_BUSY.
const DefaultBusyTimeout = 5 * time.Second

// maxReaders bounds the read pool: each connection costs a page cache.
const maxReaders = 4

// Conversation is one conversation's row: the columns listings filter and
// sort on, and Snapshot, the executor's JSON of the whole machine state
// (conversation.Conversation), which restore decodes (B-07b).
type Conversation struct {
	ID            string          `json:"id"`
	ParentID      string          `json:"parent_id,omitempty"`      // a sub-agent's parent
	ContinuedFrom string          `json:"continued_from,omitempty"` // a continuation's predecessor (B-21)
	Subagent      bool            `json:"subagent,omitempty"`       // not user-initiated: left out of listings (B-09b)
	Cwd           string          `json:"cwd"`                      // fixed for the conversation's life (B-10)
	Model         string          `json:"model"`
	Owner         string          `json:"owner,omitempty"` // who created it, with --tokens; a sub-agent's is its parent's
	Mode          string          `json:"mode"`
	State         string          `json:"state"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	Snapshot      json.RawMessage `json:"snapshot,omitempty"`
}

// Message is one message of a conversation's history: Body is the
// machine's JSON of it (conversation.Message), Seq its number, 1, 2, … per
// conversation and never reused.
type Message struct {
	ConversationID string          `json:"conversation_id"`
	Seq            int64           `json:"seq"`
	Role           string          `json:"role"`
	Body           json.RawMessage `json:"body"`
	At             time.Time       `json:"at"`
}

// ListOptions select the conversations List returns.
type ListOptions struct {
	// IncludeSubagents lists sub-agents too; a normal listing leaves them
	// out (B-09b).
	IncludeSubagents bool
	// ParentID lists the children of one conversation, sub-agents
	// included: they are what such a listing asks for.
	ParentID string
	// Owner, when set, lists only that owner's conversations.
	Owner string
	// Limit is at most MaxLimit; 0 means DefaultLimit.
	Limit int
}

// Store is gate serve's conversation database. It is safe for concurrent
// use: writes are serialized on one connection (SQLite has one writer at a
// time), and reads run on a pool of read-only connections beside it, which
// WAL allows.
type Store struct {
	path   string
	writer *sql.DB // one connection
	reader *sql.DB // mode=ro connections

	// now stamps rows whose caller left a time zero, and the schema's
	// history; tests replace it.
	now func() time.Time

	closeOnce sync.Once
	closeErr  error
}

// Open opens the conversation database at path, creating the file (mode
// 0600, in an existing directory) if it does not exist. It switches the file
// to WAL with synchronous=FULL, so that every Save that returned survives
// kill -9 and power loss (REQ-BED-007), checks that both took effect, and
// applies the pending schema migrations. A database newer than this binary,
// or one that is not a conversation database, is refused.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open conversation database: empty path")
	}
	s, err := open(path, DefaultBusyTimeout)
	if err != nil {
		return nil, fmt.Errorf("open conversation database %s: %w", path, err)
	}
	return s, nil
}

func open(path string, busy time.Duration) (_ *Store, err error) {
	s := &Store{path: path, now: time.Now}
	defer func() {
		if err != nil {
			s.closeQuietly()
		}
	}()
	// SQLite opens a file it cannot write read-only, silently, and the
	// first commit fails; gate serve must refuse to start instead.
	if err := sqlitefile.CheckWritableStrict(path); err != nil {
		return nil, err
	}
	// 0600: conversations hold what users and tools said.
	if err := sqlitefile.CreateFile(path); err != nil {
		return nil, err
	}
	ctx := context.Background()
	// WAL with synchronous=FULL: every commit syncs the WAL, so a
	// conversation state whose Save returned survives power loss before
	// its effects run (REQ-BED-007, B-07a).
	rw := sqlitefile.DSN(path, sqlitefile.DSNOptions{BusyTimeout: busy})
	if s.writer, err = sql.Open(sqlitefile.DriverName, rw); err != nil {
		return nil, err
	}
	// One connection: a second could only wait for the write lock, and a
	// connection's pragmas are verified once, below.
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxIdleTime(0)
	s.writer.SetConnMaxLifetime(0)
	if err := sqlitefile.CheckPragmas(ctx, s.writer); err != nil {
		return nil, err
	}
	if err := migrate(ctx, s.writer, s.now()); err != nil {
		return nil, writeError(err)
	}
	ro := sqlitefile.DSN(path, sqlitefile.DSNOptions{BusyTimeout: busy, ReadOnly: true})
	if s.reader, err = sql.Open(sqlitefile.DriverName, ro); err != nil {
		return nil, err
	}
	s.reader.SetMaxOpenConns(maxReaders)
	s.reader.SetMaxIdleConns(maxReaders)
	if err := s.reader.PingContext(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Close closes the store, first checkpointing the WAL into the database
// file and truncating it, so that the file alone is complete.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		errs = append(errs, s.reader.Close())
		errs = append(errs, sqlitefile.Checkpoint(context.Background(), s.writer))
		errs = append(errs, s.writer.Close())
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("close conversation database %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// closeQuietly releases what a failed Open had opened, without the
// checkpoint.
func (s *Store) closeQuietly() {
	s.closeOnce.Do(func() {
		if s.reader != nil {
			s.reader.Close()
		}
		if s.writer != nil {
			s.writer.Close()
		}
	})
}

// writeError wraps a full disk and a read-only database in store.ErrFull
// and store.ErrReadOnly, which gate serve reports rather than retries.
func writeError(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary code of an extended one
	case lib.SQLITE_FULL:
		return fmt.Errorf("%w: %w", store.ErrFull, err)
	case lib.SQLITE_READONLY:
		return fmt.Errorf("%w: %w", store.ErrReadOnly, err)
	}
	return err
}

// timeLayout is RFC 3339 in UTC with nine fraction digits, so that stored
// times sort as text.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored %s %q: %w", field, s, err)
	}
	return t, nil
}
