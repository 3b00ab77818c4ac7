package convstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/govkit/govkit/internal/sqlitefile"
	"github.com/govkit/govkit/pkg/store"
)

// TestOpen: a new file is 0600 in WAL mode with synchronous=FULL, and Open
// refuses what it cannot keep durably or that is not its database.
func TestOpen(t *testing.T) {
	s, path := openTest(t)
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	var mode string
	var sync int
	if err := s.writer.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q (%v)", mode, err)
	}
	if err := s.writer.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Errorf("synchronous %d (%v), want 2 (FULL)", sync, err)
	}

	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign.db")
	execSQL(t, foreign, "CREATE TABLE events (seq INTEGER PRIMARY KEY)")
	auditLike := filepath.Join(dir, "audit.db")
	execSQL(t, auditLike, "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL); INSERT INTO schema_migrations VALUES (1, 'x'); CREATE TABLE events (seq INTEGER)")
	newer := filepath.Join(dir, "newer.db")
	execSQL(t, newer, "CREATE TABLE conversations (id TEXT); CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL); INSERT INTO schema_migrations VALUES (99, 'x')")
	notSQLite := filepath.Join(dir, "text.db")
	if err := os.WriteFile(notSQLite, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, text string
		want             error
	}{
		{"empty path", "", "empty path", nil},
		{"no such directory", filepath.Join(dir, "nope", "c.db"), "directory " + filepath.Join(dir, "nope") + " does not exist", nil},
		{"a directory", dir, "not a regular file", nil},
		{"another program's database", foreign, "not a conversation database: it has 1 other tables", nil},
		{"another govkit database", auditLike, "not a conversation database: schema version 1 without a conversations table", nil},
		{"a newer schema", newer, fmt.Sprintf("schema version 99, this binary needs %d", SchemaVersion()), nil},
		{"not SQLite", notSQLite, "not a database", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.text) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("Open: %v, want it to say %q", err, tc.text)
			}
		})
	}

	t.Run("a directory it cannot write", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes any directory")
		}
		ro := t.TempDir()
		if err := os.Chmod(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(ro, 0o700) })
		_, err := Open(filepath.Join(ro, "c.db"))
		if !errors.Is(err, store.ErrReadOnly) || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("Open: %v, want store.ErrReadOnly", err)
		}
	})
}

// execSQL runs SQL on a database file outside the store, as another program
// would.
func execSQL(t *testing.T, path, query string) {
	t.Helper()
	db, err := sql.Open(sqlitefile.DriverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatal(err)
	}
}

