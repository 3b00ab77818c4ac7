package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/llmfake"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// listener is a TCP listener on loopback that counts who connected.
type listener struct {
	ln       net.Listener
	accepted chan string // remote addresses, in accept order
}

func listen(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{ln: ln, accepted: make(chan string, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return l
}

func (l *listener) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

// connections counts the connections accepted so far, exactly: the test
// connects last itself and waits for that connection, which the kernel
// hands out after every earlier one.
func (l *listener) connections(t *testing.T) int {
	t.Helper()
	c, err := net.Dial("tcp", l.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mine := c.LocalAddr().String()
	n := 0
	for {
		if addr := <-l.accepted; addr == mine {
			return n
		}
		n++
	}
}

// bashCall is a bash tool call.
func bashCall(id, command string) llmfake.FakeCall {
	return llmfake.FakeCall{ID: id, Name: "bash", Args: args(map[string]string{"command": command})}
}

// results maps a turn's tool results by call id.
func results(msgs []conversation.Message) map[string]conversation.Message {
	out := map[string]conversation.Message{}
	for _, m := range msgs {
		if m.Role == conversation.RoleTool {
			out[m.CallID] = m
		}
	}
	return out
}

// ranAndFailed asserts a bash result came from running the command and
// the kernel refusing it, not from a gate refusing it before it ran.
func ranAndFailed(t *testing.T, what string, m conversation.Message) {
	t.Helper()
	if !m.IsError || m.Synthetic || strings.Contains(m.Text, `"blocked":true`) || !strings.Contains(m.Text, "Permission denied") {
		t.Errorf("%s: want the command run and failing: %+v", what, m)
	}
}

const readme = "hello from the working directory\n"

func workdirWithReadme(t *testing.T, r *rig) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "readme.txt"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
}

// In a restricted conversation (real Landlock) bash reads the working
// directory but cannot write in it nor connect to a listener on
// loopback; read_file works; patch is refused with an error suggesting
// request_mode_upgrade (B-14b, B-17c).
func TestRestrictedBash(t *testing.T) {
	needLandlock(t)
	l := listen(t)
	r := newRig(t,
		llmfake.Step{ToolCalls: []llmfake.FakeCall{
			bashCall("cat", "cat readme.txt"),
			{ID: "read", Name: "read_file", Args: args(map[string]string{"path": "readme.txt"})},
			bashCall("write", "echo x > written.txt"),
			bashCall("net", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", l.port())),
			{ID: "patch", Name: "patch", Args: args(map[string]string{"path": "patched.txt", "old_text": "", "new_text": "x"})}}},
		llmfake.Step{Text: "read-only indeed"})
	workdirWithReadme(t, r)
	c := r.create("")
	if c.Mode != conversation.Restricted {
		t.Fatalf("a new conversation where Landlock works: %+v", c)
	}
	if err := r.send(c.ID, "try everything"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	res := results(v.Messages)
	if m := res["cat"]; m.IsError || m.Text != readme {
		t.Errorf("cat in the sandbox: %+v", m)
	}
	if m := res["read"]; m.IsError || !strings.Contains(m.Text, "hello from the working directory") {
		t.Errorf("read_file: %+v", m)
	}
	t.Logf("restricted write: %s\nrestricted connect: %s", res["write"].Text, res["net"].Text)
	ranAndFailed(t, "writing in the working directory", res["write"])
	ranAndFailed(t, "connecting to loopback", res["net"])
	if strings.Contains(res["net"].Text, "connected") {
		t.Errorf("the sandbox connected: %+v", res["net"])
	}
	if m := res["patch"]; !m.IsError || !strings.Contains(m.Text, "request_mode_upgrade") || !strings.Contains(m.Text, "restricted mode") {
		t.Errorf("patch: %+v", m)
	}
	for _, f := range []string{"written.txt", "patched.txt"} {
		if fileExists(filepath.Join(r.dir, f)) {
			t.Errorf("%s was written in restricted mode", f)
		}
	}
	if n := l.connections(t); n != 0 {
		t.Errorf("the listener saw %d connections from restricted bash", n)
	}
}

// The same commands work unrestricted (after an approved upgrade), which
// shows the sandbox is what stops them; a downgrade (immediate, no
// approval) makes the next turn's bash restricted again (B-16).
func TestDowngradeRestrictsBash(t *testing.T) {
	needLandlock(t)
	l := listen(t)
	connect := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", l.port())
	// A read between writes: the session gates want a write verified
	// before the next (seed 000's FSM).
	turn := func(n string) llmfake.Step {
		return llmfake.Step{ToolCalls: []llmfake.FakeCall{bashCall("cat"+n, "cat readme.txt"), bashCall("write"+n, "echo "+n+" > written"+n+".txt"),
			bashCall("look"+n, "ls"), bashCall("net"+n, connect)}}
	}
	r := newRig(t,
		llmfake.Step{ToolCalls: []llmfake.FakeCall{{ID: "up", Name: "request_mode_upgrade", Args: args(map[string]string{"reason": "write"})}}},
		turn("1"),
		llmfake.Step{Text: "all of it worked"},
		turn("2"),
		llmfake.Step{Text: "now read-only"})
	workdirWithReadme(t, r)
	c := r.create("")
	if err := r.send(c.ID, "upgrade, then write and connect"); err != nil {
		t.Fatal(err)
	}
	r.waitState(c.ID, conversation.AwaitingModeApproval)
	if err := r.post(serve.PathMode, c.ID, serve.ModeInput{Action: "approve"}); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	if v.Mode != conversation.Unrestricted {
		t.Fatalf("after the approval: %s", v.Mode)
	}
	res := results(v.Messages)
	for _, id := range []string{"cat1", "write1", "look1", "net1"} {
		if res[id].IsError {
			t.Errorf("unrestricted %s: %+v", id, res[id])
		}
	}
	if !fileExists(filepath.Join(r.dir, "written1.txt")) || !strings.Contains(res["net1"].Text, "connected") {
		t.Fatalf("unrestricted bash could not write or connect:\n%s", texts(v.Messages))
	}
	if n := l.connections(t); n != 1 {
		t.Fatalf("the listener saw %d connections from unrestricted bash, want 1", n)
	}

	var sv serve.StateView
	if err := r.c.Do(context.Background(), http.MethodPost, path(serve.PathMode, c.ID), serve.ModeInput{Action: "downgrade"}, &sv); err != nil {
		t.Fatal(err)
	}
	if sv.Mode != conversation.Restricted || sv.Generation != 3 || sv.State != conversation.Idle {
		t.Fatalf("after the downgrade: %+v", sv)
	}
	if err := r.send(c.ID, "restricted turn"); err != nil {
		t.Fatal(err)
	}
	v = r.waitState(c.ID, conversation.Idle)
	res = results(v.Messages)
	if m := res["cat2"]; m.IsError || m.Text != readme {
		t.Errorf("restricted cat: %+v", m)
	}
	ranAndFailed(t, "restricted write", res["write2"])
	ranAndFailed(t, "restricted connect", res["net2"])
	if fileExists(filepath.Join(r.dir, "written2.txt")) {
		t.Error("written2.txt was written after the downgrade")
	}
	if n := l.connections(t); n != 0 {
		t.Errorf("the listener saw %d connections after the downgrade", n)
	}
	if got := texts(v.Messages); !strings.Contains(got, "The user switched to restricted mode.") {
		t.Errorf("no mode notice:\n%s", got)
	}
	// The tools offered are the same, byte for byte, in every mode
	// (B-17b): restricted, unrestricted, restricted again.
	reqs := r.fake.Requests()
	var tools []string
	for _, i := range []int{0, 1, 3} {
		var w struct {
			Tools json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(reqs[i], &w); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, string(w.Tools))
	}
	if tools[0] == "" || tools[0] != tools[1] || tools[1] != tools[2] {
		t.Errorf("the tools changed with the mode:\n%s\n%s\n%s", tools[0], tools[1], tools[2])
	}
}
