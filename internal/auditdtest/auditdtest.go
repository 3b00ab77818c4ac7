// Package auditdtest runs a real auditd inside a test process: pkg/auditd
// on a SQLite file in t.TempDir, serving loopback HTTP and its event stream
// on a Unix socket, stopped when the test ends. (internal/auditdproc runs
// the auditd binary instead.)
package auditdtest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/store/sqlite"
	"github.com/govkit/govkit/pkg/stream"
)

// Options configure a Daemon; the zero value is auditd's defaults on a new
// database.
type Options struct {
	// DB is the SQLite file; "" means a new one in t.TempDir.
	DB string
	// Config, when not nil, edits auditd.DefaultConfig() at every start.
	Config func(*auditd.Config)
	// Policy, when not nil, is in force from every start, as with
	// auditd --policy --infra.
	Policy *auditd.Policy
}

// Daemon is an auditd that can be stopped and started again on the same
// database, address and socket, as an operator restarts auditd.
type Daemon struct {
	// Server is the running server (a new one after each Start).
	Server *auditd.Server
	// Addr is the loopback host:port it serves HTTP on; URL is
	// http://Addr.
	Addr, URL string
	// Socket is the path of its event stream's Unix socket, under a short
	// directory in /tmp (t.TempDir's paths can exceed the socket path
	// limit).
	Socket string
	// DB is the SQLite file. A test may name another between Stop and
	// Start.
	DB string

	t    testing.TB
	o    Options
	stop func()
}

// Start runs auditd until d.Stop or the end of the test.
func Start(t testing.TB, o Options) *Daemon {
	t.Helper()
	d := &Daemon{t: t, o: o, DB: o.DB, Socket: filepath.Join(shortDir(t), "s")}
	if d.DB == "" {
		d.DB = filepath.Join(t.TempDir(), "audit.db")
	}
	d.Start()
	t.Cleanup(d.Stop)
	return d
}

// Start starts a stopped d again on d.DB, the same address and socket.
func (d *Daemon) Start() {
	t := d.t
	t.Helper()
	if d.stop != nil {
		t.Fatal("auditdtest: Start of a running auditd")
	}
	srv, st := open(t, d.DB, d.o.Config)
	if d.o.Policy != nil {
		if err := srv.SetPolicy(*d.o.Policy); err != nil {
			srv.Close()
			st.Close()
			t.Fatal(err)
		}
	}
	addr := d.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	for i := 0; ; i++ { // the port of a stopped auditd may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil || i == 100 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		srv.Close()
		st.Close()
		t.Fatal(err)
	}
	sock, err := stream.Listen(d.Socket)
	if err != nil {
		ln.Close()
		srv.Close()
		st.Close()
		t.Fatal(err)
	}
	d.Server = srv
	d.Addr = ln.Addr().String()
	d.URL = "http://" + d.Addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln, sock) }()
	d.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("auditd Run: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	}
}

// Stop stops d and closes its database, as SIGTERM would; it does nothing
// when d is stopped already.
func (d *Daemon) Stop() {
	if d.stop != nil {
		d.stop()
		d.stop = nil
	}
}

// New returns an auditd server on a new database that does not serve:
// for tests that serve its Handler themselves. It is closed, and its
// database with it, when the test ends.
func New(t testing.TB, config func(*auditd.Config)) *auditd.Server {
	t.Helper()
	srv, st := open(t, filepath.Join(t.TempDir(), "audit.db"), config)
	t.Cleanup(func() {
		srv.Close()
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return srv
}

// open opens the database at db and an auditd server on it.
func open(t testing.TB, db string, config func(*auditd.Config)) (*auditd.Server, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := auditd.DefaultConfig()
	if config != nil {
		config(&cfg)
	}
	srv, err := auditd.New(cfg, st)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return srv, st
}

// shortDir is a new directory with a short path, removed when the test
// ends.
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "gk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
