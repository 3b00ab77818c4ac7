package auditor

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/monitor"
)

// isolate keeps the environment and config files of the machine out.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, k := range []string{"GOVKIT_CONFIG", "GOVKIT_AUDIT_URL", "GOVKIT_URL", "GOVKIT_AUDIT_SOCKET", "GOVKIT_SOCKET", "GOVKIT_TOKEN", "GOVKIT_OUTPUT",
		"GOVKIT_AUDITOR_VERIFY_INTERVAL", "GOVKIT_AUDITOR_INCIDENT_WEBHOOK", "GOVKIT_AUDITOR_MAX_EVENTS_PER_MINUTE",
		"GOVKIT_AUDITOR_ALLOWED_HOURS_START", "GOVKIT_AUDITOR_ALLOWED_HOURS_END", "GOVKIT_AUDITOR_TIMEZONE",
		"GOVKIT_AUDITOR_MAX_CLOCK_SKEW", "GOVKIT_AUDITOR_STATE", "GOVKIT_AUDITOR_VERBOSE", "GOVKIT_AUDITOR_CHECKPOINT_KEY"} {
		t.Setenv(k, "")
	}
	// auditd stamps events with the wall clock, so the seed's 06:00–22:00
	// would raise off_hours in a suite run at night; tests of off_hours
	// set their hours or clock themselves (TestOffHours).
	t.Setenv("GOVKIT_AUDITOR_ALLOWED_HOURS_START", "0")
	t.Setenv("GOVKIT_AUDITOR_ALLOWED_HOURS_END", "24")
}

// seedHours undoes isolate's all-day hours, for tests of the defaults.
func seedHours(t *testing.T) {
	t.Setenv("GOVKIT_AUDITOR_ALLOWED_HOURS_START", "")
	t.Setenv("GOVKIT_AUDITOR_ALLOWED_HOURS_END", "")
}

// daemon is a real auditd in the test process (auditdtest: a SQLite file,
// a loopback listener and a Unix socket), which can be stopped and started
// again on the same file, address and socket (an auditd restart), with the
// test's client.
type daemon struct {
	*auditdtest.Daemon
	t *testing.T
	c *client.Client
}

// startAuditd runs auditd on a new database until the test ends; now, when
// not nil, is its clock.
func startAuditd(t *testing.T, now func() time.Time) *daemon {
	t.Helper()
	return startAuditdWith(t, now, nil, nil)
}

// startAuditdWith is startAuditd with its configuration edited, and the
// test's own client options (a token).
func startAuditdWith(t *testing.T, now func() time.Time, edit func(*auditd.Config), copts []client.Option) *daemon {
	t.Helper()
	return startGoverned(t, nil, now, edit, copts)
}

// startGoverned is startAuditdWith with policy p in force (nil: none), as
// auditd --policy: approval requests need one (DESIGN §11).
func startGoverned(t *testing.T, p *auditd.Policy, now func() time.Time, edit func(*auditd.Config), copts []client.Option) *daemon {
	t.Helper()
	d := &daemon{t: t, Daemon: auditdtest.Start(t, auditdtest.Options{Policy: p, Config: func(c *auditd.Config) {
		c.Now = now
		if edit != nil {
			edit(c)
		}
	}})}
	var err error
	if d.c, err = client.New(d.URL, copts...); err != nil {
		t.Fatal(err)
	}
	return d
}

// restart stops auditd, runs sql on its database as an operator with
// sqlite3 would (nothing when empty), and starts it again.
func (d *daemon) restart(sqlText string) {
	d.t.Helper()
	d.Stop()
	if sqlText != "" {
		raw, err := sql.Open("sqlite", "file:"+d.DB)
		if err != nil {
			d.t.Fatal(err)
		}
		if _, err := raw.Exec(sqlText); err != nil {
			d.t.Fatalf("%s: %v", sqlText, err)
		}
		if err := raw.Close(); err != nil {
			d.t.Fatal(err)
		}
	}
	d.start()
}

// start starts the stopped auditd again and drops the client's connections
// to the old one: a POST on one fails with EOF (net/http resends only
// replayable requests, and these events have no ids).
func (d *daemon) start() {
	d.Start()
	d.c.CloseIdleConnections()
}

// post appends n events of agent through the API and returns them.
func (d *daemon) post(agent string, n int, edit func(*audit.Event)) []audit.Event {
	d.t.Helper()
	var out []audit.Event
	for i := range n {
		ev := audit.Event{EventType: audit.TypeToolExecution, Agent: agent, SessionID: "test_session", ActionClass: audit.ActionRead,
			Tool: &audit.Tool{Name: "test_tool", RawCommand: fmt.Sprintf("SELECT %d", i)}}
		if edit != nil {
			edit(&ev)
		}
		got, err := d.c.Append(context.Background(), ev)
		if err != nil {
			d.t.Fatal(err)
		}
		out = append(out, got)
	}
	return out
}

