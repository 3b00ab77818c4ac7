package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// measureGate measures `gate hook --agent claude` the way Claude Code runs
// it, one process per event, on a session whose state file holds about
// `resources` files (a Glob listed them, then reads of each one in turn:
// the pre-tool and post-tool events of a read, both timed).
func measureGate(bin string, resources, warmup, runs int) ([]time.Duration, int, error) {
	dir, err := os.MkdirTemp("", "hookbench-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	repo := filepath.Join(dir, "repo")
	var files []string
	for i := 0; i < resources; i++ {
		files = append(files, filepath.Join(repo, fmt.Sprintf("pkg%02d", i%20), fmt.Sprintf("file%03d.go", i)))
	}
	if err := os.MkdirAll(repo, 0o700); err != nil {
		return nil, 0, err
	}
	argv := []string{"hook", "--agent", "claude", "--state-dir", filepath.Join(dir, "state"), "--receipt-key", filepath.Join(dir, "key", "key.bin")}
	send := func(ev map[string]any) (time.Duration, error) {
		ev["session_id"], ev["cwd"], ev["transcript_path"] = "bench", repo, ""
		b, _ := json.Marshal(ev)
		cmd := exec.Command(bin, argv...)
		cmd.Stdin = bytes.NewReader(b)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		elapsed := time.Since(start)
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 2 {
			return 0, fmt.Errorf("the hook refused %v: %s", ev["hook_event_name"], out.String())
		}
		return elapsed, err
	}
	if _, err := send(map[string]any{"hook_event_name": "SessionStart", "source": "startup"}); err != nil {
		return nil, 0, err
	}
	glob := map[string]any{"tool_name": "Glob", "tool_input": map[string]any{"pattern": "**/*.go"}, "tool_use_id": "g"}
	glob["hook_event_name"] = "PreToolUse"
	if _, err := send(glob); err != nil {
		return nil, 0, err
	}
	glob["hook_event_name"], glob["tool_response"] = "PostToolUse", map[string]any{"filenames": files, "numFiles": len(files)}
	if _, err := send(glob); err != nil {
		return nil, 0, err
	}
	times := make([]time.Duration, 0, runs)
	for i := 0; len(times) < runs; i++ {
		f := files[i%len(files)]
		id := fmt.Sprintf("r%d", i)
		input := map[string]any{"file_path": f}
		pre := map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": input, "tool_use_id": id}
		post := map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": input, "tool_use_id": id,
			"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": f, "content": "package x\n", "numLines": 1}}}
		for _, ev := range []map[string]any{pre, post} {
			d, err := send(ev)
			if err != nil {
				return nil, 0, err
			}
			if i >= warmup && len(times) < runs {
				times = append(times, d)
			}
		}
	}
	st, err := os.ReadDir(filepath.Join(dir, "state"))
	size := 0
	if err == nil {
		for _, e := range st {
			if fi, err := e.Info(); err == nil && fi.Size() > int64(size) {
				size = int(fi.Size())
			}
		}
	}
	return times, size, nil
}
