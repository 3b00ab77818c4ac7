package sessionstore_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/sessionstore"
)

// TestMain doubles as the helper process of the lock tests: the test
// binary re-executed with helperEnv set is another hook process of the
// same session.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

const helperEnv = "GOVKIT_SESSIONSTORE_HELPER"

// helper is one process of a lock test:
//
//	hold:  lock the session, print "locked", wait for stdin to close, unlock;
//	count: N times lock, read a counter, save it plus one, unlock.
func helper(mode string) int {
	s, err := sessionstore.Open(os.Getenv("DIR"), sessionstore.Options{LockWait: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	switch mode {
	case "hold":
		e, err := s.Lock(ctx, os.Getenv("SESSION"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		if os.Getenv("DELETE") != "" {
			if err := e.Delete(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		e.Close()
	case "count":
		n, _ := strconv.Atoi(os.Getenv("N"))
		for range n {
			if err := increment(ctx, s, os.Getenv("SESSION")); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	return 0
}

// increment adds one to the session's counter under its lock: without
// mutual exclusion two processes read the same value and one increment is
// lost.
func increment(ctx context.Context, s *sessionstore.Store, session string) error {
	e, err := s.Lock(ctx, session)
	if err != nil {
		return err
	}
	defer e.Close()
	n := 0
	if d := e.Data(); d != nil {
		if n, err = strconv.Atoi(string(d)); err != nil {
			return err
		}
	}
	return e.Save([]byte(strconv.Itoa(n + 1)))
}

func helperCmd(t *testing.T, mode, dir, session string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode, "DIR=" + dir, "SESSION=" + session}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

// holder is another process holding a session's lock until release.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func hold(t *testing.T, dir, session string, env ...string) *holder {
	t.Helper()
	cmd := helperCmd(t, "hold", dir, session, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { h.release(t) })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("the holder said %q (%v)", line, err)
	}
	return h
}

func (h *holder) release(t *testing.T) {
	if h.stdin == nil {
		return
	}
	h.stdin.Close()
	h.stdin = nil
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("the holder: %v", err)
	}
}

func open(t testing.TB, dir string, o sessionstore.Options) *sessionstore.Store {
	t.Helper()
	s, err := sessionstore.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func lock(t testing.TB, s *sessionstore.Store, session string) *sessionstore.Entry {
	t.Helper()
	e, err := s.Lock(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func save(t testing.TB, s *sessionstore.Store, session, data string) {
	t.Helper()
	e := lock(t, s, session)
	defer e.Close()
	if err := e.Save([]byte(data)); err != nil {
		t.Fatal(err)
	}
}

// A session's state survives from one entry to the next; a session never
// saved has no data and has not expired.
func TestSaveThenLock(t *testing.T) {
	s := open(t, t.TempDir(), sessionstore.Options{})
	e := lock(t, s, "s-1")
	if e.Data() != nil || e.Expired() {
		t.Fatalf("a new session: data %q, expired %v", e.Data(), e.Expired())
	}
	if err := e.Save([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := e.Save([]byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if err := e.Save([]byte("x")); err == nil {
		t.Error("Save after Close succeeded")
	}
	e = lock(t, s, "s-1")
	defer e.Close()
	if string(e.Data()) != "two" || e.Expired() {
		t.Errorf("data %q, expired %v; want two, false", e.Data(), e.Expired())
	}
	other := lock(t, s, "s-2")
	defer other.Close()
	if other.Data() != nil {
		t.Errorf("another session sees %q", other.Data())
	}
}

var hexName = regexp.MustCompile(`^[0-9a-f]{64}\.(state|lock)$`)

// File names are the SHA-256 of the session id, never the id: an id like
// "../x" names no path. The id is bounded.
func TestSessionIDs(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sessionstore.Options{})
	for _, id := range []string{"../../etc/passwd", "a/b", strings.Repeat("é", 128), "\x00"} {
		save(t, s, id, "x")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 8 {
		t.Errorf("%d files, want 8 (a state and a lock file per session)", len(ents))
	}
	for _, de := range ents {
		if !hexName.MatchString(de.Name()) {
			t.Errorf("file %q is not named by a hash", de.Name())
		}
	}
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"", false},
		{strings.Repeat("a", sessionstore.MaxSessionID), true},
		{strings.Repeat("a", sessionstore.MaxSessionID+1), false},
	} {
		e, err := s.Lock(context.Background(), tc.id)
		if tc.ok != (err == nil) {
			t.Errorf("id of %d bytes: %v", len(tc.id), err)
		}
		if err == nil {
			e.Close()
		} else if !errors.Is(err, sessionstore.ErrSessionID) {
			t.Errorf("id of %d bytes: %v, want ErrSessionID", len(tc.id), err)
		}
	}
}

// A file idle past the TTL is expired: no data, Expired; a new Save makes
// the session fresh again. Expiry is judged by the file's mtime.
func TestExpiry(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	clock := func() time.Time { return now }
	s := open(t, dir, sessionstore.Options{TTL: time.Hour, Now: clock})
	save(t, s, "s", "state")

	now = now.Add(59 * time.Minute)
	e := lock(t, s, "s")
	if string(e.Data()) != "state" || e.Expired() {
		t.Fatalf("within the TTL: %q, expired %v", e.Data(), e.Expired())
	}
	e.Close()

	now = now.Add(2 * time.Minute)
	e = lock(t, s, "s")
	if e.Data() != nil || !e.Expired() {
		t.Fatalf("past the TTL: %q, expired %v", e.Data(), e.Expired())
	}
	if err := e.Save([]byte("fresh")); err != nil {
		t.Fatal(err)
	}
	e.Close()

	// The clock is the store's; the new file's mtime is the real time.
	now = time.Now()
	e = lock(t, s, "s")
	defer e.Close()
	if string(e.Data()) != "fresh" || e.Expired() {
		t.Errorf("after a new Save: %q, expired %v", e.Data(), e.Expired())
	}
}

// A Save over MaxBytes writes nothing and leaves the old state whole; a
// file over MaxBytes (damage: Save never writes one) fails Lock.
func TestTooLarge(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sessionstore.Options{MaxBytes: 10})
	save(t, s, "s", "0123456789")
	e := lock(t, s, "s")
	err := e.Save([]byte("0123456789A"))
	if !errors.Is(err, sessionstore.ErrTooLarge) {
		t.Fatalf("Save of 11 bytes: %v, want ErrTooLarge", err)
	}
	e.Close()
	e = lock(t, s, "s")
	if string(e.Data()) != "0123456789" {
		t.Errorf("after a refused Save: %q", e.Data())
	}
	e.Close()
	assertFiles(t, dir, 2) // no temporary file left behind

	big := open(t, dir, sessionstore.Options{MaxBytes: 100})
	save(t, big, "s", strings.Repeat("x", 50))
	_, err = s.Lock(context.Background(), "s")
	if !errors.Is(err, sessionstore.ErrTooLarge) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("Lock of a 50-byte file with MaxBytes 10: %v", err)
	}
	// The refused Lock released the lock.
	lock(t, big, "s").Close()
}

func assertFiles(t *testing.T, dir string, n int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != n {
		var names []string
		for _, de := range ents {
			names = append(names, de.Name())
		}
		t.Errorf("files %v, want %d", names, n)
	}
}

// Open creates its directory 0700 and refuses one that others can write
// or that is not a directory, saying how to fix it; state files are 0600.
func TestPermissions(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "govkit", "sessions")
	s := open(t, dir, sessionstore.Options{})
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %04o, want 0700", fi.Mode().Perm())
	}
	save(t, s, "s", "x")
	ents, _ := os.ReadDir(dir)
	for _, de := range ents {
		fi, _ := de.Info()
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", de.Name(), fi.Mode().Perm())
		}
	}

	for _, mode := range []os.FileMode{0o777, 0o770, 0o702, 0o1777} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := sessionstore.Open(dir, sessionstore.Options{})
		if err == nil || !strings.Contains(err.Error(), "chmod 700 "+dir) {
			t.Errorf("mode %04o: %v, want a refusal naming chmod 700", mode, err)
		}
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	open(t, dir, sessionstore.Options{}) // readable by the group is fine

	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := sessionstore.Open(file, sessionstore.Options{}); err == nil {
		t.Error("Open of a file succeeded")
	}
	if _, err := sessionstore.Open("", sessionstore.Options{}); err == nil {
		t.Error("Open of \"\" succeeded")
	}
}

// Another process holding the lock makes Lock wait LockWait and fail with
// ErrLocked; once it lets go, Lock succeeds and sees what it saved.
func TestLockHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sessionstore.Options{LockWait: 50 * time.Millisecond})
	save(t, s, "s", "before")
	h := hold(t, dir, "s")
	if _, err := s.Lock(context.Background(), "s"); !errors.Is(err, sessionstore.ErrLocked) {
		t.Fatalf("Lock while another process holds it: %v, want ErrLocked", err)
	}
	// Another session is not held up.
	lock(t, s, "other").Close()
	// A context that ends first ends the wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	long := open(t, dir, sessionstore.Options{LockWait: time.Minute})
	if _, err := long.Lock(ctx, "s"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context: %v", err)
	}
	h.release(t)
	e := lock(t, s, "s")
	defer e.Close()
	if string(e.Data()) != "before" {
		t.Errorf("data %q", e.Data())
	}
}

// A waiter blocked on a lock file that the holder deletes (the session
// ended) locks the new lock file instead of the removed one: two processes
// never both hold a session.
func TestLockAfterDelete(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sessionstore.Options{LockWait: time.Minute})
	save(t, s, "s", "x")
	h := hold(t, dir, "s", "DELETE=1")
	waiting := make(chan struct{})
	var once sync.Once
	sessionstore.OnWaiting(s, func() { once.Do(func() { close(waiting) }) })
	got := make(chan *sessionstore.Entry)
	go func() {
		e, err := s.Lock(context.Background(), "s")
		if err != nil {
			t.Error(err)
		}
		got <- e
	}()
	// Let it find the old lock file held and wait (not required for
	// correctness).
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("Lock did not wait for the held lock within 10s")
	}
	h.release(t)
	e := <-got
	if e == nil {
		t.FailNow()
	}
	defer e.Close()
	if e.Data() != nil {
		t.Errorf("after the session was deleted: %q", e.Data())
	}
	// The entry holds the lock file now at the path.
	quick := open(t, dir, sessionstore.Options{LockWait: time.Millisecond})
	if _, err := quick.Lock(context.Background(), "s"); !errors.Is(err, sessionstore.ErrLocked) {
		t.Errorf("a third Lock: %v, want ErrLocked", err)
	}
}

