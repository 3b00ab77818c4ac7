package sqlite

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	lib "modernc.org/sqlite/lib"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/internal/sqlitefile"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/store"
)

// appender is the connection Append writes events through, driven with
// modernc.org/sqlite's C-level API. Through database/sql, the driver copies
// every bound value into its own C allocation and takes locks per call, a
// fifth of the CPU time of an insert; and auditd's writer, the serial part of
// ingest, spends most of its time in Append (DESIGN §6 "Durability"). Here
// one C buffer holds a row's values, bound without a copy (SQLITE_STATIC),
// and BEGIN, INSERT and COMMIT are statements prepared once.
//
// Its transactions are what Append's were: BEGIN IMMEDIATE, one INSERT per
// record, COMMIT, which syncs the WAL (synchronous=FULL, checked at open);
// any failure rolls the whole batch back. Since issue 19 the transaction
// also writes the Merkle tree's new stored hashes (extendTree), so the tree
// holds exactly the committed records.
type appender struct {
	mu  sync.Mutex // one Append at a time: the connection is NOMUTEX
	tls *libc.TLS
	db  uintptr
	// Prepared statements, finalized by close.
	begin, insert, commit, rollback uintptr
	treeSize, treeRead, treeInsert  uintptr // extendTree's
	// out receives C out-parameters; on the heap, as directReader's must be.
	out *uintptr
	buf uintptr // C memory for one row's text and blob values
	cap int     // buf's size
}

// appenderPragmas configure the connection as dsn does the read-write pool,
// so that its commits are as durable (DESIGN §6): WAL, synchronous=FULL.
func appenderPragmas(path string) []string {
	return []string{
		"PRAGMA journal_mode=WAL",
		"PRAGMA synchronous=FULL",
		"PRAGMA foreign_keys=1",
		"PRAGMA wal_autocheckpoint=" + strconv.Itoa(walPages(path)),
	}
}

