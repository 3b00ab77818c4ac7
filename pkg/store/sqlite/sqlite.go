// Package sqlite stores the audit log in a SQLite file.
//
// The file is the DESIGN §6 storage contract: table events, one row per
// event, the canonical bytes in body and the hash in event_hash, so that an
// operator can inspect it with the sqlite3 shell. It uses modernc.org/sqlite
// (pure Go, no cgo). The schema indexes only what a query needs: migration
// 6 (migrate.go) lists each index and the query that needs it.
//
// A read-write Store has a connection that Append writes through with
// SQLite's C-level API (appender), a database/sql pool of one connection for
// the other writes (migrations, approvals, the checkpoint at Close; a
// second pool connection could only wait for the write lock anyway), and a
// pool of read-only connections that read concurrently with them, which WAL
// allows. A read-only Store has only the read pool: it opens the file with
// mode=ro, so verify-chain can read a database a running auditd is writing
// to, or a copy of one.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/govkit/govkit/internal/sqlitefile"
	"github.com/govkit/govkit/pkg/store"
)

var _ store.Store = (*Store)(nil)

// DefaultBusyTimeout is how long a connection waits for a lock another
// connection holds before it fails with SQLITE_BUSY.
const DefaultBusyTimeout = 5 * time.Second

// maxReaders bounds the read pool: each connection costs a page cache, and
// reads are short (Scan pages; Query is bounded by store.MaxLimit).
const maxReaders = 8

// Options configure Open.
type Options struct {
	// ReadOnly opens an existing database without writing to it: no file
	// creation, no migrations, no journal mode change. Append fails.
	ReadOnly bool
	// BusyTimeout is how long to wait for another connection's lock;
	// zero means DefaultBusyTimeout.
	BusyTimeout time.Duration

	// immutable is set by Open for a read-only database that nothing can
	// be writing (see readOnlyMedium).
	immutable bool
}

// Store is an audit log in a SQLite file. It is safe for concurrent use;
// Append calls are serialized on the one write connection.
type Store struct {
	path      string
	busy      time.Duration // busy timeout, also for Scan's own connection
	immutable bool          // read-only on a read-only medium (readOnlyMedium)
	writer    *sql.DB       // nil when read-only; one connection
	app       *appender     // nil when read-only; Append's connection
	reader    *sql.DB       // mode=ro connections
	get       *sql.Stmt     // getSQL on reader
	getMany   *sql.Stmt     // getManySQL on reader
	// oldSchema: a read-only Store of a database older than approval_id
	// (migration 4), which Query cannot filter on.
	oldSchema bool
	// noTree: a read-only Store of a database older than the Merkle tree
	// (migration 5); version is its schema version.
	noTree  bool
	version int

	// The files a read-write Store opened, for CheckFile: SQLite keeps
	// writing into them through its descriptors even after they are
	// unlinked or renamed over.
	file, wal os.FileInfo // wal is nil when there was none at open

	closeOnce sync.Once
	closeErr  error
}

// Open opens the audit database at path. Read-write, it creates the file
// (mode 0600) if it does not exist, switches it to WAL with
// synchronous=FULL, checks that both took effect, and applies the pending
// schema migrations. Read-only, the file must exist and have exactly the
// schema version this binary needs.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("open audit database: empty path")
	}
	if opts.BusyTimeout < 0 {
		return nil, fmt.Errorf("open audit database %s: negative busy timeout %s", path, opts.BusyTimeout)
	}
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	s, err := open(path, opts)
	if err != nil {
		return nil, fmt.Errorf("open audit database %s: %w", path, err)
	}
	return s, nil
}

