package auditd_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/internal/notekeytest"
	"github.com/govkit/govkit/internal/pgtest"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/postgres"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// Two auditd servers on one PostgreSQL database sign checkpoints one at a
// time (issue 19): each with a key of its own, so that a note says which
// signed it. The first started leads and signs every checkpoint while the
// other runs beside it; once it stops, the other takes over and signs from
// where it left off. Every checkpoint verifies as SQLite's do: it opens
// with the keys, its root is the Merkle root of the events it counts, and
// each is consistent with the next.
func TestSharedCheckpointLeader(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	signerA, vkeyA := notekeytest.New(t, "instance-a", 1)
	signerB, vkeyB := notekeytest.New(t, "instance-b", 2)
	known, err := checkpoint.Verifiers(vkeyA, vkeyB)
	if err != nil {
		t.Fatal(err)
	}
	with := func(s note.Signer) func(*auditd.Config) {
		return func(c *auditd.Config) {
			c.Checkpoints = &auditd.CheckpointConfig{Signer: s, Origin: "example.com/shared", Every: 5, Interval: time.Hour}
		}
	}
	da := startSharedWith(t, dsn, with(signerA))
	a, stopA := da.c, da.stop
	// b's log shows a checkpoint it signed that a had stored already.
	logB := &testLog{}
	b := startSharedWith(t, dsn, func(c *auditd.Config) {
		with(signerB)(c)
		c.Logf = func(format string, args ...any) { t.Logf(format, args...); logB.logf(format, args...) }
	}).c
	ctx := ctxT(t)
	post := func(n int, cs ...*client.Client) {
		t.Helper()
		for i := range n {
			if _, err := cs[i%len(cs)].Append(ctx, toolEvent("agent", fmt.Sprintf("echo %d", i))); err != nil {
				t.Fatal(err)
			}
		}
	}

	db, err := postgres.Open(ctx, dsn, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// signers returns the stored checkpoints by the name of their signer.
	signers := func() map[string][]int64 {
		t.Helper()
		list, err := db.Checkpoints(ctx, 0, store.MaxLimit)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]int64{}
		for _, c := range list {
			n, err := note.Open(c.Note, known)
			if err != nil || len(n.Sigs) != 1 {
				t.Fatalf("checkpoint of %d: %v, %d signatures", c.Size, err, len(n.Sigs))
			}
			out[n.Sigs[0].Name] = append(out[n.Sigs[0].Name], c.Size)
		}
		return out
	}

	post(20, a, b)
	// Every 5 events, whichever instance committed them: at least one
	// within the last 5.
	waitFor(t, "a checkpoint of 16 events or more", func() bool { cp, ok := latest(t, b, known); return ok && cp.Size >= 16 })
	// b tries to take the lead at its ticks (every second) and fails
	// while a leads: wait for one of its tries after this point, then
	// check that it never signed.
	waitLeadTry(t, dsn)
	post(6, a, b)
	// Again at least one within the last 5 (how many were signed depends
	// on how the commits batched).
	waitFor(t, "a checkpoint of 22 events or more", func() bool { cp, ok := latest(t, a, known); return ok && cp.Size >= 22 })
	if got := signers(); len(got) != 1 || len(got["instance-a"]) == 0 {
		t.Fatalf("checkpoints by signer while a leads: %v; want only instance-a's", got)
	}
	for _, l := range logB.all() {
		if strings.Contains(l, "checkpoint") {
			t.Fatalf("b, not leading, logged: %s", l)
		}
	}

	// a learns of b's last event from the database: wait for it, so that
	// a's last checkpoint counts all 26.
	waitFor(t, "a to follow b's events", func() bool { return metricAt(t, da.url, "govkit_auditd_chain_head_seq") == "26" })
	stopA() // the leader stops: its last checkpoint, then its lock goes
	post(12, b)
	waitFor(t, "a checkpoint of 36 events or more", func() bool {
		cp, ok := latest(t, b, known)
		return ok && cp.Size >= 36
	})
	got := signers()
	if len(got["instance-b"]) == 0 || len(got) != 2 {
		t.Fatalf("checkpoints by signer after a stopped: %v; want instance-b's after instance-a's", got)
	}
	lastA := got["instance-a"][len(got["instance-a"])-1]
	if got["instance-b"][0] <= lastA {
		t.Fatalf("b signed size %d, not after a's last (%d): %v", got["instance-b"][0], lastA, got)
	}
	if lastA != 26 {
		t.Errorf("a's last checkpoint, at its shutdown, is of %d events, want 26", lastA)
	}

	// Verification, as for SQLite: every checkpoint opens with the keys;
	// its root is the RFC 6962 root over the first Size events' hashes as
	// the events table holds them; each is consistent with the next
	// through the proofs auditd serves.
	recs, err := db.Query(ctx, store.Filter{Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	list, err := db.Checkpoints(ctx, 0, store.MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	var prev checkpoint.Checkpoint
	for i, c := range list {
		cp, err := checkpoint.Open(c.Note, known)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Origin != "example.com/shared" || cp.Size != c.Size {
			t.Fatalf("checkpoint %d: %+v stored as size %d", i, cp, c.Size)
		}
		if root := storetest.Root(storetest.Leaves(t, recs[:cp.Size])); root != cp.Root {
			t.Fatalf("checkpoint of %d: root %s, the events' is %s", cp.Size, cp.Root, root)
		}
		if i > 0 {
			p, err := b.ConsistencyProof(ctx, prev.Size, cp.Size)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Verify(prev, cp); err != nil {
				t.Fatalf("%d → %d: %v", prev.Size, cp.Size, err)
			}
		}
		prev = cp
	}
	rep, err := b.Verify(ctx)
	if err != nil || !rep.Verified || rep.TotalEvents != 38 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// waitLeadTry waits for an instance on dsn to try to take the checkpoint
// lead (pg_try_advisory_lock) after the call, rather than sleeping through
// a tick. The leader's own session only pings once it holds the lock, so
// a try seen in pg_stat_activity is another instance's.
func waitLeadTry(t *testing.T, dsn string) {
	t.Helper()
	ctx := ctxT(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var since time.Time
	if err := conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&since); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "another instance to try the checkpoint lead", func() bool {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE 'SELECT pg_try_advisory_lock(%' AND query_start > $1 AND pid <> pg_backend_pid()`, since).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
}
