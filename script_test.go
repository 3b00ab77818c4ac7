package govkit_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite" // sqlexec

	"github.com/govkit/govkit/internal/cmdtree"
	"github.com/govkit/govkit/internal/pgtest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/cmd/gate"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/sandbox"
)

var update = flag.Bool("update", false, "rewrite golden output: cmp files in testdata/script and README.md's generated tables")

// TestMain registers every govkit binary (cmdtree.Binaries), so that
// scripts run the real command trees as separate processes, exactly as
// users do.
func TestMain(m *testing.M) {
	commands := map[string]func(){}
	for _, b := range cmdtree.Binaries {
		commands[b.Name] = func() { os.Exit(b.Main()) }
	}
	// Only a test binary lets GOVKIT_SANDBOX_SIMULATE pretend the kernel
	// lacks Landlock (gate_readonly.txtar); production mains never call
	// AllowSimulation.
	commands["gate"] = func() { sandbox.AllowSimulation(); os.Exit(gate.Main()) }
	testscript.Main(m, commands)
}

// TestScripts runs testdata/script/*.txtar: one behaviour per file.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			// A config file on the machine running the tests must not leak in:
			// scripts that need one write it under $WORK/.config.
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			// auditd stamps events with the wall clock: without this the
			// auditor's off_hours (06:00–22:00 by default) alerts whenever
			// the suite runs at night. Flags on the command line still win.
			env.Setenv("GOVKIT_AUDITOR_ALLOWED_HOURS_START", "0")
			env.Setenv("GOVKIT_AUDITOR_ALLOWED_HOURS_END", "24")
			env.Values[scriptT{}] = env.T() // pgstart skips with a reason
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":      cmdExits,
			"genline":    cmdGenline,
			"writebytes": cmdWritebytes,
			"freeport":   cmdFreeport,
			"readurl":    cmdReadurl,
			"sockpath":   cmdSockpath,
			"waitfor":    cmdWaitfor,
			"auditpost":  cmdAuditpost,
			"govpost":    cmdGovpost,
			"govget":     cmdGovget,
			"auditsub":   cmdAuditsub,
			"envfile":    cmdEnvfile,
			"sqlexec":    cmdSqlexec,
			"pgstart":    cmdPgstart,
			"expand":     cmdExpand,     // gate hook (issue 17): hook_script_test.go
			"npmbin":     cmdNpmbin,     // gate mcp (issue 17): mcp_script_test.go
			"mcpsession": cmdMcpsession, // gate mcp (issue 17): mcp_script_test.go
			"llmfake":    cmdLlmfake,    // gate serve (issue 18): llm_script_test.go
			"pgroup":     cmdPgroup,     // gate serve (issue 18): llm_script_test.go
			// Transport (DESIGN §11, issue 13): script_tls_test.go.
			"gencert":     cmdGencert,
			"httppost":    cmdHTTPPost,
			"nonloopback": cmdNonloopback,
		},
		Condition: scriptCondition,
	})
}

// exits CODE program [args...]: run program like exec and require exit
// status CODE (testscript's exec only tells zero from non-zero).
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// genline FILE N [TEXT]: append a line of N bytes (TEXT repeated, "x" by
// default) and a newline to FILE; for inputs too large to keep in a script.
func cmdGenline(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: genline FILE N [TEXT]")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 {
		ts.Fatalf("genline: bad size %q", args[1])
	}
	text := "x"
	if len(args) == 3 {
		text = args[2]
	}
	line := strings.Repeat(text, n/len(text)+1)[:n] + "\n"
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	ts.Check(err)
	_, err = f.WriteString(line)
	ts.Check(errors.Join(err, f.Close()))
}

// writebytes FILE QUOTED: write the Go-quoted string QUOTED to FILE; for
// bytes a script file cannot hold (NUL, invalid UTF-8).
func cmdWritebytes(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: writebytes FILE QUOTED")
	}
	data, err := strconv.Unquote(args[1])
	if err != nil {
		ts.Fatalf("writebytes: %s is not a Go string literal: %v", args[1], err)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(data), 0o644))
}

