package verifychain

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// newDB writes recs to a new SQLite audit database and returns its path and
// the open read-write store.
func newDB(t *testing.T, recs []audit.Record) (string, *sqlite.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if len(recs) > 0 {
		if err := st.Append(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
	}
	return path, st
}

func runRealDB(t *testing.T, path string) (code int, stdout string, err error) {
	t.Helper()
	streams, _, out, _ := cli.Test()
	err = verifyRun(&VerifyOptions{IO: streams, DB: path, Output: cli.FormatText})
	return exitCode(t, err), out.String(), err
}

// A database auditd is writing to verifies (read-only, WAL), and so does a
// copy of it.
func TestVerifySQLiteInUse(t *testing.T) {
	recs := chain(t, 300)
	path, st := newDB(t, recs[:100])

	done := make(chan error)
	go func() {
		for i := 100; i < 300; i += 10 {
			if err := st.Append(context.Background(), recs[i:i+10]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	code, out, err := runRealDB(t, path)
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if code != 0 || !strings.HasPrefix(out, "verified ") {
		t.Fatalf("while appending: exit %d, %q, %v", code, out, err)
	}
	code, out, err = runRealDB(t, path)
	if code != 0 || !strings.HasPrefix(out, "verified 300 events, seq 1–300") {
		t.Fatalf("after appending: exit %d, %q, %v", code, out, err)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, data, 0o400); err != nil {
		t.Fatal(err)
	}
	if code, out, err := runRealDB(t, cp); code != 0 || !strings.HasPrefix(out, "verified 300 events") {
		t.Fatalf("copy: exit %d, %q, %v", code, out, err)
	}
	if after, _ := os.ReadFile(cp); string(after) != string(data) {
		t.Error("verification changed the copy")
	}
}

// Tampering with plain SQL, as an operator with write access could.
func TestVerifySQLiteTampered(t *testing.T) {
	for _, tt := range []struct {
		name, sql string
		want      []string
	}{
		{"indexed column", `UPDATE events SET agent = 'mallory' WHERE seq = 2`, []string{"2    evt_2     column_mismatch"}},
		{"body", `UPDATE events SET body = replace(body, '"agent-1"', '"agent-2"') WHERE seq = 2`,
			[]string{"2    evt_2     hash_mismatch", "2    evt_2     column_mismatch"}},
		{"row deleted", `DELETE FROM events WHERE seq = 2`, []string{"3    evt_3     seq_gap", "3    evt_3     prev_mismatch"}},
		{"seq moved below 1", `UPDATE events SET seq = -1 WHERE seq = 1`,
			[]string{"-1   evt_1     seq_gap", "-1   evt_1     column_mismatch", "2    evt_2     seq_gap"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, st := newDB(t, chain(t, 3))
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(tt.sql); err != nil {
				t.Fatal(err)
			}
			db.Close()
			code, out, err := runRealDB(t, path)
			if code != 1 {
				t.Fatalf("exit %d, %q, %v", code, out, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if n := strings.Count(out, "\n") - 2; n != len(tt.want) {
				t.Errorf("%d broken links, want %d:\n%s", n, len(tt.want), out)
			}
		})
	}
}

func TestVerifySQLiteBadFiles(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.db"), notDB, dir} {
		code, out, err := runRealDB(t, path)
		if code != 3 || out != "" || err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: exit %d, stdout %q, error %v: want exit 3 naming the file", path, code, out, err)
		}
		if _, err := os.Stat(path + "-wal"); err == nil {
			t.Errorf("%s: verification created a WAL file", path)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("verification created the missing database")
	}
}

// approvalsDB writes a database with two approval requests recorded as
// auditd records them (the change appended to the chain, then put in the
// approvals table with its seq): apr_1 approved by bob, apr_2 pending.
// With lag, apr_2's last change (bob's vote) is appended but not put, as
// a stop between the two leaves it.
func approvalsDB(t *testing.T, lag bool) string {
	t.Helper()
	path, st := newDB(t, nil)
	ctx := context.Background()
	prev, seq := audit.ZeroHash, int64(0)
	record := func(r approval.Request, put bool) {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		seq++
		e := audit.Event{EventID: fmt.Sprintf("evt_%d", seq), EventType: approval.ChangeType(&r), ApprovalID: r.ID, Data: data}
		rec, err := audit.Seal(&e, seq, prev, t0.Add(time.Duration(seq)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		prev = rec.EventHash
		if err := st.Append(ctx, []audit.Record{rec}); err != nil {
			t.Fatal(err)
		}
		if put {
			if err := st.PutApproval(ctx, r, seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	res := audit.Resource{Type: "database", Name: "prod-db"}
	newRequest := func(id string, quorum int) approval.Request {
		return approval.Request{
			SchemaVersion: approval.SchemaVersion, ID: id, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
			Status: approval.Pending, RequestedBy: "alice", Resource: res, Action: "write", Quorum: quorum,
			ActionHash: approval.ActionHash(res, "write", "", ""), Votes: []approval.Vote{},
		}
	}
	vote := approval.Vote{By: "bob", Decision: approval.Approve, At: t0.Add(time.Minute)}
	a := newRequest("apr_1", 1)
	record(a, true)
	a.Votes, a.Status, a.DecidedAt = []approval.Vote{vote}, approval.Approved, &vote.At
	record(a, true)
	b := newRequest("apr_2", 2)
	record(b, true)
	b.Votes = []approval.Vote{vote}
	record(b, !lag)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// The approvals table edited with plain SQL: verification replays the
// approval events and names each approval whose row disagrees (DESIGN §11,
// issue 13).
func TestVerifySQLiteApprovalMismatch(t *testing.T) {
	for _, tt := range []struct {
		name, sql string
		lag       bool
		want      []string
	}{
		{name: "intact"},
		{name: "the last change not put yet", lag: true},
		{"status approved by hand", `UPDATE approvals SET status = 'approved', request = json_set(request, '$.status', 'approved') WHERE id = 'apr_2'`, false,
			[]string{`4    apr_2     approval_mismatch  status, column.status differ from the chain at seq 4 (approval_voted): status "approved" in the table, "pending" in the chain; status column "approved" in the table, "pending" in the chain`}},
		{"a made-up voter", `UPDATE approvals SET request = json_insert(request, '$.votes[#]', json('{"by":"mallory","decision":"approve","at":"2025-01-01T00:00:00Z"}')) WHERE id = 'apr_2'`, false,
			[]string{`4    apr_2     approval_mismatch  votes differs from the chain at seq 4 (approval_voted): votes [bob:approve, mallory:approve] in the table, [bob:approve] in the chain`}},
		{"quorum lowered", `UPDATE approvals SET request = json_set(request, '$.quorum', 1) WHERE id = 'apr_2'`, true,
			[]string{`3    apr_2     approval_mismatch  quorum differs from the chain at seq 3 (approval_requested): quorum 1 in the table, 2 in the chain`}},
		{"a row no event created", `INSERT INTO approvals SELECT 'apr_x', status, requested_by, created_at, expires_at, 99, json_set(request, '$.id', 'apr_x') FROM approvals WHERE id = 'apr_1'`, false,
			[]string{`99   apr_x     approval_mismatch  not in the chain: no approval event records this request, yet its row claims seq 99`}},
		{"a row deleted", `DELETE FROM approvals WHERE id = 'apr_1'`, false,
			[]string{`2    apr_1     approval_mismatch  missing from the table: the chain records this request (last at seq 2, approval_decided), the approvals table has no row for it`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := approvalsDB(t, tt.lag)
			if tt.sql != "" {
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(tt.sql); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			code, out, err := runRealDB(t, path)
			if len(tt.want) == 0 {
				if code != 0 || !strings.HasPrefix(out, "verified 4 events") {
					t.Fatalf("exit %d, %q, %v", code, out, err)
				}
				return
			}
			if code != 1 || !strings.HasPrefix(out, fmt.Sprintf("TAMPERED: %d broken link", len(tt.want))) {
				t.Fatalf("exit %d, %q, %v", code, out, err)
			}
			if !strings.Contains(out, "\nSEQ  APPROVAL  KIND               DETAIL\n") || strings.Contains(out, "EVENT_ID") {
				t.Errorf("output lacks the approvals table, or has the chain's:\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}

			// JSON: the same links, with approval_id and detail.
			streams, _, jout, _ := cli.Test()
			err = verifyRun(&VerifyOptions{IO: streams, DB: path, Output: cli.FormatJSON})
			var rep audit.Report
			if exitCode(t, err) != 1 || json.Unmarshal(jout.Bytes(), &rep) != nil || rep.Verified || len(rep.BrokenLinks) != len(tt.want) {
				t.Fatalf("JSON: %v, %s", err, jout)
			}
			if l := rep.BrokenLinks[0]; l.Kind != audit.KindApprovalMismatch || l.ApprovalID == "" || l.Detail == "" {
				t.Errorf("JSON link %+v", l)
			}
		})
	}
}