// Processes incrementing one counter under the lock lose no increment.
func TestLockExcludesProcesses(t *testing.T) {
	dir := t.TempDir()
	const procs, rounds = 3, 40
	var wg sync.WaitGroup
	for range procs {
		cmd := helperCmd(t, "count", dir, "s", "N="+strconv.Itoa(rounds))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				t.Errorf("a counting process: %v", err)
			}
		})
	}
	s := open(t, dir, sessionstore.Options{LockWait: time.Minute})
	for range rounds {
		if err := increment(context.Background(), s, "s"); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	e := lock(t, s, "s")
	defer e.Close()
	if want := strconv.Itoa((procs + 1) * rounds); string(e.Data()) != want {
		t.Errorf("counter %s, want %s", e.Data(), want)
	}
}

// Delete removes the session's files; the entry can no longer Save.
func TestDelete(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sessionstore.Options{})
	save(t, s, "s", "x")
	save(t, s, "keep", "y")
	e := lock(t, s, "s")
	if err := e.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := e.Save([]byte("z")); err == nil {
		t.Error("Save after Delete succeeded")
	}
	e.Close()
	if err := e.Delete(); err == nil {
		t.Error("Delete after Close succeeded")
	}
	assertFiles(t, dir, 2) // keep's
	e = lock(t, s, "s")
	defer e.Close()
	if e.Data() != nil || e.Expired() {
		t.Errorf("a deleted session: %q, expired %v", e.Data(), e.Expired())
	}
}