// freeport VAR: set VAR to a TCP port on 127.0.0.1 that is free now: for
// a "nobody listens there" test only. A daemon binds port 0 and names its
// address in its --url-file instead (readurl): a port found free here can
// be taken by another process before a daemon binds it (issue 20).
func cmdFreeport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	ts.Check(l.Close())
}

// readurl VAR FILE [ADDRVAR [PORTVAR]]: wait up to 10 seconds for FILE, a
// daemon's --url-file, and set VAR to the URL it holds (ADDRVAR to its
// host:port, PORTVAR to the port alone). With --addr 127.0.0.1:0 the daemon
// picks its own port, so no other process can take it between the test's
// choice and the daemon's bind, as a port freeport found free can be.
func cmdReadurl(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 4 {
		ts.Fatalf("usage: readurl VAR FILE [ADDRVAR [PORTVAR]]")
	}
	path := ts.MkAbs(args[1])
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The file is renamed into place whole: it exists only complete.
		b, err := os.ReadFile(path)
		if err == nil {
			url := strings.TrimSpace(string(b))
			_, addr, ok := strings.Cut(url, "://")
			if !ok || !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
				ts.Fatalf("readurl: %s holds %q, not a URL", args[1], b)
			}
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				ts.Fatalf("readurl: %s holds %q, not http://HOST:PORT", args[1], b)
			}
			ts.Setenv(args[0], url)
			if len(args) >= 3 {
				ts.Setenv(args[2], addr)
			}
			if len(args) == 4 {
				ts.Setenv(args[3], port)
			}
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("readurl %s: no file within 10s (%v)", args[1], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sockpath VAR NAME: set VAR to a Unix socket path NAME.sock in a fresh
// directory under /tmp, removed when the script ends. $WORK can be longer
// than a socket path may be (108 bytes on Linux), and a fresh directory
// makes the name unique without borrowing a port number for it.
func cmdSockpath(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || strings.Contains(args[1], "/") {
		ts.Fatalf("usage: sockpath VAR NAME")
	}
	dir, err := os.MkdirTemp("/tmp", "gk-")
	ts.Check(err)
	ts.Defer(func() { os.RemoveAll(dir) })
	ts.Setenv(args[0], filepath.Join(dir, args[1]+".sock"))
}

// waitfor URL [CAFILE]: wait up to 10 seconds for GET URL to answer 200;
// an https:// URL is trusted with the CA certificate in CAFILE.
func cmdWaitfor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfor URL [CAFILE]")
	}
	hc := http.DefaultClient
	if len(args) == 2 {
		hc = httpsClient(ts, args[1])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := hc.Get(args[0])
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfor %s: no 200 within 10s (last: %v)", args[0], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// auditpost URL FILE: append each JSON line of FILE to the auditd at URL
// through pkg/client, and print each stored event as a JSON line.
func cmdAuditpost(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: auditpost URL FILE")
	}
	c, err := client.New(args[0])
	ts.Check(err)
	f, err := os.Open(ts.MkAbs(args[1]))
	ts.Check(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev audit.Event
		ts.Check(json.Unmarshal(sc.Bytes(), &ev))
		got, err := c.Append(context.Background(), ev)
		if err != nil {
			if neg {
				ts.Logf("auditpost: %v", err)
				return
			}
			ts.Fatalf("auditpost: %v", err)
		}
		b, err := json.Marshal(got)
		ts.Check(err)
		ts.Stdout().Write(append(b, '\n'))
	}
	ts.Check(sc.Err())
	if neg {
		ts.Fatalf("auditpost: every event was accepted")
	}
}

// govpost URL PATH FILE: POST each line of FILE as JSON to URL+PATH (such
// as /api/v1/decisions) and print each answer's status and body on one
// line: "201 {…}". Any answer other than 2xx fails the command (and is what
// ! govpost expects). With $GOVKIT_TOKEN set it authenticates with it.
func cmdGovpost(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: govpost URL PATH FILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[2]))
	ts.Check(err)
	failed := false
	for line := range strings.Lines(string(data)) {
		req, err := http.NewRequest(http.MethodPost, args[0]+args[1], strings.NewReader(line))
		ts.Check(err)
		req.Header.Set("Content-Type", govapi.ContentTypeJSON)
		if !govSend(ts, req) {
			failed = true
			break
		}
	}
	if failed != neg {
		ts.Fatalf("govpost: failed=%t, want %t", failed, neg)
	}
}

