package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

func TestOpenPragmas(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()

	// The writer: durable WAL (DESIGN §6).
	for _, c := range []struct {
		pragma, want string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "2"},
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
		{"query_only", "0"},
	} {
		var got string
		if err := s.writer.QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("writer: PRAGMA %s = %q, want %q", c.pragma, got, c.want)
		}
	}
	// The readers cannot write.
	var qo int
	if err := s.reader.QueryRowContext(ctx, "PRAGMA query_only").Scan(&qo); err != nil {
		t.Fatal(err)
	}
	if qo != 1 {
		t.Errorf("reader: PRAGMA query_only = %d, want 1", qo)
	}
	if _, err := s.reader.ExecContext(ctx, "DELETE FROM events"); err == nil {
		t.Error("reader: DELETE succeeded, want a read-only error")
	}

	// The file and its WAL are private.
	appendAll(t, s, storetest.Chain(0, audit.ZeroHash, 1, 100, nil))
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %o, want 600", filepath.Base(p), perm)
		}
	}
}

func TestOpenReadOnlyMissingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.db")
	_, err := Open(path, Options{ReadOnly: true})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing, ReadOnly) = %v, want fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("read-only Open left %d files behind", len(entries))
	}
}

func TestOpenReadOnlyNeedsTheSchema(t *testing.T) {
	// A file that is not (yet) an audit database: read-only Open does not
	// migrate it.
	path := filepath.Join(t.TempDir(), "audit.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Options{ReadOnly: true})
	if want := fmt.Sprintf("database has schema version 0, this binary needs %d", SchemaVersion()); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open(empty file, ReadOnly) = %v", err)
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Errorf("read-only Open wrote %d bytes", fi.Size())
	}
}

func TestOpenReadOnlyKeepsJournalMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if _, err := db.Exec("PRAGMA journal_mode=DELETE"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ro.Head(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := rawDB(t, path).QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "delete" {
		t.Errorf("journal_mode after a read-only Open = %q, want delete", mode)
	}
}

func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		if _, err := Open(path, Options{ReadOnly: ro}); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Open(text file, ReadOnly=%v) = %v, want an error naming the file", ro, err)
		}
	}
}

func TestOpenPathNeedsEscaping(t *testing.T) {
	// SQLite URIs end the path at ? and # and decode %XX.
	path := filepath.Join(t.TempDir(), "a b?c#d%20e.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, s, storetest.Chain(0, audit.ZeroHash, 1, 100, nil))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{filepath.Base(path)}) {
		t.Errorf("files = %q, want only %q", names, filepath.Base(path))
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if seq, _, _ := ro.Head(context.Background()); seq != 1 {
		t.Errorf("head seq = %d, want 1", seq)
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	for i := range 3 {
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		appendAll(t, s, storetest.Chain(int64(i), "prev", 1, 100, nil))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var versions []int
	rows, err := rawDB(t, path).Query("SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int
		rows.Scan(&v)
		versions = append(versions, v)
	}
	var want []int
	for v := range SchemaVersion() {
		want = append(want, v+1)
	}
	if !slices.Equal(versions, want) {
		t.Errorf("schema_migrations versions = %v, want %v", versions, want)
	}
}

// An archived database of an older schema version is read (verified,
// exported) read-only as it is, without being migrated.
func TestOpenReadOnlyOlderSchema(t *testing.T) {
	recs := sealed(t, 30)
	path := oldDatabase(t, 2, recs) // version 2: with the timestamp index
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open(version 2, ReadOnly) = %v", err)
	}
	defer ro.Close()
	v, err := ro.VerifyChain(context.Background())
	if err != nil || !v.Report().Verified || v.Report().TotalEvents != 30 {
		t.Fatalf("VerifyChain = %+v, %v", v.Report(), err)
	}
	got, err := ro.Query(context.Background(), store.Filter{Since: recs[9].Timestamp, Limit: 5})
	if err != nil || len(got) != 5 || got[0].Seq != 10 {
		t.Fatalf("Query since seq 10's time = %v, %v", storetest.Seqs(got), err)
	}
	if have, _ := schemaVersion(context.Background(), rawDB(t, path)); have != 2 {
		t.Errorf("read-only Open left schema version %d, want 2 (it must not migrate)", have)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	_, path := openTest(t)
	later := SchemaVersion() + 1
	if _, err := rawDB(t, path).Exec("INSERT INTO schema_migrations VALUES (?, 'later')", later); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		_, err := Open(path, Options{ReadOnly: ro})
		want := fmt.Sprintf("database has schema version %d, this binary needs %d", later, SchemaVersion())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(ReadOnly=%v) = %v, want the schema version error", ro, err)
		}
	}
}

func TestMigrationFailureRollsBack(t *testing.T) {
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	migrations = append(slices.Clip(saved),
		`CREATE TABLE later (id TEXT PRIMARY KEY); CREATE TABLE broken (`)
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema migration %d", len(saved)+1)) {
		t.Fatalf("Open with a broken migration = %v", err)
	}
	migrations = saved
	var n int
	if err := rawDB(t, path).QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'later'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("a failed migration left its first table behind")
	}
	if v, err := schemaVersion(context.Background(), rawDB(t, path)); err != nil || v != len(saved) {
		t.Errorf("schema version = %d, %v; want %d", v, err, len(saved))
	}
}

