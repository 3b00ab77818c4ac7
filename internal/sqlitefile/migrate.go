package sqlitefile

import (
	"context"
	"database/sql"
	"fmt"
)

// migrationsTable records each applied version, so that an operator can
// see the schema's history with plain SQL (PRAGMA user_version would hold
// only the number).
const migrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at TEXT NOT NULL
)`

// Migrate brings the database to version len(migrations) in one
// transaction, and refuses a database newer than that. migrations[i] takes
// the database from version i to version i+1, and runs in the same
// transaction as its schema_migrations row, whose applied_at is what
// appliedAt returns. check, when not nil, is called in the transaction
// with the database's version before anything is applied, to refuse a file
// that is not the caller's kind of database. The transaction is BEGIN
// IMMEDIATE (the DSN's _txlock), so two processes opening the same new
// file cannot both apply a version. After applying any, Migrate
// checkpoints the WAL into the database file, so that a copy of the file
// alone (without its -wal) has the new schema.
func Migrate(ctx context.Context, db *sql.DB, migrations []string, appliedAt func() string, check func(ctx context.Context, tx *sql.Tx, have int) error) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, migrationsTable); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var have int
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&have); err != nil {
		return err
	}
	if check != nil {
		if err := check(ctx, tx, have); err != nil {
			return err
		}
	}
	if have > len(migrations) {
		return VersionError(have, len(migrations))
	}
	applied := have < len(migrations)
	for v := have + 1; v <= len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v-1]); err != nil {
			return fmt.Errorf("schema migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", v, appliedAt()); err != nil {
			return fmt.Errorf("schema migration %d: %w", v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if applied {
		if err := Checkpoint(ctx, db); err != nil {
			return fmt.Errorf("after migration: %w", err)
		}
	}
	return nil
}

// VersionError is the error for a database at schema version have where
// this binary needs want.
func VersionError(have, want int) error {
	return fmt.Errorf("database has schema version %d, this binary needs %d", have, want)
}

// Checkpoint copies the WAL into the database file and truncates it.
// TRUNCATE waits (up to the busy timeout) for readers in other processes;
// when one kept it from finishing the WAL simply stays for next time, which
// is not an error.
func Checkpoint(ctx context.Context, db *sql.DB) error {
	var busy, logFrames, checkpointed int
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &checkpointed); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}