// Sweep removes expired sessions up to max, skips fresh ones and locked
// ones (the caller's own included) without waiting, and clears orphan lock
// files and stale temporary files.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sessionstore.Options{TTL: time.Minute, LockWait: time.Minute})
	for _, id := range []string{"old-1", "old-2", "old-3", "mine", "held", "fresh"} {
		save(t, s, id, id)
	}
	orphan := lock(t, s, "never-saved") // leaves a lock file only
	orphan.Close()
	stale := filepath.Join(dir, strings.Repeat("a", 64)+".tmp-123")
	os.WriteFile(stale, []byte("crashed save"), 0o600)
	past := time.Now().Add(-2 * time.Minute)
	for _, id := range []string{"old-1", "old-2", "old-3", "mine", "held"} {
		age(t, dir, id, past)
	}
	os.Chtimes(stale, past, past)

	mine := lock(t, s, "mine")
	defer mine.Close()
	h := hold(t, dir, "held")

	n, err := s.Sweep(2)
	if err != nil || n != 2 {
		t.Fatalf("Sweep(2): %d, %v", n, err)
	}
	n, err = s.Sweep(0)
	if err != nil || n != 1 {
		t.Fatalf("Sweep(0): %d, %v; want the last old session", n, err)
	}
	// Left: fresh, mine and held (state and lock files each).
	assertFiles(t, dir, 6)
	h.release(t)
	if n, err := s.Sweep(0); err != nil || n != 1 {
		t.Fatalf("Sweep once held is released: %d, %v", n, err)
	}
	if !mine.Expired() {
		t.Error("the caller's own session did not expire")
	}
	fresh := lock(t, s, "fresh")
	defer fresh.Close()
	if string(fresh.Data()) != "fresh" {
		t.Errorf("a fresh session after Sweep: %q", fresh.Data())
	}
}

// age sets the mtime of session id's state file.
func age(t *testing.T, dir, id string, mtime time.Time) {
	t.Helper()
	sum := sha256.Sum256([]byte(id))
	if err := os.Chtimes(filepath.Join(dir, hex.EncodeToString(sum[:])+".state"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// Lock+Data+Save+Close of a 200 KB state: what every gate hook process
// pays for its state file.
func BenchmarkRoundTrip(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(fmt.Sprintf("nosync=%v", noSync), func(b *testing.B) {
			s := open(b, b.TempDir(), sessionstore.Options{NoSync: noSync})
			state := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16)
			save(b, s, "bench", string(state))
			ctx := context.Background()
			b.SetBytes(int64(len(state)))
			b.ResetTimer()
			for b.Loop() {
				e, err := s.Lock(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if len(e.Data()) != len(state) {
					b.Fatal("short read")
				}
				if err := e.Save(state); err != nil {
					b.Fatal(err)
				}
				e.Close()
			}
		})
	}
}
