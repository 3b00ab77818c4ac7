package govkit_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/govkit/govkit/internal/llmfake"
)

// The scripted LLM server for gate serve's scripts (issue 18): the one
// fake the issue allows, since no model runs on this machine.

// llmServers are the scripts' running llmfake servers.
var llmServers = struct {
	sync.Mutex
	m map[*testscript.TestScript]*llmfake.Server
}{m: map[*testscript.TestScript]*llmfake.Server{}}

// llmfake SCRIPT: serve SCRIPT (internal/llmfake's JSON Lines steps) on
// 127.0.0.1 for the rest of the script, set $LLM_URL to its base URL
// (with /v1), and append every request body it receives, as it arrives,
// to $WORK/llm-requests.jsonl as one line of JSON.
//
// llmfake aborted N [TIMEOUT]: wait (10s by default) until the server has
// counted N requests abandoned by their client while a hang or delay
// step held them (with !, require that it has not).
func cmdLlmfake(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) >= 2 && args[0] == "aborted" {
		llmfakeAborted(ts, neg, args[1:])
		return
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: llmfake SCRIPT | llmfake aborted N [TIMEOUT]")
	}
	steps, err := llmfake.Load(strings.NewReader(ts.ReadFile(args[0])))
	ts.Check(err)
	llmServers.Lock()
	defer llmServers.Unlock()
	if llmServers.m[ts] != nil {
		ts.Fatalf("llmfake: a server already runs for this script")
	}
	rec, err := os.OpenFile(filepath.Join(ts.Getenv("WORK"), "llm-requests.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	ts.Check(err)
	srv, err := llmfake.Listen(steps, llmfake.WithRecorder(rec))
	if err != nil {
		rec.Close()
		ts.Fatalf("%v", err)
	}
	llmServers.m[ts] = srv
	ts.Setenv("LLM_URL", srv.URL)
	ts.Defer(func() {
		srv.Close()
		rec.Close()
		llmServers.Lock()
		delete(llmServers.m, ts)
		llmServers.Unlock()
	})
}

func llmfakeAborted(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) > 2 {
		ts.Fatalf("usage: llmfake aborted N [TIMEOUT]")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 {
		ts.Fatalf("llmfake aborted: bad count %q", args[0])
	}
	timeout := 10 * time.Second
	if len(args) == 2 {
		if timeout, err = time.ParseDuration(args[1]); err != nil {
			ts.Fatalf("llmfake aborted: bad timeout %q", args[1])
		}
	}
	llmServers.Lock()
	srv := llmServers.m[ts]
	llmServers.Unlock()
	if srv == nil {
		ts.Check(errors.New("llmfake aborted: no llmfake server runs: start one with llmfake SCRIPT"))
	}
	reached := srv.WaitAborted(n, timeout)
	switch {
	case reached && neg:
		ts.Fatalf("llmfake: %d requests abandoned, want fewer than %d", srv.Aborted(), n)
	case !reached && !neg:
		ts.Fatalf("llmfake: %d requests abandoned after %v, want %d", srv.Aborted(), timeout, n)
	}
}

// pgroup alive|gone FILE [TIMEOUT]: wait (10s by default) until FILE holds
// a process id and the process group it leads has a process in it
// (alive), or until that group has no process left (gone). A tool's
// command writes its shell's $$, its process group, to FILE, so a script
// can see that a cancel or a restart left nothing of it running.
func cmdPgroup(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 || (args[0] != "alive" && args[0] != "gone") {
		ts.Fatalf("usage: pgroup alive|gone FILE [TIMEOUT]")
	}
	timeout := 10 * time.Second
	if len(args) == 3 {
		var err error
		if timeout, err = time.ParseDuration(args[2]); err != nil {
			ts.Fatalf("pgroup: bad timeout %q", args[2])
		}
	}
	want := args[0] == "alive"
	deadline := time.Now().Add(timeout)
	for {
		alive := false
		if b, err := os.ReadFile(ts.MkAbs(args[1])); err == nil {
			if pgid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pgid > 1 {
				alive = groupAlive(pgid)
			}
		} else if !want {
			ts.Fatalf("pgroup: %v", err)
		}
		if alive == want {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("pgroup: the process group in %s is not %s after %v", args[1], args[0], timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupAlive reports whether a process other than a zombie is in process
// group pgid: a killed orphan stays a zombie until its reaper gets to it
// (in a container, maybe never), and kill(-pgid, 0) still finds those.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces and parens.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}