// TestSchemaContract pins DESIGN §6 "Storage": operators and scripts query
// this table with plain SQL.
func TestSchemaContract(t *testing.T) {
	_, path := openTest(t)
	db := rawDB(t, path)

	type column struct {
		name, typ string
		notNull   bool
		pk        bool
	}
	var got []column
	rows, err := db.Query(`SELECT name, type, "notnull", pk FROM pragma_table_info('events') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.typ, &c.notNull, &c.pk); err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	want := []column{
		{"seq", "INTEGER", false, true},
		{"event_id", "TEXT", true, false},
		{"timestamp", "TEXT", true, false},
		{"event_type", "TEXT", true, false},
		{"trace_id", "TEXT", true, false},
		{"session_id", "TEXT", true, false},
		{"agent", "TEXT", true, false},
		{"action_class", "TEXT", true, false},
		{"tool_name", "TEXT", true, false},
		{"prev_hash", "TEXT", true, false},
		{"event_hash", "TEXT", true, false},
		{"body", "BLOB", true, false},
		{"approval_id", "TEXT", false, false}, // NULL when none (migration 4)
	}
	if !slices.Equal(got, want) {
		t.Errorf("events columns:\n got %v\nwant %v", got, want)
	}

	// The indexes a query needs (migration 6 lists which needs which),
	// event_id's unique, and no others: each one more b-tree every append
	// writes (issue 20).
	var indexed []string
	rows, err = db.Query(`SELECT ii.name, il."unique" FROM pragma_index_list('events') AS il,
		pragma_index_info(il.name) AS ii ORDER BY ii.name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var col string
		var unique bool
		rows.Scan(&col, &unique)
		indexed = append(indexed, col)
		if col == "event_id" && !unique {
			t.Error("event_id index is not unique")
		}
	}
	if want := []string{"approval_id", "event_id", "event_type", "session_id"}; !slices.Equal(indexed, want) {
		t.Errorf("indexed columns of events = %v, want %v", indexed, want)
	}

	// No other table has an event_hash column.
	rows, err = db.Query(`SELECT m.name FROM sqlite_master AS m, pragma_table_info(m.name) AS c
		WHERE m.type = 'table' AND c.name = 'event_hash'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		rows.Scan(&name)
		tables = append(tables, name)
	}
	if !slices.Equal(tables, []string{"events"}) {
		t.Errorf("tables with an event_hash column = %v, want [events]", tables)
	}
}

func TestClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	records := storetest.Chain(0, audit.ZeroHash, 100, 600, nil)
	appendAll(t, s, records)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Checkpointed: the database file alone holds the events.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Errorf("-wal is %d bytes after Close, want gone or empty", fi.Size())
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if seq, hash, err := ro.Head(context.Background()); err != nil || seq != 100 || hash != records[99].EventHash {
		t.Errorf("Head after reopen = %d, %s, %v", seq, hash, err)
	}
}

func TestReadOnlyAppendFails(t *testing.T) {
	_, path := openTest(t)
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	err = ro.Append(context.Background(), storetest.Chain(0, audit.ZeroHash, 1, 100, nil))
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Append on a read-only store = %v", err)
	}
}
