package govbot

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/govreport"
	"github.com/govkit/govkit/pkg/govreport/history"
	"github.com/govkit/govkit/pkg/policy"
)

// Issue 20: the checks an auditor asks first, against a real auditd.

// A known resource no policy covers is not told to go into the infra file.
func TestNoMatchKnownResource(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	// payments-staging is in the infra file (tags staging); the one policy
	// for staging has a rule for reads only.
	d.decide(t, govapi.DecisionRequest{Principal: policy.RequestPrincipal{UserID: "bob"},
		Resource: govapi.Resource{Type: "kubernetes", Name: "payments-staging"}, Action: "write"})
	d.decide(t, govapi.DecisionRequest{Principal: policy.RequestPrincipal{UserID: "bob"},
		Resource: govapi.Resource{Type: "database", Name: "legacy-db"}, Action: "read"})

	r := govbot(t, nil, "--gateway", d.URL, "-o", "json")
	r.want(t, 0)
	rep := r.report(t)
	if rep.Decisions.NoMatch != 2 || rep.Decisions.NoMatchUnknown != 1 {
		t.Errorf("decisions = %+v", rep.Decisions)
	}
	if got := codes(rep.Summary.Warnings); !slices.Equal(got, []string{govreport.CodeNoMatchDecisions, govreport.CodeNoMatchUncovered}) {
		t.Fatalf("warnings = %v", got)
	}
	unknown, known := rep.Summary.Warnings[0].Message, rep.Summary.Warnings[1].Message
	if !strings.HasPrefix(unknown, "database:legacy-db: ") || !strings.Contains(unknown, "add the resource to the infra file") {
		t.Errorf("unknown resource: %s", unknown)
	}
	if !strings.HasPrefix(known, "kubernetes:payments-staging: 1 decision matched no policy") || !strings.Contains(known, "auditd knows the resource (tags staging) but no policy rule decides") ||
		strings.Contains(known, "infra file") {
		t.Errorf("known resource: %s", known)
	}
}

// Executions link to their decision by decision_event_id (gate run),
// trace_id (pkg/toolgov) or an approval a decision opened; one that links
// to nothing, or to an event that is no decision, is an alert.
func TestPolicyCoverage(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	byID := d.decide(t, readProdDB())
	traced := readProdDB()
	traced.TraceID = "call-7"
	d.decide(t, traced)
	read := d.append(t, tool("db-agent", "SELECT 1")) // a read: needs no decision

	write := func(command string, edit func(*audit.Event)) {
		ev := tool("db-agent", command)
		ev.ActionClass = audit.ActionWrite
		ev.Resource = &audit.Resource{Type: "database", Name: "prod-db"}
		edit(&ev)
		d.append(t, ev)
	}
	write("UPDATE a", func(ev *audit.Event) {
		ev.Data, _ = json.Marshal(map[string]string{"decision_event_id": byID.Event.EventID})
	})
	write("UPDATE b", func(ev *audit.Event) { ev.TraceID = "call-7" })
	write("UPDATE c", func(ev *audit.Event) {}) // no link
	write("UPDATE d", func(ev *audit.Event) {   // a link to an event that is no decision
		ev.Data, _ = json.Marshal(map[string]string{"decision_event_id": read.EventID})
	})

	r := govbot(t, nil, "--gateway", d.URL, "-o", "json")
	r.want(t, 2)
	cv := r.report(t).Decisions.Coverage
	var cmds []string
	for _, u := range cv.Uncovered {
		cmds = append(cmds, u.Command)
	}
	if cv.Executions != 4 || cv.Covered != 2 || cv.UncoveredTotal != 2 || !slices.Equal(cmds, []string{"UPDATE c", "UPDATE d"}) {
		t.Errorf("coverage = %+v", cv)
	}

	// A decision outside the analysed events still covers an execution:
	// auditd is asked after the scan (--max-events 2 analyses the two
	// latest events only).
	write("UPDATE e", func(ev *audit.Event) {
		ev.Data, _ = json.Marshal(map[string]string{"decision_event_id": byID.Event.EventID})
	})
	write("UPDATE f", func(ev *audit.Event) { ev.TraceID = "call-7" })
	r = govbot(t, nil, "--gateway", d.URL, "--max-events", "2", "-o", "json")
	r.want(t, 0)
	rep := r.report(t)
	if cv := rep.Decisions.Coverage; rep.Activity.Events != 2 || cv.Executions != 2 || cv.Covered != 2 || cv.UncoveredTotal != 0 {
		t.Errorf("coverage of a window without the decisions = %+v (events %d)", cv, rep.Activity.Events)
	}
}

