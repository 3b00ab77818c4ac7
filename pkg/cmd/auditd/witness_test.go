package auditd

import (
	"context"
	"database/sql"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	_ "modernc.org/sqlite"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/internal/notekeytest"
	"github.com/govkit/govkit/pkg/audit"
	daemon "github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
)

const witnessOrigin = "audit.test/log"

// signedLog is a real auditd (internal/auditdtest, a SQLite file) that
// signs a checkpoint every 5 events and at shutdown with *signer, read at
// every start.
type signedLog struct {
	*auditdtest.Daemon
	t      *testing.T
	signer *note.Signer
}

func startSignedLog(t *testing.T, s note.Signer) *signedLog {
	t.Helper()
	l := &signedLog{t: t, signer: &s}
	l.Daemon = auditdtest.Start(t, auditdtest.Options{Config: func(c *daemon.Config) {
		c.Checkpoints = &daemon.CheckpointConfig{Signer: *l.signer, Every: 5, Interval: time.Hour}
	}})
	return l
}

func (l *signedLog) client() *client.Client {
	c, err := client.New(l.URL)
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(c.CloseIdleConnections)
	return c
}

// post appends n events of agent and waits for the checkpoint of size want.
func (l *signedLog) post(agent string, n int, want int64) {
	l.t.Helper()
	c := l.client()
	for i := range n {
		ev := audit.Event{EventType: audit.TypeToolExecution, Agent: agent, ActionClass: audit.ActionRead,
			Tool: &audit.Tool{Name: "t", RawCommand: agent + " " + string(rune('a'+i))}}
		if _, err := c.Append(context.Background(), ev); err != nil {
			l.t.Fatal(err)
		}
	}
	l.waitCheckpoint(want)
}

