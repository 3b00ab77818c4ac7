package convstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/govkit/govkit/internal/sqlitefile"
)

// migrations are the schema's versions: migrations[i] takes the database
// from version i to version i+1. Append to the list; never edit or reorder
// an entry that has shipped, since databases in the field have applied it.
// Each entry runs in the same transaction as its schema_migrations row.
var migrations = []string{
	// 1: conversations, their messages and their attachments.
	//
	// conversations holds the executor's snapshot of each conversation
	// (the machine's JSON) with the columns a listing filters and sorts on
	// beside it. Times are RFC 3339 UTC with nine fraction digits so that
	// they sort as text. parent_id and continued_from are '' when absent.
	//
	// messages is the conversation's history, one row per message, keyed
	// by (conversation, seq) so that a replay after a seq (the SSE stream,
	// B-11) walks the primary key in order; WITHOUT ROWID because that key
	// is the only access path. body is the message's JSON as the machine
	// made it.
	//
	// attachments are content-addressed: ref is "att_" and the SHA-256 of
	// data, so an image attached twice is stored once (B-13: messages hold
	// references, never bytes).
	`CREATE TABLE conversations (
		id             TEXT PRIMARY KEY,
		parent_id      TEXT NOT NULL DEFAULT '',
		continued_from TEXT NOT NULL DEFAULT '',
		subagent       INTEGER NOT NULL DEFAULT 0,
		cwd            TEXT NOT NULL,
		model          TEXT NOT NULL,
		mode           TEXT NOT NULL,
		state          TEXT NOT NULL,
		created_at     TEXT NOT NULL,
		updated_at     TEXT NOT NULL,
		snapshot       BLOB NOT NULL
	);
	CREATE INDEX conversations_listing ON conversations (subagent, created_at);
	CREATE INDEX conversations_parent  ON conversations (parent_id, created_at) WHERE parent_id != '';
	CREATE TABLE messages (
		conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
		seq             INTEGER NOT NULL,
		role            TEXT NOT NULL,
		at              TEXT NOT NULL,
		body            BLOB NOT NULL,
		PRIMARY KEY (conversation_id, seq)
	) WITHOUT ROWID;
	CREATE TABLE attachments (
		ref        TEXT PRIMARY KEY,
		media_type TEXT NOT NULL,
		size       INTEGER NOT NULL,
		created_at TEXT NOT NULL,
		data       BLOB NOT NULL
	) WITHOUT ROWID;`,

	// 2: owner, the name of the token that created a conversation when
	// gate serve authenticates its clients (--tokens): a listing shows each
	// person their own conversations. '' in local mode, where everyone who
	// can reach the socket is trusted alike.
	`ALTER TABLE conversations ADD COLUMN owner TEXT NOT NULL DEFAULT '';
	CREATE INDEX conversations_owner ON conversations (owner, subagent, created_at);`,
}

// SchemaVersion is the schema version this binary needs.
func SchemaVersion() int { return len(migrations) }

// migrate brings the database to SchemaVersion (sqlitefile.Migrate), each
// version recorded as applied at now, and refuses a database newer than this
// binary or one that is not a conversation database.
func migrate(ctx context.Context, db *sql.DB, now time.Time) error {
	appliedAt := func() string { return formatTime(now) }
	return sqlitefile.Migrate(ctx, db, migrations, appliedAt, checkKind)
}

// checkKind refuses a file that is not a conversation database, before
// migrate adds our tables to it.
func checkKind(ctx context.Context, tx *sql.Tx, have int) error {
	if have == 0 {
		// A file that holds other tables is not a conversation
		// database: refuse it rather than add ours beside them.
		var n int
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
			WHERE type = 'table' AND name NOT IN ('schema_migrations') AND name NOT LIKE 'sqlite_%'`).Scan(&n)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("not a conversation database: it has %d other tables and no schema version", n)
		}
		return nil
	}
	// Another govkit database (auditd's) has a schema_migrations table
	// too: refuse one without our first table.
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'conversations'").Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("not a conversation database: schema version %d without a conversations table", have)
	}
	return nil
}
