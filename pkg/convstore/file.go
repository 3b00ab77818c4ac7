package convstore

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

	"github.com/govkit/govkit/pkg/store"
)

// The file conventions below are pkg/store/sqlite's (auditd's database),
// copied because that package does not export them: the same pragmas, the
// same 0600 file, the same refusal of a path this process cannot write.

// driverName is the name modernc.org/sqlite registers.
const driverName = "sqlite"

// dsn is a modernc.org/sqlite data source name: a SQLite URI whose _pragma
// parameters the driver runs on every new connection (busy_timeout first),
// before any statement of ours.
func dsn(path string, busy time.Duration, readOnly bool) string {
	params := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(busy.Milliseconds(), 10) + ")",
	}
	if readOnly {
		// mode=ro: SQLite opens the file O_RDONLY and never creates
		// it; query_only is belt and braces.
		params = append(params, "mode=ro", "_pragma=query_only(1)")
	} else {
		params = append(params,
			"_pragma=journal_mode(WAL)",
			// FULL: in WAL mode every commit syncs the WAL, so a
			// conversation state whose Save returned survives power
			// loss before its effects run (REQ-BED-007, B-07a).
			// NORMAL would only sync at checkpoints.
			"_pragma=synchronous(FULL)",
			"_pragma=foreign_keys(1)",
			// BEGIN IMMEDIATE: take the write lock at the start of a
			// transaction, so that busy_timeout applies to it, rather
			// than failing at the first write with SQLITE_BUSY.
			"_txlock=immediate",
		)
	}
	return "file:" + uriPath(path) + "?" + strings.Join(params, "&")
}

// uriPath escapes the characters that end or escape a SQLite URI's path.
func uriPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// checkPragmas verifies the pragmas that fail silently: SQLite ignores an
// unknown pragma, and journal_mode answers with the mode it is in when it
// cannot switch.
func checkPragmas(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, want wal (is the file on a filesystem without shared memory or locking?)", mode)
	}
	for _, c := range []struct {
		pragma string
		want   int
	}{
		{"synchronous", 2}, // FULL
		{"foreign_keys", 1},
	} {
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

// checkWritable refuses a database path whose file (when it exists) or
// directory this process cannot write. The directory matters too: SQLite
// creates the -wal and -shm files beside the database.
func checkWritable(path string) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if err := canWrite(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: the file is not writable (%v)", store.ErrReadOnly, errnoText(err))
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("its directory %s does not exist", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := canWrite(dir); err != nil {
		return fmt.Errorf("%w: its directory %s is not writable (%v)", store.ErrReadOnly, dir, errnoText(err))
	}
	return nil
}

// errnoText is an access error without the path, which callers name.
func errnoText(err error) string {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// createFile creates the database file with mode 0600 if it does not exist:
// SQLite would create it 0644, and its -wal and -shm files take the main
// file's mode; conversations hold what users and tools said. The new
// directory entry is synced so that the file survives a power loss.
func createFile(path string) error {
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