// verifications is how many chain verifications auditd has served since
// it last started, whatever their result: its
// govkit_auditd_verifications_total, which auditor's every --verify-interval
// adds one to.
func (d *daemon) verifications() int {
	d.t.Helper()
	resp, err := http.Get(d.URL + govapi.PathMetrics)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		d.t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	n := 0
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, "govkit_auditd_verifications_total{"); ok {
			_, v, _ := strings.Cut(rest, "} ")
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				d.t.Fatalf("/metrics: %q: %v", line, err)
			}
			n += int(f)
		}
	}
	return n
}

// waitVerifications waits until r has handled n more verifications than
// it had when called (the alerts they raise included): until auditd
// served n+1 more, since auditor asks for the next one only after it has
// handled the last. It stands for "wait a few --verify-intervals" before
// a test asserts that nothing more happened. auditd must run with
// VerifyOnStart off (noStartVerify), so that every verification it counts
// is auditor's.
func (d *daemon) waitVerifications(r *invocation, n int) {
	d.t.Helper()
	want := d.verifications() + n + 1
	r.waitFor(fmt.Sprintf("%d more verifications", n), func() bool { return d.verifications() >= want })
}

// noStartVerify turns auditd's own verification at start off, for tests
// that count auditor's (waitVerifications).
func noStartVerify(c *auditd.Config) { c.VerifyOnStart = false }

// invocation is one auditor run, in the test process.
type invocation struct {
	t              *testing.T
	stdout, stderr cli.SyncBuffer
	code           int
	done           chan struct{}
	cancel         context.CancelFunc
}

// setup, when not nil, edits the options before the run (clock, delays).
func auditor(t *testing.T, setup func(*Options), args ...string) *invocation {
	t.Helper()
	r := background(t, setup, args...)
	r.wait()
	return r
}

// background starts auditor with args and returns at once; stop ends it as
// SIGTERM would.
func background(t *testing.T, setup func(*Options), args ...string) *invocation {
	t.Helper()
	r := &invocation{t: t, done: make(chan struct{})}
	streams, _, _, _ := cli.Test()
	streams.Out, streams.ErrOut = &r.stdout, &r.stderr
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	opts := &Options{IO: streams, Context: ctx, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond,
		WebhookBackoff: 20 * time.Millisecond}
	if setup != nil {
		setup(opts)
	}
	go func() {
		defer close(r.done)
		r.code = cli.Main("auditor", newCmd(opts, nil), streams, args)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

func (r *invocation) wait() {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		r.t.Fatalf("auditor did not exit within 60s\nstderr:\n%s", r.stderr.String())
	}
}

// stop ends a background run (SIGTERM) and waits for it.
func (r *invocation) stop() {
	r.t.Helper()
	r.cancel()
	r.wait()
}

func (r *invocation) want(code int) {
	r.t.Helper()
	if r.code != code {
		r.t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout.String(), r.stderr.String())
	}
}

// alerts decodes stdout's JSON lines.
func (r *invocation) alerts() []detect.Alert {
	r.t.Helper()
	var out []detect.Alert
	for line := range strings.Lines(r.stdout.String()) {
		var a detect.Alert
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			r.t.Fatalf("stdout line is not an alert: %v\n%s", err, line)
		}
		out = append(out, a)
	}
	return out
}

// ofType returns the alerts of type typ.
func (r *invocation) ofType(typ string) []detect.Alert {
	var out []detect.Alert
	for _, a := range r.alerts() {
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

// waitFor polls cond until it holds or 20 seconds pass.
func (r *invocation) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		select {
		case <-r.done:
			if cond() {
				return
			}
			r.t.Fatalf("auditor exited %d while waiting for %s\nstdout:\n%s\nstderr:\n%s", r.code, what, r.stdout.String(), r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s\nstdout:\n%s\nstderr:\n%s", what, r.stdout.String(), r.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitStderr waits for a stderr line matching re.
func (r *invocation) waitStderr(re string) {
	r.t.Helper()
	rx := regexp.MustCompile(re)
	r.waitFor("stderr "+re, func() bool { return rx.MatchString(r.stderr.String()) })
}

// received returns the seqs of the events -v logged, in order.
func (r *invocation) received() []int64 {
	var seqs []int64
	for _, m := range eventLine.FindAllStringSubmatch(r.stderr.String(), -1) {
		var s int64
		fmt.Sscan(m[1], &s)
		seqs = append(seqs, s)
	}
	return seqs
}

var eventLine = regexp.MustCompile(`(?m)^auditor: event seq (\d+) `)

// readStateFile reads and parses a state file.
func readStateFile(t *testing.T, path string) (monitor.State, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := monitor.ParseState(data)
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	return st, data
}

// pinnedSize is the size pinned in the state file at path, or -1.
func pinnedSize(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	st, err := monitor.ParseState(data)
	if err != nil || st.Pin == nil {
		return -1
	}
	return st.Pin.Size
}

// fixedClock is a clock that stands still at t until moved.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
