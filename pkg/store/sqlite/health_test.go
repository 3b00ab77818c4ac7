package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// CheckFile tells the database file from another at its path (issue 13:
// SQLite writes on into a removed or renamed-over file).
func TestCheckFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		want   error
	}{
		{"unchanged", func(*testing.T, string) {}, nil},
		{"touched", func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o640); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"removed", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, store.ErrReplaced},
		{"renamed over", func(t *testing.T, path string) {
			other := path + ".new"
			if err := os.WriteFile(other, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, store.ErrReplaced},
		{"wal removed", func(t *testing.T, path string) {
			if err := os.Remove(path + "-wal"); err != nil {
				t.Fatal(err)
			}
		}, store.ErrReplaced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, path := openTest(t)
			appendAll(t, s, storetest.Chain(0, audit.ZeroHash, 3, 100, nil))
			if err := s.CheckFile(); err != nil {
				t.Fatalf("before: %v", err)
			}
			tc.change(t, path)
			if err := s.CheckFile(); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("CheckFile: %v, want %v", err, tc.want)
			}
		})
	}
}

// A read-only store has nothing to lose: CheckFile is always nil.
func TestCheckFileReadOnly(t *testing.T) {
	s, path := openTest(t)
	appendAll(t, s, storetest.Chain(0, audit.ZeroHash, 1, 100, nil))
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := ro.CheckFile(); err != nil {
		t.Fatal(err)
	}
}

// A full database is store.ErrFull, which auditd reports as disk_full: here
// SQLite's page limit stands in for the disk.
func TestAppendFull(t *testing.T) {
	s, _ := openTest(t)
	if _, err := s.app.queryText("PRAGMA max_page_count=40"); err != nil {
		t.Fatal(err)
	}
	var err error
	prev, seq := audit.ZeroHash, int64(0)
	for i := 0; i < 100 && err == nil; i++ {
		batch := storetest.Chain(seq, prev, 10, 4000, nil)
		if err = s.Append(t.Context(), batch); err == nil {
			seq, prev = batch[9].Seq, batch[9].EventHash
		}
	}
	if !errors.Is(err, store.ErrFull) {
		t.Fatalf("appending past max_page_count: %v, want store.ErrFull", err)
	}
}

// A directory this process cannot write refuses a read-write open with
// store.ErrReadOnly. As root, modes do not stop writes: nothing to test.
func TestOpenReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, where file modes do not stop writes (TestReadOnlyDatabase in pkg/auditd uses a read-only mount)")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	_, err := Open(filepath.Join(dir, "audit.db"), Options{})
	if !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("open in a read-only directory: %v", err)
	}
}
