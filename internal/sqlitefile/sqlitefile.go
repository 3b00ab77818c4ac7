// Package sqlitefile opens govkit's SQLite files the same way everywhere: a 0600 file in a writable directory, WAL, synchronous=FULL, checked after opening.
package sqlitefile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/govkit/govkit/pkg/store"
)

// DriverName is the name modernc.org/sqlite registers (mattn/go-sqlite3's
// is "sqlite3").
const DriverName = "sqlite"

// DSNOptions configure DSN.
type DSNOptions struct {
	// BusyTimeout is how long a connection waits for a lock another
	// connection holds before it fails with SQLITE_BUSY.
	BusyTimeout time.Duration
	// ReadOnly opens an existing file without writing to it (mode=ro).
	ReadOnly bool
	// Immutable adds immutable=1 to a read-only DSN: SQLite then takes no
	// locks and needs no -shm file, for a file nothing can be writing.
	Immutable bool
	// WALAutocheckpoint, when not zero, sets wal_autocheckpoint (in pages)
	// on a read-write DSN.
	WALAutocheckpoint int
}

// DSN is a modernc.org/sqlite data source name: a SQLite URI
// (https://sqlite.org/uri.html) whose _pragma parameters the driver runs on
// every new connection (busy_timeout first, then the others in lexical
// order), before any statement of ours.
func DSN(path string, opts DSNOptions) string {
	params := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10) + ")",
	}
	if opts.ReadOnly {
		// mode=ro: SQLite opens the file O_RDONLY and never creates it.
		// query_only is belt and braces.
		params = append(params, "mode=ro", "_pragma=query_only(1)")
		if opts.Immutable {
			params = append(params, "immutable=1")
		}
	} else {
		params = append(params,
			"_pragma=journal_mode(WAL)",
			// FULL: in WAL mode, every commit syncs the WAL, so a
			// commit that returned survives power loss (an
			// acknowledged audit event, DESIGN §6; a conversation
			// state before its effects run, REQ-BED-007). NORMAL
			// would only sync at checkpoints.
			"_pragma=synchronous(FULL)",
			"_pragma=foreign_keys(1)",
			// BEGIN IMMEDIATE: take the write lock at the start of a
			// write transaction, so busy_timeout applies to it, rather
			// than failing at the first write with SQLITE_BUSY.
			"_txlock=immediate",
		)
		if opts.WALAutocheckpoint != 0 {
			params = append(params, "_pragma=wal_autocheckpoint("+strconv.Itoa(opts.WALAutocheckpoint)+")")
		}
	}
	return "file:" + URIPath(path) + "?" + strings.Join(params, "&")
}

// URIPath escapes the characters that end or escape a SQLite URI's path.
func URIPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// CheckPragmas verifies the pragmas of a read-write DSN that fail silently.
// SQLite ignores an unknown or misspelt pragma, and journal_mode answers
// with the mode it is in when it cannot switch (litestream checks the same
// thing).
func CheckPragmas(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, want wal (is the file on a filesystem without shared memory or locking?)", mode)
	}
	checks := []struct {
		pragma string
		want   int
	}{
		{"synchronous", 2}, // FULL
		{"foreign_keys", 1},
	}
	for _, c := range checks {
		var got int
		if err := db.QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil {
			return err
		}
		if got != c.want {
			return fmt.Errorf("pragma %s is %d, want %d", c.pragma, got, c.want)
		}
	}
	return nil
}

// CheckWritable refuses a database path whose file (when it exists) or
// directory this process cannot write, with an error wrapping
// store.ErrReadOnly: SQLite opens a file it cannot write read-only,
// silently, and the first commit fails. The directory matters too: SQLite
// creates the -wal and -shm files beside the database. A directory that
// does not exist is left to CreateFile's error.
func CheckWritable(path string) error {
	return checkWritable(path, false)
}

// CheckWritableStrict is CheckWritable that also refuses, with errors
// saying so, a path that exists but is not a regular file and a directory
// that does not exist or is not one.
func CheckWritableStrict(path string) error {
	return checkWritable(path, true)
}

func checkWritable(path string, strict bool) error {
	if strict {
		if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
		}
	}
	if err := CanWrite(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: the file is not writable (%v)", store.ErrReadOnly, ErrnoText(err))
	}
	dir := filepath.Dir(path)
	if strict {
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("its directory %s does not exist", dir)
		case err != nil:
			return err
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory", dir)
		}
	}
	if err := CanWrite(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: its directory %s is not writable (%v)", store.ErrReadOnly, dir, ErrnoText(err))
	}
	return nil
}

// ErrnoText is an access error without the path, which callers name.
func ErrnoText(err error) string {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// CreateFile creates the database file with mode 0600 if it does not exist:
// SQLite would create it 0644, and its -wal and -shm files take the main
// file's mode; govkit's databases hold audit events and conversations. The
// new directory entry is synced so that the file (and so the first
// committed rows) survives a power loss.
func CreateFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}
