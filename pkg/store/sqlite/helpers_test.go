package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/sqlitefile"
	"github.com/govkit/govkit/pkg/audit"
)

// t0 is the first test event's time.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// chain builds n records after seq from, chained by hand (pkg/audit's
// sealing is not needed to test storage): record i has seq from+i+1, a
// timestamp a second after the previous, and a body padded to bodySize.
func chain(from int64, prev string, n, bodySize int, edit func(*audit.Record)) []audit.Record {
	out := make([]audit.Record, n)
	for i := range out {
		seq := from + int64(i) + 1
		r := audit.Record{
			Seq:         seq,
			EventID:     fmt.Sprintf("evt-%06d", seq),
			Timestamp:   t0.Add(time.Duration(seq) * time.Second),
			EventType:   audit.TypeToolExecution,
			Agent:       "agent-a",
			ActionClass: "read",
			ToolName:    "shell",
			PrevHash:    prev,
		}
		if edit != nil {
			edit(&r)
		}
		body := fmt.Sprintf(`{"agent":%q,"event_id":%q,"prev_hash":%q,"seq":%d,"pad":"`, r.Agent, r.EventID, r.PrevHash, r.Seq)
		body += strings.Repeat("x", max(0, bodySize-len(body)-2)) + `"}`
		r.Body = []byte(body)
		sum := sha256.Sum256(r.Body)
		r.EventHash = hex.EncodeToString(sum[:])
		prev = r.EventHash
		out[i] = r
	}
	return out
}

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

// sameRecord reports how got differs from want ("" when equal).
func sameRecord(got, want audit.Record) string {
	if !got.Timestamp.Equal(want.Timestamp) {
		return fmt.Sprintf("timestamp %v, want %v", got.Timestamp, want.Timestamp)
	}
	if got.Timestamp.Location() != time.UTC {
		return fmt.Sprintf("timestamp location %v, want UTC", got.Timestamp.Location())
	}
	got.Timestamp, want.Timestamp = time.Time{}, time.Time{}
	if string(got.Body) != string(want.Body) {
		return fmt.Sprintf("body %q, want %q", got.Body, want.Body)
	}
	got.Body, want.Body = nil, nil
	// Scan reads approval_id back; other reads do not (audit.Record.ApprovalID).
	if got.HasApprovalID && got.ApprovalID != want.ApprovalID {
		return fmt.Sprintf("approval_id %q, want %q", got.ApprovalID, want.ApprovalID)
	}
	got.ApprovalID, got.HasApprovalID, want.ApprovalID, want.HasApprovalID = "", false, "", false
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("got %+v, want %+v", got, want)
	}
	return ""
}

func seqs(records []audit.Record) []int64 {
	out := make([]int64, len(records))
	for i, r := range records {
		out[i] = r.Seq
	}
	return out
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
