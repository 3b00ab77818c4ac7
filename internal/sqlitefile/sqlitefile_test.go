package sqlitefile

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/store"
)

func TestDSN(t *testing.T) {
	for _, c := range []struct {
		opts DSNOptions
		want string
	}{
		{DSNOptions{BusyTimeout: 5 * time.Second},
			"file:/d/a%3fb%23c%25.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"},
		{DSNOptions{BusyTimeout: time.Second, WALAutocheckpoint: 10000},
			"file:/d/a%3fb%23c%25.db?_pragma=busy_timeout(1000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate&_pragma=wal_autocheckpoint(10000)"},
		{DSNOptions{BusyTimeout: time.Second, ReadOnly: true},
			"file:/d/a%3fb%23c%25.db?_pragma=busy_timeout(1000)&mode=ro&_pragma=query_only(1)"},
		{DSNOptions{BusyTimeout: time.Second, ReadOnly: true, Immutable: true},
			"file:/d/a%3fb%23c%25.db?_pragma=busy_timeout(1000)&mode=ro&_pragma=query_only(1)&immutable=1"},
	} {
		if got := DSN("/d/a?b#c%.db", c.opts); got != c.want {
			t.Errorf("DSN(%+v) =\n%s, want\n%s", c.opts, got, c.want)
		}
	}
}

func TestOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c.db")
	if err := CheckWritableStrict(path); err != nil {
		t.Fatal(err)
	}
	if err := CreateFile(path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(DriverName, DSN(path, DSNOptions{BusyTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := CheckPragmas(ctx, db); err != nil {
		t.Fatal(err)
	}
	migrations := []string{"CREATE TABLE t (x)", "ALTER TABLE t ADD COLUMN y"}
	at := func() string { return "then" }
	if err := Migrate(ctx, db, migrations, at, nil); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := db.QueryRow("SELECT max(version) FROM schema_migrations WHERE applied_at = 'then'").Scan(&v); err != nil || v != 2 {
		t.Fatalf("schema version %d, %v; want 2", v, err)
	}
	err = Migrate(ctx, db, migrations[:1], at, nil)
	if want := "database has schema version 2, this binary needs 1"; err == nil || err.Error() != want {
		t.Errorf("Migrate of a newer database: %v, want %q", err, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode %o, want 600", perm)
	}
}

func TestCheckPragmasRefusesRollbackJournal(t *testing.T) {
	// What CheckPragmas guards against: a connection whose journal_mode
	// pragma did not take (here: never asked for).
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := sql.Open(DriverName, "file:"+URIPath(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	err = CheckPragmas(context.Background(), db)
	if err == nil || !strings.Contains(err.Error(), `journal_mode is "delete", want wal`) {
		t.Fatalf("CheckPragmas on a rollback-journal database: %v", err)
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope", "a.db")
	if err := CheckWritable(missing); err != nil {
		t.Errorf("CheckWritable in a missing directory: %v, want nil (left to CreateFile)", err)
	}
	want := "its directory " + filepath.Dir(missing) + " does not exist"
	if err := CheckWritableStrict(missing); err == nil || err.Error() != want {
		t.Errorf("CheckWritableStrict in a missing directory: %v, want %q", err, want)
	}
	if err := CheckWritable(dir); err != nil {
		t.Errorf("CheckWritable of a directory: %v, want nil", err)
	}
	if err := CheckWritableStrict(dir); err == nil || err.Error() != "not a regular file (d---------)" {
		t.Errorf("CheckWritableStrict of a directory: %v", err)
	}
	if runtime.GOOS == "windows" || os.Getuid() == 0 {
		return // CanWrite always nil, or root may write anything
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	want = store.ErrReadOnly.Error() + ": its directory " + ro + " is not writable (permission denied)"
	for _, check := range []func(string) error{CheckWritable, CheckWritableStrict} {
		err := check(filepath.Join(ro, "a.db"))
		if !errors.Is(err, store.ErrReadOnly) || err.Error() != want {
			t.Errorf("in a read-only directory: %v, want %q", err, want)
		}
	}
}
