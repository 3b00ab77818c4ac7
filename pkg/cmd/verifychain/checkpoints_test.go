package verifychain

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/internal/notekeytest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

const origin = "auditd.test/log"

// signAt signs the checkpoint of size of the tree st holds, as auditd
// does.
func signAt(t testing.TB, st *sqlite.Store, size int64, signer note.Signer) []byte {
	t.Helper()
	root, err := tlog.TreeHash(size, store.HashReader(context.Background(), st))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := checkpoint.Sign(checkpoint.Checkpoint{Origin: origin, Size: size, Root: root}, signer)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// writeLog writes notes as auditd --checkpoint-log does.
func writeLog(t testing.TB, notes ...[]byte) string {
	t.Helper()
	var b []byte
	for _, n := range notes {
		b = checkpoint.AppendNote(b, n)
	}
	path := filepath.Join(t.TempDir(), "checkpoints.log")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func execSQL(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// run runs verify-chain with argv and returns its exit code, the JSON
// report (nil when not JSON) and both outputs.
func run(t *testing.T, argv ...string) (code int, rep map[string]any, stdout, stderr string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GOVKIT_AUDIT_DB", "")
	streams, _, out, errOut := cli.Test()
	code = cli.Main("verify-chain", NewCmdVerifyChain(streams, nil), streams, argv)
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		rep = nil
	}
	return code, rep, out.String(), errOut.String()
}

// kinds returns the broken links' kinds, each once, sorted.
func kinds(rep map[string]any) []string {
	var out []string
	links, _ := rep["broken_links"].([]any)
	for _, l := range links {
		k := l.(map[string]any)["kind"].(string)
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// statuses returns "size:status" of each checkpoint in the report.
func statuses(rep map[string]any) []string {
	var out []string
	cps, _ := rep["checkpoints"].([]any)
	for _, c := range cps {
		m := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v:%v", m["size"], m["status"]))
	}
	return out
}

// reseal returns the records of chain(n) from index from on, the event
// there changed by change and every one after it sealed again: a
// consistent rewrite, every hash recomputed, as someone with the database
// and govkit's code could make.
func reseal(t testing.TB, n, from int, change func(*audit.Event)) []audit.Record {
	t.Helper()
	var recs []audit.Record
	prev := audit.ZeroHash
	for i := range n {
		e := audit.Event{
			EventID: fmt.Sprintf("evt_%d", i+1), EventType: audit.TypeToolExecution, Agent: "agent-1",
			ActionClass: audit.ActionRead, Tool: &audit.Tool{Name: "ls", Result: "a\nb"},
		}
		if i == from {
			change(&e)
		}
		rec, err := audit.Seal(&e, int64(i+1), prev, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		prev = rec.EventHash
	}
	return recs[from:]
}

// rewrite replaces the log from seq from+1 on with recs, through the
// store as an intruder with govkit's code would (its tree follows).
func rewrite(t testing.TB, path string, from int, recs []audit.Record) {
	t.Helper()
	execSQL(t, path, fmt.Sprintf("DELETE FROM events WHERE seq > %d", from))
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointTamperClasses: each tamper class of issue 19 on a real
// SQLite file, and what verify-chain reports without and with the signed
// checkpoints (of sizes 4, 10 and 20, in a checkpoint log outside the
// database). A chain alone misses the truncation and the consistent
// rewrite; with the checkpoints every class is caught, and a checkpoint
// that is not signed by the trusted key never passes.
func TestCheckpointTamperClasses(t *testing.T) {
	recs := chain(t, 20)
	signer, vkey := notekeytest.New(t, origin, 1)
	forger, _ := notekeytest.New(t, origin, 2) // the same name, another key
	_, otherVkey := notekeytest.New(t, "someone.else/log", 3)

	for _, tt := range []struct {
		name string
		// tamper changes the database at path (its signed notes are
		// notes) and returns the checkpoint log to verify with.
		tamper    func(t *testing.T, path string, notes [][]byte) string
		key       string // "" for vkey
		wantPlain int
		wantCode  int
		wantKinds []string
		wantCps   []string
	}{
		{
			name:      "untampered",
			wantPlain: 0, wantCode: 0, wantKinds: nil,
			wantCps: []string{"4:consistent", "10:consistent", "20:consistent"},
		},
		{
			name: "edit",
			tamper: func(t *testing.T, path string, notes [][]byte) string {
				execSQL(t, path, `UPDATE events SET body = replace(body, '"agent-1"', '"agent-2"') WHERE seq = 7`)
				return writeLog(t, notes...)
			},
			wantPlain: 1, wantCode: 1,
			wantKinds: []string{"column_mismatch", "hash_mismatch", "rewritten"},
			wantCps:   []string{"4:consistent", "10:rewritten", "20:rewritten"},
		},
		{
			name: "delete",
			tamper: func(t *testing.T, path string, notes [][]byte) string {
				execSQL(t, path, `DELETE FROM events WHERE seq = 7`)
				return writeLog(t, notes...)
			},
			wantPlain: 1, wantCode: 1,
			wantKinds: []string{"prev_mismatch", "rewritten", "seq_gap", "truncated"},
			wantCps:   []string{"4:consistent", "10:rewritten", "20:truncated"},
		},
		{
			name: "insert",
			tamper: func(t *testing.T, path string, notes [][]byte) string {
				execSQL(t, path,
					`UPDATE events SET seq = -seq WHERE seq >= 7`,
					`UPDATE events SET seq = 1 - seq WHERE seq < 0`,
					`CREATE TEMP TABLE extra AS SELECT * FROM events WHERE seq = 6`,
					`UPDATE extra SET seq = 7, event_id = 'evt_inserted'`,
					`INSERT INTO events SELECT * FROM extra`)
				return writeLog(t, notes...)
			},
			wantPlain: 1, wantCode: 1,
			wantKinds: []string{"column_mismatch", "prev_mismatch", "rewritten"},
			wantCps:   []string{"4:consistent", "10:rewritten", "20:rewritten"},
		},
		{
			name: "reorder",
			tamper: func(t *testing.T, path string, notes [][]byte) string {
				execSQL(t, path,
					`UPDATE events SET seq = CASE seq WHEN 7 THEN -8 ELSE -7 END WHERE seq IN (7, 8)`,
					`UPDATE events SET seq = -seq WHERE seq < 0`)
				return writeLog(t, notes...)
			},
			wantPlain: 1, wantCode: 1,
			wantKinds: []string{"column_mismatch", "prev_mismatch", "rewritten"},
			wantCps:   []string{"4:consistent", "10:rewritten", "20:rewritten"},
		},
		{
			name: "truncate",
			tamper: func(t *testing.T, path string, notes [][]byte) string {
				// The intruder deletes the tail and the database's
				// checkpoints of it; the log file is out of reach.
				execSQL(t, path, `DELETE FROM events WHERE seq > 15`, `DELETE FROM checkpoints WHERE size > 15`)
				return writeLog(t, notes...)
			},
			wantPlain: 0, wantCode: 1,
			wantKinds: []string{"truncated"},
			wantCps:   []string{"4:consistent", "10:consistent", "20:truncated"},
		},
		{
			name: "consistent rewrite",
			tamper: func(t *testing.T, path string, notes [][]byte) string {
				rewrite(t, path, 5, reseal(t, 20, 5, func(e *audit.Event) { e.Agent = "mallory" }))
				return writeLog(t, notes...)
			},
			wantPlain: 0, wantCode: 1,
			wantKinds: []string{"rewritten"},
			wantCps:   []string{"4:consistent", "10:rewritten", "20:rewritten"},
		},
		{
			name: "forged checkpoint",
			tamper: func(t *testing.T, path string, notes [][]byte) string {
				// A consistent rewrite, and a new checkpoint log signed
				// over it by the intruder's own key, named as the log's.
				rewrite(t, path, 5, reseal(t, 20, 5, func(e *audit.Event) { e.Agent = "mallory" }))
				st, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				return writeLog(t, signAt(t, st, 4, forger), signAt(t, st, 10, forger), signAt(t, st, 20, forger))
			},
			wantPlain: 0, wantCode: 1,
			wantKinds: []string{"checkpoint_unverified"},
			wantCps:   []string{"4:unknown_key", "10:unknown_key", "20:unknown_key"},
		},
		{
			name: "forged checkpoint text",
			tamper: func(t *testing.T, path string, notes [][]byte) string {
				// The tail deleted, and the checkpoint of size 20 edited
				// to say 15 under the real key's signature.
				execSQL(t, path, `DELETE FROM events WHERE seq > 15`, `DELETE FROM checkpoints WHERE size > 15`)
				edited := bytes.Replace(notes[2], []byte("\n20\n"), []byte("\n15\n"), 1)
				return writeLog(t, notes[0], notes[1], edited)
			},
			wantPlain: 0, wantCode: 1,
			wantKinds: []string{"checkpoint_unverified"},
			wantCps:   []string{"4:consistent", "10:consistent", "15:bad_signature"},
		},
		{
			name:      "wrong key",
			key:       otherVkey,
			wantPlain: 0, wantCode: 1,
			wantKinds: []string{"checkpoint_unverified"},
			wantCps:   []string{"4:unknown_key", "10:unknown_key", "20:unknown_key"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, st := newDB(t, recs)
			var notes [][]byte
			for _, size := range []int64{4, 10, 20} {
				notes = append(notes, signAt(t, st, size, signer))
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			logPath := writeLog(t, notes...)
			if tt.tamper != nil {
				logPath = tt.tamper(t, path, notes)
			}
			key := vkey
			if tt.key != "" {
				key = tt.key
			}

			code, rep, out, errOut := run(t, "--db", path, "-o", "json")
			if code != tt.wantPlain {
				t.Errorf("plain verify-chain: exit %d, want %d\n%s%s", code, tt.wantPlain, out, errOut)
			}
			if _, ok := rep["checkpoints"]; ok {
				t.Errorf("plain verify-chain reports checkpoints: %s", out)
			}

			code, rep, out, errOut = run(t, "--db", path, "--checkpoint-log", logPath, "--key", key, "-o", "json")
			if code != tt.wantCode {
				t.Fatalf("with the checkpoints: exit %d, want %d\n%s%s", code, tt.wantCode, out, errOut)
			}
			if got := kinds(rep); !slices.Equal(got, tt.wantKinds) {
				t.Errorf("kinds %q, want %q\n%s", got, tt.wantKinds, out)
			}
			if got := statuses(rep); !slices.Equal(got, tt.wantCps) {
				t.Errorf("checkpoints %q, want %q\n%s", got, tt.wantCps, out)
			}
			if rep["verified"] != (tt.wantCode == 0) {
				t.Errorf("verified %v with exit %d", rep["verified"], code)
			}

			// The text report says the same.
			code, _, out, _ = run(t, "--db", path, "--checkpoint-log", logPath, "--key", key, "-o", "text")
			if code != tt.wantCode || !strings.Contains(out, "\ncheckpoints: ") && !strings.HasPrefix(out, "checkpoints: ") {
				t.Errorf("text: exit %d:\n%s", code, out)
			}
		})
	}
}

// The text report: which checkpoints were compared, from where, and for a
// truncation which one and why.
func TestCheckpointText(t *testing.T) {
	recs := chain(t, 20)
	signer, vkey := notekeytest.New(t, origin, 1)
	path, st := newDB(t, recs)
	n10, n20 := signAt(t, st, 10, signer), signAt(t, st, 20, signer)
	if err := st.PutCheckpoint(context.Background(), store.StoredCheckpoint{Size: 10, Note: n10, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	logPath := writeLog(t, n10, n20)
	noteFile := filepath.Join(t.TempDir(), "cp.note")
	if err := os.WriteFile(noteFile, n20, 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "audit.vkey")
	if err := os.WriteFile(keyFile, []byte(vkey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, _, out, errOut := run(t, "--db", path, "--checkpoint-log", logPath, "--checkpoint", noteFile, "--key", keyFile, "-o", "text")
	want := fmt.Sprintf("verified 20 events, seq 1–20, head %s…\ncheckpoints: 2 consistent (origin auditd.test/log: sizes 10, 20); from %s, database, %s\n",
		recs[19].EventHash[:12], logPath, noteFile)
	if code != 0 || out != want {
		t.Fatalf("exit %d, stderr %q\n got %q\nwant %q", code, errOut, out, want)
	}

	// The database's own checkpoints alone: said to be weaker.
	code, _, out, _ = run(t, "--db", path, "--key", vkey, "-o", "text")
	if code != 0 || !strings.HasSuffix(out, "checkpoints: 1 consistent (origin auditd.test/log: size 10); from database (only the database's own: whoever can write it can delete them; compare with --checkpoint-log)\n") {
		t.Fatalf("database only: exit %d\n%s", code, out)
	}

	execSQL(t, path, `DELETE FROM events WHERE seq > 12`)
	code, _, out, _ = run(t, "--db", path, "--checkpoint-log", logPath, "--key", vkey, "-o", "text")
	want = "TAMPERED: 1 broken link in 12 events, first seq 1, last seq 12\n" +
		"SEQ  KIND       DETAIL\n" +
		"20   truncated  checkpoint auditd.test/log of size 20 (" + logPath + " (note 2)): the checkpoint signed 20 events; the log has 12: events from seq 13 on were deleted\n" +
		"checkpoints: 1 consistent (origin auditd.test/log: size 10), 1 truncated; from " + logPath + ", database\n"
	if code != 1 || out != want {
		t.Fatalf("truncated: exit %d\n got %q\nwant %q", code, out, want)
	}

	// An export of the truncated database, checked with the same log.
	var exp bytes.Buffer
	for _, r := range recs[:12] {
		line, _ := audit.ExportLine(r)
		exp.Write(line)
		exp.WriteByte('\n')
	}
	jsonl := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(jsonl, exp.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	code, rep, out, _ := run(t, "--jsonl", jsonl, "--checkpoint-log", logPath, "--key", vkey, "-o", "json")
	if code != 1 || !slices.Equal(statuses(rep), []string{"10:consistent", "20:truncated"}) {
		t.Fatalf("export: exit %d\n%s", code, out)
	}
}

// A checkpoints table row that is not a signed checkpoint, or is signed
// by a key not given, is evidence that fails, not a usage error; the same
// text in a file given is a usage error (exit 3). Every other problem with
// the inputs is a usage error too, and no error quotes a key.
func TestCheckpointErrors(t *testing.T) {
	recs := chain(t, 6)
	signer, vkey := notekeytest.New(t, origin, 1)
	skey, _ := notekeytest.Generate(t, origin, 1)
	path, st := newDB(t, recs)
	n6 := signAt(t, st, 6, signer)
	st.Close()
	logPath := writeLog(t, n6)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := write("garbage.note", "not a note\n")
	partial := write("partial.log", string(n6)+"\n"+"auditd.test/log\n7\n")
	skeyFile := write("audit.key", skey+"\n")
	emptyLog := write("empty.log", "")

	for _, tt := range []struct {
		name     string
		argv     []string
		code     int
		stderr   string
		noSecret bool
	}{
		{"checkpoint without key", []string{"--db", path, "--checkpoint-log", logPath}, 3,
			"verify-chain: error: --checkpoint and --checkpoint-log need --key: a checkpoint proves nothing until its signature is verified\nverify-chain: hint: pass --key VERIFIER_KEY, the verifier key auditd key create printed, or a file holding it\n", false},
		{"key with jsonl alone", []string{"--jsonl", "x.jsonl", "--key", vkey}, 3, "--key with --jsonl needs --checkpoint or --checkpoint-log", false},
		{"malformed note file", []string{"--db", path, "--checkpoint", garbage, "--key", vkey}, 3, "garbage.note: malformed checkpoint", false},
		{"incomplete log", []string{"--db", path, "--checkpoint-log", partial, "--key", vkey}, 3, "is incomplete", false},
		{"missing log", []string{"--db", path, "--checkpoint-log", filepath.Join(dir, "nope.log"), "--key", vkey}, 3, "nope.log: no such file or directory", false},
		{"no checkpoint anywhere", []string{"--db", path, "--checkpoint-log", emptyLog, "--key", vkey}, 3, "no signed checkpoint to compare the log with: the files given hold none, and the database's checkpoints table is empty", false},
		{"db table empty", []string{"--db", path, "--key", vkey}, 3, "the database's checkpoints table is empty", false},
		{"private key given", []string{"--db", path, "--checkpoint-log", logPath, "--key", skey}, 3, "--key 1 is a signer (private) key", true},
		{"private key file", []string{"--db", path, "--checkpoint-log", logPath, "--key", skeyFile}, 3, "audit.key is a signer (private) key", true},
		{"not a key", []string{"--db", path, "--checkpoint-log", logPath, "--key", "a+b+c"}, 3, "--key 1 is not a verifier key", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, out, errOut := run(t, tt.argv...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d, stderr %q, stdout %q; want %d and %q", code, errOut, out, tt.code, tt.stderr)
			}
			if tt.noSecret && strings.Contains(errOut, strings.Split(skey, "+")[4]) {
				t.Errorf("the error quotes the signer key: %s", errOut)
			}
		})
	}

	// In the database: a row edited into garbage, and one signed by
	// another key.
	forger, _ := notekeytest.New(t, origin, 2)
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutCheckpoint(context.Background(), store.StoredCheckpoint{Size: 6, Note: n6}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutCheckpoint(context.Background(), store.StoredCheckpoint{Size: 3, Note: signAt(t, st, 3, forger)}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	execSQL(t, path, `INSERT INTO checkpoints (size, note, created_at) VALUES (5, 'garbage', '2026-03-09T14:00:00Z')`)
	code, rep, out, _ := run(t, "--db", path, "--checkpoint-log", logPath, "--key", vkey, "-o", "json")
	if code != 1 || !slices.Equal(statuses(rep), []string{"-1:malformed", "3:unknown_key", "6:consistent"}) ||
		!slices.Equal(kinds(rep), []string{"checkpoint_unverified"}) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	cps := rep["checkpoints"].([]any)
	if src := cps[2].(map[string]any)["sources"]; fmt.Sprint(src) != fmt.Sprintf("[%s (note 1) database]", logPath) {
		t.Errorf("sources %v", src)
	}
}
