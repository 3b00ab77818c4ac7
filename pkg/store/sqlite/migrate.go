package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/govkit/govkit/internal/sqlitefile"
)

// migrations are the schema's versions: migrations[i] takes the database
// from version i to version i+1. Append to the list; never edit or reorder
// an entry that has shipped, since databases in the field have applied it.
// Each entry runs in the same transaction as its schema_migrations row.
//
// Keep the DESIGN §6 storage contract: events holds one row per event with
// the canonical bytes in body and the hash in event_hash, and no other
// table has an event_hash column (a test checks).
var migrations = []string{
	// 1: the audit log. seq is the caller's (auditd numbers the chain), so
	// no AUTOINCREMENT; as INTEGER PRIMARY KEY it is the rowid, which every
	// index below carries, so "WHERE agent = ? AND seq > ? ORDER BY seq"
	// walks one index in order. timestamp is RFC 3339 UTC with nine
	// fraction digits so that it sorts as text.
	`CREATE TABLE events (
		seq          INTEGER PRIMARY KEY,
		event_id     TEXT NOT NULL UNIQUE,
		timestamp    TEXT NOT NULL,
		event_type   TEXT NOT NULL DEFAULT '',
		trace_id     TEXT NOT NULL DEFAULT '',
		session_id   TEXT NOT NULL DEFAULT '',
		agent        TEXT NOT NULL DEFAULT '',
		action_class TEXT NOT NULL DEFAULT '',
		tool_name    TEXT NOT NULL DEFAULT '',
		prev_hash    TEXT NOT NULL,
		event_hash   TEXT NOT NULL,
		body         BLOB NOT NULL
	);
	CREATE INDEX events_timestamp    ON events (timestamp);
	CREATE INDEX events_event_type   ON events (event_type);
	CREATE INDEX events_trace_id     ON events (trace_id);
	CREATE INDEX events_session_id   ON events (session_id);
	CREATE INDEX events_agent        ON events (agent);
	CREATE INDEX events_action_class ON events (action_class);
	CREATE INDEX events_tool_name    ON events (tool_name);`,

	// 2: approval requests (DESIGN §7), a projection of the approval
	// events in the chain: request holds the request's JSON, seq the event
	// that recorded this state. expires_at sorts as text like timestamp.
	// approvals_origin holds the head when approvals arrived: approval
	// events before it were posted by clients of older versions, which did
	// not reserve those types, and must never be replayed as approvals.
	`CREATE TABLE approvals (
		id           TEXT PRIMARY KEY,
		status       TEXT NOT NULL,
		requested_by TEXT NOT NULL,
		created_at   TEXT NOT NULL,
		expires_at   TEXT NOT NULL,
		seq          INTEGER NOT NULL,
		request      BLOB NOT NULL
	);
	CREATE UNIQUE INDEX approvals_seq        ON approvals (seq);
	CREATE INDEX approvals_status_expires    ON approvals (status, expires_at);
	CREATE INDEX approvals_requested_by      ON approvals (requested_by, seq);
	CREATE INDEX approvals_created_at        ON approvals (created_at);
	CREATE TABLE approvals_origin (seq INTEGER NOT NULL);
	INSERT INTO approvals_origin SELECT coalesce(max(seq), 0) FROM events;`,

	// 3: no timestamp index. Timestamps never go backwards along the chain,
	// so a time window is found as a seq range by binary search over the
	// primary key (Store.timeBounds); the index only made every append
	// insert into one more b-tree, in auditd's one writer.
	`DROP INDEX events_timestamp;`,

	// 4: approval_id, so that a watcher that learns an approval from
	// auditd can find the events that cited it before the one it judges:
	// one consumption covers one event (DESIGN §11, issue 13). NULL when
	// the event cites none, which most do not: the partial index holds
	// only the rows that cite one, and "approval_id = ?" implies IS NOT
	// NULL, so SQLite uses it. The backfill reads the body as text (a
	// BLOB argument is JSONB to SQLite's JSON functions) and skips bodies
	// that are not JSON, which verify-chain reports: a tampered row must
	// not stop auditd from starting.
	`ALTER TABLE events ADD COLUMN approval_id TEXT;
	UPDATE events SET approval_id = nullif(json_extract(CAST(body AS TEXT), '$.approval_id'), '')
		WHERE instr(body, CAST('"approval_id":' AS BLOB)) > 0 AND json_valid(CAST(body AS TEXT));
	CREATE INDEX events_approval_id ON events (approval_id) WHERE approval_id IS NOT NULL;`,

	// 5: the log's Merkle tree and its signed checkpoints (issue 19,
	// pkg/checkpoint). tree_hashes has one row per record, leaf = seq-1,
	// written in Append's transaction: hashes is the concatenation of the
	// 32-byte stored hashes that record completes (checkpoint.Extend), its
	// leaf hash first, so a record costs one small row (half the inserts
	// of a row per stored hash, on the serial path of ingest). None is an
	// event hash: DESIGN §6 keeps event_hash in events only. The backfill
	// of an existing log is syncTree's, in Go: SQL has no SHA-256.
	// checkpoints holds each signed note by the size it signs; created_at
	// sorts as text like events.timestamp.
	`CREATE TABLE tree_hashes (
		leaf   INTEGER PRIMARY KEY,
		hashes BLOB NOT NULL
	);
	CREATE TABLE checkpoints (
		size       INTEGER PRIMARY KEY,
		note       TEXT NOT NULL,
		created_at TEXT NOT NULL
	);`,

	// 6: only the indexes a query needs (issue 20). Each index is one
	// more b-tree that every append inserts into, in auditd's one writer,
	// and one whose entries for the 32 agents (or sessions, traces) of a
	// busy log lie on as many pages, each written to the WAL at every
	// commit: with all seven, the SQLite insert and its WAL were ~28% of
	// auditd's CPU at 32 clients. What stays, and the query that needs it:
	//
	//	event_id's UNIQUE index  the writer's duplicate check (a retried
	//	                         event_id is refused by it, and answered
	//	                         with the stored event) and
	//	                         GET /api/events/{id}
	//	events_event_type        auditd's start-up catch-up of approval
	//	                         events (approvals.catchUp) and
	//	                         event_type= queries (incidents): a few
	//	                         rows of one type among millions
	//	events_session_id        the guardrails' history of one session,
	//	                         read at every decision (auditd
	//	                         guardrails.go); event_type and
	//	                         action_class are tested within the
	//	                         session's rows
	//	events_approval_id       the watchers' citations of an approval
	//	                         (pkg/client Citations); partial, so only
	//	                         events that cite one pay for it
	//
	// Dropped: agent, trace_id, action_class and tool_name, which no
	// binary filters on. GET /api/events still does (DESIGN §6), by
	// walking the events in seq order and testing each row until a page
	// is full: a value that matches nothing reads the whole table, ~0.15 s
	// per million events on the benchmark machine. The PostgreSQL store
	// keeps the same set (its migration 3). IF EXISTS: an operator may
	// have dropped one.
	`DROP INDEX IF EXISTS events_agent;
	DROP INDEX IF EXISTS events_trace_id;
	DROP INDEX IF EXISTS events_action_class;
	DROP INDEX IF EXISTS events_tool_name;`,
}

