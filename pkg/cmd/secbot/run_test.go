package secbot

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/respond"
)

// daemon is a real auditd in the test process (auditdtest: a SQLite file,
// a loopback listener and a Unix socket), with a client. Stop and resume
// act as an operator stopping and starting auditd would, on the same file
// (unless DB is changed in between), address and socket.
type daemon struct {
	*auditdtest.Daemon
	t *testing.T
	c *client.Client
}

// startAuditd runs auditd with a policy that requires approval for every
// action: approval requests come from policy (DESIGN §11).
func startAuditd(t *testing.T) *daemon {
	t.Helper()
	d := &daemon{t: t, Daemon: auditdtest.Start(t, auditdtest.Options{Policy: auditdtest.RequireApproval(t),
		Config: func(c *auditd.Config) { c.VerifyOnStart = false }})}
	d.connect()
	return d
}

// resume starts the stopped auditd again, with a new client.
func (d *daemon) resume() {
	d.t.Helper()
	d.Start()
	d.connect()
	// The old auditd's kept-alive connections are dead: a POST on one
	// fails with EOF (net/http resends only replayable requests).
	d.c.CloseIdleConnections()
}

func (d *daemon) restart() {
	d.Stop()
	d.resume()
}

func (d *daemon) connect() {
	var err error
	if d.c, err = client.New(d.URL); err != nil {
		d.t.Fatal(err)
	}
}

// post appends events and returns them as stored.
func (d *daemon) post(evs ...audit.Event) []audit.Event {
	d.t.Helper()
	var out []audit.Event
	for _, ev := range evs {
		got, err := d.c.Append(context.Background(), ev)
		if err != nil {
			d.t.Fatalf("posting %+v: %v", ev, err)
		}
		out = append(out, got)
	}
	return out
}

// as is a client of d for user (local mode: the X-Govkit-User header), so
// that auditd records user as the caller of what it posts.
func (d *daemon) as(user string) *client.Client {
	d.t.Helper()
	c, err := client.New(d.URL, client.WithUser(user))
	if err != nil {
		d.t.Fatal(err)
	}
	return c
}

// incidents returns the incidents secbot recorded through POST
// /api/v1/incidents.
func (d *daemon) incidents() []govapi.IncidentInput {
	d.t.Helper()
	var out []govapi.IncidentInput
	for ev, err := range d.c.QueryAll(context.Background(), govapi.EventQuery{EventType: audit.TypeIncident, Cursor: govapi.Cursor{Limit: govapi.MaxLimit}}) {
		if err != nil {
			d.t.Fatal(err)
		}
		var in govapi.IncidentInput
		if err := json.Unmarshal(ev.Data, &in); err != nil {
			d.t.Fatalf("incident seq %d: %v", ev.Seq, err)
		}
		if in.Source != "secbot" {
			continue // reported by a test as another watcher
		}
		in.IncidentID = ev.EventID
		out = append(out, in)
	}
	return out
}

// head returns the seq of the chain's last event.
func (d *daemon) head() int64 {
	d.t.Helper()
	h, err := d.c.Health(context.Background())
	if err != nil {
		d.t.Fatal(err)
	}
	return h.HeadSeq
}

// bot is a secbot running in the test process against a daemon.
type bot struct {
	t              *testing.T
	stdout, stderr cli.SyncBuffer
	addr           string // where --listen serves
	cancel         func()
	done           chan int
}

