package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/sqlitefile"
	"github.com/govkit/govkit/pkg/audit"
)

// t0 is the first test event's time.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// openTest opens a read-write store in a new temporary directory and
// closes it at the end of the test.
func openTest(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// appendAll appends records in one batch.
func appendAll(t testing.TB, s *Store, records []audit.Record) {
	t.Helper()
	if err := s.Append(context.Background(), records); err != nil {
		t.Fatal(err)
	}
}

// rawDB opens path with the driver directly, as an operator's sqlite3 shell
// would, for tampering and inspection.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open(sqlitefile.DriverName, "file:"+sqlitefile.URIPath(path)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// pagedDatabase creates an empty WAL database with size-byte pages, as a
// build that chose another page size left it.
func pagedDatabase(t testing.TB, size int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "paged.db")
	conn, err := rawDB(t, path).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var mode string
	if _, err := conn.ExecContext(context.Background(), fmt.Sprintf("PRAGMA page_size=%d", size)); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(context.Background(), "PRAGMA journal_mode=WAL").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q, %v", mode, err)
	}
	return path
}

// oldDatabase creates a database at schema version v holding records, as
// a binary of that version left it: the first v migrations, and the rows
// inserted with version 1's columns (today's appender also fills
// approval_id, which an old schema lacks).
func oldDatabase(t testing.TB, v int, records []audit.Record) string {
	t.Helper()
	saved := migrations
	defer func() { migrations = saved }()
	migrations = saved[:v]
	path := filepath.Join(t.TempDir(), "audit.db")
	db := rawDB(t, path)
	if err := migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		_, err := db.Exec("INSERT INTO events ("+columns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			r.Seq, r.EventID, formatTime(r.Timestamp), r.EventType, r.TraceID, r.SessionID,
			r.Agent, r.ActionClass, r.ToolName, r.PrevHash, r.EventHash, r.Body)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
