package govreport

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
)

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
	unknown := decided("deny", "")
	unknown.Note = "resource database:legacy-db is not in the infra file examples/infra.yaml, so it has no tags"
	act, dec := analyse([]audit.Event{
		decisionEvent(1, "database:prod-db", decided("allow", "production-database-protection")),
		decisionEvent(2, "database:legacy-db", unknown),
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
	if err := WriteText(&b, sample()); err != nil {
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
		"  ALERT    UNCOVERED_EXECUTIONS  1 write or destructive tool execution of 1 in the window has no policy decision (latest: seq 4 by db-agent on database:prod-db: \"DROP TABLE \\x1b[31musers\"); an enforcement point ran them without asking auditd (POST /api/v1/decisions): check that every agent runs behind gate\n",
		"  no match   1 on resources auditd did not know (not in the infra file), 0 on known resources no policy covers\n",
		"  coverage   1 write or destructive tool execution, 1 WITHOUT a policy decision\n",
		"  status: ALERTS (2 alerts, 4 warnings; exit 2)\n",
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
	if err := cli.WriteJSON(&b, sample()); err != nil {
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
	msg := SlackSummary(r)
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
	if !strings.Contains(msg.Text, "govbot compliance report: ALERTS (2 alerts, 5 warnings)") {
		t.Errorf("text = %q", msg.Text)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
