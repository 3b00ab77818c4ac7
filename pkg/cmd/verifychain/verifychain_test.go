package verifychain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
)

// exitCode mirrors cli.Main's mapping for errors returned by a run.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *cli.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("run returned %T (%v), want nil or *cli.ExitError", err, err)
	}
	return ee.Code
}

var t0 = time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)

// chain returns n sealed records.
func chain(t testing.TB, n int) []audit.Record {
	t.Helper()
	var recs []audit.Record
	prev := audit.ZeroHash
	for i := range n {
		e := audit.Event{
			EventID: fmt.Sprintf("evt_%d", i+1), EventType: audit.TypeToolExecution, Agent: "agent-1",
			ActionClass: audit.ActionRead, Tool: &audit.Tool{Name: "ls", Result: "a\nb"},
		}
		rec, err := audit.Seal(&e, int64(i+1), prev, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		prev = rec.EventHash
	}
	return recs
}

func exportOf(t testing.TB, recs []audit.Record) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		line, err := audit.ExportLine(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func TestNewCmdVerifyChain(t *testing.T) {
	tests := []struct {
		name     string
		argv     []string
		want     VerifyOptions // only the parsed fields are compared
		wantErr  string
		wantHint string
	}{
		{name: "db", argv: []string{"--db", "a.db"}, want: VerifyOptions{DB: "a.db"}},
		{name: "jsonl", argv: []string{"--jsonl", "a.jsonl", "-o", "json"}, want: VerifyOptions{JSONL: "a.jsonl", Output: cli.FormatJSON}},
		{name: "stdin", argv: []string{"--jsonl=-", "--output", "text"}, want: VerifyOptions{JSONL: "-", Output: cli.FormatText}},
		{
			name: "both", argv: []string{"--db", "a.db", "--jsonl", "a.jsonl"},
			wantErr:  "--db and --jsonl cannot be used together",
			wantHint: "pass --db FILE to verify a database, or --jsonl FILE to verify an export",
		},
		{
			name: "neither", argv: nil,
			wantErr:  "nothing to verify",
			wantHint: "pass --db FILE (or set GOVKIT_AUDIT_DB) to verify a database, or --jsonl FILE to verify an export",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, _, _, _ := cli.Test()
			var got *VerifyOptions
			cmd := NewCmdVerifyChain(streams, func(o *VerifyOptions) error {
				got = o
				return nil
			})
			cmd.SetArgs(tt.argv)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if tt.wantErr != "" {
				var ee *cli.ExitError
				if !errors.As(err, &ee) || ee.Code != cli.ExitFailure || ee.Error() != tt.wantErr || ee.Hint != tt.wantHint {
					t.Fatalf("error %v (hint %q), want exit 3 %q (hint %q)", err, hintOf(err), tt.wantErr, tt.wantHint)
				}
				if got != nil {
					t.Error("run function called despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			parsed := VerifyOptions{Output: got.Output, DB: got.DB, JSONL: got.JSONL}
			if !reflect.DeepEqual(parsed, tt.want) || got.IO != streams {
				t.Errorf("options %+v, want %+v", parsed, tt.want)
			}
		})
	}
}

func hintOf(err error) string {
	var ee *cli.ExitError
	if errors.As(err, &ee) {
		return ee.Hint
	}
	return ""
}

// GOVKIT_AUDIT_DB (auditd's setting) names the database when --db is not
// given, and an explicit --jsonl wins over it.
func TestDBFromEnvironment(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GOVKIT_AUDIT_DB", "/var/lib/govkit/audit.db")
	for _, tt := range []struct {
		argv      []string
		db, jsonl string
	}{
		{nil, "/var/lib/govkit/audit.db", ""},
		{[]string{"--jsonl", "x.jsonl"}, "", "x.jsonl"},
		{[]string{"--db", "other.db"}, "other.db", ""},
	} {
		streams, _, _, errOut := cli.Test()
		var got *VerifyOptions
		code := cli.Main("verify-chain", NewCmdVerifyChain(streams, func(o *VerifyOptions) error {
			got = o
			return nil
		}), streams, tt.argv)
		if code != 0 || got == nil {
			t.Fatalf("%v: exit %d: %s", tt.argv, code, errOut)
		}
		if got.DB != tt.db || got.JSONL != tt.jsonl {
			t.Errorf("%v: db %q jsonl %q, want %q %q", tt.argv, got.DB, got.JSONL, tt.db, tt.jsonl)
		}
	}
}

// fakeDB serves records as the store's Scan does.
type fakeDB struct {
	recs    []audit.Record
	after   int64
	err     error
	closed  bool
	openErr error
}

func (f *fakeDB) Scan(_ context.Context, afterSeq int64, fn func(audit.Record) error) error {
	f.after = afterSeq
	for _, r := range f.recs {
		if r.Seq > afterSeq {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return f.err
}

func (f *fakeDB) Close() error { f.closed = true; return nil }

func runDB(t *testing.T, db *fakeDB, format cli.Format) (code int, stdout, stderr string) {
	t.Helper()
	streams, _, out, errOut := cli.Test()
	err := verifyRun(&VerifyOptions{
		IO: streams, DB: "audit.db", Output: format,
		OpenDB: func(path string) (Records, error) {
			if path != "audit.db" {
				t.Errorf("opened %q", path)
			}
			if db.openErr != nil {
				return nil, db.openErr
			}
			return db, nil
		},
	})
	if err != nil && hintOf(err) != "" || err != nil && exitCode(t, err) == cli.ExitFailure {
		errOut.WriteString(err.Error())
	}
	return exitCode(t, err), out.String(), errOut.String()
}

func TestVerifyRunText(t *testing.T) {
	recs := chain(t, 3)
	db := &fakeDB{recs: recs}
	code, out, _ := runDB(t, db, cli.FormatText)
	want := fmt.Sprintf("verified 3 events, seq 1–3, head %s…\n", recs[2].EventHash[:12])
	if code != 0 || out != want {
		t.Errorf("exit %d, output %q, want 0 and %q", code, out, want)
	}
	if !db.closed || db.after >= 0 {
		t.Errorf("closed %v, scanned after seq %d: want closed, from the lowest seq", db.closed, db.after)
	}

	recs = chain(t, 3)
	recs[1].Agent = "mallory\x1b[2J"
	recs[1].EventID = "evt_\x1b[31m"
	recs[2].Body = append(recs[2].Body[:len(recs[2].Body)-1:len(recs[2].Body)-1], ' ', '}')
	code, out, _ = runDB(t, &fakeDB{recs: recs}, cli.FormatText)
	want = "TAMPERED: 2 broken links in 3 events, first seq 1, last seq 3\n" +
		"SEQ  EVENT_ID        KIND\n" +
		"2    \"evt_\\x1b[31m\"  column_mismatch\n" +
		"3    evt_3           hash_mismatch\n"
	if code != 1 || out != want {
		t.Errorf("exit %d, output\n%s\nwant\n%s", code, out, want)
	}

	code, out, _ = runDB(t, &fakeDB{}, cli.FormatText)
	if code != 0 || out != "verified 0 events: the log is empty\n" {
		t.Errorf("empty: exit %d, output %q", code, out)
	}
}

func TestVerifyRunTextExact(t *testing.T) {
	recs := chain(t, 4)
	recs[1].Agent = "x"                // column_mismatch at 2
	recs = append(recs[:2:2], recs[3]) // 3 deleted: seq_gap, prev_mismatch at 4
	code, out, _ := runDB(t, &fakeDB{recs: recs}, cli.FormatText)
	want := "TAMPERED: 3 broken links in 3 events, first seq 1, last seq 4\n" +
		"SEQ  EVENT_ID  KIND\n" +
		"2    evt_2     column_mismatch\n" +
		"4    evt_4     seq_gap\n" +
		"4    evt_4     prev_mismatch\n"
	if code != 1 || out != want {
		t.Errorf("exit %d, output\n%s\nwant\n%s", code, out, want)
	}
}

func TestVerifyRunTextCapped(t *testing.T) {
	recs := chain(t, 2)
	var many []audit.Record
	many = append(many, recs[0])
	for range audit.MaxBrokenLinks {
		many = append(many, recs[1], recs[1]) // each copy after the first: seq_gap + prev_mismatch
	}
	code, out, _ := runDB(t, &fakeDB{recs: many}, cli.FormatText)
	first, _, _ := strings.Cut(out, "\n")
	if code != 1 || first != "TAMPERED: 3,998 broken links in 2,001 events, first seq 1, last seq 2 (the first 1,000 listed)" {
		t.Errorf("exit %d, first line %q", code, first)
	}
	if n := strings.Count(out, "\n"); n != 2+audit.MaxBrokenLinks {
		t.Errorf("%d lines", n)
	}
}

func TestVerifyRunJSON(t *testing.T) {
	recs := chain(t, 2)
	code, out, _ := runDB(t, &fakeDB{recs: recs}, cli.FormatJSON)
	want := fmt.Sprintf(`{"schema_version":1,"verified":true,"total_events":2,"broken_links":[],`+
		`"first_event":{"seq":1,"event_id":"evt_1","timestamp":"2026-03-09T14:00:00Z","event_hash":"%s"},`+
		`"last_event":{"seq":2,"event_id":"evt_2","timestamp":"2026-03-09T14:00:01Z","event_hash":"%s"}}`+"\n",
		recs[0].EventHash, recs[1].EventHash)
	if code != 0 || out != want {
		t.Errorf("exit %d, output\n%s\nwant\n%s", code, out, want)
	}

	recs[1].Body = []byte("{}")
	code, out, _ = runDB(t, &fakeDB{recs: recs}, cli.FormatJSON)
	var rep struct {
		audit.Report
		SchemaVersion int `json:"schema_version"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	wantLinks := []audit.BrokenLink{{Seq: 2, EventID: "evt_2", Kind: audit.KindHashMismatch}, {Seq: 2, EventID: "evt_2", Kind: audit.KindColumnMismatch}}
	if code != 1 || rep.Verified || rep.SchemaVersion != 1 || !reflect.DeepEqual(rep.BrokenLinks, wantLinks) {
		t.Errorf("exit %d, report %+v", code, rep)
	}

	// Output follows the terminal when -o is not given.
	streams, _, out2, _ := cli.Test()
	streams.SetStdoutTTY(true)
	_ = verifyRun(&VerifyOptions{IO: streams, DB: "x", OpenDB: func(string) (Records, error) { return &fakeDB{}, nil }})
	if !strings.HasPrefix(out2.String(), "verified 0 events") {
		t.Errorf("on a terminal: %q", out2)
	}
}

func TestVerifyRunDBErrors(t *testing.T) {
	code, out, errOut := runDB(t, &fakeDB{openErr: errors.New("open audit database audit.db: not a regular file")}, cli.FormatJSON)
	if code != 3 || out != "" || !strings.Contains(errOut, "audit.db: not a regular file") {
		t.Errorf("open error: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runDB(t, &fakeDB{recs: chain(t, 1), err: errors.New("disk I/O error")}, cli.FormatJSON)
	if code != 3 || out != "" || !strings.Contains(errOut, "reading audit.db: disk I/O error") {
		t.Errorf("scan error: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func runJSONL(t *testing.T, file string, stdin []byte) (code int, stdout string, err error) {
	t.Helper()
	streams, in, out, _ := cli.Test()
	in.Write(stdin)
	err = verifyRun(&VerifyOptions{IO: streams, JSONL: file, Output: cli.FormatText})
	return exitCode(t, err), out.String(), err
}

func TestVerifyJSONL(t *testing.T) {
	dir := t.TempDir()
	recs := chain(t, 3)
	good := filepath.Join(dir, "good.jsonl")
	if err := os.WriteFile(good, exportOf(t, recs), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, err := runJSONL(t, good, nil); code != 0 || !strings.HasPrefix(out, "verified 3 events, seq 1–3") {
		t.Errorf("good file: exit %d, %q, %v", code, out, err)
	}
	if code, out, err := runJSONL(t, "-", exportOf(t, recs)); code != 0 || !strings.HasPrefix(out, "verified 3 events") {
		t.Errorf("stdin: exit %d, %q, %v", code, out, err)
	}
	// No newline at the end of the last line is fine.
	if code, _, err := runJSONL(t, "-", bytes.TrimSuffix(exportOf(t, recs), []byte("\n"))); code != 0 {
		t.Errorf("no final newline: exit %d, %v", code, err)
	}

	tampered := bytes.Replace(exportOf(t, recs), []byte(`"result":"a\nb"`), []byte(`"result":"a\nc"`), 1)
	if code, out, _ := runJSONL(t, "-", tampered); code != 1 || !strings.Contains(out, "1    evt_1     hash_mismatch") {
		t.Errorf("tampered: exit %d, %q", code, out)
	}

	lines := bytes.SplitAfter(exportOf(t, recs), []byte("\n"))
	for _, tt := range []struct {
		name, file string
		in         []byte
		wantErr    string
	}{
		{"missing file", filepath.Join(dir, "nope.jsonl"), nil, "--jsonl " + filepath.Join(dir, "nope.jsonl") + ": no such file or directory"},
		{"a directory", dir, nil, "reading " + dir + ": read " + dir + ": is a directory"},
		{"not json", "-", append(append([]byte{}, lines[0]...), "hello\n"...), "standard input:2: invalid JSON at byte 0: unexpected character 'h'"},
		{"empty line", "-", append(append([]byte{}, lines[0]...), '\n'), "standard input:2: empty line"},
		{"no event_hash", "-", []byte(`{"seq":1}` + "\n"), "standard input:1: no event_hash member"},
		{"line too long", "-", append(append([]byte{}, lines[0]...), bytes.Repeat([]byte("x"), MaxLine+1)...), "standard input:2: line longer than 1 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, err := runJSONL(t, tt.file, tt.in)
			if code != 3 || out != "" || err == nil || err.Error() != tt.wantErr {
				t.Errorf("exit %d, stdout %q, error %v; want exit 3, no output, %q", code, out, err, tt.wantErr)
			}
		})
	}

	// A line of exactly MaxLine bytes is read (and then refused as JSON).
	exact := append(bytes.Repeat([]byte(" "), MaxLine-len(bytes.TrimSpace(lines[0]))), bytes.TrimSpace(lines[0])...)
	if code, _, err := runJSONL(t, "-", exact); code != 0 {
		t.Errorf("a line of exactly 1 MiB: exit %d, %v", code, err)
	}
}
