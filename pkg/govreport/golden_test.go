package govreport

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/cli"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// full is sample with the issue 20 checks and a history: dead rules, a
// no_match on a known resource, and a trend over two earlier runs.
func full() *Report {
	r := sample()
	r.Policy.Policies = append(r.Policy.Policies, PolicyOverview{Name: "legacy", Enabled: true, Enforcement: "enforce",
		Resources: []string{"database:legacy-*"}, Rules: 1, RuleDecisions: []int64{0}, Dead: true, DeadRules: []int{}})
	r.Policy.Policies[0].RuleDecisions, r.Policy.Policies[0].DeadRules = []int64{2, 0, 0}, []int{1, 2}
	r.Policy.DeadPolicies, r.Policy.DeadRules = 1, 2
	r.Decisions.Resources = append(r.Decisions.Resources, ResourceDecisions{Resource: "database:analytics", NoMatch: 1, Total: 1, Tags: []string{"staging"}})
	r.Decisions.NoMatch++
	r.Decisions.Total++
	r.Summary = summarize(r)
	run := func(ago time.Duration, status string, alerts, warnings int, codes ...string) Run {
		return Run{GeneratedAt: t0.Add(-ago), Gateway: r.Gateway, Since: "24h", Status: status, Alerts: alerts, Warnings: warnings,
			Events: 3, Decisions: 2, Codes: codes}
	}
	r.Trend = NewTrend([]Run{
		run(48*time.Hour, StatusHealthy, 0, 0),
		run(24*time.Hour, StatusWarnings, 0, 2, "NO_MATCH_DECISIONS", "STALE_APPROVAL", "TAMPERING_INCIDENT"),
	}, RunOf(r), "90d")
	return r
}

func TestGoldenText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, full()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt.golden", b.Bytes())
}

func TestGoldenJSON(t *testing.T) {
	var b bytes.Buffer
	if err := cli.WriteJSON(&b, full()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", b.Bytes())
}
