package auditd_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdproc"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/cmd/verifychain"
)

// buildAuditd builds the real binary once per test binary run.
var buildAuditd = sync.OnceValues(func() (string, error) {
	// Not t.TempDir: the binary outlives the test that builds it. TestMain
	// removes it.
	dir, err := os.MkdirTemp("", "auditd-bin")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "auditd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/govkit/govkit/cmd/auditd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func auditdBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the auditd binary")
	}
	bin, err := buildAuditd()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// kill -9 in the middle of concurrent appends: after a restart on the same
// file, every event that was acknowledged is there, unchanged, and the chain
// verifies and continues.
func TestKill9KeepsAcknowledgedEvents(t *testing.T) {
	bin := auditdBinary(t)
	db := filepath.Join(t.TempDir(), "audit.db")
	p, err := auditdproc.Start(bin, "--db", db, "--addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var mu sync.Mutex
	acked := map[string]audit.Event{}
	var n atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				ev := toolEvent(fmt.Sprintf("agent-%d", g), fmt.Sprintf("echo %d", i))
				ev.EventID = fmt.Sprintf("crash-%d-%d", g, i)
				got, err := c.Append(ctx, ev)
				if err != nil {
					// The daemon is gone: this one was not acknowledged.
					if n.Load() == 0 {
						t.Logf("append: %v", err)
					}
					return
				}
				mu.Lock()
				acked[got.EventID] = got
				mu.Unlock()
				n.Add(1)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < 2000 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p.Kill() // SIGKILL, mid-load
	wg.Wait()
	if len(acked) < 100 {
		t.Fatalf("only %d events acknowledged before the kill; auditd said:\n%s", len(acked), p.Stderr())
	}

	p2, err := auditdproc.Start(bin, "--db", db, "--addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := client.New(p2.URL)
	for id, want := range acked {
		got, err := c2.Get(ctx, id)
		if err != nil {
			t.Fatalf("acknowledged event %s (seq %d) lost: %v", id, want.Seq, err)
		}
		if got.Seq != want.Seq || got.EventHash != want.EventHash {
			t.Fatalf("event %s: seq %d hash %s after restart, acknowledged as seq %d hash %s", id, got.Seq, got.EventHash, want.Seq, want.EventHash)
		}
	}
	rep, err := c2.Verify(ctx)
	if err != nil || !rep.Verified || rep.TotalEvents < int64(len(acked)) {
		t.Fatalf("after restart: %+v, %v (%d acknowledged)", rep, err, len(acked))
	}
	next, err := c2.Append(ctx, toolEvent("after", "ls"))
	if err != nil || next.Seq != rep.TotalEvents+1 || next.PrevHash != rep.LastEvent.EventHash {
		t.Fatalf("append after restart: seq %d prev %s, %v; want seq %d prev %s", next.Seq, next.PrevHash, err, rep.TotalEvents+1, rep.LastEvent.EventHash)
	}
	t.Logf("%d events acknowledged before kill -9, %d stored", len(acked), rep.TotalEvents)
	if err := p2.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p2.Stderr())
	}
	if !strings.Contains(p2.Stderr(), fmt.Sprintf("stopped; %d events", rep.TotalEvents+1)) {
		t.Fatalf("stderr:\n%s", p2.Stderr())
	}
}

// A row edited with plain SQL: auditd still starts, logs the break, serves
// /health, and /api/verify names the row; appends go on.
func TestTamperedDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	d := startDaemon(t, db, nil)
	ctx := ctxT(t)
	for i := range 10 {
		if _, err := d.c.Append(ctx, toolEvent("a1", fmt.Sprintf("echo %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	d.stop()

	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := raw.Exec(`UPDATE events SET body = CAST(replace(CAST(body AS TEXT), 'echo 4', 'echo X') AS BLOB) WHERE seq = 5`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tampering updated %d rows", n)
	}
	raw.Close()

	// verify-chain, offline, names the row.
	streams, _, out, _ := cli.Test()
	code := cli.Main("verify-chain", verifychain.NewCmdVerifyChain(streams, nil), streams, []string{"--db", db, "-o", "json"})
	if code != 1 || !strings.Contains(out.String(), `{"seq":5,`) || !strings.Contains(out.String(), `"kind":"hash_mismatch"`) {
		t.Fatalf("verify-chain exit %d:\n%s", code, out)
	}

	d = startDaemon(t, db, nil)
	h, err := d.c.Health(ctx)
	if err != nil || h.Status != "ok" || h.HeadSeq != 10 {
		t.Fatalf("health on a tampered database: %+v, %v", h, err)
	}
	waitFor(t, "the start-up verification", func() bool {
		h, _ := d.c.Health(ctx)
		return h.Chain != "unverified"
	})
	if h, _ := d.c.Health(ctx); h.Chain != "broken" {
		t.Fatalf("health chain %q, want broken", h.Chain)
	}
	if !slices.ContainsFunc(d.log.all(), func(l string) bool {
		return strings.Contains(l, "warning: chain broken") && strings.Contains(l, "seq 5 (hash_mismatch)")
	}) {
		t.Fatalf("no warning logged: %q", d.log.all())
	}
	rep, err := d.c.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verified || len(rep.BrokenLinks) == 0 || rep.BrokenLinks[0].Seq != 5 || rep.BrokenLinks[0].Kind != audit.KindHashMismatch {
		t.Fatalf("verify: %+v", rep)
	}
	// The chain goes on from the stored head.
	ev, err := d.c.Append(ctx, toolEvent("a1", "ls"))
	if err != nil || ev.Seq != 11 || ev.PrevHash != h.HeadHash {
		t.Fatalf("append after tampering: %+v, %v", ev, err)
	}
	// Reading the tampered event still works: its body is valid JSON.
	if got, err := d.c.Get(ctx, rep.BrokenLinks[0].EventID); err != nil || got.Tool.RawCommand != "echo X" {
		t.Fatalf("tampered event: %+v, %v", got, err)
	}
}

// A body that is not JSON any more is reported, never spliced into a page.
func TestTamperedBodyNotJSON(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	d := startDaemon(t, db, nil)
	ctx := ctxT(t)
	ev, err := d.c.Append(ctx, toolEvent("a1", "ls"))
	if err != nil {
		t.Fatal(err)
	}
	d.stop()
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE events SET body = CAST('{"oops' AS BLOB) WHERE seq = 1`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	d = startDaemon(t, db, nil)
	if _, err := d.c.Get(ctx, ev.EventID); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("Get of a broken body: %v", err)
	}
	rep, err := d.c.Verify(ctx)
	if err != nil || rep.Verified {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// binDir holds the built binary.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
