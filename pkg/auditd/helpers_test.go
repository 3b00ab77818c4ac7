package auditd_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/sqlite"
	"github.com/govkit/govkit/pkg/stream"
)

// daemon is a real auditd in the test process: a SQLite file, a loopback
// listener and a Unix socket.
type daemon struct {
	served
	st  *sqlite.Store
	db  string
	log *testLog
}

// testLog collects the daemon's log lines.
type testLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *testLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *testLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// shortDir is a directory with a short path, for sockets (t.TempDir's can
// exceed the socket path limit).
func shortDir(t testing.TB) string {
	dir, err := os.MkdirTemp("/tmp", "gk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startDaemon runs auditd on db (a new file in a temporary directory when
// empty) until the test ends.
func startDaemon(t testing.TB, db string, edit func(*auditd.Config)) *daemon {
	t.Helper()
	if db == "" {
		db = filepath.Join(t.TempDir(), "audit.db")
	}
	st, err := sqlite.Open(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{st: st, db: db, log: &testLog{}}
	cfg := auditd.DefaultConfig()
	cfg.Logf = d.log.logf
	if edit != nil {
		edit(&cfg)
	}
	d.served = serve(t, cfg, st)
	return d
}

// served is a Server serve runs: a loopback listener, a Unix socket, and
// a client of it.
type served struct {
	srv  *auditd.Server
	c    *client.Client
	url  string
	sock string
	stop func() // shuts it down and closes its store before the test ends (idempotent)
}

// serve runs a Server with cfg on st until stop or the test's end; stop
// closes st.
func serve(t testing.TB, cfg auditd.Config, st store.Store) served {
	t.Helper()
	srv, err := auditd.New(cfg, st)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sockPath := filepath.Join(shortDir(t), "s.sock")
	sock, err := stream.Listen(sockPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln, sock) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			if err := st.Close(); err != nil {
				t.Errorf("closing the store: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	url := "http://" + ln.Addr().String()
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	return served{srv: srv, c: c, url: url, sock: sockPath, stop: stop}
}

func toolEvent(agent, command string) audit.Event {
	return audit.Event{
		EventType:   audit.TypeToolExecution,
		Agent:       agent,
		ActionClass: audit.ActionRead,
		Tool:        &audit.Tool{Name: "bash", RawCommand: command, DurationMS: 3},
		Outcome:     &audit.Outcome{Status: "success"},
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or 10 seconds pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
