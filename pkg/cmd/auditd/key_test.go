package auditd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
)

func runAuditd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	streams, _, out, errOut := cli.Test()
	code = cli.Main("auditd", NewCmdAuditd(streams, nil), streams, args)
	return code, out.String(), errOut.String()
}

// key create writes the private key 0600, never over a file, and prints
// the verifier key and nothing else.
func TestKeyCreate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ckpt.key")
	code, stdout, stderr := runAuditd(t, "key", "create", "--out", out, "--name", "audit.example.com/prod")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	data, _ := os.ReadFile(out)
	vkey, err := checkpoint.VerifierKey(string(data))
	if err != nil || stdout != vkey+"\n" || !strings.HasPrefix(vkey, "audit.example.com/prod+") {
		t.Fatalf("stdout %q, verifier key of the file %q, %v", stdout, vkey, err)
	}
	if strings.Contains(stdout, "PRIVATE") {
		t.Fatal("the private key was printed")
	}

	code, stdout, stderr = runAuditd(t, "key", "create", "--out", out)
	if code != 3 || stdout != "" || !strings.Contains(stderr, "never overwrites") {
		t.Fatalf("over an existing file: exit %d, %q, %q", code, stdout, stderr)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, data) {
		t.Fatal("the key file changed")
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"key", "create"}, "--out is required"},
		{[]string{"key", "create", "--out", out + "2", "--name", "a b"}, "space or '+'"},
		{[]string{"key", "create", "--out", out + "2", "--name", "a+b"}, "space or '+'"},
		{[]string{"--checkpoint-log", "x.log"}, "need --checkpoint-key"},
		{[]string{"--checkpoint-key", out, "--checkpoint-every", "0"}, "--checkpoint-every 0"},
		{[]string{"--checkpoint-key", out, "--checkpoint-interval", "1ms"}, "--checkpoint-interval"},
		{[]string{"--checkpoint-key", out, "--checkpoint-origin", " x"}, "--checkpoint-origin"},
	} {
		code, _, stderr := runAuditd(t, tc.args...)
		if code != 3 || !strings.Contains(stderr, tc.says) {
			t.Errorf("%q: exit %d, stderr %q; want 3 saying %q", tc.args, code, stderr, tc.says)
		}
	}
	if _, err := os.Stat(out + "2"); err == nil {
		t.Error("a refused key create wrote a file")
	}
}

// auditd --checkpoint-key with a verifier key (not the private one) is
// refused before it touches the database, without echoing the key.
func TestCheckpointKeyRefused(t *testing.T) {
	dir := t.TempDir()
	pub := filepath.Join(dir, "ckpt.pub")
	code, stdout, _ := runAuditd(t, "key", "create", "--out", filepath.Join(dir, "ckpt.key"), "--name", "n")
	if code != 0 {
		t.Fatal("key create failed")
	}
	os.WriteFile(pub, []byte(stdout), 0o600)
	db := filepath.Join(dir, "audit.db")
	code, _, stderr := runAuditd(t, "--addr", "127.0.0.1:0", "--db", db, "--checkpoint-key", pub)
	if code != 3 || !strings.Contains(stderr, "is not a signing key") || strings.Contains(stderr, strings.TrimSpace(stdout)) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the database was created")
	}
}

// The daemon with --checkpoint-key and --checkpoint-log: checkpoints in the
// file, the last at shutdown, all signed by the key create made.
func TestServeCheckpoints(t *testing.T) {
	dir := t.TempDir()
	keyFile, logFile, db := filepath.Join(dir, "ckpt.key"), filepath.Join(dir, "ckpt.log"), filepath.Join(dir, "audit.db")
	code, vkey, _ := runAuditd(t, "key", "create", "--out", keyFile, "--name", "test/log")
	if code != 0 {
		t.Fatal("key create failed")
	}
	streams, _, _, _ := cli.Test()
	var errOut lockedBuffer
	streams.ErrOut = &errOut
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveRun(&ServeOptions{IO: streams, Addr: "127.0.0.1:0", DB: db, Context: ctx,
			CheckpointKey: keyFile, CheckpointLog: logFile, CheckpointEvery: 3, CheckpointInterval: time.Hour})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(errOut.String(), "auditd: listening on 127.0.0.1:") {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line: %q", errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(errOut.String(), "signing checkpoints every 3 events or 1h0m0s with key "+strings.TrimSpace(vkey)+"; appending them to "+logFile) {
		t.Errorf("stderr: %s", errOut.String())
	}
	addr, _, _ := strings.Cut(errOut.String()[strings.LastIndex(errOut.String(), "listening on ")+len("listening on "):], "\n")
	c, err := client.New("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		if _, err := c.Append(ctx, audit.Event{EventType: audit.TypeToolExecution, Agent: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := checkpoint.SplitNotes(data)
	if err != nil || len(notes) == 0 {
		t.Fatalf("checkpoint log: %d notes, %v", len(notes), err)
	}
	known, _ := checkpoint.Verifiers(vkey)
	last, err := checkpoint.Open(notes[len(notes)-1], known)
	if err != nil || last.Size != 7 || last.Origin != "test/log" {
		t.Fatalf("last checkpoint %+v, %v; want 7 events of test/log", last, err)
	}
}
