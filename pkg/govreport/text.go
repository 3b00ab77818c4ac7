package govreport

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/table"
	"github.com/govkit/govkit/pkg/termtext"
)

// maxTextRows bounds the rows of a text table: the report is read in a
// terminal and in cron mail, and JSON carries the rest.
const maxTextRows = 50

// WriteText writes the report for people: a terminal or a cron mail, so
// plain ASCII layout, no colour, one section per phase. Every string that
// came from a client is made safe for a terminal (termtext.OneLine).
func WriteText(w io.Writer, r *Report) error {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }

	p("govbot compliance report")
	p("  gateway    %s", r.Gateway)
	p("  window     last %s: %s to %s", r.Window.Since, ts(r.Window.From), ts(r.Window.To))
	p("  generated  %s", ts(r.GeneratedAt))

	// Phase 1.
	g := r.Governance
	p("")
	p("Phase 1 - Governance status")
	up := ""
	if !g.StartedAt.IsZero() {
		up = fmt.Sprintf(", up since %s", ts(g.StartedAt))
	}
	p("  auditd     %s%s, auth %s", cleanOr(g.AuditdVersion, "unknown version"), up, cleanOr(g.Auth, "unknown"))
	if g.PolicyLoaded {
		p("  policy     %s", describePolicy(r.Policy))
	} else {
		p("  policy     none loaded")
	}
	if g.InfraLoaded {
		p("  infra      %s, %s", cleanOr(g.InfraFile, "loaded"), cli.Plural(int64(g.InfraResources), "resource", "resources"))
	} else {
		p("  infra      none loaded (resources get their tags from the request only)")
	}
	head := "empty"
	if g.ChainHeadSeq > 0 {
		head = fmt.Sprintf("head seq %d (%s)", g.ChainHeadSeq, short(g.ChainHeadHash, 12))
	}
	p("  chain      %s, auditd's last verification: %s", head, cleanOr(g.ChainState, "unknown"))
	p("  approvals  %d pending", g.PendingApprovals)

	// Phase 2.
	pol := r.Policy
	p("")
	p("Phase 2 - Policy overview")
	if !pol.Loaded {
		p("  no policy loaded")
	} else {
		mode := "enforcing"
		if pol.DryRun {
			mode = "DRY RUN (nothing enforced)"
		}
		p("  default effect %s, %s; %s: %d enabled, %d disabled, %d audit-only; %s",
			cleanOr(pol.DefaultEffect, "deny"), mode, cli.Plural(int64(len(pol.Policies)), "policy", "policies"),
			pol.Enabled, pol.Disabled, pol.AuditOnly, cli.Plural(int64(pol.Rules), "rule", "rules"))
		if pol.ReloadError != "" {
			p("  last reload FAILED: %s", flatten(pol.ReloadError, 300))
		}
		if len(pol.Policies) > 0 {
			rows := [][]string{}
			for _, x := range pol.Policies {
				enabled := "yes"
				if !x.Enabled {
					enabled = "no"
				}
				rows = append(rows, []string{termtext.OneLine(x.Name), enabled, termtext.OneLine(x.Enforcement),
					strconv.Itoa(x.Rules), strconv.FormatInt(x.Decisions, 10), termtext.OneLine(strings.Join(x.Resources, " "))})
			}
			writeTable(&b, []string{"POLICY", "ENABLED", "ENFORCEMENT", "RULES", "DECISIONS", "RESOURCES"}, rows)
		}
		if pol.DeadPolicies+pol.DeadRules > 0 {
			p("  decided nothing in the window (rules from 0):")
			n := 0
			for _, x := range pol.Policies {
				if !x.Dead && len(x.DeadRules) == 0 {
					continue
				}
				if n++; n > maxTextRows {
					p("    … more in -o json")
					break
				}
				if x.Dead {
					p("    %s: the whole policy", termtext.OneLine(x.Name))
					continue
				}
				p("    %s: %s of %d", termtext.OneLine(x.Name), x.deadRules(), x.Rules)
			}
		}
	}

	// Phase 3.
	a := r.Activity
	p("")
	p("Phase 3 - Audit activity")
	if a.Events == 0 {
		p("  no events in the window")
	} else {
		p("  %s in the window, seq %d-%d", cli.Plural(a.Events, "event", "events"), a.FirstSeq, a.LastSeq)
	}
	if a.Capped {
		p("  CAPPED: the window holds more than %d events (--max-events); only seq %d-%d were analysed", a.MaxEvents, a.FirstSeq, a.LastSeq)
	}
	if a.Events > 0 {
		p("  by type    %s", breakdown(a.ByEventType))
		p("  by agent   %s", breakdown(a.ByAgent))
		p("  by action  %s", breakdown(a.ByActionClass))
	}
	if a.IncidentsTotal == 0 {
		p("  incidents  none")
	} else {
		p("  incidents  %d: %s", a.IncidentsTotal, breakdown(a.IncidentTypes))
		rows := [][]string{}
		for _, in := range lastN(a.Incidents, maxTextRows) {
			rows = append(rows, []string{strconv.FormatInt(in.Seq, 10), ts(in.Timestamp), termtext.OneLine(in.Type),
				termtext.OneLine(in.Severity), termtext.OneLine(in.Source), flatten(in.Message, 120)})
		}
		writeTable(&b, []string{"SEQ", "TIME", "TYPE", "SEVERITY", "SOURCE", "MESSAGE"}, rows)
	}
	if a.UnapprovedTotal > 0 {
		p("  destructive actions without a consumed approval: %d", a.UnapprovedTotal)
		rows := [][]string{}
		for _, u := range lastN(a.Unapproved, maxTextRows) {
			rows = append(rows, []string{strconv.FormatInt(u.Seq, 10), ts(u.Timestamp), termtext.OneLine(u.Agent),
				termtext.OneLine(u.Resource), flatten(u.Command, 80)})
		}
		writeTable(&b, []string{"SEQ", "TIME", "AGENT", "RESOURCE", "COMMAND"}, rows)
	}

	// Phase 4.
	d := r.Decisions
	p("")
	p("Phase 4 - Policy decisions per resource")
	if d.Total == 0 {
		p("  no policy decisions in the window")
	} else {
		rows := [][]string{}
		for _, rd := range firstN(d.Resources, maxTextRows) {
			rows = append(rows, []string{termtext.OneLine(rd.Resource), itoa(rd.Allow), itoa(rd.Deny),
				itoa(rd.RequireApproval), itoa(rd.NoMatch), itoa(rd.Total)})
		}
		if n := len(d.Resources); n > maxTextRows {
			rows = append(rows, []string{fmt.Sprintf("(%d more in -o json)", n-maxTextRows), "", "", "", "", ""})
		}
		rows = append(rows, []string{"total", itoa(d.Allow), itoa(d.Deny), itoa(d.RequireApproval), itoa(d.NoMatch), itoa(d.Total)})
		writeTable(&b, []string{"RESOURCE", "ALLOW", "DENY", "APPROVAL", "NO MATCH", "TOTAL"}, rows)
	}
	if d.Unreadable > 0 {
		p("  %s could not be read", cli.Plural(d.Unreadable, "policy_decision event", "policy_decision events"))
	}
	if d.NoMatch > 0 {
		p("  no match   %d on resources auditd did not know (not in the infra file), %d on known resources no policy covers",
			d.NoMatchUnknown, d.NoMatch-d.NoMatchUnknown)
	}
	cv := d.Coverage
	switch {
	case cv.Executions == 0:
		p("  coverage   no write or destructive tool executions in the window")
	case cv.UncoveredTotal == 0:
		p("  coverage   %s, all with a policy decision", cli.Plural(cv.Executions, "write or destructive tool execution", "write or destructive tool executions"))
	default:
		p("  coverage   %s, %d WITHOUT a policy decision", cli.Plural(cv.Executions, "write or destructive tool execution", "write or destructive tool executions"), cv.UncoveredTotal)
		rows := [][]string{}
		for _, u := range lastN(cv.Uncovered, maxTextRows) {
			rows = append(rows, []string{strconv.FormatInt(u.Seq, 10), ts(u.Timestamp), termtext.OneLine(u.Agent), termtext.OneLine(u.ActionClass),
				termtext.OneLine(u.Resource), flatten(u.Command, 80)})
		}
		writeTable(&b, []string{"SEQ", "TIME", "AGENT", "ACTION", "RESOURCE", "COMMAND"}, rows)
	}
	if cv.Unchecked > 0 {
		p("  coverage   %s not checked: more than govbot keeps in memory; shorten --since", cli.Plural(cv.Unchecked, "execution", "executions"))
	}

	// Phase 5.
	ap := r.Approvals
	p("")
	p("Phase 5 - Pending approvals")
	if ap.Pending == 0 {
		p("  none pending")
	} else {
		p("  %d pending, %d stale (pending over %s)", ap.Pending, ap.Stale, ap.StaleAfter)
		rows := [][]string{}
		for _, q := range firstN(ap.Requests, maxTextRows) {
			stale := "no"
			if q.Stale {
				stale = "yes"
			}
			rows = append(rows, []string{termtext.OneLine(q.ID), termtext.OneLine(q.Resource), termtext.OneLine(q.Action), termtext.OneLine(q.RequestedBy),
				cli.Approx(time.Duration(q.PendingForMS) * time.Millisecond), fmt.Sprintf("%d/%d", q.Approvals, q.Quorum), stale})
		}
		writeTable(&b, []string{"ID", "RESOURCE", "ACTION", "REQUESTED BY", "PENDING FOR", "VOTES", "STALE"}, rows)
	}

	// Phase 6.
	c := r.Chain
	p("")
	p("Phase 6 - Chain integrity")
	switch {
	case c.Verified && c.TotalEvents == 0:
		p("  verified: the chain is empty")
	case c.Verified:
		p("  verified: %s, seq %d-%d, head %s", cli.Plural(c.TotalEvents, "event", "events"), c.FirstEvent.Seq, c.LastEvent.Seq, short(c.LastEvent.EventHash, 12))
	default:
		p("  BROKEN: %s in %d events", cli.Plural(int64(c.BrokenLinksTotal), "broken link", "broken links"), c.TotalEvents)
		links, mismatches := [][]string{}, [][]string{}
		for _, l := range c.BrokenLinks {
			switch {
			case l.Kind != audit.KindApprovalMismatch:
				if len(links) < maxTextRows {
					links = append(links, []string{strconv.FormatInt(l.Seq, 10), termtext.OneLine(l.EventID), termtext.OneLine(l.Kind)})
				}
			case len(mismatches) < maxTextRows:
				mismatches = append(mismatches, []string{strconv.FormatInt(l.Seq, 10), termtext.OneLine(l.ApprovalID), l.Kind, flatten(l.Detail, 200)})
			}
		}
		if len(links) > 0 || len(mismatches) == 0 {
			writeTable(&b, []string{"SEQ", "EVENT_ID", "KIND"}, links)
		}
		// The approvals table against the chain (issue 13): which approval,
		// and what differs.
		if len(mismatches) > 0 {
			writeTable(&b, []string{"SEQ", "APPROVAL", "KIND", "DETAIL"}, mismatches)
		}
	}

	// Phase 7.
	s := r.Summary
	p("")
	p("Phase 7 - Summary")
	for _, f := range s.Alerts {
		p("  ALERT    %s  %s", f.Code, f.Message)
	}
	for _, f := range s.Warnings {
		p("  WARNING  %s  %s", f.Code, f.Message)
	}
	for _, f := range s.Notices {
		p("  NOTICE   %s  %s", f.Code, f.Message)
	}
	if len(s.Alerts)+len(s.Warnings) == 0 {
		p("  no alerts, no warnings")
	}
	p("  status: %s (%s, %s; exit %d)", strings.ToUpper(s.Status), cli.Plural(int64(len(s.Alerts)), "alert", "alerts"),
		cli.Plural(int64(len(s.Warnings)), "warning", "warnings"), s.ExitCode)

	if t := r.Trend; t != nil {
		writeTrend(&b, t)
	}

	_, err := w.Write(b.Bytes())
	return err
}

