package pgtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/pgtest"
)

// A cluster answers psql over its socket with the environment Env gives,
// and is gone after Stop.
func TestStart(t *testing.T) {
	c := pgtest.Start(t)
	c.Psql(t, "CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 3)")
	if got := c.Psql(t, "SELECT count(*) FROM t"); got != "3\n" {
		t.Fatalf("count = %q, want 3", got)
	}

	// A plain psql with only Env reaches it (what the pgstart script
	// command and the gate's tests rely on).
	cmd := exec.Command("psql", "-X", "-At", "-c", "SELECT current_user, current_setting('listen_addresses')")
	cmd.Env = append(os.Environ(), c.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "postgres|" {
		t.Fatalf("psql = %q, want the superuser and no TCP listener", got)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil { // idempotent: t.Cleanup calls it again
		t.Fatal(err)
	}
	cmd = exec.Command("psql", "-X", "-c", "SELECT 1")
	cmd.Env = append(os.Environ(), c.Env()...)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("psql after Stop succeeded:\n%s", out)
	}
}

// StartDir refuses a directory whose socket path would be too long.
func TestStartDirLongPath(t *testing.T) {
	if _, err := pgtest.Find(); err != nil {
		t.Skip(err)
	}
	dir := "/tmp/" + strings.Repeat("d", 120)
	_, err := pgtest.StartDir(dir, pgtest.Options{})
	if err == nil || !strings.Contains(err.Error(), "socket path") {
		t.Fatalf("StartDir(long) = %v, want a socket path error", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("StartDir(long) created %s", dir)
	}
}

// BenchmarkStart measures a cluster's initdb + start + stop.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		dir, err := os.MkdirTemp("", "pgbench")
		if err != nil {
			b.Fatal(err)
		}
		c, err := pgtest.StartDir(dir, pgtest.Options{})
		if err != nil {
			os.RemoveAll(dir)
			b.Fatal(err)
		}
		if err := c.Stop(); err != nil {
			b.Error(err)
		}
		os.RemoveAll(dir)
	}
}
