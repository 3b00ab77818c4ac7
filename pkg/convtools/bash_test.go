package convtools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/sandbox"
	"github.com/govkit/govkit/pkg/session/response"
)

func TestMain(m *testing.M) {
	// Restricted commands re-execute this test binary as their sandbox
	// child (pkg/sandbox), which confines itself and execs bash.
	sandbox.MaybeChild()
	os.Exit(m.Run())
}

func bashCall(cwd, command string, restricted bool) Call {
	args, _ := json.Marshal(map[string]string{"command": command})
	return Call{ID: "c1", Name: Bash, Args: args, Cwd: cwd, Restricted: restricted, Session: "s1"}
}

// needIsolated skips a restricted test where the kernel cannot enforce the
// isolated level, saying why.
func needIsolated(t testing.TB) {
	t.Helper()
	if err := sandbox.Probe().Check(sandbox.Isolated); err != nil {
		t.Skipf("restricted bash needs the isolated sandbox: %v", err)
	}
}

// modes are the two ways bash runs without auditd.
var modes = []struct {
	name       string
	restricted bool
}{{"unrestricted", false}, {"restricted", true}}

// alive says whether pid still runs: a zombie is dead (it runs no code and
// holds nothing but its pid until its parent, here perhaps a PID 1 that
// does not reap, collects it).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// marked lists the live processes whose command line holds token.
func marked(token string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cl, []byte(token)) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// group is a bash call running the shell, a sleep and a sub-shell with a
// sleep of its own (the grandchild it backgrounds).
type group struct {
	pids   []int
	cancel context.CancelFunc
	done   chan Result
}

func startGroup(tb testing.TB, r *Runner, cwd string, restricted bool) group {
	tb.Helper()
	token := fmt.Sprintf("31.%06d", rand.IntN(1_000_000))
	command := fmt.Sprintf("sleep %s & bash -c 'sleep %s & wait' & wait", token, token)
	ctx, cancel := context.WithCancel(context.Background())
	g := group{cancel: cancel, done: make(chan Result, 1)}
	go func() { g.done <- r.Run(ctx, bashCall(cwd, command, restricted)) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The shell, sleep, the sub-shell and its sleep.
		if g.pids = marked(token); len(g.pids) == 4 {
			return g
		}
		if time.Now().After(deadline) {
			cancel()
			tb.Fatalf("the command's 4 processes did not start within 10s: %v", g.pids)
		}
		time.Sleep(time.Millisecond)
	}
}

// cancelToGone cancels and polls until every process of the group is dead.
func (g group) cancelToGone(tb testing.TB) time.Duration {
	began := time.Now()
	g.cancel()
	for {
		left := 0
		for _, pid := range g.pids {
			if alive(pid) {
				left++
			}
		}
		took := time.Since(began)
		if left == 0 {
			return took
		}
		if took > 5*time.Second {
			tb.Fatalf("%d of the group's processes %v still alive %s after the cancel", left, g.pids, took)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestCancelKillsProcessGroup is REQ-BED-005's "interrupts the running
// tool within 100 ms, terminates its spawned subprocesses" (B-05b): the
// shell, its sleep 30 and the grandchild it backgrounds are all gone. The
// assertion has a 1 s CI margin; the figure is logged, and
// BenchmarkCancelToGone measures it.
func TestCancelKillsProcessGroup(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.restricted {
				needIsolated(t)
			}
			r := &Runner{}
			g := startGroup(t, r, t.TempDir(), m.restricted)
			took := g.cancelToGone(t)
			t.Logf("%s: cancel to all %d processes gone: %s (B-05b asks ≤ 100ms)", m.name, len(g.pids), took)
			if took > time.Second {
				t.Errorf("the process group took %s to die after the cancel, want ≤ 100ms (1s CI margin)", took)
			}
			select {
			case res := <-g.done:
				if !res.Cancelled || res.OK || res.Code != response.ExecutionFailed {
					t.Errorf("result %+v, want cancelled", res)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return within 5s of the cancel")
			}
		})
	}
}

// BenchmarkCancelToGone is cancel → every process of bash's group dead
// (B-05b); the start-up of each group is not timed.
func BenchmarkCancelToGone(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			if m.restricted {
				needIsolated(b)
			}
			r, cwd := &Runner{}, b.TempDir()
			var total, worst time.Duration
			b.StopTimer()
			for range b.N {
				g := startGroup(b, r, cwd, m.restricted)
				b.StartTimer()
				took := g.cancelToGone(b)
				b.StopTimer()
				<-g.done
				total += took
				worst = max(worst, took)
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-to-gone/op")
			b.ReportMetric(float64(worst.Microseconds()), "µs-worst")
		})
	}
}

