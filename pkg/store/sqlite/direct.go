package sqlite

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"

	"github.com/govkit/govkit/internal/sqlitefile"
	"github.com/govkit/govkit/pkg/audit"
)

// directReader reads pages of records through modernc.org/sqlite's C-level
// API. database/sql's driver takes a mutex on every column read (~4.5 µs for
// a 12-column row); this path reads the same rows about twice as fast, and
// Scan — so verify-chain and stream replay — is bound by it (DESIGN §10:
// verify-chain ≥ 500k events/s). It opens its own read-only connection and
// must be used by one goroutine only.
//
// The connection is opened with SQLITE_OPEN_NOMUTEX: SQLite would otherwise
// lock the connection's mutex on every column read, about a third of the
// CPU time of reading a row.
type directReader struct {
	tls   *libc.TLS
	db    uintptr
	stmt  uintptr   // pageSQL
	stmts []uintptr // every prepared statement, finalized by close
	// approvalID: the database has events.approval_id (readColumns).
	approvalID bool
	// out receives C out-parameters. It must live on the heap: a uintptr
	// to a stack variable goes stale when the transpiled C code grows the
	// goroutine's stack (seen in a fresh goroutine: sqlite3_prepare wrote
	// the statement to the old stack, and step got SQLITE_MISUSE).
	out *uintptr
}

func pageSQL(hasApprovalID bool) string {
	return "SELECT " + readColumns(hasApprovalID) + " FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
}

// openDirect opens a directReader on s's database.
func (s *Store) openDirect() (*directReader, error) {
	return openDirect(s.path, s.busy, s.immutable, !s.oldSchema)
}

func openDirect(path string, busy time.Duration, immutable, hasApprovalID bool) (_ *directReader, err error) {
	d := &directReader{tls: libc.NewTLS(), out: new(uintptr), approvalID: hasApprovalID}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	uri := "file:" + sqlitefile.URIPath(path) + "?mode=ro"
	if immutable {
		uri += "&immutable=1"
	}
	name, err := libc.CString(uri)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(d.tls, name)
	flags := int32(lib.SQLITE_OPEN_READONLY | lib.SQLITE_OPEN_URI | lib.SQLITE_OPEN_NOMUTEX)
	rc := lib.Xsqlite3_open_v2(d.tls, name, uintptr(unsafe.Pointer(d.out)), flags, 0)
	d.db = *d.out
	if rc != lib.SQLITE_OK {
		return nil, d.errorf("open %s", path)
	}
	lib.Xsqlite3_busy_timeout(d.tls, d.db, int32(busy.Milliseconds()))
	if d.stmt, err = d.prepare(pageSQL(hasApprovalID)); err != nil {
		return nil, err
	}
	return d, nil
}

// prepare compiles query on d's connection; close finalizes it.
func (d *directReader) prepare(query string) (uintptr, error) {
	q, err := libc.CString(query)
	if err != nil {
		return 0, err
	}
	defer libc.Xfree(d.tls, q)
	if rc := lib.Xsqlite3_prepare_v2(d.tls, d.db, q, -1, uintptr(unsafe.Pointer(d.out)), 0); rc != lib.SQLITE_OK {
		return 0, d.errorf("prepare")
	}
	d.stmts = append(d.stmts, *d.out)
	return *d.out, nil
}

// page appends up to limit records with seq > after to dst. Each page is
// one statement run, so one short read transaction: a long scan does not
// hold back WAL checkpoints.
func (d *directReader) page(dst []audit.Record, after int64, limit int) ([]audit.Record, error) {
	tls, st := d.tls, d.stmt
	lib.Xsqlite3_reset(tls, st)
	lib.Xsqlite3_bind_int64(tls, st, 1, after)
	lib.Xsqlite3_bind_int64(tls, st, 2, int64(limit))
	for {
		switch rc := lib.Xsqlite3_step(tls, st); rc {
		case lib.SQLITE_DONE:
			lib.Xsqlite3_reset(tls, st) // ends the read transaction
			return dst, nil
		case lib.SQLITE_ROW:
		default:
			err := d.errorf("read after seq %d (code %d)", after, rc)
			lib.Xsqlite3_reset(tls, st)
			return dst, err
		}
		// What is stored is returned as is, even when it is wrong (see
		// scanRecord): an unparsable timestamp becomes the zero time.
		body := d.bytes(st, 11)
		r := audit.Record{
			Seq:         lib.Xsqlite3_column_int64(tls, st, 0),
			EventID:     string(d.bytes(st, 1)),
			EventType:   string(d.bytes(st, 3)),
			TraceID:     string(d.bytes(st, 4)),
			SessionID:   string(d.bytes(st, 5)),
			Agent:       string(d.bytes(st, 6)),
			ActionClass: string(d.bytes(st, 7)),
			ToolName:    string(d.bytes(st, 8)),
			PrevHash:    string(d.bytes(st, 9)),
			EventHash:   string(d.bytes(st, 10)),
			Body:        append(make([]byte, 0, len(body)), body...),
		}
		r.Timestamp, _ = time.Parse(time.RFC3339Nano, string(d.bytes(st, 2)))
		if d.approvalID {
			r.ApprovalID, r.HasApprovalID = string(d.bytes(st, 12)), true
		}
		dst = append(dst, r)
	}
}

// bytes returns column i of stmt's current row (TEXT or BLOB, other types
// as text; nil for NULL or empty) in SQLite's memory, which is valid only
// until the next step or reset of stmt: copy what must outlive that.
func (d *directReader) bytes(stmt uintptr, i int32) []byte {
	p := lib.Xsqlite3_column_blob(d.tls, stmt, i)
	n := lib.Xsqlite3_column_bytes(d.tls, stmt, i)
	if p == 0 || n <= 0 {
		return nil
	}
	return libc.GoBytes(p, int(n))
}

func (d *directReader) errorf(format string, args ...any) error {
	msg := "unknown error"
	if d.db != 0 {
		msg = libc.GoString(lib.Xsqlite3_errmsg(d.tls, d.db))
	}
	return fmt.Errorf("sqlite: "+format+": %s", append(args, msg)...)
}

func (d *directReader) close() error {
	var err error
	for _, st := range d.stmts {
		lib.Xsqlite3_finalize(d.tls, st)
	}
	d.stmts, d.stmt = nil, 0
	if d.db != 0 {
		if rc := lib.Xsqlite3_close(d.tls, d.db); rc != lib.SQLITE_OK {
			err = errors.New("sqlite: closing the scan connection failed")
		}
		d.db = 0
	}
	d.tls.Close()
	return err
}