// TestReopen: what one Store wrote, the next one over the same file reads,
// without applying the schema again; Close leaves the file alone complete.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c := conv("c-1", 0)
	if err := s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.State, c.Snapshot = "tool_executing", snapshot("c-1", "tool_executing", 2)
	if err := s.Save(ctx, c, []Message{msg("c-1", 1, "user", "hi"), msg("c-1", 2, "assistant", "ls")}); err != nil {
		t.Fatal(err)
	}
	ref, err := s.PutAttachment(ctx, "image/png", []byte("png bytes"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("the WAL holds %d bytes after Close, want it checkpointed", fi.Size())
	}

	for round := range 2 {
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "c-1")
		if err != nil || got.State != "tool_executing" || string(got.Snapshot) != string(c.Snapshot) {
			t.Errorf("round %d: Get = %+v, %v", round, got, err)
		}
		if ms, err := s.Messages(ctx, "c-1", 0, 0); err != nil || len(ms) != 2 {
			t.Errorf("round %d: %d messages, %v", round, len(ms), err)
		}
		if _, data, err := s.Attachment(ctx, ref); err != nil || string(data) != "png bytes" {
			t.Errorf("round %d: attachment %q, %v", round, data, err)
		}
		var versions int
		if err := s.reader.QueryRow("SELECT count(*) FROM schema_migrations").Scan(&versions); err != nil || versions != SchemaVersion() {
			t.Errorf("round %d: %d schema_migrations rows (%v), want %d", round, versions, err, SchemaVersion())
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenVersion1: a database written by schema version 1
// (testdata/schema-v1.sql) opens with this binary, migrated to the current
// version, and reads back whole; an empty file (a crash between creating
// it and the first migration) is migrated from nothing.
func TestOpenVersion1(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	v1, err := os.ReadFile(filepath.Join("testdata", "schema-v1.sql"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "v1.db")
	execSQL(t, path, string(v1))
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var have int
	if err := s.reader.QueryRow("SELECT max(version) FROM schema_migrations").Scan(&have); err != nil || have != SchemaVersion() {
		t.Errorf("schema version %d (%v), want %d", have, err, SchemaVersion())
	}
	all, err := s.All(ctx)
	if err != nil || fmt.Sprint(ids(all)) != "[c-old s-old]" {
		t.Fatalf("All = %v, %v", ids(all), err)
	}
	if all[1].ParentID != "c-old" || !all[1].Subagent || all[0].State != "tool_executing" {
		t.Errorf("All = %+v", all)
	}
	if listed, _ := s.List(ctx, ListOptions{}); fmt.Sprint(ids(listed)) != "[c-old]" {
		t.Errorf("List = %v", ids(listed))
	}
	ms, err := s.Messages(ctx, "c-old", 0, 0)
	if err != nil || len(ms) != 2 || ms[1].Role != "assistant" {
		t.Errorf("Messages = %+v, %v", ms, err)
	}
	if mt, data, err := s.Attachment(ctx, attachmentRef([]byte("hello"))); err != nil || mt != "image/png" || string(data) != "hello" {
		t.Errorf("Attachment = %q %q %v", mt, data, err)
	}
	// It goes on where it was.
	if err := s.Save(ctx, Conversation{ID: "c-old", Mode: "restricted", State: "idle", Snapshot: []byte(`{}`)}, []Message{msg("c-old", 3, "tool", "interrupted")}); err != nil {
		t.Fatal(err)
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// TestConcurrentSaves: goroutines saving their own conversations at once
// all succeed (one writer connection serializes them; readers run beside
// it), and every message lands in its conversation.
func TestConcurrentSaves(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	const convs, saves = 8, 25
	for i := range convs {
		mustCreate(t, s, conv(fmt.Sprintf("c-%d", i), i))
	}
	var wg sync.WaitGroup
	for i := range convs {
		id := fmt.Sprintf("c-%d", i)
		wg.Go(func() {
			c := conv(id, i)
			for n := range saves {
				seq := int64(2*n + 1)
				c.Snapshot = snapshot(id, "idle", seq+1)
				if err := s.Save(ctx, c, []Message{msg(id, seq, "user", id), msg(id, seq+1, "assistant", id)}); err != nil {
					t.Errorf("%s: Save %d: %v", id, n, err)
					return
				}
				// A reader meanwhile sees every message saved so far.
				if ms, err := s.Messages(ctx, id, 0, MaxLimit); err != nil || int64(len(ms)) != seq+1 {
					t.Errorf("%s: after Save %d: %d messages, %v", id, n, len(ms), err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range convs {
		id := fmt.Sprintf("c-%d", i)
		ms, err := s.Messages(ctx, id, 0, MaxLimit)
		if err != nil || len(ms) != 2*saves {
			t.Fatalf("%s: %d messages, %v", id, len(ms), err)
		}
		for j, m := range ms {
			if m.Seq != int64(j+1) || !strings.Contains(string(m.Body), fmt.Sprintf("%q", id)) {
				t.Errorf("%s: message %d is %s", id, j, m.Body)
			}
		}
		if got, _ := s.Get(ctx, id); string(got.Snapshot) != string(snapshot(id, "idle", 2*saves)) {
			t.Errorf("%s: snapshot %s", id, got.Snapshot)
		}
	}
}

// TestCancelledContext: a Save whose context is done writes nothing.
func TestCancelledContext(t *testing.T) {
	s, _ := openTest(t)
	mustCreate(t, s, conv("c-1", 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := conv("c-1", 0)
	c.State = "awaiting_llm"
	if err := s.Save(ctx, c, []Message{msg("c-1", 1, "user", "hi")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Save: %v, want context.Canceled", err)
	}
	got, _ := s.Get(context.Background(), "c-1")
	if ms, _ := s.Messages(context.Background(), "c-1", 0, 0); got.State != "idle" || len(ms) != 0 {
		t.Errorf("after a cancelled Save: state %q, %d messages", got.State, len(ms))
	}
}