// TestCdDoesNotPersist is REQ-BED-010 (B-10): every call starts in the
// conversation's directory, whatever the previous one did.
func TestCdDoesNotPersist(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.restricted {
				needIsolated(t)
			}
			r, cwd := &Runner{}, t.TempDir()
			first := r.Run(context.Background(), bashCall(cwd, "cd /tmp && pwd", m.restricted))
			if !first.OK || strings.TrimSpace(first.Output) != "/tmp" {
				t.Fatalf("cd /tmp && pwd: %+v", first)
			}
			next := r.Run(context.Background(), bashCall(cwd, "pwd; echo $PWD", m.restricted))
			if want := cwd + "\n" + cwd + "\n"; next.Output != want {
				t.Errorf("the next call ran in %q, want %q", next.Output, want)
			}
		})
	}
}

// TestRestrictedBash is REQ-BED-014 (B-14b) with real Landlock: restricted
// bash cannot create a file in the working directory nor connect to a
// loopback listener, can write its own TMPDIR, and the result says what was
// enforced.
func TestRestrictedBash(t *testing.T) {
	needIsolated(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	// A local server on a unix socket, as gate serve's own API may be.
	sock := filepath.Join(t.TempDir(), "api.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	go func() {
		if c, err := ul.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "existing"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Runner{TempRoot: t.TempDir()}
	tests := []struct {
		name, command string
		ok            bool
		output        string // a part of the output
	}{
		{"create a file in cwd", "echo x > new.txt", false, "Permission denied"},
		{"truncate a file in cwd", ": > existing", false, "Permission denied"},
		{"remove a file in cwd", "rm existing", false, "Permission denied"},
		{"connect to loopback", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port), false, "Permission denied"},
		{"connect to a unix socket", `perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => shift) or die "connect: $!\n"; print "connected\n"' ` + sock, false, "connect: Operation not permitted"},
		{"read a file in cwd", "cat existing", true, "keep"},
		{"write its own TMPDIR", `echo scratch > "$TMPDIR/s" && cat "$TMPDIR/s"`, true, "scratch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := r.Run(context.Background(), bashCall(cwd, tt.command, true))
			t.Logf("%s → ok=%v exit=%d output=%q sandbox=%q", tt.command, res.OK, res.ExitCode, res.Output, res.Sandbox)
			if res.OK != tt.ok || !strings.Contains(res.Output, tt.output) {
				t.Errorf("ok=%v output %q; want ok=%v and %q", res.OK, res.Output, tt.ok, tt.output)
			}
			if !strings.Contains(res.Sandbox, "landlock abi") || !strings.Contains(res.Sandbox, "fs read-only") || !strings.Contains(res.Sandbox, "tcp") {
				t.Errorf("Sandbox = %q, want what was enforced (landlock, fs read-only, tcp denied)", res.Sandbox)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(cwd, "new.txt")); err == nil {
		t.Error("restricted bash created a file in the working directory")
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "existing")); string(b) != "keep\n" {
		t.Errorf("existing file now %q", b)
	}
	select {
	case <-accepted:
		t.Error("a listener accepted a connection from restricted bash")
	case <-time.After(100 * time.Millisecond):
	}
	if ents, _ := os.ReadDir(r.TempRoot); len(ents) != 0 {
		t.Errorf("the private temp dirs were left behind: %v", ents)
	}
}

// TestUnrestrictedBash: without auditd, unrestricted bash runs unconfined
// (B-14c) and says so.
func TestUnrestrictedBash(t *testing.T) {
	cwd := t.TempDir()
	r := &Runner{}
	res := r.Run(context.Background(), bashCall(cwd, "echo hello > f.txt && cat f.txt", false))
	if !res.OK || res.Output != "hello\n" || res.Sandbox != "off" || res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "f.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("f.txt = %q, %v", b, err)
	}
}

func TestBashResults(t *testing.T) {
	cwd := t.TempDir()
	tests := []struct {
		name      string
		runner    Runner
		command   string
		ok        bool
		exit      int
		output    string // the whole output, or with truncated its start
		truncated bool
		code      string
		err       string // a part of Error
		within    time.Duration
	}{
		{name: "exit code", command: "echo out; echo err >&2; exit 3", exit: 3, output: "out\nerr\n", code: response.ExecutionFailed, err: "exit code 3"},
		{name: "killed by a signal", command: "kill -9 $$", exit: 137, code: response.ExecutionFailed},
		{name: "bounded output", runner: Runner{MaxOutput: 1000}, command: "head -c 100000 /dev/zero | tr '\\0' a", ok: true,
			output: strings.Repeat("a", 1000) + "\n[output truncated: 1000 of 100000 bytes shown]", truncated: true},
		{name: "default bound", command: "head -c 200000 /dev/zero | tr '\\0' b", ok: true,
			output: strings.Repeat("b", DefaultMaxOutput) + "\n[output truncated: 65536 of 200000 bytes shown]", truncated: true},
		{name: "timeout kills the group", runner: Runner{Timeout: 200 * time.Millisecond}, command: "sleep 30", exit: 137,
			code: response.ExecutionFailed, err: "timeout", within: 5 * time.Second},
		{name: "a background job does not hold the call", command: "sleep 30 & echo started", ok: true, output: "started\n", within: 5 * time.Second},
		{name: "stdin is empty", command: "cat", ok: true, output: "", within: 5 * time.Second},
		{name: "no govkit variables", command: "env | grep -c '^GOVKIT_' || true", ok: true, output: "0\n"},
	}
	t.Setenv("GOVKIT_TOKEN", "secret")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			began := time.Now()
			res := tt.runner.Run(context.Background(), bashCall(cwd, tt.command, false))
			if tt.within > 0 && time.Since(began) > tt.within {
				t.Errorf("took %s", time.Since(began))
			}
			if res.OK != tt.ok || res.ExitCode != tt.exit || res.Truncated != tt.truncated || res.Code != tt.code || !strings.Contains(res.Error, tt.err) {
				t.Errorf("result %+v", res)
			}
			if tt.output != "" || tt.ok {
				if res.Output != tt.output {
					t.Errorf("output %q (%d bytes), want %q", res.Output[:min(len(res.Output), 200)], len(res.Output), tt.output[:min(len(tt.output), 200)])
				}
			}
		})
	}
}

func TestBashRefusals(t *testing.T) {
	r := &Runner{}
	tests := []struct {
		name string
		call Call
		code string
		err  string
	}{
		{"relative cwd", Call{Name: Bash, Args: json.RawMessage(`{"command":"pwd"}`), Cwd: "rel"}, response.InvalidInput, "not an absolute path"},
		{"missing cwd", Call{Name: Bash, Args: json.RawMessage(`{"command":"pwd"}`), Cwd: "/nonexistent/x"}, response.InvalidInput, "working directory"},
		{"no command", Call{Name: Bash, Args: json.RawMessage(`{}`), Cwd: "/"}, response.InvalidInput, `"command"`},
		{"unknown argument", Call{Name: Bash, Args: json.RawMessage(`{"command":"pwd","cwd":"/"}`), Cwd: "/"}, response.InvalidInput, `"cwd"`},
		{"unknown tool", Call{Name: "rm", Args: json.RawMessage(`{}`), Cwd: "/"}, response.NotFound, "unknown tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := r.Run(context.Background(), tt.call)
			if res.OK || res.Code != tt.code || !strings.Contains(res.Error, tt.err) {
				t.Errorf("result %+v, want %s naming %s", res, tt.code, tt.err)
			}
		})
	}
}
