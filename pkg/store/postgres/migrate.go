package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are the schema's versions: migrations[i] takes the database
// from version i to version i+1. Append to the list; never edit or reorder
// an entry that has shipped. Each entry runs in the same transaction as its
// schema_migrations row, under migrateLock, so instances that start at once
// apply each version once.
//
// Version 1 is the SQLite schema at its version 4 (pkg/store/sqlite's
// migrate.go), in PostgreSQL's types: the same DESIGN §6 contract, so an
// operator's SQL and auditd migrate's byte-for-byte copy work on both.
// Timestamps are text in the fixed nine-fraction-digit layout, as in
// SQLite: timestamptz keeps microseconds, and the column must equal the
// body's nanoseconds (verification compares them); COLLATE "C" makes text
// order time order whatever the database's locale. Unlike SQLite's schema
// it indexes timestamp: PostgreSQL has no cheap binary search over the
// primary key from one statement, and its appends are bound by the
// round trips and the commit, not by one more b-tree.
var migrations = []string{
	`CREATE TABLE events (
		seq          bigint PRIMARY KEY,
		event_id     text NOT NULL UNIQUE,
		timestamp    text COLLATE "C" NOT NULL,
		event_type   text NOT NULL DEFAULT '',
		trace_id     text NOT NULL DEFAULT '',
		session_id   text NOT NULL DEFAULT '',
		agent        text NOT NULL DEFAULT '',
		action_class text NOT NULL DEFAULT '',
		tool_name    text NOT NULL DEFAULT '',
		prev_hash    text NOT NULL,
		event_hash   text NOT NULL,
		body         bytea NOT NULL,
		approval_id  text
	);
	CREATE INDEX events_timestamp    ON events (timestamp);
	CREATE INDEX events_event_type   ON events (event_type, seq);
	CREATE INDEX events_trace_id     ON events (trace_id, seq);
	CREATE INDEX events_session_id   ON events (session_id, seq);
	CREATE INDEX events_agent        ON events (agent, seq);
	CREATE INDEX events_action_class ON events (action_class, seq);
	CREATE INDEX events_tool_name    ON events (tool_name, seq);
	CREATE INDEX events_approval_id  ON events (approval_id, seq) WHERE approval_id IS NOT NULL;

	CREATE TABLE approvals (
		id           text PRIMARY KEY,
		status       text NOT NULL,
		requested_by text NOT NULL,
		created_at   text COLLATE "C" NOT NULL,
		expires_at   text COLLATE "C" NOT NULL,
		seq          bigint NOT NULL,
		request      bytea NOT NULL
	);
	CREATE UNIQUE INDEX approvals_seq     ON approvals (seq);
	CREATE INDEX approvals_status_expires ON approvals (status, expires_at);
	CREATE INDEX approvals_requested_by   ON approvals (requested_by, seq);
	CREATE INDEX approvals_created_at     ON approvals (created_at);
	CREATE TABLE approvals_origin (seq bigint NOT NULL);
	INSERT INTO approvals_origin SELECT coalesce(max(seq), 0) FROM events;`,

	// 2: the log's Merkle tree and its signed checkpoints (issue 19,
	// pkg/checkpoint), as SQLite's migration 5: tree_hashes has one row
	// per record, leaf = seq-1, written in the append transaction under
	// appendLock; hashes is the concatenation of the 32-byte stored hashes
	// that record completes (checkpoint.Extend), its leaf hash first. None
	// is an event hash: DESIGN §6 keeps event_hash in events only. The
	// backfill of an existing log is syncTree's, in Go, at every
	// read-write open (SQL has no RFC 6962 hashing). checkpoints holds
	// each signed note by the size it signs; created_at sorts as text like
	// events.timestamp.
	`CREATE TABLE tree_hashes (
		leaf   bigint PRIMARY KEY,
		hashes bytea NOT NULL
	);
	CREATE TABLE checkpoints (
		size       bigint PRIMARY KEY,
		note       text NOT NULL,
		created_at text COLLATE "C" NOT NULL
	);`,

	// 3: the indexes a query needs, as SQLite's migration 6 (issue 20;
	// the list of which query needs which is there), and timestamp's
	// (above). Each dropped index was one more b-tree every append writes.
	// IF EXISTS: an operator may have dropped one already.
	`DROP INDEX IF EXISTS events_agent;
	DROP INDEX IF EXISTS events_trace_id;
	DROP INDEX IF EXISTS events_action_class;
	DROP INDEX IF EXISTS events_tool_name;`,
}

// treeVersion is the schema version that adds tree_hashes and checkpoints.
const treeVersion = 2

// SchemaVersion is the schema version this binary needs.
func SchemaVersion() int { return len(migrations) }

const migrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    integer PRIMARY KEY,
	applied_at text NOT NULL
)`

// migrate brings the database to SchemaVersion in one transaction that
// holds migrateLock, and refuses a database newer than this binary.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, migrationsTable); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&have); err != nil {
			return err
		}
		if have > len(migrations) {
			return versionError(have)
		}
		for v := have + 1; v <= len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return fmt.Errorf("schema migration %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
				v, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
				return fmt.Errorf("schema migration %d: %w", v, err)
			}
		}
		return nil
	})
}

// checkVersion is the read-only Store's check, which cannot migrate: the
// database must have a schema this binary knows. It returns the version:
// an older one is read as it is (its events table is the same).
func checkVersion(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return 0, err
	}
	var have int
	if exists {
		if err := pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&have); err != nil {
			return 0, err
		}
	}
	if have < 1 || have > len(migrations) {
		return 0, versionError(have)
	}
	return have, nil
}

func versionError(have int) error {
	return fmt.Errorf("database has schema version %d, this binary needs %d", have, len(migrations))
}