// approvalIDVersion is the version that adds events.approval_id.
const approvalIDVersion = 4

// SchemaVersion is the schema version this binary needs.
func SchemaVersion() int { return len(migrations) }

// migrate brings the database to SchemaVersion (sqlitefile.Migrate), and
// refuses a database newer than this binary.
func migrate(ctx context.Context, db *sql.DB) error {
	appliedAt := func() string { return time.Now().UTC().Format(time.RFC3339Nano) }
	return sqlitefile.Migrate(ctx, db, migrations, appliedAt, nil)
}

// checkVersion is the read-only Store's check, which cannot migrate: it
// returns the database's version, and refuses a file that is not an audit database or is newer than this
// binary. An older version is read as it is: a read-only Store reads only
// the events table (verify-chain, auditd export), which has been the same
// since version 1, so an archived copy verifies with a newer verify-chain.
func checkVersion(ctx context.Context, db *sql.DB) (int, error) {
	have, err := schemaVersion(ctx, db)
	if err != nil {
		return 0, err
	}
	if have < 1 || have > len(migrations) {
		return 0, versionError(have)
	}
	return have, nil
}

// schemaVersion returns the database's schema version: 0 without a
// schema_migrations table (a new or foreign file).
func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var n int
	err := db.QueryRowContext(ctx,
		"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	var v int
	err = db.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v)
	return v, err
}

func versionError(have int) error {
	return sqlitefile.VersionError(have, len(migrations))
}