func open(path string, opts Options) (_ *Store, err error) {
	s := &Store{path: path, busy: opts.BusyTimeout}
	if opts.ReadOnly {
		opts.immutable = readOnlyMedium(path)
		s.immutable = opts.immutable
	}
	defer func() {
		if err != nil {
			s.closeQuietly()
		}
	}()
	ctx := context.Background()
	if opts.ReadOnly {
		// mode=ro never creates the file, but SQLite's "unable to open
		// database file" does not say why; stat first for a clear error.
		fi, err := os.Stat(path)
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return nil, pe.Err // Open names the path already
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, errors.New("not a regular file")
		}
	} else {
		// SQLite opens a file it cannot write read-only, silently, and
		// the first commit fails; auditd must refuse to start instead
		// (issue 13). Checked before CreateFile for a clear error; the
		// appender's check below is the one SQLite itself answers.
		if err := sqlitefile.CheckWritable(path); err != nil {
			return nil, err
		}
		if err := sqlitefile.CreateFile(path); err != nil {
			return nil, err
		}
		if err := initPageSize(ctx, path); err != nil {
			return nil, err
		}
		s.writer, err = sql.Open(sqlitefile.DriverName, dsn(path, opts))
		if err != nil {
			return nil, err
		}
		// One connection: SQLite has one writer at a time, and a
		// connection's pragmas are verified once, below.
		s.writer.SetMaxOpenConns(1)
		s.writer.SetMaxIdleConns(1)
		s.writer.SetConnMaxIdleTime(0)
		s.writer.SetConnMaxLifetime(0)
		if err := sqlitefile.CheckPragmas(ctx, s.writer); err != nil {
			return nil, err
		}
		if err := migrate(ctx, s.writer); err != nil {
			return nil, err
		}
		if err := syncTree(ctx, s.writer); err != nil {
			return nil, err
		}
		// Opened after the migrations, so that it prepares its
		// statements against the current schema.
		if s.app, err = openAppender(path, opts.BusyTimeout); err != nil {
			return nil, err
		}
		if s.app.readOnly() {
			return nil, fmt.Errorf("%w: SQLite could open the file only for reading", store.ErrReadOnly)
		}
		if s.file, err = os.Stat(path); err != nil {
			return nil, err
		}
		s.wal, _ = os.Stat(path + "-wal") // WAL mode and open: it exists
	}

	ro := opts
	ro.ReadOnly = true
	s.reader, err = sql.Open(sqlitefile.DriverName, dsn(path, ro))
	if err != nil {
		return nil, err
	}
	s.reader.SetMaxOpenConns(maxReaders)
	s.reader.SetMaxIdleConns(maxReaders)
	if opts.ReadOnly {
		// The writer's migrate did this check for a read-write Store.
		have, err := checkVersion(ctx, s.reader)
		if err != nil {
			return nil, err
		}
		s.oldSchema = have < approvalIDVersion
		s.noTree, s.version = have < treeVersion, have
	} else if err := s.reader.PingContext(ctx); err != nil {
		return nil, err
	}
	if s.get, err = s.reader.PrepareContext(ctx, getSQL); err != nil {
		return nil, err
	}
	if s.getMany, err = s.reader.PrepareContext(ctx, getManySQL); err != nil {
		return nil, err
	}
	return s, nil
}

// CheckFile reports whether the path still names the files the store
// opened: the database file and, when there was one, its WAL, compared by
// device and inode (os.SameFile). When either was removed, or renamed
// over, the store's connections write on into files nobody will read
// again, so it returns an error wrapping store.ErrReplaced. A read-only
// Store has nothing to lose and always returns nil.
func (s *Store) CheckFile() error {
	if s.file == nil {
		return nil
	}
	for _, f := range []struct {
		path string
		was  os.FileInfo
	}{{s.path, s.file}, {s.path + "-wal", s.wal}} {
		if f.was == nil {
			continue
		}
		now, err := os.Stat(f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%w: %s was removed", store.ErrReplaced, f.path)
		case err != nil:
			return fmt.Errorf("checking the database file: %w", err)
		case !os.SameFile(f.was, now):
			return fmt.Errorf("%w: %s is another file than the one auditd opened", store.ErrReplaced, f.path)
		}
	}
	return nil
}

var _ store.FileChecker = (*Store)(nil)

// readOnlyMedium reports whether a read-only open needs SQLite's
// immutable=1: a WAL database opens read-only only with its -shm file
// beside it (created on open), which a directory this process cannot write
// does not allow (a read-only mount, say; auditd --read-only, issue 13).
// When there is no -wal file either, no writer is at work there (it would
// have one), so the file cannot change while it is read.
func readOnlyMedium(path string) bool {
	if sqlitefile.CanWrite(filepath.Dir(path)) == nil {
		return false
	}
	_, err := os.Stat(path + "-wal")
	return errors.Is(err, fs.ErrNotExist)
}

// walAutocheckpointBytes is the WAL size at which a commit of the write
// connections (the read-write pool's and Append's) checkpoints: ~40 MB,
// 10,000 pages of 4 KiB (walPages: the pragma counts pages, which are
// 16 KiB in databases created by the first issue-20 builds), rather than SQLite's 1,000
// pages. The checkpoint runs inside the commit that crosses the mark, and
// costs in proportion to the distinct pages it copies, plus a sync of the
// database file. Each event rewrites a page of the session index at one
// place per active session (and, before issue 20, of the agent and trace
// indexes), so a ten times larger WAL copies each such page once per ten
// times as many commits (in a profile of auditd at 32 clients, checkpoints
// went from 21% of Append's CPU time to 12%). At 16 KiB pages, 2,500 pages
// cost the writer no more CPU than 10,000 (BenchmarkAppendIngest), and
// keep the WAL file at ~40 MB rather than ~160.
const walAutocheckpointBytes = 10000 * 4096

