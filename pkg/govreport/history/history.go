// Package history keeps govbot's runs in a small SQLite file (--history),
// so that a report can show its trend: runs, alerts and warnings over time
// (issue 20), pruned after a retention period.
package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/govkit/govkit/internal/sqlitefile"
	"github.com/govkit/govkit/pkg/govreport"
)

// migrations are the history file's schema, one statement list per
// version (sqlitefile.Migrate records each in schema_migrations). A run is
// its verdict and counts: the history never holds a finding's text, which
// may quote what agents ran.
var migrations = []string{
	// 1: one row per run. at_ms is the report's time in Unix
	// milliseconds, so that retention and order are integer comparisons;
	// codes is the JSON array of the run's distinct finding codes.
	`CREATE TABLE runs (
		id        INTEGER PRIMARY KEY,
		at_ms     INTEGER NOT NULL,
		gateway   TEXT NOT NULL,
		since     TEXT NOT NULL,
		status    TEXT NOT NULL,
		exit_code INTEGER NOT NULL,
		alerts    INTEGER NOT NULL,
		warnings  INTEGER NOT NULL,
		events    INTEGER NOT NULL,
		decisions INTEGER NOT NULL,
		codes     TEXT NOT NULL
	);
	CREATE INDEX runs_gateway_at ON runs (gateway, at_ms);
	CREATE INDEX runs_at ON runs (at_ms);`,
}

// SchemaVersion is the history file's schema version.
func SchemaVersion() int { return len(migrations) }

// MaxRuns bounds the runs Runs reads: a history of a run every minute for
// the default 90 days is 130k rows, and the trend needs the latest few and
// the counts.
const MaxRuns = 200_000

// Store is an open history file.
type Store struct {
	db *sql.DB
}

// Open opens the history file at path, creating it (mode 0600) with its
// schema when it does not exist. now stamps a schema migration. It refuses
// a file that is another kind of SQLite database, or a newer history.
func Open(ctx context.Context, path string, now time.Time) (_ *Store, err error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	if err := sqlitefile.CheckWritableStrict(path); err != nil {
		return nil, err
	}
	if err := sqlitefile.CreateFile(path); err != nil {
		return nil, err
	}
	db, err := sql.Open(sqlitefile.DriverName, sqlitefile.DSN(path, sqlitefile.DSNOptions{BusyTimeout: 5 * time.Second}))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	// One connection: govbot is one process making one report; two cron
	// runs at once wait for each other's write lock (busy_timeout).
	db.SetMaxOpenConns(1)
	if err := sqlitefile.CheckPragmas(ctx, db); err != nil {
		return nil, notHistory(err)
	}
	appliedAt := func() string { return now.UTC().Format(time.RFC3339Nano) }
	if err := sqlitefile.Migrate(ctx, db, migrations, appliedAt, checkKind); err != nil {
		return nil, notHistory(err)
	}
	return &Store{db: db}, nil
}

// notHistory words SQLite's answer for a file that is not a database.
func notHistory(err error) error {
	if err != nil && strings.Contains(err.Error(), "file is not a database") {
		return errors.New("not a SQLite database (is it the right file?)")
	}
	return err
}

// checkKind refuses a file that is not a govbot history, before Migrate
// adds our table to it (an audit database given by mistake must stay
// untouched).
func checkKind(ctx context.Context, tx *sql.Tx, have int) error {
	var other, runs int
	err := tx.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE name NOT IN ('schema_migrations', 'runs')),
		count(*) FILTER (WHERE name = 'runs')
		FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).Scan(&other, &runs)
	if err != nil {
		return err
	}
	switch {
	case other > 0:
		return fmt.Errorf("not a govbot history file: it has %d other tables", other)
	case have > 0 && runs == 0:
		return fmt.Errorf("not a govbot history file: schema version %d without a runs table", have)
	}
	return nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Runs returns the runs of gateway made at or after since, oldest first,
// at most MaxRuns (the latest).
func (s *Store) Runs(ctx context.Context, gateway string, since time.Time) ([]govreport.Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT at_ms, gateway, since, status, exit_code, alerts, warnings, events, decisions, codes
		FROM (SELECT * FROM runs WHERE gateway = ? AND at_ms >= ? ORDER BY at_ms DESC, id DESC LIMIT ?)
		ORDER BY at_ms, id`, gateway, since.UnixMilli(), MaxRuns)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []govreport.Run
	for rows.Next() {
		var r govreport.Run
		var at int64
		var codes string
		if err := rows.Scan(&at, &r.Gateway, &r.Since, &r.Status, &r.ExitCode, &r.Alerts, &r.Warnings, &r.Events, &r.Decisions, &codes); err != nil {
			return nil, err
		}
		r.GeneratedAt = time.UnixMilli(at).UTC()
		if err := json.Unmarshal([]byte(codes), &r.Codes); err != nil || r.Codes == nil {
			r.Codes = []string{}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Record adds run and deletes every run (of any gateway) made before
// prune, in one transaction: retention is applied as the history grows.
// It returns how many runs it deleted.
func (s *Store) Record(ctx context.Context, run govreport.Run, prune time.Time) (deleted int64, err error) {
	codes := run.Codes
	if codes == nil {
		codes = []string{}
	}
	codesJSON, err := json.Marshal(codes)
	if err != nil {
		return 0, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (at_ms, gateway, since, status, exit_code, alerts, warnings, events, decisions, codes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, run.GeneratedAt.UnixMilli(), run.Gateway, run.Since, run.Status, run.ExitCode,
		run.Alerts, run.Warnings, run.Events, run.Decisions, string(codesJSON)); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE at_ms < ?`, prune.UnixMilli())
	if err != nil {
		return 0, err
	}
	deleted, _ = res.RowsAffected()
	return deleted, tx.Commit()
}
