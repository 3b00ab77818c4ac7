package govbot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// writeJSON writes the report as one JSON object on one line (DESIGN §3).
func writeJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// maxTextRows bounds the rows of a text table: the report is read in a
// terminal and in cron mail, and JSON carries the rest.
const maxTextRows = 50

// writeText writes the report for people: a terminal or a cron mail, so
// plain ASCII layout, no colour, one section per phase. Every string that
// came from a client is made safe for a terminal (oneLine).
func writeText(w io.Writer, r *Report) error {
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
		p("  infra      %s, %s", cleanOr(g.InfraFile, "loaded"), plural(int64(g.InfraResources), "resource"))
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
			cleanOr(pol.DefaultEffect, "deny"), mode, plural(int64(len(pol.Policies)), "policy"),
			pol.Enabled, pol.Disabled, pol.AuditOnly, plural(int64(pol.Rules), "rule"))
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
				rows = append(rows, []string{oneLine(x.Name), enabled, oneLine(x.Enforcement),
					strconv.Itoa(x.Rules), strconv.FormatInt(x.Decisions, 10), oneLine(strings.Join(x.Resources, " "))})
			}
			table(&b, []string{"POLICY", "ENABLED", "ENFORCEMENT", "RULES", "DECISIONS", "RESOURCES"}, rows)
		}
	}

	// Phase 3.
	a := r.Activity
	p("")
	p("Phase 3 - Audit activity")
	if a.Events == 0 {
		p("  no events in the window")
	} else {
		p("  %s in the window, seq %d-%d", plural(a.Events, "event"), a.FirstSeq, a.LastSeq)
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
			rows = append(rows, []string{strconv.FormatInt(in.Seq, 10), ts(in.Timestamp), oneLine(in.Type),
				oneLine(in.Severity), oneLine(in.Source), flatten(in.Message, 120)})
		}
		table(&b, []string{"SEQ", "TIME", "TYPE", "SEVERITY", "SOURCE", "MESSAGE"}, rows)
	}
	if a.UnapprovedTotal > 0 {
		p("  destructive actions without an approved approval: %d", a.UnapprovedTotal)
		rows := [][]string{}
		for _, u := range lastN(a.Unapproved, maxTextRows) {
			rows = append(rows, []string{strconv.FormatInt(u.Seq, 10), ts(u.Timestamp), oneLine(u.Agent),
				oneLine(u.Resource), flatten(u.Command, 80)})
		}
		table(&b, []string{"SEQ", "TIME", "AGENT", "RESOURCE", "COMMAND"}, rows)
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
			rows = append(rows, []string{oneLine(rd.Resource), itoa(rd.Allow), itoa(rd.Deny),
				itoa(rd.RequireApproval), itoa(rd.NoMatch), itoa(rd.Total)})
		}
		if n := len(d.Resources); n > maxTextRows {
			rows = append(rows, []string{fmt.Sprintf("(%d more in -o json)", n-maxTextRows), "", "", "", "", ""})
		}
		rows = append(rows, []string{"total", itoa(d.Allow), itoa(d.Deny), itoa(d.RequireApproval), itoa(d.NoMatch), itoa(d.Total)})
		table(&b, []string{"RESOURCE", "ALLOW", "DENY", "APPROVAL", "NO MATCH", "TOTAL"}, rows)
	}
	if d.Unreadable > 0 {
		p("  %s could not be read", plural(d.Unreadable, "policy_decision event"))
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
			rows = append(rows, []string{oneLine(q.ID), oneLine(q.Resource), oneLine(q.Action), oneLine(q.RequestedBy),
				approx(time.Duration(q.PendingForMS) * time.Millisecond), fmt.Sprintf("%d/%d", q.Approvals, q.Quorum), stale})
		}
		table(&b, []string{"ID", "RESOURCE", "ACTION", "REQUESTED BY", "PENDING FOR", "VOTES", "STALE"}, rows)
	}

	// Phase 6.
	c := r.Chain
	p("")
	p("Phase 6 - Chain integrity")
	switch {
	case c.Verified && c.TotalEvents == 0:
		p("  verified: the chain is empty")
	case c.Verified:
		p("  verified: %s, seq %d-%d, head %s", plural(c.TotalEvents, "event"), c.FirstEvent.Seq, c.LastEvent.Seq, short(c.LastEvent.EventHash, 12))
	default:
		p("  BROKEN: %s in %d events", plural(int64(c.BrokenLinksTotal), "broken link"), c.TotalEvents)
		rows := [][]string{}
		for _, l := range firstN(c.BrokenLinks, maxTextRows) {
			rows = append(rows, []string{strconv.FormatInt(l.Seq, 10), oneLine(l.EventID), oneLine(l.Kind)})
		}
		table(&b, []string{"SEQ", "EVENT_ID", "KIND"}, rows)
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
	if len(s.Alerts)+len(s.Warnings) == 0 {
		p("  no alerts, no warnings")
	}
	p("  status: %s (%s, %s; exit %d)", strings.ToUpper(s.Status), plural(int64(len(s.Alerts)), "alert"),
		plural(int64(len(s.Warnings)), "warning"), s.ExitCode)

	_, err := w.Write(b.Bytes())
	return err
}

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

// table writes an aligned table without borders, indented two spaces,
// with trailing blanks trimmed (as approvals list does).
func table(w *bytes.Buffer, header []string, rows [][]string) {
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Separators: tw.SeparatorsNone, Lines: tw.LinesNone},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithPadding(tw.Padding{Right: "  ", Overwrite: true}),
	)
	t.Header(header)
	err := t.Bulk(rows)
	if err == nil {
		err = t.Render()
	}
	if err != nil {
		// Cannot happen with string cells; say so rather than lose rows.
		fmt.Fprintf(w, "  (table: %v)\n", err)
		return
	}
	for line := range strings.Lines(buf.String()) {
		w.WriteString("  " + strings.TrimRight(line, " \n") + "\n")
	}
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
		parts = append(parts, fmt.Sprintf("%s %d", oneLine(k), m[k]))
	}
	return strings.Join(parts, ", ")
}

func firstN[T any](s []T, n int) []T { return s[:min(len(s), n)] }
func lastN[T any](s []T, n int) []T  { return s[len(s)-min(len(s), n):] }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// plural is "1 event" or "2 events" ("policy" → "policies").
func plural(n int64, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	if strings.HasSuffix(word, "y") && !strings.HasSuffix(word, "ey") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// cleanOr is oneLine(s), or def when s is empty.
func cleanOr(s, def string) string {
	if s == "" {
		return def
	}
	return oneLine(s)
}

// short is the first n characters of a hash, with "…" when cut.
func short(s string, n int) string {
	if len(s) <= n {
		return oneLine(s)
	}
	return oneLine(s[:n]) + "…"
}

// oneLine makes untrusted text safe on one terminal line: text with control
// or other non-printing characters is shown Go-quoted, so it cannot move the
// cursor or recolour the terminal (as approvals and classify do).
func oneLine(s string) string {
	for _, c := range s {
		if !unicode.IsPrint(c) && c != ' ' {
			return strconv.Quote(s)
		}
	}
	return s
}

// flatten puts multi-line text on one safe line of at most n bytes.
func flatten(s string, n int) string {
	return oneLine(truncate(strings.Join(strings.Fields(s), " "), n))
}

// truncate cuts s to at most n bytes on a character boundary, marking the
// cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// approx is a duration as people read it at a glance: 45s, 4m30s, 25m,
// 3h20m, 30h, 5d.
func approx(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 10*time.Minute:
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s)
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 10*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