// startSecbot runs secbot with args (plus --socket, --gateway and a
// --listen on a free loopback port) until the test stops it.
func startSecbot(t *testing.T, d *daemon, args ...string) *bot {
	t.Helper()
	b := &bot{t: t, done: make(chan int, 1)}
	streams, _, _, _ := cli.Test()
	streams.Out, streams.ErrOut = &b.stdout, &b.stderr
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	ready := make(chan string, 1)
	opts := &Options{IO: streams, Now: time.Now, Context: ctx, Ready: func(a string) { ready <- a },
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	argv := append([]string{"--socket", d.Socket, "--gateway", d.URL, "--listen", "127.0.0.1:0", "--config", ""}, args...)
	go func() { b.done <- cli.Main("secbot", newCmd(opts, nil), streams, argv) }()
	select {
	case b.addr = <-ready:
	case code := <-b.done:
		t.Fatalf("secbot exited %d before serving:\n%s", code, b.stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("secbot did not start serving")
	}
	t.Cleanup(func() { b.stop() })
	return b
}

// stop ends secbot as SIGTERM would and returns its exit code.
func (b *bot) stop() int {
	b.cancel()
	select {
	case code := <-b.done:
		b.done <- code
		return code
	case <-time.After(10 * time.Second):
		b.t.Fatal("secbot did not stop")
		return -1
	}
}

// health is GET /health.
func (b *bot) health() health {
	b.t.Helper()
	var h health
	b.getJSON("/health", &h)
	return h
}

func (b *bot) getJSON(path string, v any) {
	b.t.Helper()
	resp, err := http.Get("http://" + b.addr + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		b.t.Fatal(err)
	}
}

// caughtUp waits until secbot has read the chain up to d's head, so that
// whatever it does about those events is done.
func (b *bot) caughtUp(d *daemon) {
	b.t.Helper()
	head := d.head()
	waitFor(b.t, fmt.Sprintf("secbot to read seq %d", head), func() bool { return b.health().LastSeq >= head })
}

// lines returns secbot's output lines so far, decoded.
func (b *bot) lines() []output {
	b.t.Helper()
	var out []output
	for _, l := range strings.Split(strings.TrimSpace(b.stdout.String()), "\n") {
		if l == "" {
			continue
		}
		var o output
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			b.t.Fatalf("output line %q: %v", l, err)
		}
		out = append(out, o)
	}
	return out
}

// metric returns the value of the /metrics line that starts with name.
func (b *bot) metric(name string) string {
	b.t.Helper()
	resp, err := http.Get("http://" + b.addr + "/metrics")
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	b.t.Fatalf("no %s in /metrics:\n%s", name, body)
	return ""
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func toolEvent(agent string, tool audit.Tool) audit.Event {
	return audit.Event{EventType: audit.TypeToolExecution, Agent: agent, ActionClass: audit.ActionRead, SessionID: "sess-" + agent, TraceID: "trace-" + agent, Tool: &tool}
}

func sqlError(agent, token string) audit.Event {
	return toolEvent(agent, audit.Tool{Name: "psql", RawCommand: "psql -c \"select * from users where name = '" + token + "'\"",
		Error: "ERROR:  syntax error at or near \"" + token + "\"\nLINE 1: select * from users where name = ''" + token + "'"})
}

func byType(incs []govapi.IncidentInput) map[string][]govapi.IncidentInput {
	m := map[string][]govapi.IncidentInput{}
	for _, in := range incs {
		m[in.Type] = append(m[in.Type], in)
	}
	return m
}

// TestPatterns: each pattern against real events posted to a real auditd
// becomes one incident in the chain, with the event behind it.
func TestPatterns(t *testing.T) {
	d := startAuditd(t)
	ctx := context.Background()

	// An approval consumed for exactly its action (DESIGN §11) before
	// secbot starts, so that secbot must ask auditd about it; one approved
	// but not consumed; and a pending one. Each agent requests and runs
	// its own: an approval releases its requester's action.
	bob := d.as("bob")
	const deletePod = "kubectl delete pod web-1"
	request := func(agent string) approval.Request {
		r, err := d.as(agent).RequestApproval(ctx, approval.Input{Resource: audit.Resource{Type: "kubernetes", Name: "web"},
			Action: "destructive", Tool: "bash", RawCommand: deletePod})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	consumed := request("ops-approved")
	if _, err := bob.Approve(ctx, consumed.ID, "ok"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.as("ops-approved").ConsumeApproval(ctx, consumed.ID, consumed.ActionHash); err != nil {
		t.Fatal(err)
	}
	unconsumed := request("ops-unconsumed")
	if _, err := bob.Approve(ctx, unconsumed.ID, "ok"); err != nil {
		t.Fatal(err)
	}
	b := startSecbot(t, d) // from the head: the approval events are behind it
	pending := request("ops-pending")

	// agent runs deletePod citing approvalID, as itself.
	destructive := func(agent, approvalID string) audit.Event {
		ev := toolEvent(agent, audit.Tool{Name: "bash", RawCommand: deletePod, Result: "pod \"web-1\" deleted"})
		ev.ActionClass, ev.ApprovalID = audit.ActionDestructive, approvalID
		ev.Resource = &audit.Resource{Type: "kubernetes", Name: "web"}
		got, err := d.as(agent).Append(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	evs := d.post(
		sqlError("db-agent", "OR"),
		toolEvent("sh-agent", audit.Tool{Name: "bash", RawCommand: "ls; curl evil", Result: "a.txt\nsh: 1: curl: not found"}),
	)
	evs = append(evs,
		destructive("ops-agent", ""),
		destructive("ops-approved", consumed.ID),
		destructive("ops-pending", pending.ID),
		destructive("ops-unconsumed", unconsumed.ID),
		destructive("ops-approved", consumed.ID), // a second execution
	)
	evs = append(evs, d.post(toolEvent("quiet-agent", audit.Tool{Name: "bash", RawCommand: "ls", Result: "a.txt"}))...)
	// An incident quoting matching output is not answered.
	if _, err := d.c.CreateIncident(ctx, govapi.IncidentInput{Type: "potential_sql_injection", Severity: govapi.SeverityWarning,
		Source: "auditor", Agent: "db-agent", Message: "syntax error at or near \"x\"; permission denied"}); err != nil {
		t.Fatal(err)
	}
	b.caughtUp(d)
	waitFor(t, "6 incidents", func() bool { return len(d.incidents()) >= 6 })
	b.caughtUp(d) // and secbot has read its own incidents
	got := byType(d.incidents())

	check := func(typ, severity string, ev audit.Event, detail string) {
		t.Helper()
		var found *govapi.IncidentInput
		for i, in := range got[typ] {
			if in.Agent == ev.Agent {
				found = &got[typ][i]
			}
		}
		if found == nil {
			t.Errorf("no %s incident for %s; incidents: %+v", typ, ev.Agent, got)
			return
		}
		if found.Severity != severity || found.Source != "secbot" || found.SessionID != ev.SessionID || found.TraceID != ev.TraceID ||
			!slices.Equal(found.EventIDs, []string{ev.EventID}) || found.IncidentID != respond.IncidentID(typ, ev) {
			t.Errorf("%s incident = %+v", typ, found)
		}
		if !strings.Contains(string(found.Details), detail) {
			t.Errorf("%s details = %s, want %s in them", typ, found.Details, detail)
		}
	}
	check(detect.PotentialSQLInjection, govapi.SeverityWarning, evs[0], `"line":"ERROR:  syntax error at or near \"OR\""`)
	check(detect.PotentialCommandInjection, govapi.SeverityWarning, evs[1], `"line":"sh: 1: curl: not found"`)
	check(detect.UnauthorizedDestructive, govapi.SeverityCritical, evs[2], `"resource":"kubernetes:web"`)
	check(detect.UnauthorizedDestructive, govapi.SeverityCritical, evs[4], `"approval_status":"pending"`)
	check(detect.UnauthorizedDestructive, govapi.SeverityCritical, evs[5], `"approval_status":"approved"`)
	check(detect.UnauthorizedDestructive, govapi.SeverityCritical, evs[6], `"approval_status":"consumed"`)
	if n := len(d.incidents()); n != 6 {
		t.Errorf("%d incidents, want 6 (none for the first consumed action, the quiet agent or the incident): %+v", n, got)
	}
	if lines := b.lines(); len(lines) != 6 || lines[0].DryRun || lines[0].Event == nil || lines[0].Event.EventID != lines[0].IncidentID {
		t.Errorf("output: %s", b.stdout.String())
	}
	if code := b.stop(); code != 0 {
		t.Errorf("exit %d after the context ended (SIGTERM)", code)
	}
}

// TestHashMismatch: events whose stored content or hash was edited in the
// database are reported when auditd streams them again.
func TestHashMismatch(t *testing.T) {
	d := startAuditd(t)
	var evs []audit.Event
	for i := 1; i <= 6; i++ {
		evs = append(evs, d.post(toolEvent(fmt.Sprintf("agent-%d", i), audit.Tool{Name: "bash", RawCommand: "ls"}))...)
	}
	d.Stop()
	db, err := sql.Open("sqlite", d.DB)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE events SET body = replace(body, '"raw_command":"ls"', '"raw_command":"rm -rf /"') WHERE seq = 2`,
		`UPDATE events SET event_hash = '` + strings.Repeat("0", 64) + `' WHERE seq = 4`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	d.resume()

	b := startSecbot(t, d, "--since-seq", "0")
	waitFor(t, "3 incidents", func() bool { return len(d.incidents()) >= 3 })
	b.caughtUp(d)
	incs := d.incidents()
	if len(incs) != 3 {
		t.Fatalf("%d incidents, want 3: %+v", len(incs), incs)
	}
	want := []struct {
		ev   audit.Event
		kind string
	}{{evs[1], audit.KindHashMismatch}, {evs[3], audit.KindHashMismatch}, {evs[4], audit.KindPrevMismatch}}
	for i, w := range want {
		in := incs[i]
		var details detect.HashDetails
		if err := json.Unmarshal(in.Details, &details); err != nil {
			t.Fatal(err)
		}
		if in.Type != detect.HashMismatch || in.Severity != govapi.SeverityCritical || in.Agent != w.ev.Agent ||
			!slices.Equal(in.EventIDs, []string{w.ev.EventID}) || details.Kind != w.kind {
			t.Errorf("incident %d = %+v, details %+v; want %s about seq %d", i, in, details, w.kind, w.ev.Seq)
		}
	}
	if !strings.Contains(string(incs[2].Details), `"prev_seq":4`) {
		t.Errorf("prev_mismatch details = %s", incs[2].Details)
	}
}

// TestCooldown: secbot's cooldown turns two matches into one incident; a
// different agent gets its own.
func TestCooldown(t *testing.T) {
	d := startAuditd(t)
	b := startSecbot(t, d, "--cooldown", "1h")
	first := d.post(sqlError("agent-a", "OR"))[0]
	d.post(sqlError("agent-a", "AND"))
	other := d.post(sqlError("agent-b", "OR"))[0]
	waitFor(t, "2 incidents", func() bool { return len(d.incidents()) >= 2 })
	b.caughtUp(d)

	incs := d.incidents()
	if len(incs) != 2 {
		t.Fatalf("%d incidents, want 2: %+v", len(incs), incs)
	}
	if incs[0].Agent != "agent-a" || !slices.Equal(incs[0].EventIDs, []string{first.EventID}) {
		t.Errorf("first incident = %+v, want agent-a's first event", incs[0])
	}
	if incs[1].Agent != "agent-b" || !slices.Equal(incs[1].EventIDs, []string{other.EventID}) {
		t.Errorf("second incident = %+v, want agent-b's", incs[1])
	}
	for name, want := range map[string]string{
		`govkit_secbot_matches_total{pattern="potential_sql_injection"}`:              "3",
		`govkit_secbot_incidents_created_total{pattern="potential_sql_injection"}`:    "2",
		`govkit_secbot_incidents_suppressed_total{pattern="potential_sql_injection"}`: "1",
		`govkit_secbot_incidents_failed_total{pattern="potential_sql_injection"}`:     "0",
	} {
		if got := b.metric(name); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	if n := len(b.lines()); n != 2 {
		t.Errorf("%d output lines, want 2:\n%s", n, b.stdout.String())
	}
}

// TestDryRun: --dry-run prints what it would create and creates nothing.
func TestDryRun(t *testing.T) {
	d := startAuditd(t)
	b := startSecbot(t, d, "--dry-run", "--since-seq", "0")
	ev := d.post(sqlError("agent-a", "OR"))[0]
	waitFor(t, "an output line", func() bool { return len(b.lines()) == 1 })
	b.caughtUp(d)
	if n := len(d.incidents()); n != 0 {
		t.Errorf("%d incidents in a dry run", n)
	}
	l := b.lines()[0]
	if !l.DryRun || l.Event != nil || l.SchemaVersion != 1 || l.Type != detect.PotentialSQLInjection || l.IncidentID != respond.IncidentID(l.Type, ev) {
		t.Errorf("output: %s", b.stdout.String())
	}
	if got := b.metric(`govkit_secbot_incidents_dry_run_total{pattern="potential_sql_injection"}`); got != "1" {
		t.Errorf("dry-run counter = %s", got)
	}
	if !b.health().DryRun {
		t.Error("/health does not say dry run")
	}
}

// TestReconnect: when auditd restarts on the same database, secbot
// reconnects and resumes after the last event it saw: events committed
// while it was away are matched, and none twice.
func TestReconnect(t *testing.T) {
	d := startAuditd(t)
	b := startSecbot(t, d, "--cooldown", "1h")
	d.post(sqlError("agent-a", "OR"))
	waitFor(t, "the first incident", func() bool { return len(d.incidents()) == 1 })
	b.caughtUp(d)

	d.restart()
	// Posted before secbot reconnects (it is backing off): replayed.
	d.post(sqlError("agent-b", "OR"), toolEvent("agent-c", audit.Tool{Name: "bash", Error: "bash: nc: command not found"}))
	waitFor(t, "3 incidents", func() bool { return len(d.incidents()) >= 3 })
	d.restart()
	d.post(sqlError("agent-a", "AND")) // within agent-a's cooldown, which outlives the restarts
	b.caughtUp(d)

	incs := d.incidents()
	var agents []string
	for _, in := range incs {
		agents = append(agents, in.Type+"/"+in.Agent)
	}
	want := []string{"potential_sql_injection/agent-a", "potential_sql_injection/agent-b", "potential_command_injection/agent-c"}
	if !slices.Equal(agents, want) {
		t.Errorf("incidents %v, want %v", agents, want)
	}
	if n := len(b.lines()); n != 3 {
		t.Errorf("%d output lines, want 3:\n%s", n, b.stdout.String())
	}
	log := b.stderr.String()
	if !strings.Contains(log, "secbot: the stream ended after seq") || !strings.Contains(log, "secbot: stream is back: resuming after seq") {
		t.Errorf("stderr:\n%s", log)
	}
}

// TestHTTP: /health, /metrics and /callback over real HTTP on loopback.
func TestHTTP(t *testing.T) {
	d := startAuditd(t)
	b := startSecbot(t, d)
	base := "http://" + b.addr

	h := b.health()
	if h.SchemaVersion != 1 || h.Status != "ok" || h.DryRun {
		t.Errorf("/health = %+v", h)
	}
	d.post(toolEvent("a", audit.Tool{Name: "ls"}))
	b.caughtUp(d)
	if got := b.metric("govkit_secbot_events_seen_total"); got != "1" {
		t.Errorf("events seen = %s", got)
	}
	if h := b.health(); h.Stream != "following" || h.EventsSeen != 1 {
		t.Errorf("/health = %+v", h)
	}

	post := func(body io.Reader) (int, string) {
		resp, err := http.Post(base+"/callback", "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name string
		body io.Reader
		code int
		// answer is a substring of the answer's body.
		answer string
	}{
		{"callback", strings.NewReader(`{"incident_id":"secbot-x","status":"ready","bundle":"/b/x.tar.gz"}`), 202, `"accepted":true`},
		{"no status", strings.NewReader(`{"incident_id":"secbot-y"}`), 202, `"accepted":true`},
		{"not JSON", strings.NewReader(`incident ready`), 400, "must be a JSON object"},
		{"not an object", strings.NewReader(`["x"]`), 400, "must be a JSON object"},
		{"null", strings.NewReader(`null`), 400, "must be a JSON object"},
		{"wrong type", strings.NewReader(`{"incident_id":7}`), 400, "must be strings"},
		{"over 1 MiB", strings.NewReader(`{"x":"` + strings.Repeat("a", 1<<20) + `"}`), 413, "over 1 MiB"},
	}
	for _, tt := range tests {
		code, body := post(tt.body)
		if code != tt.code || !strings.Contains(body, tt.answer) {
			t.Errorf("%s: %d %s, want %d with %q", tt.name, code, body, tt.code, tt.answer)
		}
	}
	// Without Content-Length (chunked), over the limit.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"x":"`))
		pw.Write(bytes.Repeat([]byte("a"), 1<<20+10))
		pw.Close()
	}()
	if code, _ := post(pr); code != 413 {
		t.Errorf("chunked over 1 MiB: %d", code)
	}

	resp, err := http.Get(base + "/callback")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /callback: %s", resp.Status)
	}
	log := b.stderr.String()
	if !strings.Contains(log, "secbot: callback: incident secbot-x: ready\n") || !strings.Contains(log, "secbot: callback: incident secbot-y: (no status)\n") {
		t.Errorf("stderr:\n%s", log)
	}
	for name, want := range map[string]string{
		`govkit_secbot_callbacks_total{result="accepted"}`:    "2",
		`govkit_secbot_callbacks_total{result="bad_request"}`: "4",
		`govkit_secbot_callbacks_total{result="too_large"}`:   "2",
	} {
		if got := b.metric(name); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
}

// TestListenTaken: a --listen address in use is a usage error, exit 3.
func TestListenTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	streams, _, stdout, stderr := cli.Test()
	opts := &Options{IO: streams, Context: context.Background()}
	code := cli.Main("secbot", newCmd(opts, nil), streams, []string{"--socket", "/tmp/none", "--listen", ln.Addr().String(), "--config", ""})
	if code != cli.ExitFailure || stdout.Len() != 0 ||
		!strings.HasPrefix(stderr.String(), "secbot: error: --listen "+ln.Addr().String()+": listen tcp") ||
		!strings.Contains(stderr.String(), "secbot: hint: pass another --listen") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestURLFile: --url-file holds the URL --listen serves on once it does
// (port 0 in scripts), and is removed at a clean stop.
func TestURLFile(t *testing.T) {
	d := startAuditd(t)
	file := filepath.Join(t.TempDir(), "secbot.url")
	b := startSecbot(t, d, "--url-file", file)
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + b.addr + "\n"; string(got) != want {
		t.Errorf("--url-file holds %q, want %q", got, want)
	}
	if code := b.stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, b.stderr.String())
	}
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after a clean stop: %v, want the file removed", err)
	}
}

