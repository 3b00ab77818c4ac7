// Package store defines the audit log's storage: an append-only sequence of
// records with the query filters of DESIGN §6. Implementations live in
// subpackages (store/sqlite).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// Store is the audit log's storage. Appends come from one writer at a time
// (auditd's group-commit goroutine); reads may run concurrently with it.
type Store interface {
	// Head returns the last record's seq and event hash: (0, audit.ZeroHash)
	// when the log is empty.
	Head(ctx context.Context) (seq int64, hash string, err error)
	// Append stores records, already numbered and chained by the caller,
	// in one transaction. It returns only after the transaction is durable
	// (the caller acknowledges clients after it). A record whose event_id
	// exists already is an error (ErrDuplicate); nothing of the batch is
	// stored then. A store that keeps the Merkle tree (Tree) extends it in
	// the same transaction, so the batch must continue the log: seqs
	// consecutive from the tree's size plus one (else ErrTreeBroken).
	Append(ctx context.Context, batch []audit.Record) error
	// Get returns the record with an event id.
	Get(ctx context.Context, eventID string) (audit.Record, bool, error)
	// GetMany returns the records stored under any of eventIDs, one per
	// id found, in seq order; ids not stored are left out. It is a batch
	// append's idempotency check in one query rather than one per event
	// (issue 20).
	GetMany(ctx context.Context, eventIDs []string) ([]audit.Record, error)
	// Query returns records matching f in seq order, at most f.Limit.
	Query(ctx context.Context, f Filter) ([]audit.Record, error)
	// Scan calls fn for every record with seq > afterSeq, in seq order,
	// until fn returns an error (returned as is) or the records end.
	Scan(ctx context.Context, afterSeq int64, fn func(audit.Record) error) error
	// Close releases the store.
	Close() error
	Approvals
}

// Filter selects records; zero fields do not filter. Filters are ANDed.
type Filter struct {
	Agent       string
	TraceID     string
	SessionID   string
	ActionClass string
	ToolName    string
	EventType   string
	ApprovalID  string    // the approval the event cites (DESIGN §11)
	Since       time.Time // timestamp >= Since
	Until       time.Time // timestamp < Until
	AfterSeq    int64     // seq > AfterSeq: the pagination cursor
	Limit       int       // 0 means DefaultLimit; never more than MaxLimit
}

// Query limits.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// TimestampLayout is how both stores write timestamp columns (events,
// approvals, checkpoints): RFC 3339 in UTC with a fixed nine fraction
// digits. time.RFC3339Nano drops trailing zeros, and then "…:05Z" sorts
// after "…:05.1Z" as text; fixed width keeps text order equal to time
// order, so Since/Until compare strings. pkg/audit's Verifier compares
// columns in this layout with event bodies as text.
const TimestampLayout = "2006-01-02T15:04:05.000000000Z07:00"

// PageLimit is how many rows a read with limit returns at most (Filter,
// ApprovalFilter, Tree.Checkpoints): DefaultLimit for 0 or less, never
// more than MaxLimit.
func PageLimit(limit int) int {
	if limit <= 0 {
		return DefaultLimit
	}
	return min(limit, MaxLimit)
}

// ErrDuplicate reports an event id that is already stored.
var ErrDuplicate = errors.New("store: duplicate event_id")

// Errors of a store that cannot write: auditd answers them with 503 and
// reports them on /health (DESIGN §11 "Health tells the truth").
var (
	// ErrReadOnly: the store was opened read-only, or its file or
	// directory is not writable.
	ErrReadOnly = errors.New("the database is read-only")
	// ErrFull: the disk (or the database's size limit) is full.
	ErrFull = errors.New("the disk is full")
	// ErrReplaced: the database file was removed or replaced since the
	// store opened it. The store's connections still write into the old
	// file, which nobody will read again: nothing written from then on is
	// durable (issue 13).
	ErrReplaced = errors.New("the database file was removed or replaced")
	// ErrUnavailable: the database server cannot be reached (restarting,
	// failing over). Nothing of the failed transaction is acknowledged; a
	// client retries with its event_id, which returns the event if the
	// commit did happen (issue 19).
	ErrUnavailable = errors.New("the database server is unavailable")
)

// FileChecker is a Store kept in a file that can tell whether its file is
// still the one it opened. CheckFile is cheap (a stat or two): auditd's
// writer calls it after every commit, before it acknowledges the batch.
// It returns an error wrapping ErrReplaced when the path names another
// file or none.
type FileChecker interface {
	CheckFile() error
}

// Draft is an event for a Sequencer to number and chain: prepared
// (audit.Prepare) in auditd's handler, with the time auditd received it.
type Draft struct {
	EventID  string
	Draft    *audit.Draft
	Received time.Time
	// Idempotent says that EventID is the client's idempotency key
	// (DESIGN §6): when it is stored already, by any writer, the stored
	// event is the answer and nothing is appended for it. Any other event
	// id that is stored already fails the batch with ErrDuplicate.
	Idempotent bool
}

// Sealed is a Sequencer's answer for one Draft: the record stored for it,
// or the one stored before under its idempotent event id (Stored), or the
// reason it could not be sealed (Err, and nothing stored for it).
type Sealed struct {
	Record audit.Record
	Stored bool
	Err    error
}

// Sequencer is a Store that numbers and chains appends itself, in the
// database, so that several writers (auditd instances behind a load
// balancer, sharing one database) append to one chain without forking it
// (issue 19). auditd's writer uses it instead of Append when the store
// implements it; it keeps its group commit, one Sequence per batch.
type Sequencer interface {
	// Sequence appends drafts in order after the head of the log as the
	// database holds it. In one transaction that holds the log's append
	// lock it reads the head, seals each draft with the next seq, the
	// previous hash and the later of its Received time and the previous
	// timestamp (timestamps never go backwards along the chain: the
	// stores find time windows by seq), stores them and commits. It
	// returns after the commit is durable, one Sealed per draft, in
	// order. On an error nothing was stored.
	Sequence(ctx context.Context, drafts []Draft) ([]Sealed, error)
}

// AppendNotifier is a Store that other processes may append to (another
// auditd on the same database): it says when records may have been
// committed, so that each auditd streams every committed event, not only
// its own (issue 19).
type AppendNotifier interface {
	// Appended returns a channel that receives a value after any writer
	// committed records; values coalesce (capacity 1, a send never
	// blocks), so the receiver reads the store after the last seq it
	// has. It also receives one at start and after a lost connection,
	// since commits may have been missed meanwhile. It is closed when
	// ctx ends.
	Appended(ctx context.Context) <-chan struct{}
}
