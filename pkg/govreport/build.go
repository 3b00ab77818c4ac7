package govreport

import (
	"fmt"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
)

// Input is what a report is made of: auditd's answers, the analysed
// window, and the report's own clock and settings.
type Input struct {
	// Now is the report's time: the window's end and the age of pending
	// approvals.
	Now        time.Time
	Gateway    string
	Since      time.Duration // the window: --since
	StaleAfter time.Duration // --stale-after
	Status     govapi.Status // phase 1, GET /api/v1/governance
	// Analyzer has seen the window's events (phase 3); New finishes it
	// with Lookups.
	Analyzer *Analyzer
	Lookups  Lookups
	Pending  []approval.Request // phase 5
	Verify   audit.Report       // phase 6
}

// New makes the report of in: phases 1 to 6 and the summary (phase 7).
// The trend is added by the caller that keeps a history (WithTrend).
func New(in Input) *Report {
	now := in.Now.UTC()
	act, dec := in.Analyzer.Finish(in.Lookups)
	r := &Report{
		SchemaVersion: 1,
		GeneratedAt:   now,
		Gateway:       in.Gateway,
		Window:        Window{Since: FormatDuration(in.Since), From: now.Add(-in.Since), To: now},
		Governance:    governancePhase(in.Status),
		Policy:        policyPhase(in.Status.Policy, dec.ByPolicy, in.Analyzer.RuleDecisions(in.Status.Policy.SHA256), dec.Total),
		Activity:      act,
		Decisions:     dec,
		Approvals:     approvalPhase(in.Pending, now, in.StaleAfter),
		Chain:         chainPhase(in.Verify),
	}
	r.Summary = summarize(r)
	return r
}

// FormatDuration is d without the zero units Go prints: 24h, 30m, 1h30m,
// and whole days beyond two: 7d.
func FormatDuration(d time.Duration) string {
	if d >= 48*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