func (l *signedLog) waitCheckpoint(want int64) {
	l.t.Helper()
	c := l.client()
	for deadline := time.Now().Add(20 * time.Second); ; {
		msg, err := c.Checkpoint(context.Background())
		if err == nil {
			text, _, _ := strings.Cut(string(msg), "\n\n")
			if cp, err := checkpoint.Parse([]byte(text + "\n")); err == nil && cp.Size == want {
				return
			}
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("no checkpoint of size %d: %v", want, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restart stops auditd, which signs its last checkpoint, and starts it
// again on db ("" the same file).
func (l *signedLog) restart(db string) {
	l.t.Helper()
	l.Stop()
	if db != "" {
		l.DB = db
	}
	l.Start()
}

// copyDB copies the stopped log's database file to a new file.
func (l *signedLog) copyDB() string {
	l.t.Helper()
	dst := filepath.Join(l.t.TempDir(), "fork.db")
	data, err := os.ReadFile(l.DB)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		l.t.Fatal(err)
	}
	if wal, err := os.ReadFile(l.DB + "-wal"); err == nil {
		if err := os.WriteFile(dst+"-wal", wal, 0o600); err != nil {
			l.t.Fatal(err)
		}
	}
	return dst
}

// noteKey is a key named name from seed: its signer, its signing key
// written to a file, and its verifier key.
func noteKey(t *testing.T, name string, seed byte) (note.Signer, string, string) {
	t.Helper()
	skey, vkey := notekeytest.Generate(t, name, seed)
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "signer.key")
	if err := os.WriteFile(file, []byte(skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return s, file, vkey
}

// runWitness runs auditd witness --once against url with the state file.
func runWitness(t *testing.T, url, key, logKey, state string) (int, string) {
	t.Helper()
	code, stdout, stderr := runAuditd(t, "witness", "--once", "--log", url, "--key", key, "--log-key", logKey, "--state", state)
	if stdout != "" {
		t.Errorf("stdout: %q", stdout)
	}
	return code, stderr
}

// The witness cosigns a log's checkpoints as it grows: the first as it
// is, each later one after its consistency proof; the cosigned note opens
// with the log's key and the witness's, and carries both signatures.
func TestWitnessCosigns(t *testing.T) {
	logS, _, logV := noteKey(t, witnessOrigin, 1)
	_, witKey, witV := noteKey(t, "witness.test", 3)
	l := startSignedLog(t, logS)
	l.post("a", 5, 5)
	state := filepath.Join(t.TempDir(), "witness.note")

	code, stderr := runWitness(t, l.URL, witKey, logV, state)
	if code != 0 || !strings.Contains(stderr, "auditd witness: cosigned audit.test/log at size 5") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	l.post("a", 7, 10)
	code, stderr = runWitness(t, l.URL, witKey, logV, state)
	if code != 0 || !strings.Contains(stderr, "last cosigned: audit.test/log at size 5") || !strings.Contains(stderr, "cosigned audit.test/log at size 10") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cosigned, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	both, err := checkpoint.Verifiers(logV, witV)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(cosigned, both)
	if err != nil || len(n.Sigs) != 2 {
		t.Fatalf("cosigned note: %v, %d signatures\n%s", err, len(n.Sigs), cosigned)
	}
	for _, keys := range [][]string{{logV, witV}, {witV}, {logV}} {
		vs, _ := checkpoint.Verifiers(keys...)
		if cp, err := checkpoint.Open(cosigned, vs); err != nil || cp.Size != 10 || cp.Origin != witnessOrigin {
			t.Errorf("Open with %d keys: %+v %v", len(keys), cp, err)
		}
	}
	// Nothing new: nothing to do, the state unchanged.
	code, stderr = runWitness(t, l.URL, witKey, logV, state)
	if again, _ := os.ReadFile(state); code != 0 || string(again) != string(cosigned) || strings.Contains(stderr, "cosigned audit") {
		t.Errorf("again: exit %d\n%s", code, stderr)
	}
}

// A forked log: a copy of the database sharing its first 5 events goes
// on with other events, signed with the log's real key. The witness, which
// cosigned the original at 10, refuses it (exit 1, a log line, the state
// unchanged), as it refuses a truncated log and a checkpoint signed by
// another key; the original, grown, is cosigned again.
func TestWitnessRefusesFork(t *testing.T) {
	logS, _, logV := noteKey(t, witnessOrigin, 1)
	forger, _, _ := noteKey(t, witnessOrigin, 2)
	_, witKey, _ := noteKey(t, "witness.test", 3)
	for _, c := range []struct {
		name   string
		tamper func(l *signedLog, prefix string)
		says   string
	}{
		{"fork at the same size", func(l *signedLog, prefix string) {
			l.restart(prefix)
			l.post("mallory", 5, 10)
		}, "refused to cosign: the log forked: size 10 has root"},
		{"fork grown", func(l *signedLog, prefix string) {
			l.restart(prefix)
			l.post("mallory", 9, 10)
			l.restart("")
			l.waitCheckpoint(14)
		}, "refused to cosign: the log forked: size 14 (root"},
		{"truncated", func(l *signedLog, _ string) {
			l.Stop()
			raw := openRaw(t, l.DB)
			if _, err := raw.Exec(`DELETE FROM events WHERE seq > 7; DELETE FROM checkpoints WHERE size > 7`); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			l.Start()
		}, "refused to cosign: the log went back: size 5, smaller than the trusted size 10"},
		{"forged", func(l *signedLog, _ string) {
			*l.signer = forger
			l.restart("")
			l.post("a", 3, 10)
			l.restart("")
			l.waitCheckpoint(13)
		}, "refused to cosign: checkpoint not signed by a known key (signed by audit.test/log+"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := startSignedLog(t, logS)
			l.post("a", 5, 5)
			l.Stop()
			prefix := l.copyDB()
			l.Start()
			l.post("a", 5, 10)
			state := filepath.Join(t.TempDir(), "witness.note")
			if code, stderr := runWitness(t, l.URL, witKey, logV, state); code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			before, _ := os.ReadFile(state)
			original := l.DB

			c.tamper(l, prefix)
			code, stderr := runWitness(t, l.URL, witKey, logV, state)
			if code != 1 || !strings.Contains(stderr, "auditd witness: "+c.says) {
				t.Fatalf("exit %d, want 1 and %q\n%s", code, c.says, stderr)
			}
			if after, _ := os.ReadFile(state); string(after) != string(before) {
				t.Errorf("state changed after a refusal")
			}
			if c.name == "fork grown" {
				// The genuine log goes on and is cosigned again.
				*l.signer = logS
				l.restart(original)
				l.post("a", 5, 15)
				if code, stderr := runWitness(t, l.URL, witKey, logV, state); code != 0 || !strings.Contains(stderr, "cosigned audit.test/log at size 15") {
					t.Errorf("the genuine log: exit %d\n%s", code, stderr)
				}
			}
		})
	}
}

// The witness serves its last cosigned note at GET /checkpoint, and
// refuses a state file it did not sign.
func TestWitnessServesAndState(t *testing.T) {
	logS, _, logV := noteKey(t, witnessOrigin, 1)
	_, witKey, witV := noteKey(t, "witness.test", 3)
	l := startSignedLog(t, logS)
	l.post("a", 5, 5)
	state := filepath.Join(t.TempDir(), "witness.note")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	streams, _, _, errOut := cli.Test()
	done := make(chan int, 1)
	go func() {
		done <- cli.Main("auditd", newCmdWitness(streams, func(o *WitnessOptions) error {
			o.Context, o.Listener = ctx, ln
			return witnessRun(o)
		}), streams, []string{"--log", l.URL, "--key", witKey, "--log-key", logV, "--state", state, "--interval", "100ms"})
	}()
	url := "http://" + ln.Addr().String() + "/checkpoint"
	var body []byte
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err := http.Get(url)
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /checkpoint: %v\n%s", err, errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	vs, _ := checkpoint.Verifiers(witV)
	if cp, err := checkpoint.Open(body, vs); err != nil || cp.Size != 5 {
		t.Fatalf("served note %q: %+v %v", body, cp, err)
	}

	// A note the log signed, but not the witness, as its state: refused.
	logNote, _ := os.ReadFile(state)
	other := filepath.Join(t.TempDir(), "other.note")
	text, _, _ := strings.Cut(string(logNote), "\n\n")
	cp, _ := checkpoint.Parse([]byte(text + "\n"))
	msg, _ := checkpoint.Sign(cp, logS)
	os.WriteFile(other, msg, 0o600)
	code, stderr := runWitness(t, l.URL, witKey, logV, other)
	if code != 3 || !strings.Contains(stderr, "state file "+other+": checkpoint not signed by a known key") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

func TestWitnessFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"witness"}, "--log is required"},
		{[]string{"witness", "--log", "http://127.0.0.1:1"}, "--key is required"},
		{[]string{"witness", "--log", "http://127.0.0.1:1", "--key", "k"}, "--log-key is required"},
		{[]string{"witness", "--log", "http://127.0.0.1:1", "--key", "k", "--log-key", "v", "--interval", "1ms"}, "--interval 1ms is shorter than 100ms"},
		{[]string{"witness", "--log", "http://127.0.0.1:1", "--key", "k", "--log-key", "v", "--listen", "0.0.0.0:1299"}, "--listen: "},
		{[]string{"witness", "--log", "http://127.0.0.1:1", "--key", "/nonexistent", "--log-key", "v"}, "no such file"},
	} {
		code, _, stderr := runAuditd(t, c.args...)
		if code != 3 || !strings.Contains(stderr, c.says) {
			t.Errorf("%v: exit %d\n%s", c.args, code, stderr)
		}
	}
}

// openRaw opens a stopped auditd's SQLite file as an operator with sqlite3
// would.
func openRaw(t *testing.T, db string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
