package auditd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// parse runs argv through cli.Main with runF capturing the options.
func parse(t *testing.T, args ...string) (*ServeOptions, int, string) {
	t.Helper()
	streams, _, _, errOut := cli.Test()
	var got *ServeOptions
	cmd := NewCmdAuditd(streams, func(o *ServeOptions) error { got = o; return nil })
	code := cli.Main("auditd", cmd, streams, args)
	return got, code, errOut.String()
}

func TestFlagsAndEnvironment(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no config file from this machine
	t.Setenv("GOVKIT_CONFIG", "")
	for _, tc := range []struct {
		name         string
		env          map[string]string
		args         []string
		addr, db, so string
	}{
		{"defaults", nil, nil, "127.0.0.1:1199", "audit.db", ""},
		{"environment", map[string]string{
			"GOVKIT_AUDITD_ADDR": "127.0.0.1:0", "GOVKIT_AUDIT_DB": "/var/x.db", "GOVKIT_AUDIT_SOCKET": "/run/a.sock",
		}, nil, "127.0.0.1:0", "/var/x.db", "/run/a.sock"},
		{"flags win", map[string]string{"GOVKIT_AUDITD_ADDR": "127.0.0.1:0", "GOVKIT_AUDIT_DB": "/var/x.db"},
			[]string{"--addr", "[::1]:9", "--db", "y.db", "--socket", "s"}, "[::1]:9", "y.db", "s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"GOVKIT_AUDITD_ADDR", "GOVKIT_AUDIT_DB", "GOVKIT_AUDIT_SOCKET"} {
				t.Setenv(k, tc.env[k])
			}
			o, code, stderr := parse(t, tc.args...)
			if code != 0 || o == nil {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if o.Addr != tc.addr || o.DB != tc.db || o.Socket != tc.so {
				t.Fatalf("got addr %q db %q socket %q", o.Addr, o.DB, o.Socket)
			}
		})
	}
}

func TestRefusesNonLoopback(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, addr := range []string{"0.0.0.0:1199", ":1199", "192.168.1.10:1199", "db.example.com:1199"} {
		o, code, stderr := parse(t, "--addr", addr)
		if o != nil || code != 3 || !strings.Contains(stderr, "auditd: error: address") ||
			!strings.Contains(stderr, "not a loopback address") || !strings.Contains(stderr, "auditd: hint: pass --addr 127.0.0.1:PORT") {
			t.Errorf("--addr %s: exit %d, stderr %q", addr, code, stderr)
		}
	}
}

// export writes pkg/audit's export lines, in seq order.
func TestExport(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	st, err := sqlite.Open(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	prev := audit.ZeroHash
	var recs []audit.Record
	for i := range 5 {
		ev := audit.Event{EventType: audit.TypeToolExecution, EventID: audit.NewEventID(time.Now(), rand.Reader), Agent: "a1",
			Tool: &audit.Tool{Name: "bash", RawCommand: strings.Repeat("x", i)}}
		rec, err := audit.Seal(&ev, int64(i+1), prev, time.Date(2026, 3, 9, 14, 0, i, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		prev = rec.EventHash
		recs = append(recs, rec)
		line, _ := audit.ExportLine(rec)
		want.Write(append(line, '\n'))
	}
	if err := st.Append(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	st.Close()

	streams, _, out, errOut := cli.Test()
	code := cli.Main("auditd", NewCmdAuditd(streams, nil), streams, []string{"export", "--db", db})
	if code != 0 || errOut.Len() != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out.String() != want.String() {
		t.Fatalf("export:\n%s\nwant:\n%s", out, want.String())
	}
	// Each line parses back to its record.
	sc := bufio.NewScanner(out)
	for i := 0; sc.Scan(); i++ {
		rec, err := audit.ParseExportLine(sc.Bytes())
		if err != nil || rec.EventHash != recs[i].EventHash || !bytes.Equal(rec.Body, recs[i].Body) {
			t.Fatalf("line %d: %v", i+1, err)
		}
	}
}

// The daemon in-process: it serves until its context ends and stops
// cleanly, with the lines scripts rely on.
func TestServeUntilCancelled(t *testing.T) {
	streams, _, _, _ := cli.Test()
	var errOut lockedBuffer
	streams.ErrOut = &errOut
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	db := filepath.Join(t.TempDir(), "audit.db")
	go func() {
		done <- serveRun(&ServeOptions{IO: streams, Addr: "127.0.0.1:0", DB: db, Context: ctx})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(errOut.String(), "auditd: listening on 127.0.0.1:") {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line: %q", errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "auditd: stopped; 0 events in "+db) {
		t.Fatalf("stderr: %q", errOut.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
