package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/pgtest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.RunShared(m)) }

// openTest opens a read-write store on a new database of the shared
// cluster, closed at the end of the test, and returns its connection string.
func openTest(t *testing.T) (*Store, string) {
	t.Helper()
	dsn := pgtest.Shared(t).NewDatabase(t)
	s, err := Open(context.Background(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dsn
}

// The store conformance suite (issue 19: one suite, two stores).
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := openTest(t)
		return s
	})
}

func TestIsDSN(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"postgres://auditd@db.example/audit", true},
		{"postgresql:///audit?host=/run/postgresql", true},
		{"host=/run/postgresql dbname=audit", true},
		{"dbname=audit", true},
		{"audit.db", false},
		{"/var/lib/govkit/audit.db", false},
		{"./a=b.db", false},
		{"", false},
	} {
		if got := IsDSN(tc.in); got != tc.want {
			t.Errorf("IsDSN(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// Instances that start at once on a new database migrate it once (the
// advisory lock), and a second open is a no-op.
func TestMigrateConcurrently(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(ctx, dsn, Options{MaxConns: 2})
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var versions []int
	rows, _ := s.pool.Query(ctx, "SELECT version FROM schema_migrations ORDER BY version")
	for rows.Next() {
		var v int
		rows.Scan(&v)
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil || len(versions) != SchemaVersion() || versions[len(versions)-1] != SchemaVersion() {
		t.Fatalf("schema_migrations = %v, %v; want 1..%d once each", versions, err, SchemaVersion())
	}
}

// A database migrated by a newer binary is refused, read-write and
// read-only; a database without the schema is refused read-only.
func TestSchemaVersionRefused(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).NewDatabase(t)
	if _, err := Open(ctx, dsn, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "schema version 0") {
		t.Errorf("read-only Open of an empty database = %v, want a schema version error", err)
	}
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "INSERT INTO schema_migrations VALUES ($1, 'later')", SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	want := fmt.Sprintf("database has schema version %d, this binary needs %d", SchemaVersion()+1, SchemaVersion())
	for _, ro := range []bool{false, true} {
		if _, err := Open(ctx, dsn, Options{ReadOnly: ro}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(ReadOnly: %v) = %v, want %q", ro, err, want)
		}
	}
}

// A read-only store reads and refuses every write with store.ErrReadOnly.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	rw, dsn := openTest(t)
	recs := storetest.Chain(0, audit.ZeroHash, 3, 100, nil)
	if err := rw.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(ctx, dsn, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if seq, _, err := ro.Head(ctx); err != nil || seq != 3 {
		t.Errorf("read-only Head = %d, %v", seq, err)
	}
	more := storetest.Chain(3, recs[2].EventHash, 1, 100, nil)
	if err := ro.Append(ctx, more); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("read-only Append = %v, want ErrReadOnly", err)
	}
	if _, err := ro.Sequence(ctx, []store.Draft{{EventID: "x"}}); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("read-only Sequence = %v, want ErrReadOnly", err)
	}
	// The server's own refusal maps too: a transaction on a read-only
	// session (a hot standby answers the same way).
	ro.readOnly = false
	if err := ro.Append(ctx, more); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Append on a read-only session = %v, want ErrReadOnly", err)
	}
}

// TestSchemaContract pins DESIGN §6 "Storage" as pkg/store/sqlite's test
// does: the events columns, and no other table with an event_hash column.
func TestSchemaContract(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	rows, err := s.pool.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string][]string{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		tables[table] = append(tables[table], column)
	}
	want := []string{"seq", "event_id", "timestamp", "event_type", "trace_id", "session_id", "agent",
		"action_class", "tool_name", "prev_hash", "event_hash", "body", "approval_id"}
	if !slices.Equal(tables["events"], want) {
		t.Errorf("events columns = %v, want %v", tables["events"], want)
	}
	for table, cols := range tables {
		if table != "events" && slices.Contains(cols, "event_hash") {
			t.Errorf("table %s has an event_hash column (DESIGN §6: only events does)", table)
		}
	}
	// An operator reads the log with plain SQL.
	recs := storetest.Chain(0, audit.ZeroHash, 2, 100, nil)
	if err := s.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	var hash string
	if err := s.pool.QueryRow(ctx, "SELECT encode(sha256(body), 'hex') FROM events WHERE seq = 2").Scan(&hash); err != nil || hash != recs[1].EventHash {
		t.Errorf("sha256(body) of seq 2 = %s, %v; want event_hash %s", hash, err, recs[1].EventHash)
	}
}

// The store returns what the database holds and never repairs it.
func TestTamperedRowsAsStored(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	records := storetest.Chain(0, audit.ZeroHash, 4, 200, nil)
	if err := s.Append(ctx, records); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE events SET body = '{"tampered":true}' WHERE seq = 2`,
		`UPDATE events SET agent = 'someone-else' WHERE seq = 3`,
		`UPDATE events SET timestamp = 'yesterday' WHERE seq = 4`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := slices.Clone(records)
	want[1].Body = []byte(`{"tampered":true}`)
	want[2].Agent = "someone-else"
	want[3].Timestamp = time.Time{}.UTC()
	var i int
	err := s.Scan(ctx, 0, func(r audit.Record) error {
		if d := storetest.SameRecord(r, want[i]); d != "" {
			t.Errorf("Scan seq %d: %s", r.Seq, d)
		}
		i++
		return nil
	})
	if err != nil || i != 4 {
		t.Fatalf("Scan: %d records, %v", i, err)
	}
}

// Appended fires after a commit of any store on the database.
func TestAppended(t *testing.T) {
	a, dsn := openTest(t)
	b, err := Open(context.Background(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := a.Appended(ctx)
	<-c // listening
	if err := b.Append(ctx, storetest.Chain(0, audit.ZeroHash, 1, 100, nil)); err != nil {
		t.Fatal(err)
	}
	<-c
	cancel()
	for range c { // closed when ctx ends
	}
}
