package auditd_test

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/internal/notekeytest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/client"
)

// checkpointKey returns a deterministic signer and the verifiers of its key.
func checkpointKey(t *testing.T) (note.Signer, note.Verifiers) {
	t.Helper()
	signer, vkey := notekeytest.New(t, "auditd.test/log", 19)
	known, err := checkpoint.Verifiers(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return signer, known
}

func latest(t *testing.T, c *client.Client, known note.Verifiers) (checkpoint.Checkpoint, bool) {
	t.Helper()
	msg, err := c.Checkpoint(ctxT(t))
	if client.IsNotFound(err) {
		return checkpoint.Checkpoint{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Open(msg, known)
	if err != nil {
		t.Fatal(err)
	}
	return cp, true
}

// Checkpoints every 5 events, a log file beside the database, the last one
// at shutdown; the proofs auditd serves verify against them (issue 19).
func TestCheckpointsSigned(t *testing.T) {
	signer, known := checkpointKey(t)
	logPath := filepath.Join(t.TempDir(), "checkpoints.log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	d := startDaemon(t, "", func(c *auditd.Config) {
		c.Checkpoints = &auditd.CheckpointConfig{Signer: signer, Every: 5, Interval: time.Hour, Log: logFile}
	})
	ctx := ctxT(t)
	if _, ok := latest(t, d.c, known); ok {
		t.Fatal("a checkpoint before any event")
	}
	var evs []audit.Event
	for i := range 12 {
		ev, err := d.c.Append(ctx, toolEvent("a", "ls "+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	waitFor(t, "a checkpoint of 10 events", func() bool { cp, ok := latest(t, d.c, known); return ok && cp.Size >= 10 })
	cp, _ := latest(t, d.c, known)
	if cp.Origin != "auditd.test/log" {
		t.Errorf("origin %q, want the key's name", cp.Origin)
	}

	// Inclusion of every event in the latest checkpoint (the default size).
	for _, ev := range evs[:cp.Size] {
		p, err := d.c.InclusionProof(ctx, ev.Seq, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.TreeSize != cp.Size || p.EventHash != ev.EventHash {
			t.Fatalf("proof for seq %d: size %d, hash %s; want %d, %s", ev.Seq, p.TreeSize, p.EventHash, cp.Size, ev.EventHash)
		}
		if opened, err := checkpoint.Open([]byte(p.Checkpoint), known); err != nil || opened != cp {
			t.Fatalf("the proof's checkpoint: %+v, %v", opened, err)
		}
		if err := p.Verify(cp); err != nil {
			t.Fatal(err)
		}
	}
	// At an explicit size: no checkpoint then, the proof still checks
	// against a root of that size (a consistency proof carries it).
	p, err := d.c.InclusionProof(ctx, 2, 3)
	if err != nil || p.TreeSize != 3 || p.Checkpoint != "" {
		t.Fatalf("proof at size 3: %+v, %v", p, err)
	}

	d.stop() // signs the last checkpoint, of all 12
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := checkpoint.SplitNotes(data)
	if err != nil {
		t.Fatal(err)
	}
	var cps []checkpoint.Checkpoint
	for _, n := range notes {
		c, err := checkpoint.Open(n, known)
		if err != nil {
			t.Fatal(err)
		}
		if len(cps) > 0 && c.Size-cps[len(cps)-1].Size < 5 && c.Size != 12 {
			t.Errorf("checkpoint of %d after one of %d: fewer than 5 events apart", c.Size, cps[len(cps)-1].Size)
		}
		cps = append(cps, c)
	}
	if len(cps) < 2 || cps[len(cps)-1].Size != 12 {
		t.Fatalf("checkpoint log: %+v; want several, the last of 12 events", cps)
	}

	// Restarted: every checkpoint is consistent with the last.
	d = startDaemon(t, d.db, func(c *auditd.Config) {
		c.Checkpoints = &auditd.CheckpointConfig{Signer: signer, Every: 5, Interval: time.Hour}
	})
	last := cps[len(cps)-1]
	for _, old := range cps {
		cp, err := d.c.ConsistencyProof(ctx, old.Size, last.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := cp.Verify(old, last); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range d.log.all() {
		if strings.Contains(l, "warning") {
			t.Errorf("log: %s", l)
		}
	}
}

// Without N events, a checkpoint comes Interval after the last one.
func TestCheckpointsInterval(t *testing.T) {
	signer, known := checkpointKey(t)
	d := startDaemon(t, "", func(c *auditd.Config) {
		c.Checkpoints = &auditd.CheckpointConfig{Signer: signer, Origin: "example.com/audit", Interval: 50 * time.Millisecond}
	})
	for range 3 {
		if _, err := d.c.Append(ctxT(t), toolEvent("a", "ls")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a checkpoint of 3 events", func() bool { cp, ok := latest(t, d.c, known); return ok && cp.Size == 3 })
	if cp, _ := latest(t, d.c, known); cp.Origin != "example.com/audit" {
		t.Errorf("origin %q", cp.Origin)
	}
}

// Bad parameters are 400s naming the parameter; sizes beyond the log 409.
func TestProofParams(t *testing.T) {
	signer, known := checkpointKey(t)
	d := startDaemon(t, "", func(c *auditd.Config) {
		c.Checkpoints = &auditd.CheckpointConfig{Signer: signer, Every: 1}
	})
	for range 4 {
		if _, err := d.c.Append(ctxT(t), toolEvent("a", "ls")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a checkpoint of 4 events", func() bool { cp, ok := latest(t, d.c, known); return ok && cp.Size == 4 })
	for _, tc := range []struct {
		path   string
		status int
		says   string
	}{
		{"/api/proof/inclusion", 400, "seq"},
		{"/api/proof/inclusion?seq=0", 400, "seq"},
		{"/api/proof/inclusion?seq=x", 400, "seq"},
		{"/api/proof/inclusion?seq=1&size=-1", 400, "size"},
		{"/api/proof/inclusion?seq=1&seq=2", 400, "seq"},
		{"/api/proof/inclusion?seq=1&sise=2", 400, "sise"},
		{"/api/proof/inclusion?seq=3&size=2", 400, "seq"},
		{"/api/proof/inclusion?seq=1&size=5", 409, "beyond"},
		{"/api/proof/consistency?from=1", 400, "to"},
		{"/api/proof/consistency?to=1", 400, "from"},
		{"/api/proof/consistency?from=3&to=2", 400, "from"},
		{"/api/proof/consistency?from=1&to=9", 409, "beyond"},
		{"/api/checkpoint?x=1", 400, "x"},
	} {
		resp, err := http.Get(d.url + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(buf.String(), tc.says) {
			t.Errorf("GET %s = %d %s; want %d naming %q", tc.path, resp.StatusCode, buf.String(), tc.status, tc.says)
		}
	}
	resp, err := http.Get(d.url + "/api/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET /api/checkpoint: %d %s", resp.StatusCode, ct)
	}
	var e *client.Error
	if _, err := d.c.ConsistencyProof(ctxT(t), 1, 9); !errors.As(err, &e) || e.StatusCode != 409 {
		t.Errorf("client ConsistencyProof beyond the log: %v", err)
	}
}