// writeTrend writes the trend block (--history).
func writeTrend(b *bytes.Buffer, t *Trend) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	p("")
	p("Trend - %s since %s (history kept %s)", plural(t.Runs, "run", "runs"), ts(t.Since), t.Retention)
	p("  runs with alerts %d, with warnings only %d, unreachable %d, of %d", t.RunsWithAlerts, t.RunsWithWarnings, t.RunsUnreachable, t.Runs)
	if t.Previous == nil {
		p("  first run in the history: nothing to compare with")
	} else {
		pr := t.Previous
		p("  previous   %s: %s (%s, %s)", ts(pr.GeneratedAt), strings.ToUpper(pr.Status),
			plural(pr.Alerts, "alert", "alerts"), plural(pr.Warnings, "warning", "warnings"))
		p("  change     alerts %s, warnings %s", signed(t.AlertsChange), signed(t.WarningsChange))
		if len(t.NewCodes) > 0 {
			p("  new        %s", termtext.OneLine(strings.Join(t.NewCodes, ", ")))
		}
		if len(t.ResolvedCodes) > 0 {
			p("  resolved   %s", termtext.OneLine(strings.Join(t.ResolvedCodes, ", ")))
		}
	}
	rows := [][]string{}
	for _, r := range t.Recent {
		rows = append(rows, []string{ts(r.GeneratedAt), termtext.OneLine(r.Since), strings.ToUpper(termtext.OneLine(r.Status)),
			strconv.Itoa(r.Alerts), strconv.Itoa(r.Warnings), itoa(r.Events), itoa(r.Decisions)})
	}
	writeTable(b, []string{"RUN", "WINDOW", "STATUS", "ALERTS", "WARNINGS", "EVENTS", "DECISIONS"}, rows)
}

