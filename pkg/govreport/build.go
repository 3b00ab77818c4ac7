package govreport

import (
	"fmt"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
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
	// Rules, when set, names the rules of the policy file in force (from
	// govbot's --policy, RuleLabels): dead rules are then named by what
	// they do and where, not only by index.
	Rules map[string][]string
}

// RuleLabels names every rule of cfg by policy and index: "write,
// destructive: require_approval (line 14)".
func RuleLabels(cfg *policy.Config) map[string][]string {
	out := map[string][]string{}
	for _, p := range cfg.Policies {
		labels := make([]string, len(p.Rules))
		for i, r := range p.Rules {
			actions := make([]string, len(r.Actions))
			for j, a := range r.Actions {
				actions[j] = string(a)
			}
			labels[i] = strings.Join(actions, ", ") + ": " + string(r.Effect)
			if r.Line > 0 {
				labels[i] += fmt.Sprintf(" (line %d)", r.Line)
			}
		}
		out[p.Name] = labels
	}
	return out
}

// New makes the report of in: phases 1 to 6 and the summary (phase 7).
// The trend is added by the caller that keeps a history (WithTrend).
func New(in Input) *Report {
	now := in.Now.UTC()
	act, dec := in.Analyzer.Finish(in.Lookups)
	labels := in.Rules
	if labels == nil {
		labels = in.Analyzer.RuleLabels(in.Status.Policy.SHA256)
	}
	r := &Report{
		SchemaVersion: 1,
		GeneratedAt:   now,
		Gateway:       in.Gateway,
		Window:        Window{Since: FormatDuration(in.Since), From: now.Add(-in.Since), To: now},
		Governance:    governancePhase(in.Status),
		Policy: policyPhase(in.Status.Policy, dec.ByPolicy, in.Analyzer.RuleDecisions(in.Status.Policy.SHA256),
			labels, dec.Total),
		Activity:  act,
		Decisions: dec,
		Approvals: approvalPhase(in.Pending, now, in.StaleAfter),
		Chain:     chainPhase(in.Verify),
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
