package auditd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdproc"
	"github.com/govkit/govkit/internal/pgtest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/cmd/verifychain"
	"github.com/govkit/govkit/pkg/store/postgres"
)

// sharedLoad is clients appending to several auditd instances on one
// database. Each client sends its events with event ids of its own to one
// instance; when an append fails it retries the same event, with the same
// id, on the next instance, until one acknowledges it: a retry of an event
// that a failed instance did commit is answered with the stored event
// (idempotent across instances, issue 19).
type sharedLoad struct {
	clients []*client.Client
	mu      sync.Mutex
	acked   map[string]audit.Event
	n       atomic.Int64
	errs    atomic.Int64 // failed attempts (then retried)
	codes   sync.Map     // HTTP status of failed attempts → count
}

func (l *sharedLoad) run(ctx context.Context, workers int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				ev := toolEvent(fmt.Sprintf("agent-%d", g), fmt.Sprintf("echo %d", i))
				ev.EventID = fmt.Sprintf("shared-%d-%d", g, i)
				for try := 0; ; try++ {
					got, err := l.clients[(g+try)%len(l.clients)].Append(ctx, ev)
					if err == nil {
						l.mu.Lock()
						l.acked[got.EventID] = got
						l.mu.Unlock()
						l.n.Add(1)
						break
					}
					if ctx.Err() != nil {
						return
					}
					l.errs.Add(1)
					code := 0
					var ce *client.Error
					if errors.As(err, &ce) {
						code = ce.StatusCode
					}
					v, _ := l.codes.LoadOrStore(code, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	return &wg
}

// waitFor returns when the load acknowledged n more events, or after d.
func (l *sharedLoad) waitFor(n int64, d time.Duration) {
	want := l.n.Load() + n
	deadline := time.Now().Add(d)
	for l.n.Load() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// checkSharedLog checks the log in the database after the load: seq 1..N
// without a gap, each prev_hash the previous event_hash (no fork), every
// acknowledged event stored as acknowledged, and verify-chain clean.
func checkSharedLog(t *testing.T, dsn string, acked map[string]audit.Event) int64 {
	t.Helper()
	ctx := ctxT(t)
	st, err := postgres.Open(ctx, dsn, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	byID := map[string]audit.Record{}
	var n int64
	prev := audit.ZeroHash
	err = st.Scan(ctx, 0, func(r audit.Record) error {
		n++
		if r.Seq != n {
			return fmt.Errorf("seq %d after %d: a gap", r.Seq, n-1)
		}
		if r.PrevHash != prev {
			return fmt.Errorf("seq %d: prev_hash %.12s, want %.12s: the chain forked", r.Seq, r.PrevHash, prev)
		}
		prev = r.EventHash
		byID[r.EventID] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range acked {
		got, ok := byID[id]
		if !ok {
			t.Fatalf("acknowledged event %s (seq %d) lost", id, want.Seq)
		}
		if got.Seq != want.Seq || got.EventHash != want.EventHash {
			t.Fatalf("event %s stored as seq %d %.12s, acknowledged as seq %d %.12s", id, got.Seq, got.EventHash, want.Seq, want.EventHash)
		}
	}
	streams, _, out, errOut := cli.Test()
	code := cli.Main("verify-chain", verifychain.NewCmdVerifyChain(streams, nil), streams, []string{"--db", dsn, "-o", "json"})
	var rep struct {
		Verified    bool  `json:"verified"`
		TotalEvents int64 `json:"total_events"`
	}
	// At least n: an instance still running may commit a request whose
	// client gave up (the load has stopped) between the scan and this.
	if err := json.Unmarshal(out.Bytes(), &rep); code != 0 || err != nil || !rep.Verified || rep.TotalEvents < n {
		t.Fatalf("verify-chain --db postgres: exit %d, %d events (scanned %d)\n%s%s", code, rep.TotalEvents, n, out, errOut)
	}
	return n
}

// Three auditd processes write one chain in one PostgreSQL database under
// load, and one is killed with SIGKILL mid-batch (issue 19): the chain does
// not fork, no acknowledged event is lost, verify-chain is clean, and a
// surviving instance's stream carries every committed event, the other
// instances' included.
func TestSharedPostgresKill9(t *testing.T) {
	bin := auditdBinary(t)
	dsn := pgtest.Start(t).NewDatabase(t)
	sockDir, err := os.MkdirTemp("", "sh")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "s1.sock")

	var procs []*auditdproc.Proc
	load := &sharedLoad{acked: map[string]audit.Event{}}
	for i := range 3 {
		args := []string{"--db", dsn, "--addr", "127.0.0.1:0"}
		if i == 1 {
			args = append(args, "--socket", sock)
		}
		p, err := auditdproc.Start(bin, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Kill()
		procs = append(procs, p)
		c, err := client.New(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		load.clients = append(load.clients, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Instance 1's stream, from the start.
	var streamed []int64
	var streamMu sync.Mutex
	streamCtx, stopStream := context.WithCancel(ctx)
	streamDone := make(chan error, 1)
	go func() {
		streamDone <- client.Subscribe(streamCtx, sock, 0, func(ev audit.Event) error {
			streamMu.Lock()
			streamed = append(streamed, ev.Seq)
			streamMu.Unlock()
			return nil
		})
	}()

	loadCtx, stopLoad := context.WithCancel(ctx)
	wg := load.run(loadCtx, 24)
	load.waitFor(1500, 10*time.Second)
	procs[0].Kill() // SIGKILL, with batches in flight
	killedAt := load.n.Load()
	load.waitFor(500, 10*time.Second)
	stopLoad()
	wg.Wait()
	if killedAt < 200 || load.n.Load()-killedAt < 100 {
		t.Fatalf("%d events acknowledged before the kill, %d after; want the load to run on both sides of it", killedAt, load.n.Load()-killedAt)
	}

	n := checkSharedLog(t, dsn, load.acked)

	// The stream of instance 1 reaches the head with every seq in order.
	deadline := time.Now().Add(10 * time.Second)
	for {
		streamMu.Lock()
		got := len(streamed)
		streamMu.Unlock()
		if int64(got) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopStream()
	<-streamDone
	streamMu.Lock()
	for i, seq := range streamed {
		if seq != int64(i+1) {
			t.Fatalf("stream: seq %d at position %d (want %d): a gap or a reorder", seq, i, i+1)
		}
	}
	// At least what the scan counted; at most the head now: an instance
	// still running may commit a request whose client gave up after the
	// scan (as checkSharedLog allows), and the stream carries it too.
	ro, err := postgres.Open(ctx, dsn, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	head, _, err := ro.Head(ctx)
	ro.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(len(streamed)); got < n || got > head {
		t.Fatalf("stream carried %d events; the log held %d at the scan and %d after the stream stopped", got, n, head)
	}
	streamMu.Unlock()
	for _, p := range procs[1:] {
		if err := p.Stop(); err != nil {
			t.Errorf("SIGTERM: %v\n%s", err, p.Stderr())
		}
	}
	t.Logf("%d events acknowledged (%d before kill -9 of one of 3 instances), %d stored, %d attempts retried on another instance",
		len(load.acked), killedAt, n, load.errs.Load())
}

// PostgreSQL restarted under load (pg_ctl stop -m fast, start): the
// instances answer 503 database_unavailable while it is down, clients
// retry, and nothing acknowledged is lost (issue 19: failover).
func TestSharedPostgresRestart(t *testing.T) {
	bin := auditdBinary(t)
	cluster := pgtest.Start(t)
	dsn := cluster.NewDatabase(t)
	load := &sharedLoad{acked: map[string]audit.Event{}}
	var procs []*auditdproc.Proc
	for range 2 {
		p, err := auditdproc.Start(bin, "--db", dsn, "--addr", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop()
		procs = append(procs, p)
		defer func() {
			if t.Failed() {
				t.Logf("auditd:\n%s", p.Stderr())
			}
		}()
		c, err := client.New(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		load.clients = append(load.clients, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	loadCtx, stopLoad := context.WithCancel(ctx)
	wg := load.run(loadCtx, 16)
	load.waitFor(500, 10*time.Second)
	before := load.n.Load()
	if err := cluster.Restart(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	load.waitFor(500, 20*time.Second)
	stopLoad()
	wg.Wait()
	after := load.n.Load() - before
	if after < 100 {
		t.Fatalf("only %d events acknowledged after the restart", after)
	}
	// Every failed attempt was a 503, which clients retry; none a 500.
	var seen []string
	other := false
	load.codes.Range(func(k, v any) bool {
		seen = append(seen, fmt.Sprintf("%v×%d", k, v.(*atomic.Int64).Load()))
		other = other || k != http.StatusServiceUnavailable
		return true
	})
	v, _ := load.codes.Load(http.StatusServiceUnavailable)
	if v == nil || other {
		t.Fatalf("failed attempts by status: %v; want 503s only", seen)
	}
	// Stopped before the log is read: a request its client gave up on is
	// still committed (auditd stores what it queued), and one queued
	// behind the restart's backlog could otherwise land between the
	// reads below.
	for _, p := range procs {
		if err := p.Stop(); err != nil {
			t.Errorf("stopping auditd: %v", err)
		}
	}
	n := checkSharedLog(t, dsn, load.acked)
	t.Logf("%d events acknowledged (%d before the restart), %d stored, %d attempts failed and retried (%d with 503)",
		len(load.acked), before, n, load.errs.Load(), v.(*atomic.Int64).Load())
}
