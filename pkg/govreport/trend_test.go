package govreport

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/policy"
)

func run(hoursAgo int, status string, alerts, warnings int, codes ...string) Run {
	if codes == nil {
		codes = []string{}
	}
	return Run{GeneratedAt: t0.Add(-time.Duration(hoursAgo) * time.Hour), Gateway: "http://a", Since: "24h", Status: status,
		Alerts: alerts, Warnings: warnings, Codes: codes}
}

func TestTrend(t *testing.T) {
	now := run(0, StatusAlerts, 1, 2, "CHAIN_BROKEN", "DEAD_RULES", "STALE_APPROVAL")
	tests := []struct {
		name    string
		earlier []Run
		want    Trend
	}{
		{
			name: "first run",
			want: Trend{Runs: 1, Since: now.GeneratedAt, RunsWithAlerts: 1, NewCodes: []string{}, ResolvedCodes: []string{}, Recent: []Run{now}},
		},
		{
			name: "compared with the previous run of the same gateway, in time order",
			earlier: []Run{
				run(24, StatusWarnings, 0, 2, "DEAD_RULES", "NO_MATCH_DECISIONS"),
				run(48, StatusHealthy, 0, 0),
				run(72, StatusUnreachable, 0, 0),
				{GeneratedAt: t0.Add(-time.Hour), Gateway: "http://other", Status: StatusAlerts, Alerts: 9},
				{GeneratedAt: t0.Add(time.Hour), Gateway: "http://a", Status: StatusAlerts, Alerts: 9}, // a clock set back: later runs do not count
			},
			want: Trend{Runs: 4, Since: t0.Add(-72 * time.Hour), RunsWithAlerts: 1, RunsWithWarnings: 1, RunsUnreachable: 1,
				Previous: ptr(run(24, StatusWarnings, 0, 2, "DEAD_RULES", "NO_MATCH_DECISIONS")), AlertsChange: 1, WarningsChange: 0,
				NewCodes: []string{"CHAIN_BROKEN", "STALE_APPROVAL"}, ResolvedCodes: []string{"NO_MATCH_DECISIONS"},
				Recent: []Run{run(72, StatusUnreachable, 0, 0), run(48, StatusHealthy, 0, 0), run(24, StatusWarnings, 0, 2, "DEAD_RULES", "NO_MATCH_DECISIONS"), now}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Retention = "90d"
			got := NewTrend(tt.earlier, now, "90d")
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("trend =\n%+v\nwant\n%+v", *got, tt.want)
			}
		})
	}
}

func TestTrendListsTheLatestRuns(t *testing.T) {
	var earlier []Run
	for i := range 25 {
		earlier = append(earlier, run(i+1, StatusHealthy, 0, 0))
	}
	got := NewTrend(earlier, run(0, StatusHealthy, 0, 0), "7d")
	if got.Runs != 26 || len(got.Recent) != MaxTrendRuns || !got.Recent[MaxTrendRuns-1].GeneratedAt.Equal(t0) ||
		!slices.IsSortedFunc(got.Recent, func(x, y Run) int { return x.GeneratedAt.Compare(y.GeneratedAt) }) {
		t.Errorf("trend = %+v", got)
	}
}

func TestUnreachableRun(t *testing.T) {
	want := Run{GeneratedAt: t0, Gateway: "http://a", Since: "7d", Status: StatusUnreachable, ExitCode: 1, Codes: []string{}}
	if got := UnreachableRun("http://a", 7*24*time.Hour, t0.In(time.FixedZone("x", 3600))); !reflect.DeepEqual(got, want) {
		t.Errorf("UnreachableRun = %+v", got)
	}
}

func TestRunOf(t *testing.T) {
	r := healthy()
	r.GeneratedAt, r.Gateway, r.Window.Since = t0, "http://a", "6h"
	r.Activity.Events, r.Decisions.Total = 12, 5
	r.Summary = Summary{Status: StatusAlerts, ExitCode: 2,
		Alerts:   []Finding{{Code: "CHAIN_BROKEN"}},
		Warnings: []Finding{{Code: "STALE_APPROVAL"}, {Code: "NO_MATCH_DECISIONS"}, {Code: "STALE_APPROVAL"}}}
	want := Run{GeneratedAt: t0, Gateway: "http://a", Since: "6h", Status: StatusAlerts, ExitCode: 2, Alerts: 1, Warnings: 3,
		Events: 12, Decisions: 5, Codes: []string{"CHAIN_BROKEN", "NO_MATCH_DECISIONS", "STALE_APPROVAL"}}
	if got := RunOf(r); !reflect.DeepEqual(got, want) {
		t.Errorf("RunOf = %+v\nwant %+v", got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestRuleLabels(t *testing.T) {
	cfg, err := policy.Load(strings.NewReader(`version: "1"
policies:
  - name: prod
    resources: [{type: database}]
    rules:
      - action: read
        effect: allow
      - action: [write, destructive]
        effect: require_approval
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"prod": {"read: allow (line 6)", "write, destructive: require_approval (line 8)"}}
	if got := RuleLabels(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("RuleLabels = %q, want %q", got, want)
	}
}
