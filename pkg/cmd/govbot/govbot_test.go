package govbot

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
)

// parse runs govbot's flag parsing and validation on args with env, and
// returns the options the run would get, or the exit code and stderr.
func parse(t *testing.T, env map[string]string, args ...string) (*Options, int, string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	streams, _, _, stderr := cli.Test()
	var got *Options
	opts := &Options{IO: streams}
	code := cli.Main("govbot", newCmd(opts, func(o *Options) error { got = o; return nil }), streams, seedCompat(args))
	return got, code, stderr.String()
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(*Options) bool
	}{
		{"defaults", nil, nil, func(o *Options) bool {
			return o.Gateway == "http://127.0.0.1:1199" && time.Duration(o.Since) == 24*time.Hour &&
				time.Duration(o.StaleAfter) == 30*time.Minute && o.MaxEvents == DefaultMaxEvents && o.Webhook == "" &&
				o.gatewaySource == "the default"
		}},
		{"flags", nil, []string{"--gateway", "http://auditd:1199", "--since", "6h", "--stale-after", "1h", "--token", "T",
			"--webhook", "https://hooks.slack.com/services/A/B/C", "--max-events", "10", "-o", "json"}, func(o *Options) bool {
			return o.Gateway == "http://auditd:1199" && time.Duration(o.Since) == 6*time.Hour && time.Duration(o.StaleAfter) == time.Hour &&
				o.Token == "T" && o.Webhook == "https://hooks.slack.com/services/A/B/C" && o.MaxEvents == 10 && o.Output == cli.FormatJSON &&
				o.gatewaySource == ""
		}},
		{"days", nil, []string{"--since", "7d"}, func(o *Options) bool { return time.Duration(o.Since) == 7*24*time.Hour }},
		// Seed 003 "Running govbot": go run ./cmd/govbot/ -gateway URL -since 6h.
		{"seed's one-dash flags", nil, []string{"-gateway", "http://localhost:8080", "-since=6h", "-webhook", "https://hooks.slack.com/x"},
			func(o *Options) bool {
				return o.Gateway == "http://localhost:8080" && time.Duration(o.Since) == 6*time.Hour && o.Webhook == "https://hooks.slack.com/x"
			}},
		{"environment", map[string]string{"GOVKIT_AUDIT_URL": "http://env:1", "GOVKIT_TOKEN": "tok", "GOVKIT_GOVBOT_WEBHOOK": "https://hooks.slack.com/e",
			"GOVKIT_GOVBOT_SINCE": "2h", "GOVKIT_GOVBOT_STALE_AFTER": "5m"}, nil, func(o *Options) bool {
			return o.Gateway == "http://env:1" && o.Token == "tok" && o.Webhook == "https://hooks.slack.com/e" &&
				time.Duration(o.Since) == 2*time.Hour && time.Duration(o.StaleAfter) == 5*time.Minute && o.gatewaySource == "GOVKIT_AUDIT_URL"
		}},
		// Issue 20: --url and GOVKIT_URL, as in every client binary; the
		// seed's GOVKIT_GATEWAY works too, and the README's GOVKIT_SINCE.
		{"url", nil, []string{"--url", "http://auditd:1199"}, func(o *Options) bool {
			return o.Gateway == "http://auditd:1199" && o.gatewaySource == ""
		}},
		{"GOVKIT_URL and GOVKIT_SINCE", map[string]string{"GOVKIT_URL": "http://env:3", "GOVKIT_SINCE": "3h"}, nil, func(o *Options) bool {
			return o.Gateway == "http://env:3" && time.Duration(o.Since) == 3*time.Hour && o.gatewaySource == "GOVKIT_URL"
		}},
		{"GOVKIT_GATEWAY", map[string]string{"GOVKIT_GATEWAY": "http://env:4"}, nil, func(o *Options) bool {
			return o.Gateway == "http://env:4" && o.gatewaySource == "GOVKIT_GATEWAY"
		}},
		{"flag beats environment", map[string]string{"GOVKIT_AUDIT_URL": "http://env:1"}, []string{"--gateway", "http://flag:2"},
			func(o *Options) bool { return o.Gateway == "http://flag:2" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, code, stderr := parse(t, tt.env, tt.args...)
			if code != 0 || o == nil {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !tt.check(o) {
				t.Errorf("options = %+v", *o)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // stderr's first line
		hint string
	}{
		{"bad gateway", nil, []string{"--gateway", "auditd:1199"},
			`govbot: error: --gateway: auditd URL "auditd:1199" is not http://HOST:PORT`, "--url"},
		{"bad url", nil, []string{"--url", "auditd:1199"},
			`govbot: error: --url: auditd URL "auditd:1199" is not http://HOST:PORT`, "--url"},
		{"bad gateway from the environment", map[string]string{"GOVKIT_AUDIT_URL": "ftp://x"}, nil,
			`govbot: error: --url (from GOVKIT_AUDIT_URL): auditd URL "ftp://x" is not http://HOST:PORT`, "GOVKIT_URL"},
		{"zero since", nil, []string{"--since", "0s"}, "govbot: error: --since 0s is not a positive duration", "--since"},
		{"negative stale-after", nil, []string{"--stale-after", "-5m"}, "govbot: error: --stale-after -5m is not a positive duration", "--stale-after"},
		{"bad duration", nil, []string{"--since", "yesterday"},
			`govbot: error: invalid argument "yesterday" for "--since" flag: "yesterday" is not a duration such as 30m, 24h or 7d`, "govbot --help"},
		{"max-events", nil, []string{"--max-events", "0"}, "govbot: error: --max-events 0 is not between 1 and 100000000", "--max-events"},
		// The webhook URL is a secret: the error never shows it.
		{"bad webhook", nil, []string{"--webhook", "hooks.slack.com/services/T0/B0/SECRET"},
			"govbot: error: --webhook is not an http:// or https:// URL (a Slack incoming webhook is https://hooks.slack.com/services/…)", "--webhook"},
		{"arguments", nil, []string{"report"}, `govbot: error: unknown command "report" for "govbot"`, "govbot --help"},
		{"unknown flag", nil, []string{"--gatway", "x"}, "govbot: error: unknown flag: --gatway", "govbot --help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, code, stderr := parse(t, tt.env, tt.args...)
			if code != 3 {
				t.Fatalf("exit %d, want 3; stderr: %s", code, stderr)
			}
			first, rest, _ := strings.Cut(stderr, "\n")
			if first != tt.want {
				t.Errorf("stderr = %q\nwant      %q", first, tt.want)
			}
			if !strings.HasPrefix(rest, "govbot: hint: ") || !strings.Contains(rest, tt.hint) {
				t.Errorf("hint = %q, want one naming %q", rest, tt.hint)
			}
			if strings.Contains(stderr, "SECRET") {
				t.Errorf("stderr shows the webhook's secret: %s", stderr)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		str  string
	}{
		{"24h", 24 * time.Hour, "24h"},
		{"30m", 30 * time.Minute, "30m"},
		{"90m", 90 * time.Minute, "1h30m"},
		{"7d", 7 * 24 * time.Hour, "7d"},
		{"1d", 24 * time.Hour, "24h"},
		{"48h", 48 * time.Hour, "2d"},
		{"1500ms", 1500 * time.Millisecond, "1.5s"},
		{"0d", 0, "0s"},
	} {
		var d Duration
		if err := d.Set(tt.in); err != nil || time.Duration(d) != tt.want || d.String() != tt.str {
			t.Errorf("Set(%q) = %v, %v (%s); want %v (%s)", tt.in, time.Duration(d), err, d.String(), tt.want, tt.str)
		}
	}
	for _, bad := range []string{"", "d", "-1d", "1.5d", "3x", "99999d"} {
		var d Duration
		if err := d.Set(bad); err == nil {
			t.Errorf("Set(%q) succeeded", bad)
		}
	}
}

func TestSeedCompat(t *testing.T) {
	got := seedCompat([]string{"-gateway", "u", "-since=6h", "-o", "json", "-webhook", "w", "--", "-since"})
	want := []string{"--gateway", "u", "--since=6h", "-o", "json", "--webhook", "w", "--", "-since"}
	if !slices.Equal(got, want) {
		t.Errorf("seedCompat = %q, want %q", got, want)
	}
}

// sample is a report with something in every phase.
func sample() *Report {
	r := healthy()
	r.SchemaVersion, r.GeneratedAt, r.Gateway = 1, t0, "http://127.0.0.1:1199"
	r.Window = Window{Since: "24h", From: t0.Add(-24 * time.Hour), To: t0}
	r.Governance = GovernancePhase{AuditdVersion: "v1.0.0", Auth: "local", PolicyLoaded: true, InfraLoaded: true,
		InfraFile: "examples/infra.yaml", InfraResources: 6, ChainHeadSeq: 12, ChainHeadHash: strings.Repeat("c", 64), ChainState: "verified", PendingApprovals: 1}
	r.Policy.File = "policies.example.yaml"
	r.Policy.Policies = []PolicyOverview{{Name: "production-database-protection", Enabled: true, Enforcement: "enforce",
		Resources: []string{"database[production]"}, Rules: 3, Decisions: 2}}
	r.Policy.Enabled, r.Policy.Rules = 1, 3
	act, dec := analyse([]audit.Event{
		decisionEvent(1, "database:prod-db", decided("allow", "production-database-protection")),
		decisionEvent(2, "database:legacy-db", decided("deny", "")),
		incidentEvent(3, "potential_sql_injection", "secbot", "SQL syntax error\nin output"),
		toolEvent(4, "db-agent", "destructive", "DROP TABLE \x1b[31musers"),
	}, nil)
	r.Activity, r.Decisions = act, dec
	r.Approvals = ApprovalPhase{Pending: 1, Stale: 1, StaleAfter: "30m", Requests: []PendingApproval{{ID: "ap1", Resource: "database:prod-db",
		Action: "write", RequestedBy: "alice", PendingForMS: (45 * time.Minute).Milliseconds(), Quorum: 1, Stale: true}}}
	r.Chain = chainPhase(audit.Report{TotalEvents: 12, BrokenLinks: []audit.BrokenLink{{Seq: 5, EventID: "evt_5", Kind: "hash_mismatch"}}})
	r.Summary = summarize(r)
	return r
}

func TestTextReport(t *testing.T) {
	var b strings.Builder
	if err := writeText(&b, sample()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"govbot compliance report\n",
		"  window     last 24h: 2026-03-08T08:00:00Z to 2026-03-09T08:00:00Z\n",
		"Phase 1 - Governance status\n",
		"  policy     policies.example.yaml, sha256 abababababab…\n",
		"  infra      examples/infra.yaml, 6 resources\n",
		"  chain      head seq 12 (cccccccccccc…), auditd's last verification: verified\n",
		"Phase 2 - Policy overview\n",
		"  default effect deny, enforcing; 1 policy: 1 enabled, 0 disabled, 0 audit-only; 3 rules\n",
		"Phase 3 - Audit activity\n",
		"  4 events in the window, seq 1-4\n",
		"  incidents  1: potential_sql_injection 1\n",
		"Phase 4 - Policy decisions per resource\n",
		"Phase 5 - Pending approvals\n",
		"  1 pending, 1 stale (pending over 30m)\n",
		"Phase 6 - Chain integrity\n",
		"  BROKEN: 1 broken link in 12 events\n",
		"Phase 7 - Summary\n",
		"  ALERT    CHAIN_BROKEN  the audit chain does not verify",
		"  WARNING  NO_MATCH_DECISIONS  database:legacy-db: 1 decision matched no policy",
		"  WARNING  STALE_APPROVAL  approval ap1",
		"  status: ALERTS (1 alert, 4 warnings; exit 2)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, re := range []string{
		`(?m)^  RESOURCE +ALLOW +DENY +APPROVAL +NO MATCH +TOTAL$`,
		`(?m)^  database:legacy-db +0 +0 +0 +1 +1$`,
		`(?m)^  total +1 +0 +0 +1 +2$`,
		`(?m)^  ap1 +database:prod-db +write +alice +45m +0/1 +yes$`,
		`(?m)^  5 +evt_5 +hash_mismatch$`,
	} {
		if !regexpMatch(re, out) {
			t.Errorf("report lacks a line matching %s\n%s", re, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("an escape sequence from an event reached the terminal")
	}
	for line := range strings.Lines(out) {
		if strings.HasSuffix(line, " \n") {
			t.Errorf("trailing blanks: %q", line)
		}
	}
}

func TestJSONReport(t *testing.T) {
	var b strings.Builder
	if err := writeJSON(&b, sample()); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("not one line: %q", b.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(b.String()), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema_version", "generated_at", "gateway", "window", "governance", "policy", "activity",
		"decisions", "approvals", "chain", "summary"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q member", k)
		}
	}
	if m["schema_version"] != 1.0 {
		t.Errorf("schema_version = %v", m["schema_version"])
	}
	s := m["summary"].(map[string]any)
	if s["status"] != "alerts" || s["exit_code"] != 2.0 {
		t.Errorf("summary = %v", s)
	}
}

func TestSlackMessageIsEscaped(t *testing.T) {
	r := sample()
	r.Summary.Warnings = append(r.Summary.Warnings, Finding{Code: "X", Message: "<!channel> & <http://evil|click>"})
	msg := slackSummary(r)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		t.Fatal(err)
	}
	// slack-go's block types marshal themselves, with HTML escaping.
	s := strings.NewReplacer(`\u0026`, "&", `\u003c`, "<", `\u003e`, ">").Replace(b.String())
	if strings.Contains(s, "<!channel>") || strings.Contains(s, "<http://evil") {
		t.Errorf("unescaped mention or link: %s", s)
	}
	if !strings.Contains(s, "&lt;!channel&gt; &amp; &lt;http://evil|click&gt;") {
		t.Errorf("message lacks the escaped text: %s", s)
	}
	if !strings.Contains(msg.Text, "govbot compliance report: ALERTS (1 alert, 5 warnings)") {
		t.Errorf("text = %q", msg.Text)
	}
}

func TestCut(t *testing.T) {
	if got := cut("abc &amp; def", 7); got != "abc …" {
		t.Errorf("cut split an escape: %q", got)
	}
	if got := cut("short", 10); got != "short" {
		t.Errorf("cut = %q", got)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T/B/SECRET": "https://hooks.slack.com/…",
		"http://127.0.0.1:9/":                         "http://127.0.0.1:9",
		"http://h/?token=x":                           "http://h/…",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