// --history keeps each run; the report ends with the trend, and runs
// older than --history-retention are deleted.
func TestHistory(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	path := filepath.Join(t.TempDir(), "history.db")
	now := time.Now().UTC()
	at := func(ago time.Duration) func(*Options) {
		return func(o *Options) { o.Now = func() time.Time { return now.Add(-ago) } }
	}

	r := govbot(t, at(100*24*time.Hour), "--gateway", d.URL, "--history", path, "-o", "json")
	r.want(t, 0)
	first := r.report(t).Trend
	if first == nil || first.Runs != 1 || first.Previous != nil || first.Retention != "90d" {
		t.Fatalf("first trend = %+v", first)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file: %v %v", fi, err)
	}

	d.decide(t, govapi.DecisionRequest{Principal: policy.RequestPrincipal{UserID: "bob"},
		Resource: govapi.Resource{Type: "database", Name: "legacy-db"}, Action: "read"})
	r = govbot(t, at(time.Hour), "--gateway", d.URL, "--history", path, "-o", "json")
	r.want(t, 0)
	// The run 100 days ago is past the retention: nothing to compare.
	if tr := r.report(t).Trend; tr.Runs != 1 || tr.Previous != nil {
		t.Errorf("trend after retention = %+v", tr)
	}

	r = govbot(t, at(0), "--gateway", d.URL, "--history", path, "-o", "text")
	r.want(t, 0)
	for _, want := range []string{
		"\nTrend - 2 runs since ",
		"  previous   " + now.Add(-time.Hour).Format(time.RFC3339) + ": WARNINGS (0 alerts, 1 warning)\n",
		"  change     alerts 0, warnings 0\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}

	// A run that finds no auditd is kept too: the trend shows the gap.
	r = govbot(t, at(0), "--gateway", "http://127.0.0.1:1", "--history", path)
	r.want(t, 1)
	hist, err := history.Open(t.Context(), path, now)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := hist.Runs(t.Context(), "http://127.0.0.1:1", time.Time{})
	hist.Close()
	if err != nil || len(runs) != 1 || runs[0].Status != govreport.StatusUnreachable || runs[0].ExitCode != 1 {
		t.Errorf("runs of the unreachable gateway = %+v, %v", runs, err)
	}

	// A file that is no history: exit 3 before auditd is asked.
	bad := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(bad, []byte(strings.Repeat("not a database\n", 100)), 0o600)
	r = govbot(t, nil, "--gateway", "http://127.0.0.1:1", "--history", bad)
	r.want(t, 3)
	if !strings.Contains(r.stderr, "govbot: error: cannot open the history file "+bad+": not a SQLite database") ||
		!strings.Contains(r.stderr, "govbot: hint: pass --history with a writable path") || r.stdout != "" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
}

// The Slack post goes through pkg/notify's Dispatcher: a rate-limited or
// failing Slack is retried, and the trend line is in the message.
func TestWebhookRetriesAndTrend(t *testing.T) {
	d := startAuditd(t, daemonOpts{})
	slack := newSlackReceiver(t, http.StatusServiceUnavailable)
	path := filepath.Join(t.TempDir(), "history.db")
	fast := func(o *Options) { o.WebhookBackoff = time.Millisecond }
	r := govbot(t, fast, "--gateway", d.URL, "--history", path, "--webhook", slack.url(), "-o", "json")
	r.want(t, 0)
	if n := len(slack.posted()); n != webhookAttempts {
		t.Errorf("%d posts, want %d attempts", n, webhookAttempts)
	}
	if !strings.Contains(r.stderr, "govbot: warning: attempt 1/3 to deliver the compliance report failed: ") ||
		!strings.Contains(r.stderr, "govbot: error: posting the summary to --webhook ("+slack.srv.URL+"/…): ") ||
		strings.Contains(r.stderr, "SECRET") {
		t.Errorf("stderr = %s", r.stderr)
	}

	slack.mu.Lock()
	slack.status, slack.bodies = http.StatusOK, nil
	slack.mu.Unlock()
	r = govbot(t, fast, "--gateway", d.URL, "--history", path, "--webhook", slack.url(), "-o", "json")
	r.want(t, 0)
	got := slack.posted()
	if len(got) != 1 || r.stderr != "" {
		t.Fatalf("%d posts, stderr %s", len(got), r.stderr)
	}
	b, _ := json.Marshal(got[0])
	if !strings.Contains(string(b), "since the previous run (") || !strings.Contains(string(b), "alerts 0, warnings 0") {
		t.Errorf("posted message lacks the trend: %s", b)
	}
}
