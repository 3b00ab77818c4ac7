package govreport

import (
	"slices"
	"time"
)

// The trend block (issue 20 "history": helpdesk's govbot keeps runs,
// alerts and warnings over time): each run is kept in govbot's --history
// file, and a report compares itself with the runs before it.

// Run is one report as the history keeps it: its verdict and counts, not
// its findings' texts.
type Run struct {
	GeneratedAt time.Time `json:"generated_at"`
	Gateway     string    `json:"gateway"`
	Since       string    `json:"since"`
	Status      string    `json:"status"`
	ExitCode    int       `json:"exit_code"`
	Alerts      int       `json:"alerts"`
	Warnings    int       `json:"warnings"`
	Events      int64     `json:"events"`
	Decisions   int64     `json:"decisions"`
	// Codes are the report's distinct finding codes (alerts, warnings
	// and notices), sorted.
	Codes []string `json:"codes"`
}

// RunOf is r as the history keeps it.
func RunOf(r *Report) Run {
	codes := []string{}
	for _, f := range slices.Concat(r.Summary.Alerts, r.Summary.Warnings, r.Summary.Notices) {
		codes = append(codes, f.Code)
	}
	slices.Sort(codes)
	return Run{
		GeneratedAt: r.GeneratedAt.UTC(), Gateway: r.Gateway, Since: r.Window.Since,
		Status: r.Summary.Status, ExitCode: r.Summary.ExitCode,
		Alerts: len(r.Summary.Alerts), Warnings: len(r.Summary.Warnings),
		Events: r.Activity.Events, Decisions: r.Decisions.Total,
		Codes: slices.Compact(codes),
	}
}

// UnreachableRun is a run that found the gateway unreachable at now,
// kept in the history so that the trend shows the gap.
func UnreachableRun(gateway string, since time.Duration, now time.Time) Run {
	return Run{GeneratedAt: now.UTC(), Gateway: gateway, Since: FormatDuration(since), Status: StatusUnreachable, ExitCode: 1, Codes: []string{}}
}

// MaxTrendRuns is how many runs the trend block lists.
const MaxTrendRuns = 10

// Trend is the report's history block: this run against the earlier ones
// the history keeps for the same gateway.
type Trend struct {
	// Runs counts the runs kept, this one included, and Since is when the
	// oldest was made.
	Runs      int       `json:"runs"`
	Since     time.Time `json:"since"`
	Retention string    `json:"retention"` // --history-retention: 90d
	// RunsWithAlerts and RunsWithWarnings count the runs kept (this one
	// included) whose status was alerts, or warnings.
	RunsWithAlerts   int `json:"runs_with_alerts"`
	RunsWithWarnings int `json:"runs_with_warnings"`
	// RunsUnreachable counts the runs that found auditd unreachable.
	RunsUnreachable int `json:"runs_unreachable"`
	// Previous is the run before this one; nil on the first.
	Previous *Run `json:"previous,omitempty"`
	// AlertsChange and WarningsChange are this run's counts minus the
	// previous run's (0 on the first).
	AlertsChange   int `json:"alerts_change"`
	WarningsChange int `json:"warnings_change"`
	// NewCodes are finding codes this run has and the previous did not;
	// ResolvedCodes the other way round. Both are empty on the first run.
	NewCodes      []string `json:"new_codes"`
	ResolvedCodes []string `json:"resolved_codes"`
	// Recent are the latest MaxTrendRuns runs, oldest first, this one
	// last.
	Recent []Run `json:"recent"`
}

// NewTrend compares current with the earlier runs (any order; only those
// of current's gateway, made before it, count). retention is shown as
// given.
func NewTrend(earlier []Run, current Run, retention string) *Trend {
	var runs []Run
	for _, r := range earlier {
		if r.Gateway == current.Gateway && r.GeneratedAt.Before(current.GeneratedAt) {
			runs = append(runs, r)
		}
	}
	slices.SortStableFunc(runs, func(x, y Run) int { return x.GeneratedAt.Compare(y.GeneratedAt) })
	runs = append(runs, current)
	for i := range runs {
		if runs[i].Codes == nil {
			runs[i].Codes = []string{}
		}
	}
	current = runs[len(runs)-1]

	t := &Trend{Runs: len(runs), Since: runs[0].GeneratedAt, Retention: retention, NewCodes: []string{}, ResolvedCodes: []string{}}
	for _, r := range runs {
		switch r.Status {
		case StatusAlerts:
			t.RunsWithAlerts++
		case StatusWarnings:
			t.RunsWithWarnings++
		case StatusUnreachable:
			t.RunsUnreachable++
		}
	}
	if len(runs) > 1 {
		prev := runs[len(runs)-2]
		t.Previous = &prev
		t.AlertsChange = current.Alerts - prev.Alerts
		t.WarningsChange = current.Warnings - prev.Warnings
		for _, c := range current.Codes {
			if !slices.Contains(prev.Codes, c) {
				t.NewCodes = append(t.NewCodes, c)
			}
		}
		for _, c := range prev.Codes {
			if !slices.Contains(current.Codes, c) {
				t.ResolvedCodes = append(t.ResolvedCodes, c)
			}
		}
	}
	t.Recent = lastN(runs, MaxTrendRuns)
	return t
}