// TestUndecodableEvent: a row edited into something that is not an event
// must not blind secbot: it is reported as a hash_mismatch and skipped,
// and the events after it are still matched.
func TestUndecodableEvent(t *testing.T) {
	d := startAuditd(t)
	d.post(toolEvent("agent-1", audit.Tool{Name: "ls"}), toolEvent("agent-2", audit.Tool{Name: "ls"}))
	d.Stop()
	db, err := sql.Open("sqlite", d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE events SET body = replace(body, '"seq":2', '"seq":"2"') WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	d.resume()
	after := d.post(sqlError("agent-3", "OR"))[0]

	b := startSecbot(t, d, "--since-seq", "0")
	waitFor(t, "2 incidents", func() bool { return len(d.incidents()) >= 2 })
	b.caughtUp(d)
	incs := d.incidents()
	if len(incs) != 2 {
		t.Fatalf("%d incidents, want 2: %+v", len(incs), incs)
	}
	if in := incs[0]; in.Type != detect.HashMismatch || in.Severity != govapi.SeverityCritical ||
		in.Message != "Event seq 2 is not a valid audit event: its stored content was altered" || len(in.EventIDs) != 0 {
		t.Errorf("incident = %+v", in)
	}
	if in := incs[1]; in.Type != detect.PotentialSQLInjection || !slices.Equal(in.EventIDs, []string{after.EventID}) {
		t.Errorf("incident = %+v", in)
	}
	if log := b.stderr.String(); !strings.Contains(log, "secbot: error: the stream line of seq 2 is not an audit event") {
		t.Errorf("stderr:\n%s", log)
	}
}

// TestReplacedDatabase: an auditd that comes back on another, shorter
// database is followed from its start, not from the old position.
func TestReplacedDatabase(t *testing.T) {
	d := startAuditd(t)
	b := startSecbot(t, d)
	d.post(toolEvent("a", audit.Tool{Name: "ls"}), toolEvent("a", audit.Tool{Name: "ls"}), toolEvent("a", audit.Tool{Name: "ls"}))
	b.caughtUp(d)
	d.Stop()
	d.DB = filepath.Join(t.TempDir(), "other.db")
	d.resume()
	ev := d.post(sqlError("agent-b", "OR"))[0]
	waitFor(t, "the incident", func() bool { return len(d.incidents()) == 1 })
	if in := d.incidents()[0]; !slices.Equal(in.EventIDs, []string{ev.EventID}) {
		t.Errorf("incident = %+v", in)
	}
	if log := b.stderr.String(); !strings.Contains(log, "secbot: warning: auditd's chain now ends at seq 1, before seq 3 that secbot saw") &&
		!strings.Contains(log, "secbot: warning: auditd's chain now ends at seq 0, before seq 3 that secbot saw") {
		t.Errorf("stderr:\n%s", log)
	}
}

// TestHostileNames: an agent cannot escape secbot by choosing names that
// auditd's incidents API refuses (control characters, over 256 bytes,
// blank): the incident is still created, with the names made to fit.
func TestHostileNames(t *testing.T) {
	d := startAuditd(t)
	b := startSecbot(t, d)
	sqlEv := sqlError("evil\tagent\x1b[2J", "OR")
	sqlEv.SessionID = strings.Repeat("s", 300)
	sqlEv.TraceID = "   "
	rm := toolEvent(strings.Repeat("é", 200), audit.Tool{Name: "bash", RawCommand: "rm -rf /data"})
	rm.ActionClass = audit.ActionDestructive
	rm.Resource = &audit.Resource{Type: "host", Name: "db\x1b]0;owned\x07"}
	evs := d.post(sqlEv, rm)
	waitFor(t, "2 incidents", func() bool { return len(d.incidents()) >= 2 })
	b.caughtUp(d)

	got := byType(d.incidents())
	sql := got[detect.PotentialSQLInjection]
	if len(sql) != 1 || sql[0].Agent != "evil agent [2J" || len(sql[0].SessionID) > 256 || sql[0].TraceID != "(blank)" ||
		!slices.Equal(sql[0].EventIDs, []string{evs[0].EventID}) || !strings.Contains(string(sql[0].Details), `"agent":"evil\tagent\u001b[2J"`) {
		t.Errorf("sql incidents = %+v", sql)
	}
	destr := got[detect.UnauthorizedDestructive]
	if len(destr) != 1 || len(destr[0].Agent) > 256 || !strings.HasSuffix(destr[0].Agent, "…") ||
		destr[0].Message != "Destructive action on host:db ]0;owned  without an approval that released it (no approval)" {
		t.Errorf("destructive incidents = %+v", destr)
	}
	if strings.Contains(b.stderr.String(), "error") {
		t.Errorf("stderr:\n%s", b.stderr.String())
	}
}

// --once (issue 20): secbot from cron. One pass through the HTTP API, no
// socket; 2 when it created incidents, 0 when a rerun finds nothing new;
// 3 when auditd does not answer.
func TestOnce(t *testing.T) {
	d := startAuditd(t)
	once := func(args ...string) (code int, stdout, stderr string) {
		streams, _, out, errOut := cli.Test()
		argv := append([]string{"--once", "--url", d.URL, "--config", ""}, args...)
		code = cli.Main("secbot", newCmd(&Options{IO: streams, Now: time.Now}, nil), streams, argv)
		return code, out.String(), errOut.String()
	}

	if code, out, errOut := once(); code != 0 || out != "" {
		t.Fatalf("an empty log: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	d.post(toolEvent("agent-c", audit.Tool{Name: "bash", Error: "bash: nc: command not found"}))
	if code, out, errOut := once("--dry-run"); code != exitIncidents || !strings.Contains(out, `"dry_run":true`) || len(d.incidents()) != 0 {
		t.Fatalf("--dry-run: exit %d, stdout %q, stderr %q; %d incidents", code, out, errOut, len(d.incidents()))
	}
	code, out, errOut := once()
	if code != exitIncidents || !strings.Contains(out, "potential_command_injection") {
		t.Fatalf("first run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "checked 1 events after seq 0") {
		t.Errorf("stderr %q", errOut)
	}
	if n := len(d.incidents()); n != 1 {
		t.Fatalf("%d incidents after the first run, want 1", n)
	}
	// The rerun from the start finds the same match: nothing new.
	if code, _, errOut := once(); code != 0 || len(d.incidents()) != 1 {
		t.Errorf("rerun: exit %d, stderr %q; %d incidents", code, errOut, len(d.incidents()))
	}
	// After the head, nothing is checked.
	if code, out, errOut := once("--since-seq", strconv.FormatInt(d.head(), 10)); code != 0 || out != "" {
		t.Errorf("--since-seq head: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	d.Stop()
	if code, _, errOut := once(); code != cli.ExitFailure || !strings.Contains(errOut, "cannot reach auditd at "+d.URL) {
		t.Errorf("auditd stopped: exit %d, stderr %q", code, errOut)
	}
}
