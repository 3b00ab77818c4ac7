package govkit_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/govkit/govkit/internal/npmtest"
)

// Commands for gate mcp's scripts (issue 17): a real MCP server from the
// npm registry, and an MCP client that talks to a started gate mcp.

// npmbin VAR NAME@VERSION BIN: install the pinned npm package (once, into
// internal/npmtest's cache, with the machine's node and npm) and set VAR to
// the path of its program BIN. Without node and npm (and not root, so not
// installing them) the script is skipped with the reason.
func cmdNpmbin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: npmbin VAR NAME@VERSION BIN")
	}
	path, err := npmtest.Bin(args[1], args[2])
	if err != nil {
		var nf *npmtest.NotFoundError
		if errors.As(err, &nf) {
			ts.Value(scriptT{}).(testscript.T).Skip(err.Error())
		}
		ts.Fatalf("%v", err)
	}
	ts.Setenv(args[0], path)
}

// mcpEnv are the variables a script's MCP client passes to the program it
// starts: the script's own, never the test process's.
var mcpEnv = []string{"PATH", "HOME", "WORK", "TMPDIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME",
	"GOVKIT_RECEIPT_KEY", "GOVKIT_CONFIG", "GOVKIT_URL", "GOVKIT_TOKEN"}

// scriptEnv is the environment of a program a script's MCP client starts.
func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, name := range mcpEnv {
		if v := ts.Getenv(name); v != "" {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// mcpsession [-receipts FILE] REQUESTS -- PROG [ARGS...]: be an MCP client.
// Start PROG (gate mcp …), send each line of REQUESTS (JSON-RPC messages;
// blank lines and lines starting with # are skipped) and, after a request,
// wait for its response, as a client that awaits each call does. Every
// message received is printed on stdout as one line of JSON with sorted
// keys; PROG's stderr goes to stderr. Then close PROG's input and wait for
// it: it must exit 0 (with !, non-zero). -receipts appends each result's
// _meta["govkit/receipt"] to FILE, one per line, for gate receipt verify.
//
// A line "$ COMMAND" runs COMMAND with sh -c in $WORK between two requests
// (a person approving what the last answer asked for), with the script's
// variables and $MCP_LAST, the last message received; it must exit 0.
func cmdMcpsession(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: mcpsession [-receipts FILE] REQUESTS -- PROG [ARGS...]"
	var receipts string
	if len(args) > 1 && args[0] == "-receipts" {
		receipts, args = ts.MkAbs(args[1]), args[2:]
	}
	if len(args) < 3 || args[1] != "--" {
		ts.Fatalf("%s", usage)
	}
	requests := ts.ReadFile(args[0])
	cmd := exec.Command(args[2], args[3:]...)
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = scriptEnv(ts)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	ts.Check(err)
	stdout, err := cmd.StdoutPipe()
	ts.Check(err)
	ts.Check(cmd.Start())

	msgs := make(chan []byte)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			msgs <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	var rec bytes.Buffer
	var last []byte
	show := func(line []byte) (id string) {
		last = line
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			fmt.Fprintf(ts.Stdout(), "not json: %s\n", line)
			return ""
		}
		b, _ := json.Marshal(m) // sorted keys: stable lines to match
		fmt.Fprintf(ts.Stdout(), "%s\n", b)
		summarize(ts.Stdout(), m)
		if res, ok := m["result"].(map[string]any); ok {
			if meta, ok := res["_meta"].(map[string]any); ok && meta["govkit/receipt"] != nil {
				r, _ := json.Marshal(meta["govkit/receipt"])
				rec.Write(append(r, '\n'))
			}
		}
		if _, ok := m["method"]; ok {
			return "" // a request or notification of the server's
		}
		return fmt.Sprint(m["id"])
	}
	for _, line := range strings.Split(requests, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if sh, ok := strings.CutPrefix(line, "$ "); ok {
			c := exec.Command("sh", "-c", sh)
			c.Dir = ts.Getenv("WORK")
			c.Env = append(scriptEnv(ts), "MCP_LAST="+string(last))
			if out, err := c.CombinedOutput(); err != nil {
				ts.Fatalf("mcpsession: $ %s: %v\n%s", sh, err, out)
			} else {
				fmt.Fprintf(ts.Stdout(), "$ %s\n%s", sh, out)
			}
			continue
		}
		line = os.Expand(line, ts.Getenv) // ${WORK}/srv/a.txt
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			ts.Fatalf("mcpsession: %s: %v", line, err)
		}
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			ts.Fatalf("mcpsession: writing to %s: %v\nstderr:\n%s", args[2], err, stderr.String())
		}
		if req.ID == nil || req.Method == "" {
			continue
		}
		want := fmt.Sprint(req.ID)
		deadline := time.After(2 * time.Minute)
	wait:
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					break wait // the program ended: its exit status says why
				}
				if show(m) == want {
					break wait
				}
			case <-deadline:
				_ = cmd.Process.Kill()
				ts.Fatalf("mcpsession: no response to id %s in 2m\nstderr:\n%s", want, stderr.String())
			}
		}
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() {
		for m := range msgs {
			show(m)
		}
		done <- cmd.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		ts.Fatalf("mcpsession: %s did not exit within 1m of its input closing", args[2])
	}
	fmt.Fprint(ts.Stderr(), stderr.String())
	if receipts != "" {
		f, ferr := os.OpenFile(receipts, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		ts.Check(ferr)
		_, ferr = f.Write(rec.Bytes())
		ts.Check(ferr)
		ts.Check(f.Close())
	}
	switch {
	case err != nil && !neg:
		ts.Fatalf("mcpsession: %s: %v", args[2], err)
	case err == nil && neg:
		ts.Fatalf("mcpsession: %s exited 0 unexpectedly", args[2])
	}
}

// summarize prints, after a message, what a script asserts on, one fact per
// line starting with "> ": each listed tool's kind; a tool result as ok,
// error or blocked CODE, with its kind and receipt id; an error response.
func summarize(w io.Writer, m map[string]any) {
	id := fmt.Sprint(m["id"])
	if e, ok := m["error"].(map[string]any); ok {
		fmt.Fprintf(w, "> error %s %v %v\n", id, e["code"], e["message"])
		return
	}
	res, ok := m["result"].(map[string]any)
	if !ok {
		return
	}
	if tools, ok := res["tools"].([]any); ok {
		for _, t := range tools {
			t, _ := t.(map[string]any)
			meta, _ := t["_meta"].(map[string]any)
			fmt.Fprintf(w, "> tool %v kind=%v\n", t["name"], meta["govkit/kind"])
		}
		return
	}
	if _, ok := res["content"]; !ok {
		return
	}
	meta, _ := res["_meta"].(map[string]any)
	status := "ok"
	if res["isError"] == true {
		status = "error"
		if r, ok := meta["govkit/response"].(map[string]any); ok {
			e, _ := r["error"].(map[string]any)
			status = "failed"
			if e["blocked"] == true {
				status = "blocked"
			}
			status += fmt.Sprintf(" %v", e["code"])
		}
	}
	line := fmt.Sprintf("> call %s %s kind=%v", id, status, meta["govkit/kind"])
	if r, ok := meta["govkit/receipt"].(map[string]any); ok {
		line += fmt.Sprintf(" receipt=%v", r["receipt_id"])
	}
	fmt.Fprintln(w, line)
}
