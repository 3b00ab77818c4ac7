package verifychain

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// newDB writes recs to a new SQLite audit database and returns its path and
// the open read-write store.
func newDB(t *testing.T, recs []audit.Record) (string, *sqlite.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if len(recs) > 0 {
		if err := st.Append(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
	}
	return path, st
}

func runRealDB(t *testing.T, path string) (code int, stdout string, err error) {
	t.Helper()
	streams, _, out, _ := cli.Test()
	err = verifyRun(&VerifyOptions{IO: streams, DB: path, Output: cli.FormatText})
	return exitCode(t, err), out.String(), err
}

// A database auditd is writing to verifies (read-only, WAL), and so does a
// copy of it.
func TestVerifySQLiteInUse(t *testing.T) {
	recs := chain(t, 300)
	path, st := newDB(t, recs[:100])

	done := make(chan error)
	go func() {
		for i := 100; i < 300; i += 10 {
			if err := st.Append(context.Background(), recs[i:i+10]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	code, out, err := runRealDB(t, path)
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if code != 0 || !strings.HasPrefix(out, "verified ") {
		t.Fatalf("while appending: exit %d, %q, %v", code, out, err)
	}
	code, out, err = runRealDB(t, path)
	if code != 0 || !strings.HasPrefix(out, "verified 300 events, seq 1–300") {
		t.Fatalf("after appending: exit %d, %q, %v", code, out, err)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, data, 0o400); err != nil {
		t.Fatal(err)
	}
	if code, out, err := runRealDB(t, cp); code != 0 || !strings.HasPrefix(out, "verified 300 events") {
		t.Fatalf("copy: exit %d, %q, %v", code, out, err)
	}
	if after, _ := os.ReadFile(cp); string(after) != string(data) {
		t.Error("verification changed the copy")
	}
}

// Tampering with plain SQL, as an operator with write access could.
func TestVerifySQLiteTampered(t *testing.T) {
	for _, tt := range []struct {
		name, sql string
		want      []string
	}{
		{"indexed column", `UPDATE events SET agent = 'mallory' WHERE seq = 2`, []string{"2    evt_2     column_mismatch"}},
		{"body", `UPDATE events SET body = replace(body, '"agent-1"', '"agent-2"') WHERE seq = 2`,
			[]string{"2    evt_2     hash_mismatch", "2    evt_2     column_mismatch"}},
		{"row deleted", `DELETE FROM events WHERE seq = 2`, []string{"3    evt_3     seq_gap", "3    evt_3     prev_mismatch"}},
		{"seq moved below 1", `UPDATE events SET seq = -1 WHERE seq = 1`,
			[]string{"-1   evt_1     seq_gap", "-1   evt_1     column_mismatch", "2    evt_2     seq_gap"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, st := newDB(t, chain(t, 3))
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(tt.sql); err != nil {
				t.Fatal(err)
			}
			db.Close()
			code, out, err := runRealDB(t, path)
			if code != 1 {
				t.Fatalf("exit %d, %q, %v", code, out, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if n := strings.Count(out, "\n") - 2; n != len(tt.want) {
				t.Errorf("%d broken links, want %d:\n%s", n, len(tt.want), out)
			}
		})
	}
}

func TestVerifySQLiteBadFiles(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.db"), notDB, dir} {
		code, out, err := runRealDB(t, path)
		if code != 3 || out != "" || err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: exit %d, stdout %q, error %v: want exit 3 naming the file", path, code, out, err)
		}
		if _, err := os.Stat(path + "-wal"); err == nil {
			t.Errorf("%s: verification created a WAL file", path)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("verification created the missing database")
	}
}