// envfile NAME FILE: set the environment variable NAME to FILE's content
// without its trailing newline (a token that auditd token create printed).
func cmdEnvfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: envfile NAME FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	ts.Setenv(args[0], strings.TrimRight(string(b), "\n"))
}

// govget URL PATH: GET URL+PATH (PATH as sent: a query string is not
// re-encoded) and print the answer's status and body on one line, as
// govpost does. An answer other than 2xx fails the command. With
// $GOVKIT_TOKEN set it authenticates with it.
func cmdGovget(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: govget URL PATH")
	}
	req, err := http.NewRequest(http.MethodGet, args[0]+args[1], nil)
	ts.Check(err)
	if failed := !govSend(ts, req); failed != neg {
		ts.Fatalf("govget: failed=%t, want %t", failed, neg)
	}
}

// govSend sends req, with $GOVKIT_TOKEN as its bearer token when set,
// prints the answer's status and body on one line and reports a 2xx.
func govSend(ts *testscript.TestScript, req *http.Request) bool {
	if tok := ts.Getenv("GOVKIT_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d %s\n", resp.StatusCode, bytes.TrimSpace(body))
	return resp.StatusCode/100 == 2
}

// auditsub SOCKET SINCE N: read N events after seq SINCE from auditd's
// stream through pkg/client (10 seconds at most) and print them as JSON
// lines.
func cmdAuditsub(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: auditsub SOCKET SINCE N")
	}
	since, err1 := strconv.ParseInt(args[1], 10, 64)
	n, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil {
		ts.Fatalf("auditsub: SINCE and N must be numbers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := 0
	errDone := errors.New("done")
	err := client.Subscribe(ctx, ts.MkAbs(args[0]), since, func(ev audit.Event) error {
		b, err := json.Marshal(ev)
		ts.Check(err)
		ts.Stdout().Write(append(b, '\n'))
		if got++; got == n {
			return errDone
		}
		return nil
	})
	if !errors.Is(err, errDone) {
		ts.Fatalf("auditsub: %d of %d events: %v", got, n, err)
	}
}

// sqlexec DB SQL: run one SQL statement on the SQLite database DB, as an
// operator (or an intruder) with write access and the sqlite3 shell would,
// to tamper with it; through the driver auditd uses, so that the script
// needs no sqlite3 installed.
func cmdSqlexec(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sqlexec DB SQL")
	}
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(args[0])+"?_pragma=busy_timeout(5000)")
	ts.Check(err)
	defer db.Close()
	res, err := db.Exec(args[1])
	ts.Check(err)
	n, err := res.RowsAffected()
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d rows\n", n)
}

// pgstart: start a throwaway PostgreSQL cluster (internal/pgtest) for the
// rest of the script and set PGHOST, PGPORT, PGUSER and PGDATABASE so that
// a plain `exec psql -c …` reaches it; it is stopped and removed when the
// script ends. Without PostgreSQL (and not root, so not installing it) the
// script is skipped with the reason.
type scriptT struct{}

func cmdPgstart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: pgstart")
	}
	if _, err := pgtest.Find(); err != nil {
		var nf *pgtest.NotFoundError
		if errors.As(err, &nf) {
			// testscript's own skip takes its reason from the script;
			// this one is known only here.
			ts.Value(scriptT{}).(testscript.T).Skip(err.Error())
		}
		ts.Fatalf("%v", err)
	}
	// $WORK is too long for a socket path and may be closed to the
	// server's user: the cluster lives in its own short directory.
	dir, err := os.MkdirTemp("", "pgts")
	ts.Check(err)
	c, err := pgtest.StartDir(dir, pgtest.Options{})
	if err != nil {
		os.RemoveAll(dir)
		ts.Fatalf("%v", err)
	}
	ts.Defer(func() {
		if err := c.Stop(); err != nil {
			ts.Logf("%v", err)
		}
		os.RemoveAll(dir)
	})
	for _, kv := range c.Env() {
		k, v, _ := strings.Cut(kv, "=")
		ts.Setenv(k, v)
	}
}
