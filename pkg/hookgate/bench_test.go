package hookgate

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/govkit/govkit/pkg/gitconfig"
	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/sessionstore"
)

// BenchmarkHandleRead is one Claude Code Read (pre-tool, then post-tool
// event) in process, on a session whose state file holds 500 listed files:
// the state file read and locked, the session restored, the event applied,
// the snapshot saved (fsync included). Whole-process figures:
// internal/hookbench -gate.
func BenchmarkHandleRead(b *testing.B) {
	dir := b.TempDir()
	repo := filepath.Join(dir, "repo")
	store, err := sessionstore.Open(filepath.Join(dir, "state"), sessionstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	g := &Gate{Agent: "claude", Dialect: hook.Dialects["claude"], Store: store, Policy: hook.Policy{OnWrite: hook.Allow, OnUnbounded: hook.Deny},
		Session: session.Options{ReceiptKey: []byte("0123456789abcdef0123456789abcdef")}, Classify: gitconfig.Classify}
	send := func(ev map[string]any) {
		ev["session_id"], ev["cwd"] = "bench", repo
		raw, _ := json.Marshal(ev)
		if ans := g.Handle(context.Background(), raw); ans.Exit != 0 {
			b.Fatalf("%v: %s", ev["hook_event_name"], ans.Stdout)
		}
	}
	var files []string
	for i := 0; i < 500; i++ {
		files = append(files, filepath.Join(repo, fmt.Sprintf("pkg%02d/file%03d.go", i%20, i)))
	}
	send(map[string]any{"hook_event_name": "SessionStart", "source": "startup"})
	send(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Glob", "tool_input": map[string]any{"pattern": "**"}, "tool_use_id": "g"})
	send(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Glob", "tool_input": map[string]any{"pattern": "**"}, "tool_use_id": "g",
		"tool_response": map[string]any{"filenames": files}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := files[i%len(files)]
		id := fmt.Sprint("r", i)
		in := map[string]any{"file_path": f}
		send(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": in, "tool_use_id": id})
		send(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": in, "tool_use_id": id,
			"tool_response": map[string]any{"type": "text", "file": map[string]any{"content": "package x\n"}}})
	}
}
