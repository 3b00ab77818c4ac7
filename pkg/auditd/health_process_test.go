package auditd_test

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/auditdproc"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// Deleting or replacing the database under a running auditd (issue 13):
// SQLite writes on into the unlinked file, so auditd must stop
// acknowledging at once. The next append is 503 database_replaced, so are
// all later ones, /health is 503 degraded, and the file now at the path
// received nothing.
func TestDatabaseRemovedUnderAuditd(t *testing.T) {
	bin := auditdBinary(t)
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, db string)
	}{
		{"removed", func(t *testing.T, db string) {
			if err := os.Remove(db); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed over", func(t *testing.T, db string) {
			// Another valid audit database, moved into place.
			other := filepath.Join(filepath.Dir(db), "other.db")
			st, err := sqlite.Open(other, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, db); err != nil {
				t.Fatal(err)
			}
		}},
		{"wal removed", func(t *testing.T, db string) {
			if err := os.Remove(db + "-wal"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "audit.db")
			p, err := auditdproc.Start(bin, "--db", db, "--addr", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			c, _ := client.New(p.URL)
			ctx := ctxT(t)
			for range 3 {
				if _, err := c.Append(ctx, toolEvent("a1", "ls")); err != nil {
					t.Fatal(err)
				}
			}
			if h, err := c.Health(ctx); err != nil || h.Status != "ok" {
				t.Fatalf("health before: %+v, %v", h, err)
			}

			tc.replace(t, db)

			for i := range 2 {
				_, err := c.Append(ctx, toolEvent("a1", "rm -rf /"))
				var ce *client.Error
				if !errors.As(err, &ce) || ce.StatusCode != http.StatusServiceUnavailable || ce.Code != govapi.ReasonDatabaseReplaced ||
					!strings.Contains(ce.Message, "restarted") {
					t.Fatalf("append %d after the file went: %v, want 503 %s", i, err, govapi.ReasonDatabaseReplaced)
				}
			}
			// The batch endpoint and auditd's own writes refuse too.
			if _, err := c.AppendBatch(ctx, []audit.Event{toolEvent("a1", "x")}); !isStatus(err, http.StatusServiceUnavailable) {
				t.Fatalf("batch after the file went: %v", err)
			}
			h, err := c.Health(ctx)
			if err != nil || h.Status != "degraded" || h.Reason != govapi.ReasonDatabaseReplaced || !strings.Contains(h.Error, "removed or replaced") {
				t.Fatalf("health after: %+v, %v", h, err)
			}
			resp, err := http.Get(p.URL + "/health")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("GET /health: %d, want 503", resp.StatusCode)
			}
			if !strings.Contains(p.Stderr(), "auditd: error: the database file was removed or replaced") {
				t.Fatalf("stderr:\n%s", p.Stderr())
			}
		})
	}
}

func isStatus(err error, code int) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.StatusCode == code
}

// A database auditd cannot write (issue 13): auditd refuses to start on it
// (exit 3, naming --db and --read-only); with --read-only it serves
// queries and verification, answers every write 503 read_only, and /health
// says degraded. As root, file modes do not stop writes, so the directory
// is made a read-only bind mount in a private mount namespace (unshare).
func TestReadOnlyDatabase(t *testing.T) {
	bin := auditdBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "audit.db")
	p, err := auditdproc.Start(bin, "--db", db, "--addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(p.URL)
	ctx := ctxT(t)
	stored, err := c.Append(ctx, toolEvent("a1", "ls"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	// run returns the command that runs auditd with args on a read-only db.
	var run func(args ...string) *exec.Cmd
	if os.Geteuid() == 0 {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("running as root, where file modes do not stop writes, and no unshare(1) for a read-only bind mount")
		}
		script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"`
		if out, err := exec.Command(unshare, "-m", "sh", "-c", script, "sh", dir, "true").CombinedOutput(); err != nil {
			t.Skipf("running as root, and no private mount namespace for a read-only bind mount: %v: %s", err, out)
		}
		run = func(args ...string) *exec.Cmd {
			return exec.Command(unshare, append([]string{"-m", "sh", "-c", script, "sh", dir, bin}, args...)...)
		}
	} else {
		if err := os.Chmod(db, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		run = func(args ...string) *exec.Cmd { return exec.Command(bin, args...) }
	}

	// Without --read-only: refused, before it listens.
	out, err := run("--db", db, "--addr", "127.0.0.1:0").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("auditd on a read-only database: %v, want exit 3\n%s", err, out)
	}
	for _, want := range []string{"auditd: error: open audit database " + db + ": the database is read-only", "auditd: hint: ", "--db", "--read-only"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("stderr lacks %q:\n%s", want, out)
		}
	}

	// With --read-only: queries, verification; no writes.
	cmd := run("--db", db, "--addr", "127.0.0.1:0", "--read-only")
	p, err = auditdproc.StartCmd(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop: %v\n%s", err, p.Stderr())
		}
	}()
	c, _ = client.New(p.URL)
	page, err := c.Query(ctx, govapi.EventQuery{})
	if err != nil || len(page.Events) != 1 || page.Events[0].EventHash != stored.EventHash {
		t.Fatalf("GET /api/events read-only: %+v, %v", page, err)
	}
	if rep, err := c.Verify(ctx); err != nil || !rep.Verified || rep.TotalEvents != 1 {
		t.Fatalf("verify read-only: %+v, %v", rep, err)
	}
	_, err = c.Append(ctx, toolEvent("a1", "ls"))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.StatusCode != http.StatusServiceUnavailable || ce.Code != govapi.ReasonReadOnly {
		t.Fatalf("append read-only: %v, want 503 read_only", err)
	}
	if _, err := c.RequestApproval(ctx, approval.Input{Resource: audit.Resource{Type: "database", Name: "prod"}, Action: "write"}); !isStatus(err, http.StatusServiceUnavailable) {
		t.Fatalf("approval request read-only: %v", err)
	}
	h, err := c.Health(ctx)
	if err != nil || h.Status != "degraded" || h.Reason != govapi.ReasonReadOnly || h.HeadSeq != 1 {
		t.Fatalf("health read-only: %+v, %v", h, err)
	}
}
