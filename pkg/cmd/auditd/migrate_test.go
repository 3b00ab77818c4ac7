package auditd

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/pgtest"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/cmd/verifychain"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/postgres"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// sqliteLog writes n sealed events, every fifth citing an approval, and
// one approval request to a new SQLite database.
func sqliteLog(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	res := audit.Resource{Type: "database", Name: "prod"}
	r := approval.Request{SchemaVersion: approval.SchemaVersion, ID: "apr_1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
		Status: approval.Pending, RequestedBy: "alice", Resource: res, Action: "write", Quorum: 1,
		ActionHash: approval.ActionHash(res, "write", "", ""), Votes: []approval.Vote{}}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	prev := audit.ZeroHash
	var recs []audit.Record
	for i := range n {
		e := audit.Event{EventID: fmt.Sprintf("evt-%d", i+1), EventType: audit.TypeToolExecution,
			Agent: fmt.Sprintf("agent-%d", i%3), ActionClass: audit.ActionRead,
			Tool: &audit.Tool{Name: "bash", RawCommand: fmt.Sprintf("echo %d", i)}}
		switch {
		case i == 0: // the request, as auditd records it
			e = audit.Event{EventID: "evt-1", EventType: approval.ChangeType(&r), ApprovalID: r.ID, Data: data}
		case i%5 == 0:
			e.ApprovalID = "apr_1"
		}
		rec, err := audit.Seal(&e, int64(i+1), prev, t0.Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		prev = rec.EventHash
	}
	if err := st.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := st.PutApproval(ctx, r, 1); err != nil {
		t.Fatal(err)
	}
	if err := st.PutCheckpoint(ctx, store.StoredCheckpoint{Size: int64(n), Note: []byte("a signed note\n"), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	return path
}

// auditd migrate copies a SQLite log into PostgreSQL byte for byte and
// verifies it (issue 19); it refuses a database that holds a log already,
// and says so when the original's chain is broken.
func TestMigrate(t *testing.T) {
	cluster := pgtest.Start(t)
	src := sqliteLog(t, 2500) // three transactions of migrateBatch
	dsn := cluster.NewDatabase(t)
	code, out, errOut := runAuditd(t, "migrate", "--from", "sqlite:"+src, "--to", dsn)
	if code != 0 || !strings.Contains(out, "copied 2500 events, 1 approval requests and 1 checkpoints") || !strings.Contains(out, "identical and its chain verifies (head seq 2500)") {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	// The copy is the original: verify-chain agrees on both, hashes and all.
	for _, db := range []string{src, dsn} {
		streams, _, vout, verr := cli.Test()
		if code := cli.Main("verify-chain", verifychain.NewCmdVerifyChain(streams, nil), streams, []string{"--db", db, "-o", "json"}); code != 0 {
			t.Fatalf("verify-chain --db %s: exit %d\n%s%s", db, code, vout, verr)
		}
	}
	ctx := context.Background()
	pg, err := postgres.Open(ctx, dsn, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	sl, err := sqlite.Open(src, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	s1, h1, _ := sl.Head(ctx)
	s2, h2, _ := pg.Head(ctx)
	if s1 != s2 || h1 != h2 {
		t.Fatalf("heads %d %s and %d %s", s1, h1, s2, h2)
	}
	if row, ok, err := pg.GetApproval(ctx, "apr_1"); err != nil || !ok || row.Seq != 1 || row.Request.RequestedBy != "alice" {
		t.Fatalf("approval copied as %+v, %v, %v", row, ok, err)
	}
	// The Merkle tree is rebuilt (migrate compared its root with the
	// original's) and the checkpoints copied as stored.
	if n, err := pg.TreeSize(ctx); err != nil || n != 2500 {
		t.Fatalf("the copy's tree: %d, %v", n, err)
	}
	if c, ok, err := pg.Checkpoint(ctx, 2500); err != nil || !ok || string(c.Note) != "a signed note\n" {
		t.Fatalf("checkpoint copied as %+v, %v, %v", c, ok, err)
	}

	// Again into the same database: refused, nothing changed.
	code, _, errOut = runAuditd(t, "migrate", "--from", "sqlite:"+src, "--to", dsn)
	if code != 3 || !strings.Contains(errOut, "already holds events (head seq 2500)") {
		t.Fatalf("migrate into a log: exit %d\n%s", code, errOut)
	}

	// A tampered original is copied as it is, and migrate says its chain
	// is broken.
	raw, err := sql.Open("sqlite", "file:"+src)
	if err != nil {
		t.Fatal(err)
	}
	// An edited body, a deleted row, an edited event_hash column: the
	// copy keeps them all (the store's Append would refuse the gap and the
	// column, Import does not).
	for _, q := range []string{
		`UPDATE events SET body = CAST(replace(CAST(body AS TEXT), 'echo 7', 'echo X') AS BLOB) WHERE seq = 8`,
		`DELETE FROM events WHERE seq = 100`,
		`UPDATE events SET event_hash = 'edited' WHERE seq = 200`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	code, out, errOut = runAuditd(t, "migrate", "--from", "sqlite:"+src, "--to", cluster.NewDatabase(t))
	if code != 1 || !strings.Contains(out, "the copy is identical, and its chain is broken as the original's is (") {
		t.Fatalf("migrate of a tampered log: exit %d\n%s%s", code, out, errOut)
	}
}

func TestMigrateUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--from", "audit.db", "--to", "postgres://x/y"}, `--from "audit.db" is not a SQLite database`},
		{[]string{"--from", "sqlite:audit.db", "--to", "other.db"}, "--to is not a PostgreSQL database"},
	} {
		code, _, errOut := runAuditd(t, append([]string{"migrate"}, tc.args...)...)
		if code != 3 || !strings.Contains(errOut, tc.msg) {
			t.Errorf("migrate %v: exit %d\n%s", tc.args, code, errOut)
		}
	}
}
