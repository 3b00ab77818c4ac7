package sqlite

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"

	"github.com/govkit/govkit/pkg/audit"
)

// directReader reads pages of records through modernc.org/sqlite's C-level
// API. database/sql's driver takes a mutex on every column read (~4.5 µs for
// a 12-column row); this path reads the same rows about twice as fast, and
// Scan — so verify-chain and stream replay — is bound by it (DESIGN §10:
// verify-chain ≥ 500k events/s). It opens its own read-only connection and
// must be used by one goroutine only.
type directReader struct {
	tls  *libc.TLS
	db   uintptr
	stmt uintptr
	// out receives C out-parameters. It must live on the heap: a uintptr
	// to a stack variable goes stale when the transpiled C code grows the
	// goroutine's stack (seen in a fresh goroutine: sqlite3_prepare wrote
	// the statement to the old stack, and step got SQLITE_MISUSE).
	out *uintptr
}

const pageSQL = "SELECT " + columns + " FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"

func openDirect(path string, busy time.Duration) (d *directReader, err error) {
	d = &directReader{tls: libc.NewTLS(), out: new(uintptr)}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	name, err := libc.CString("file:" + uriPath(path) + "?mode=ro")
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(d.tls, name)
	rc := lib.Xsqlite3_open_v2(d.tls, name, uintptr(unsafe.Pointer(d.out)), lib.SQLITE_OPEN_READONLY|lib.SQLITE_OPEN_URI, 0)
	d.db = *d.out
	if rc != lib.SQLITE_OK {
		return nil, d.errorf("open %s", path)
	}
	lib.Xsqlite3_busy_timeout(d.tls, d.db, int32(busy.Milliseconds()))
	q, err := libc.CString(pageSQL)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(d.tls, q)
	if rc := lib.Xsqlite3_prepare_v2(d.tls, d.db, q, -1, uintptr(unsafe.Pointer(d.out)), 0); rc != lib.SQLITE_OK {
		return nil, d.errorf("prepare")
	}
	d.stmt = *d.out
	return d, nil
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
		r := audit.Record{
			Seq:         lib.Xsqlite3_column_int64(tls, st, 0),
			EventID:     d.text(1),
			EventType:   d.text(3),
			TraceID:     d.text(4),
			SessionID:   d.text(5),
			Agent:       d.text(6),
			ActionClass: d.text(7),
			ToolName:    d.text(8),
			PrevHash:    d.text(9),
			EventHash:   d.text(10),
			Body:        []byte(d.text(11)),
		}
		r.Timestamp, _ = time.Parse(time.RFC3339Nano, d.text(2))
		dst = append(dst, r)
	}
}

// text copies column i of the current row (TEXT or BLOB) into Go memory.
func (d *directReader) text(i int32) string {
	p := lib.Xsqlite3_column_blob(d.tls, d.stmt, i)
	n := lib.Xsqlite3_column_bytes(d.tls, d.stmt, i)
	if p == 0 || n <= 0 {
		return ""
	}
	return string(libc.GoBytes(p, int(n))) // GoBytes aliases C memory: copy now
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
	if d.stmt != 0 {
		lib.Xsqlite3_finalize(d.tls, d.stmt)
		d.stmt = 0
	}
	if d.db != 0 {
		if rc := lib.Xsqlite3_close(d.tls, d.db); rc != lib.SQLITE_OK {
			err = errors.New("sqlite: closing the scan connection failed")
		}
		d.db = 0
	}
	d.tls.Close()
	return err
}
