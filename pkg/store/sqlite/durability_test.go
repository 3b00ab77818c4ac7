package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// checkChain scans s from the start and checks that seqs are 1..n and
// prev_hash links; it returns n.
func checkChain(ctx context.Context, s *Store) (int64, error) {
	var n int64
	prev := audit.ZeroHash
	err := s.Scan(ctx, 0, func(r audit.Record) error {
		if r.Seq != n+1 {
			return fmt.Errorf("seq %d after %d", r.Seq, n)
		}
		if r.PrevHash != prev {
			return fmt.Errorf("seq %d: prev_hash does not link", r.Seq)
		}
		n, prev = r.Seq, r.EventHash
		return nil
	})
	return n, err
}

// TestReadWhileAppending: a read-only Store (verify-chain) and the
// read-write Store's own readers work while the writer appends.
func TestReadWhileAppending(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	appendAll(t, s, storetest.Chain(0, audit.ZeroHash, 10, 600, nil))
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()

	const batches, size = 150, 8
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		seq, prev := int64(10), ""
		_, prev, _ = s.Head(ctx)
		for range batches {
			b := storetest.Chain(seq, prev, size, 600, nil)
			if err := s.Append(ctx, b); err != nil {
				t.Errorf("Append: %v", err)
				return
			}
			seq, prev = b[size-1].Seq, b[size-1].EventHash
		}
	})
	for _, reader := range []*Store{ro, s} {
		wg.Go(func() {
			var lastHead int64
			for {
				// At least one round, and then rounds until the
				// writer is done.
				finished := false
				select {
				case <-done:
					finished = true
				default:
				}
				head, _, err := reader.Head(ctx)
				if err != nil {
					t.Errorf("Head: %v", err)
					return
				}
				if head < lastHead {
					t.Errorf("head went back from %d to %d", lastHead, head)
				}
				lastHead = head
				n, err := checkChain(ctx, reader)
				if err != nil {
					t.Errorf("Scan: %v", err)
					return
				}
				if n < head {
					t.Errorf("Scan saw %d events, Head said %d", n, head)
				}
				if _, err := reader.Query(ctx, store.Filter{Agent: "agent-a", AfterSeq: head - 5}); err != nil {
					t.Errorf("Query: %v", err)
					return
				}
				if finished {
					return
				}
			}
		})
	}
	wg.Wait()
	if head, _, _ := ro.Head(ctx); head != 10+batches*size {
		t.Errorf("read-only Head after the writer finished = %d, want %d", head, 10+batches*size)
	}
}

// TestCopyOfOpenDatabase: the files of a store that was never closed (as
// after kill -9) hold every appended event; without its -wal the copy is
// an older, consistent database.
func TestCopyOfOpenDatabase(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	records := storetest.Chain(0, audit.ZeroHash, 500, 600, nil)
	for i := 0; i < len(records); i += 100 {
		appendAll(t, s, records[i:i+100])
	}

	copyFile := func(dst, src string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	withWAL := filepath.Join(t.TempDir(), "copy.db")
	copyFile(withWAL, path)
	copyFile(withWAL+"-wal", path+"-wal")
	withoutWAL := filepath.Join(t.TempDir(), "copy.db")
	copyFile(withoutWAL, path)

	for _, tc := range []struct {
		name     string
		path     string
		readOnly bool
		want     int64
	}{
		{"with -wal, read-only", withWAL, true, 500},
		{"with -wal, read-write", withWAL, false, 500},
		{"without -wal, read-only", withoutWAL, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(tc.path, Options{ReadOnly: tc.readOnly})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			n, err := checkChain(ctx, c)
			if err != nil || n != tc.want {
				t.Fatalf("copy holds %d events (%v), want %d", n, err, tc.want)
			}
			if head, hash, _ := c.Head(ctx); n > 0 && (head != n || hash != records[n-1].EventHash) {
				t.Errorf("Head = %d, %s", head, hash)
			}
		})
	}
}

// TestKill9 appends from a child process, kills it with SIGKILL mid-stream
// and checks that every acknowledged event is in the file (DESIGN §6:
// no acknowledged event may be lost on kill -9).
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "audit.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestAppendChild$")
	cmd.Env = append(os.Environ(), "GOVKIT_STORE_CHILD_DB="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked int64
	lines := bufio.NewScanner(stdout)
	for acked < 1500 && lines.Scan() {
		if seq, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
			acked, _ = strconv.ParseInt(seq, 10, 64)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, stdout)
	cmd.Wait()
	if acked < 1500 {
		t.Fatalf("the child acknowledged only %d events", acked)
	}

	ctx := context.Background()
	for _, ro := range []bool{true, false} {
		s, err := Open(path, Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		n, err := checkChain(ctx, s)
		s.Close()
		if err != nil {
			t.Fatalf("read-only=%v: %v", ro, err)
		}
		if n < acked {
			t.Errorf("read-only=%v: %d events after kill -9, but %d were acknowledged", ro, n, acked)
		}
		t.Logf("read-only=%v: acknowledged %d, found %d", ro, acked, n)
	}
}

// TestAppendChild is TestKill9's child: it appends batches of 16 and
// prints the last seq of each acknowledged batch, until it is killed.
func TestAppendChild(t *testing.T) {
	path := os.Getenv("GOVKIT_STORE_CHILD_DB")
	if path == "" {
		t.Skip("the child of TestKill9")
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seq, prev := int64(0), audit.ZeroHash
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		b := storetest.Chain(seq, prev, 16, 600, nil)
		if err := s.Append(ctx, b); err != nil {
			t.Fatal(err)
		}
		seq, prev = b[15].Seq, b[15].EventHash
		fmt.Printf("acked %d\n", seq)
	}
}