// walPages is walAutocheckpointBytes in pages of the database at path,
// whose header says their size (SQLite's default, 4 KiB, when it cannot
// be read).
func walPages(path string) int {
	size := 4096
	var hdr [18]byte
	if f, err := os.Open(path); err == nil {
		if _, err := io.ReadFull(f, hdr[:]); err == nil {
			// Bytes 16-17, big-endian; 1 means 65536 (sqlite.org/fileformat.html).
			switch n := int(hdr[16])<<8 | int(hdr[17]); {
			case n == 1:
				size = 65536
			case n >= 512 && n&(n-1) == 0:
				size = n
			}
		}
		f.Close()
	}
	return walAutocheckpointBytes / size
}

// pageSize is the page size of a new audit database: SQLite's 4 KiB,
// set explicitly so that a changed library default cannot change it.
// Issue 20 first chose 16 KiB, for verify-chain (four times fewer pages to
// read: -15%), and then measured what it costs ingest: every commit writes
// each page it dirties whole into the WAL and checksums it
// (walChecksumBytes was 7% of auditd's CPU), and at 32 clients a commit
// dirties a session-index page per active session. On this machine, 32
// clients posting one event each, alternated runs: 4 KiB 15.2-15.6k
// events/s (2.0x SQLite's single-row commit), 8 KiB 14.0-14.2k (1.8x),
// 16 KiB 12.3-12.8k (1.6-1.8x); verify-chain against the SHA-256 floor
// 3.6-3.7x, 3.2x and 3.0-3.1x. 4 KiB is the one size that meets both of
// the bars (ingest >= 1.8x, verify-chain <= 4x) with room; see
// docs/BENCHMARKS.md. An existing file keeps the page size it was created
// with: changing it takes a VACUUM, which rewrites the whole file.
const pageSize = 4096

// initPageSize gives an empty database file (just created, or left empty)
// pageSize-byte pages. The page size is fixed by the first write of the
// file's header, and the read-write DSN's journal_mode=WAL is such a write
// (its pragmas run before any of ours), so a connection of its own sets
// page_size first and then WAL, which writes the header. A file that
// holds anything is left alone.
func initPageSize(ctx context.Context, path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 0 {
		return err
	}
	db, err := sql.Open(sqlitefile.DriverName, "file:"+sqlitefile.URIPath(path))
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx) // one connection for both pragmas
	if err != nil {
		return err
	}
	defer conn.Close()
	var mode string
	if _, err := conn.ExecContext(ctx, "PRAGMA page_size="+strconv.Itoa(pageSize)); err != nil {
		return fmt.Errorf("setting the page size: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return fmt.Errorf("setting the page size: %w", err)
	}
	return nil
}

// Close closes the store. A read-write store first checkpoints the WAL into
// the database file and truncates it, so the file alone is complete.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for _, st := range []*sql.Stmt{s.get, s.getMany} {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		if s.reader != nil {
			errs = append(errs, s.reader.Close())
		}
		if s.writer != nil {
			errs = append(errs, s.app.close())
			errs = append(errs, sqlitefile.Checkpoint(context.Background(), s.writer))
			errs = append(errs, s.writer.Close())
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("close audit database %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// closeQuietly releases what a failed Open had opened, without the
// checkpoint.
func (s *Store) closeQuietly() {
	s.closeOnce.Do(func() {
		for _, st := range []*sql.Stmt{s.get, s.getMany} {
			if st != nil {
				st.Close()
			}
		}
		if s.reader != nil {
			s.reader.Close()
		}
		if s.app != nil {
			s.app.close()
		}
		if s.writer != nil {
			s.writer.Close()
		}
	})
}

// dsn is the data source name of opts: read-only, immutable=1 for a file
// nothing can be writing (readOnlyMedium); read-write, a WAL that
// checkpoints at walAutocheckpointBytes.
func dsn(path string, opts Options) string {
	o := sqlitefile.DSNOptions{
		BusyTimeout: opts.BusyTimeout,
		ReadOnly:    opts.ReadOnly,
		Immutable:   opts.immutable,
	}
	if !opts.ReadOnly {
		o.WALAutocheckpoint = walPages(path)
	}
	return sqlitefile.DSN(path, o)
}

// Stats describe the store for metrics.
type Stats struct {
	Events    int64 // rows in events
	FileBytes int64 // the database file
	WALBytes  int64 // its write-ahead log (0 after a checkpoint)
}

// Stats returns the event count and file sizes. The count is SELECT
// count(*), which SQLite answers by walking the smallest index: a few
// milliseconds per 100k events, so do not call it per request.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	if err := s.reader.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&st.Events); err != nil {
		return Stats{}, fmt.Errorf("store: stats: %w", err)
	}
	if fi, err := os.Stat(s.path); err == nil {
		st.FileBytes = fi.Size()
	}
	if fi, err := os.Stat(s.path + "-wal"); err == nil {
		st.WALBytes = fi.Size()
	}
	return st, nil
}