// signed is n with its sign: +1, 0, -2.
func signed(n int) string {
	if n > 0 {
		return "+" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func plural(n int, one, many string) string { return cli.Plural(int64(n), one, many) }

// describePolicy is the one-line description of the loaded policy.
func describePolicy(p PolicyPhase) string {
	s := cleanOr(p.File, "loaded")
	if p.SHA256 != "" {
		s += ", sha256 " + short(p.SHA256, 12)
	}
	if p.LoadedAt != nil {
		s += ", loaded " + p.LoadedAt.UTC().Format(time.RFC3339)
	}
	return s
}

// writeTable writes an aligned table without borders, indented two
// spaces (as approvals list does).
func writeTable(w *bytes.Buffer, header []string, rows [][]string) {
	out, err := table.Render("  ", header, rows)
	if err != nil {
		// Cannot happen with string cells; say so rather than lose rows.
		fmt.Fprintf(w, "  (table: %v)\n", err)
		return
	}
	w.WriteString(out)
}

// breakdown is "a 5, b 3, c 1", highest first, at most ten names.
func breakdown(m map[string]int64) string {
	keys := sortedKeys(m)
	if len(keys) == 0 {
		return "-"
	}
	var parts []string
	for i, k := range keys {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("… %d more", len(keys)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", termtext.OneLine(k), m[k]))
	}
	return strings.Join(parts, ", ")
}

func firstN[T any](s []T, n int) []T { return s[:min(len(s), n)] }
func lastN[T any](s []T, n int) []T  { return s[len(s)-min(len(s), n):] }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// cleanOr is termtext.OneLine(s), or def when s is empty.
func cleanOr(s, def string) string {
	if s == "" {
		return def
	}
	return termtext.OneLine(s)
}

// short is the first n characters of a hash, with "…" when cut.
func short(s string, n int) string {
	if len(s) <= n {
		return termtext.OneLine(s)
	}
	return termtext.OneLine(termtext.Cut(s, n)) + termtext.Ellipsis
}

// flatten puts multi-line text on one safe line of at most n bytes.
func flatten(s string, n int) string {
	return termtext.OneLine(termtext.Truncate(strings.Join(strings.Fields(s), " "), n))
}
