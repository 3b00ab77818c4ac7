package token

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable clock for Set.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// logs collects a Set's log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.lines
	l.lines = nil
	return s
}

func TestSetReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.yaml")
	alice, err := Create(path, "alice", []Role{Approver}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)}
	log := &logs{}
	s, err := NewSet(path, log.logf, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 1 || s.Path() != path {
		t.Fatalf("Len %d Path %s", s.Len(), s.Path())
	}
	auth := func(tok string) string {
		t.Helper()
		id, ok := s.Authenticate(tok)
		if !ok {
			return "-"
		}
		return id.Name
	}
	if got := auth(alice); got != "alice" {
		t.Fatalf("alice authenticates as %s", got)
	}

	// A token created after NewSet works once the check interval passed.
	bob, err := Create(path, "bob", []Role{Agent}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	clk.add(CheckInterval - time.Nanosecond)
	if got := auth(bob); got != "-" {
		t.Errorf("bob works before the check interval: %s", got)
	}
	clk.add(time.Nanosecond)
	if got := auth(bob); got != "bob" {
		t.Errorf("bob after the check interval: %s", got)
	}
	if got := log.take(); len(got) != 1 || got[0] != "tokens file "+path+" reloaded: 2 tokens" {
		t.Errorf("log %q", got)
	}

	// A revoked token stops within a second.
	if err := Revoke(path, "alice"); err != nil {
		t.Fatal(err)
	}
	clk.add(CheckInterval)
	if got := auth(alice); got != "-" {
		t.Errorf("revoked alice still authenticates as %s", got)
	}
	log.take()

	// A broken file keeps the tokens loaded before and is logged once.
	good, _ := os.ReadFile(path)
	write(t, path, "tokens:\n  - name: carol\n    roles: [admin]\n", 0o600)
	for i := range 3 {
		clk.add(CheckInterval)
		if got := auth(bob); got != "bob" {
			t.Errorf("check %d after the file broke: bob is %s", i, got)
		}
	}
	want := path + ":2: tokens[0].sha256: required; still using the 1 tokens loaded before"
	if got := log.take(); len(got) != 1 || got[0] != want {
		t.Errorf("log %q, want once %q", got, want)
	}
	// A different problem is reported; the same one again is not.
	write(t, path, "tokens: [\n", 0o600)
	clk.add(CheckInterval)
	auth(bob)
	write(t, path, "tokens: [    \n", 0o600) // same problem, new size
	clk.add(CheckInterval)
	auth(bob)
	if got := log.take(); len(got) != 1 || !strings.Contains(got[0], "invalid YAML") {
		t.Errorf("log %q", got)
	}
	// An unsafe mode is a problem too.
	write(t, path, string(good), 0o666)
	clk.add(CheckInterval)
	if got := auth(bob); got != "bob" {
		t.Errorf("bob is %s", got)
	}
	if got := log.take(); len(got) != 1 || !strings.Contains(got[0], "writable by group or others") {
		t.Errorf("log %q", got)
	}
	// A removed file too.
	os.Remove(path)
	clk.add(CheckInterval)
	if got := auth(bob); got != "bob" {
		t.Errorf("bob is %s", got)
	}
	clk.add(CheckInterval)
	auth(bob)
	want = "tokens file " + path + ": no such file or directory; still using the 1 tokens loaded before"
	if got := log.take(); len(got) != 1 || got[0] != want {
		t.Errorf("log %q, want once %q", got, want)
	}

	// Fixed: reloaded, and a later problem is reported again.
	write(t, path, string(good), 0o600)
	clk.add(CheckInterval)
	if got := auth(bob); got != "bob" {
		t.Errorf("bob is %s", got)
	}
	if got := log.take(); len(got) != 1 || got[0] != "tokens file "+path+" reloaded: 1 tokens" {
		t.Errorf("log %q", got)
	}
	os.Remove(path)
	clk.add(CheckInterval)
	auth(bob)
	if got := log.take(); len(got) != 1 {
		t.Errorf("log %q", got)
	}
}

func TestNewSetFails(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewSet(filepath.Join(dir, "missing"), nil, nil); err == nil {
		t.Error("NewSet on a missing file succeeded")
	}
	bad := filepath.Join(dir, "bad")
	write(t, bad, "tokens: 3\n", 0o600)
	if _, err := NewSet(bad, nil, nil); err == nil || err.Error() != bad+":1: tokens: must be a list of tokens" {
		t.Errorf("NewSet = %v", err)
	}
	empty := filepath.Join(dir, "empty")
	write(t, empty, "", 0o600)
	if s, err := NewSet(empty, nil, nil); err != nil || s.Len() != 0 {
		t.Errorf("NewSet(empty file) = %v", err)
	}
}

// Authenticate from many goroutines while the file changes (go test -race).
func TestSetConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	tok, err := Create(path, "a", []Role{Agent}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Unix(0, 0)}
	s, err := NewSet(path, nil, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if _, ok := s.Authenticate(tok); !ok {
					t.Error("token a stopped working")
					return
				}
				clk.add(100 * time.Millisecond)
			}
		})
	}
	for i := range 10 {
		if _, err := Create(path, fmt.Sprintf("b%d", i), []Role{Agent}, rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	clk.add(CheckInterval)
	s.Authenticate("")
	if s.Len() != 11 {
		t.Errorf("%d tokens after the last reload, want 11", s.Len())
	}
}
