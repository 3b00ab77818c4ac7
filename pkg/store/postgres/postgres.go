// Package postgres stores the audit log in PostgreSQL, so that several auditd instances on several machines write one chain (issue 19).
//
// The database holds the DESIGN §6 storage contract as pkg/store/sqlite's
// file does: table events, one row per event, the canonical bytes in body
// and the hash in event_hash, the indexed columns beside them; approvals as
// a projection of the chain. Appends are serialised in the database, not
// in one process: every append transaction takes one transaction-scoped
// advisory lock (appendLock) and reads the head under it, so two auditd
// instances can never both write seq n (Store.Sequence). It uses
// github.com/jackc/pgx/v5's pool.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/govkit/govkit/pkg/store"
)

var (
	_ store.Store          = (*Store)(nil)
	_ store.Sequencer      = (*Store)(nil)
	_ store.AppendNotifier = (*Store)(nil)
	_ store.Tree           = (*Store)(nil)
)

// Advisory lock keys, one per purpose, all in one database. Advisory
// locks are scoped to the database, so two logs in two databases of one
// server never wait for each other.
const (
	// appendLock serialises appends: held, transaction-scoped, by every
	// transaction that writes events, from before it reads the head until
	// its COMMIT.
	appendLock int64 = 0x676f766b69740001 // "govkit" 0x0001
	// migrateLock serialises schema migrations of instances starting at
	// once.
	migrateLock int64 = 0x676f766b69740002
	// CheckpointLock is free for the instance that signs checkpoints
	// (issue 19: one signer at a time, elected by an advisory lock).
	CheckpointLock int64 = 0x676f766b69740003
)

// notifyChannel is the LISTEN/NOTIFY channel of commits: each append
// transaction notifies it with its last seq (Store.Appended).
const notifyChannel = "govkit_audit_events"

// Options configure Open.
type Options struct {
	// ReadOnly opens an existing log without writing to it: no
	// migrations, every transaction read-only. Appends fail with
	// store.ErrReadOnly.
	ReadOnly bool
	// MaxConns bounds the pool; zero means 8.
	MaxConns int32
}

// Store is an audit log in a PostgreSQL database. It is safe for
// concurrent use, and for use by several processes at once.
type Store struct {
	pool     *pgxpool.Pool
	readOnly bool
	where    string // the server and database, without a password
	// noTree: a read-only Store of a database older than the Merkle tree
	// (schema version < treeVersion).
	noTree  bool
	version int

	closeOnce sync.Once
}

// IsDSN reports whether s names a PostgreSQL database rather than a file:
// a postgres:// or postgresql:// URL, or a key=value connection string
// ("host=/run/postgresql dbname=audit").
func IsDSN(s string) bool {
	if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		return true
	}
	first, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	key, _, ok := strings.Cut(first, "=")
	if !ok || key == "" {
		return false
	}
	for _, c := range key {
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string, as libpq takes them, a Unix socket directory as host
// included), and, read-write, applies the pending schema migrations.
// Read-only, the schema must be one this binary knows.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message may quote the string, password included.
		return nil, errors.New("open audit database: not a PostgreSQL connection string (postgres://user@host/db or host=… dbname=…)")
	}
	s := &Store{readOnly: opts.ReadOnly, where: describe(cfg.ConnConfig)}
	cfg.MaxConns = opts.MaxConns
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 8
	}
	if opts.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	// Durable means on disk when COMMIT returns (DESIGN §6): a server or
	// database configured with synchronous_commit=off would acknowledge
	// commits it can lose on a crash. Stronger settings (remote_apply,
	// for synchronous replicas) are the operator's and are kept.
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SELECT set_config('synchronous_commit', 'on', false) WHERE current_setting('synchronous_commit') IN ('off', 'local')")
		return err
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open audit database %s: %w", s.where, classify(err))
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("open audit database %s: %w", s.where, classify(err))
	}
	if opts.ReadOnly {
		s.version, err = checkVersion(ctx, s.pool)
		s.noTree = s.version < treeVersion
	} else {
		s.version = SchemaVersion()
		if err = migrate(ctx, s.pool); err == nil {
			err = syncTree(ctx, s.pool)
		}
	}
	if err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("open audit database %s: %w", s.where, classify(err))
	}
	return s, nil
}

// String names the database without its password, for logs.
func (s *Store) String() string { return s.where }

// Describe names the database dsn connects to without a password, for
// logs and errors.
func Describe(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "postgres (an invalid connection string)"
	}
	return describe(cfg)
}

func describe(c *pgx.ConnConfig) string {
	host := c.Host
	if !strings.HasPrefix(host, "/") {
		host = net.JoinHostPort(host, fmt.Sprint(c.Port))
	}
	return fmt.Sprintf("postgres://%s@%s/%s", c.User, host, c.Database)
}

// Close closes the pool.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// errReadOnly is what a read-only Store's writes return.
var errReadOnly = fmt.Errorf("store: append: %w", store.ErrReadOnly)

// classify wraps the errors auditd reports on /health: a database that
// cannot be reached (restarting, failing over) is store.ErrUnavailable, a
// read-only one (a hot standby, default_transaction_read_only) is
// store.ErrReadOnly, a full disk store.ErrFull.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "25006": // read_only_sql_transaction
			return fmt.Errorf("%w: %w", store.ErrReadOnly, err)
		case pe.Code == "53100": // disk_full
			return fmt.Errorf("%w: %w", store.ErrFull, err)
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			pe.Code == "40001", pe.Code == "40P01": // serialization_failure, deadlock_detected: try again
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "unexpected EOF") {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}
