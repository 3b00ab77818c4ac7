package convstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKill9 saves from a child process, kills it with SIGKILL while it
// saves, and checks that the reopened store holds the conversation at (at
// least) the state of the last Save that returned, with every message up to
// it (REQ-BED-007, B-07a/B-07b: nothing whose persist returned is lost).
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	const want = 200 // Saves acknowledged before the kill
	path := filepath.Join(t.TempDir(), "conversations.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSaveChild$")
	cmd.Env = append(os.Environ(), "GOVKIT_CONVSTORE_CHILD_DB="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked int64
	lines := bufio.NewScanner(stdout)
	for acked < want && lines.Scan() {
		if n, ok := strings.CutPrefix(lines.Text(), "saved "); ok {
			acked, _ = strconv.ParseInt(n, 10, 64)
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	io.Copy(io.Discard, stdout)
	cmd.Wait()
	if acked < want {
		t.Fatalf("the child acknowledged only %d Saves", acked)
	}

	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Get(ctx, "c-kill")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := s.Messages(ctx, "c-kill", 0, MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	// Save n wrote messages 2n-1 and 2n and the snapshot naming 2n; a
	// Save after the last acknowledged one may have committed too.
	last := int64(len(ms))
	if last < 2*acked || last%2 != 0 {
		t.Fatalf("%d messages after kill -9, but %d Saves (%d messages) were acknowledged", last, acked, 2*acked)
	}
	for i, m := range ms {
		if m.Seq != int64(i+1) || string(m.Body) != string(msg("c-kill", m.Seq, m.Role, "x").Body) {
			t.Fatalf("message %d: seq %d, body %s", i, m.Seq, m.Body)
		}
	}
	if string(c.Snapshot) != string(snapshot("c-kill", "tool_executing", last)) {
		t.Errorf("snapshot %s, want the one saved with message %d", c.Snapshot, last)
	}
	t.Logf("acknowledged %d Saves, found %d messages", acked, last)
}

// TestSaveChild is TestKill9's child: it creates a conversation and saves
// it with two messages at a time, printing the count of each Save that
// returned, until it is killed.
func TestSaveChild(t *testing.T) {
	path := os.Getenv("GOVKIT_CONVSTORE_CHILD_DB")
	if path == "" {
		t.Skip("the child of TestKill9")
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := conv("c-kill", 0)
	if err := s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.State = "tool_executing"
	deadline := time.Now().Add(time.Minute)
	for n := int64(1); time.Now().Before(deadline); n++ {
		c.Snapshot = snapshot("c-kill", "tool_executing", 2*n)
		if err := s.Save(ctx, c, []Message{msg("c-kill", 2*n-1, "user", "x"), msg("c-kill", 2*n, "assistant", "x")}); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("saved %d\n", n)
	}
}