func openAppender(path string, busy time.Duration) (_ *appender, err error) {
	// Not the named result, which "return nil, err" sets to nil before
	// the deferred close runs.
	a := &appender{tls: libc.NewTLS(), out: new(uintptr)}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	name, err := libc.CString("file:" + sqlitefile.URIPath(path))
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(a.tls, name)
	flags := int32(lib.SQLITE_OPEN_READWRITE | lib.SQLITE_OPEN_URI | lib.SQLITE_OPEN_NOMUTEX)
	rc := lib.Xsqlite3_open_v2(a.tls, name, uintptr(unsafe.Pointer(a.out)), flags, 0)
	a.db = *a.out
	if rc != lib.SQLITE_OK {
		return nil, a.errorf(rc, "open %s", path)
	}
	lib.Xsqlite3_extended_result_codes(a.tls, a.db, 1)
	lib.Xsqlite3_busy_timeout(a.tls, a.db, int32(busy.Milliseconds()))
	for _, p := range appenderPragmas(path) {
		if _, err := a.queryText(p); err != nil {
			return nil, err
		}
	}
	// As sqlitefile.CheckPragmas: SQLite ignores what it cannot do without an error.
	for q, want := range map[string]string{"PRAGMA journal_mode": "wal", "PRAGMA synchronous": "2"} {
		if got, err := a.queryText(q); err != nil {
			return nil, err
		} else if !strings.EqualFold(got, want) {
			return nil, fmt.Errorf("appender: %s is %q, want %q", q, got, want)
		}
	}
	for _, s := range []struct {
		stmt *uintptr
		sql  string
	}{
		{&a.begin, "BEGIN IMMEDIATE"}, {&a.insert, insertSQL}, {&a.commit, "COMMIT"}, {&a.rollback, "ROLLBACK"},
		{&a.treeSize, treeSizeSQL}, {&a.treeRead, "SELECT hashes FROM tree_hashes WHERE leaf = ?1"},
		{&a.treeInsert, "INSERT INTO tree_hashes (leaf, hashes) VALUES (?1, ?2)"},
	} {
		if *s.stmt, err = a.prepare(s.sql); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// append stores batch in one transaction; see Store.Append.
func (a *appender) append(batch []audit.Record) (err error) {
	for i := range batch {
		r := &batch[i]
		if r.Seq <= 0 {
			return fmt.Errorf("store: append: event %q: seq %d, want > 0", r.EventID, r.Seq)
		}
		if r.EventID == "" {
			return fmt.Errorf("store: append: seq %d: empty event_id", r.Seq)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if rc := a.run(a.begin); rc != lib.SQLITE_DONE {
		return a.errorf(rc, "store: append: begin")
	}
	defer func() {
		if err != nil && lib.Xsqlite3_get_autocommit(a.tls, a.db) == 0 {
			a.run(a.rollback)
		}
	}()
	for i := range batch {
		r := &batch[i]
		if err := a.bind(r); err != nil {
			return fmt.Errorf("store: append: seq %d: %w", r.Seq, err)
		}
		rc := a.run(a.insert)
		switch rc {
		case lib.SQLITE_DONE:
			continue
		case lib.SQLITE_CONSTRAINT_UNIQUE: // event_id is the one UNIQUE column
			return fmt.Errorf("%w: %q", store.ErrDuplicate, r.EventID)
		case lib.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("store: append: seq %d is already stored", r.Seq)
		}
		return a.errorf(rc, "store: append: seq %d", r.Seq)
	}
	if err := a.extendTree(batch); err != nil {
		return err
	}
	if rc := a.run(a.commit); rc != lib.SQLITE_DONE {
		return a.errorf(rc, "store: append: commit")
	}
	return nil
}

// run steps stmt once and resets it, returning the step's (extended)
// result code.
func (a *appender) run(stmt uintptr) int32 {
	rc := lib.Xsqlite3_step(a.tls, stmt)
	if rc != lib.SQLITE_DONE && rc != lib.SQLITE_ROW {
		rc = lib.Xsqlite3_extended_errcode(a.tls, a.db)
	}
	lib.Xsqlite3_reset(a.tls, stmt)
	return rc
}

// bind binds r's columns to the insert statement. The values are copied
// into a.buf, which stays valid (and unchanged) until the next bind, after
// the statement has run: SQLITE_STATIC, so SQLite copies nothing.
func (a *appender) bind(r *audit.Record) error {
	texts := [...]string{r.EventID, formatTime(r.Timestamp), r.EventType, r.TraceID, r.SessionID,
		r.Agent, r.ActionClass, r.ToolName, r.PrevHash, r.EventHash} // columns 2 to 11
	size := len(r.Body) + len(r.ApprovalID) + 1 // +1: a non-NULL pointer even when all are empty
	for _, t := range texts {
		size += len(t)
	}
	if err := a.reserve(size); err != nil {
		return err
	}
	mem := libc.GoBytes(a.buf, a.cap) // C memory, as a slice
	st, off := a.insert, 0
	rc := lib.Xsqlite3_bind_int64(a.tls, st, 1, r.Seq)
	for i := 0; i < len(texts) && rc == lib.SQLITE_OK; i++ {
		n := copy(mem[off:], texts[i])
		rc = lib.Xsqlite3_bind_text(a.tls, st, int32(i+2), a.buf+uintptr(off), int32(n), 0)
		off += n
	}
	if rc == lib.SQLITE_OK {
		n := copy(mem[off:], r.Body)
		rc = lib.Xsqlite3_bind_blob(a.tls, st, 12, a.buf+uintptr(off), int32(n), 0)
		off += n
	}
	// approval_id is NULL when the event cites no approval: the column's
	// index holds only the rows that cite one (migration 4).
	switch {
	case rc != lib.SQLITE_OK:
	case r.ApprovalID == "":
		rc = lib.Xsqlite3_bind_null(a.tls, st, 13)
	default:
		n := copy(mem[off:], r.ApprovalID)
		rc = lib.Xsqlite3_bind_text(a.tls, st, 13, a.buf+uintptr(off), int32(n), 0)
	}
	if rc != lib.SQLITE_OK {
		return a.errorf(rc, "bind")
	}
	return nil
}

// reserve makes a.buf hold at least size bytes.
func (a *appender) reserve(size int) error {
	if size > a.cap {
		p := libc.Xrealloc(a.tls, a.buf, types.Size_t(size))
		if p == 0 {
			return errors.New("out of memory")
		}
		a.buf, a.cap = p, size
	}
	return nil
}

// queryText runs q and returns the first column of its first row as text
// ("" without a row).
func (a *appender) queryText(q string) (string, error) {
	st, err := a.prepare(q)
	if err != nil {
		return "", err
	}
	defer lib.Xsqlite3_finalize(a.tls, st)
	switch rc := lib.Xsqlite3_step(a.tls, st); rc {
	case lib.SQLITE_ROW:
		return libc.GoString(lib.Xsqlite3_column_text(a.tls, st, 0)), nil
	case lib.SQLITE_DONE:
		return "", nil
	default:
		return "", a.errorf(rc, "%s", q)
	}
}

// prepare compiles q on a's connection; the caller finalizes it.
func (a *appender) prepare(q string) (uintptr, error) {
	cq, err := libc.CString(q)
	if err != nil {
		return 0, err
	}
	defer libc.Xfree(a.tls, cq)
	if rc := lib.Xsqlite3_prepare_v2(a.tls, a.db, cq, -1, uintptr(unsafe.Pointer(a.out)), 0); rc != lib.SQLITE_OK {
		return 0, a.errorf(rc, "prepare %q", q)
	}
	return *a.out, nil
}

// errorf is an error with SQLite's message for the connection's last
// failure and the result code. A full disk and a read-only database wrap
// store.ErrFull and store.ErrReadOnly, which auditd reports on /health.
func (a *appender) errorf(rc int32, format string, args ...any) error {
	msg := libc.GoString(lib.Xsqlite3_errstr(a.tls, rc))
	if a.db != 0 {
		msg = libc.GoString(lib.Xsqlite3_errmsg(a.tls, a.db))
	}
	err := fmt.Errorf(format+": %s (%d)", append(args, msg, rc)...)
	switch rc & 0xff { // the primary code of an extended one
	case lib.SQLITE_FULL:
		return fmt.Errorf("%w: %w", store.ErrFull, err)
	case lib.SQLITE_READONLY:
		return fmt.Errorf("%w: %w", store.ErrReadOnly, err)
	}
	return err
}

// readOnly reports whether SQLite opened the database read-only although
// the appender asked for read-write: it does so, silently, when the file
// cannot be opened for writing (file mode, read-only mount).
func (a *appender) readOnly() bool {
	main, err := libc.CString("main")
	if err != nil {
		return false
	}
	defer libc.Xfree(a.tls, main)
	return lib.Xsqlite3_db_readonly(a.tls, a.db, main) == 1
}

func (a *appender) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range []*uintptr{&a.begin, &a.insert, &a.commit, &a.rollback, &a.treeSize, &a.treeRead, &a.treeInsert} {
		if *st != 0 {
			lib.Xsqlite3_finalize(a.tls, *st)
			*st = 0
		}
	}
	var err error
	if a.db != 0 {
		if rc := lib.Xsqlite3_close(a.tls, a.db); rc != lib.SQLITE_OK {
			err = a.errorf(rc, "sqlite: closing the append connection")
		}
		a.db = 0
	}
	if a.buf != 0 {
		libc.Xfree(a.tls, a.buf)
		a.buf, a.cap = 0, 0
	}
	a.tls.Close()
	return err
}

// extendTree writes the stored hashes of batch's leaves into the tree, in
// the transaction that inserts batch (store.Tree): one small row and about
// two SHA-256 per record, and about one read of an older row. The tree must
// hold exactly the records before batch: syncTree made it so at open, and
// every commit keeps it so; otherwise someone changed the database under
// auditd, and the batch fails with store.ErrTreeBroken.
func (a *appender) extendTree(batch []audit.Record) error {
	var n int64
	rc := lib.Xsqlite3_step(a.tls, a.treeSize)
	if rc == lib.SQLITE_ROW {
		n = lib.Xsqlite3_column_int64(a.tls, a.treeSize, 0)
	}
	lib.Xsqlite3_reset(a.tls, a.treeSize)
	if rc != lib.SQLITE_ROW {
		return a.errorf(rc, "store: append: reading the tree size")
	}
	leaves, err := store.BatchLeaves(n, batch)
	if err != nil {
		return fmt.Errorf("store: append: %w", err)
	}
	hashes, err := checkpoint.Extend(n, leaves, tlog.HashReaderFunc(a.readHashes))
	if err != nil {
		return fmt.Errorf("store: append: %w", err)
	}
	for i, hs := range hashes {
		leaf := n + int64(i)
		size := len(hs) * tlog.HashSize
		if err := a.reserve(size); err != nil {
			return err
		}
		mem := libc.GoBytes(a.buf, size)
		for l, h := range hs {
			copy(mem[l*tlog.HashSize:], h[:])
		}
		rc := lib.Xsqlite3_bind_int64(a.tls, a.treeInsert, 1, leaf)
		if rc == lib.SQLITE_OK {
			rc = lib.Xsqlite3_bind_blob(a.tls, a.treeInsert, 2, a.buf, int32(size), 0)
		}
		if rc != lib.SQLITE_OK {
			return a.errorf(rc, "store: append: tree leaf %d: bind", leaf)
		}
		if rc := a.run(a.treeInsert); rc != lib.SQLITE_DONE {
			return a.errorf(rc, "store: append: tree leaf %d", leaf)
		}
	}
	return nil
}

// readHashes reads stored hashes of the tree inside Append's transaction
// (a tlog.HashReader for checkpoint.Extend).
func (a *appender) readHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	st := a.treeRead
	for i, idx := range indexes {
		leaf, level := checkpoint.StoredAt(idx)
		lib.Xsqlite3_bind_int64(a.tls, st, 1, leaf)
		rc := lib.Xsqlite3_step(a.tls, st)
		var ok bool
		if rc == lib.SQLITE_ROW {
			if p, size := lib.Xsqlite3_column_blob(a.tls, st, 0), lib.Xsqlite3_column_bytes(a.tls, st, 0); p != 0 && size > 0 {
				out[i], ok = checkpoint.RowHash(libc.GoBytes(p, int(size)), level)
			}
		}
		lib.Xsqlite3_reset(a.tls, st)
		switch {
		case ok:
		case rc == lib.SQLITE_ROW || rc == lib.SQLITE_DONE:
			return nil, fmt.Errorf("store: append: %w: no stored hash %d (leaf %d, level %d)", store.ErrTreeBroken, idx, leaf, level)
		default:
			return nil, a.errorf(rc, "store: append: reading tree leaf %d", leaf)
		}
	}
	return out, nil
}
