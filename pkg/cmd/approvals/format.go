package approvals

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

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/cli"
)

// writeJSON writes r as one line: the request object as auditd sent it
// (with schema_version and id). Commands stay readable (& < > unescaped).
func writeJSON(w io.Writer, r approval.Request) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return cli.Failf("writing the output: %v", err)
	}
	return nil
}

// writeTable writes requests as an aligned table without borders, one
// request per line, with relative times from now.
func writeTable(w io.Writer, reqs []approval.Request, now time.Time) error {
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
	t.Header("ID", "STATUS", "RESOURCE", "ACTION", "REQUESTED BY", "CREATED", "EXPIRES", "VOTES")
	for _, r := range reqs {
		if err := t.Append(
			oneLine(r.ID), string(r.Status), resource(r), oneLine(r.Action), oneLine(r.RequestedBy),
			ago(r.CreatedAt, now), expires(r, now), fmt.Sprintf("%d/%d", r.Approvals(), r.Quorum),
		); err != nil {
			return cli.Failf("formatting the table: %v", err)
		}
	}
	if err := t.Render(); err != nil {
		return cli.Failf("formatting the table: %v", err)
	}
	// The renderer pads the last column too; trailing blanks are noise in a
	// terminal and in anything that compares output.
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	if _, err := io.WriteString(w, out.String()); err != nil {
		return cli.Failf("writing the output: %v", err)
	}
	return nil
}

// resource is TYPE:NAME.
func resource(r approval.Request) string {
	return oneLine(r.Resource.Type + ":" + r.Resource.Name)
}

// expires says when a pending request expires or when an expired one did;
// a decided request no longer expires ("-").
func expires(r approval.Request, now time.Time) string {
	switch {
	case r.Status == approval.Expired || (r.Status == approval.Pending && !now.Before(r.ExpiresAt)):
		return "expired " + ago(r.ExpiresAt, now)
	case r.Status == approval.Pending:
		return "in " + approx(r.ExpiresAt.Sub(now))
	}
	return "-"
}

// ago is how long before now t was: "3m ago", or "just now".
func ago(t, now time.Time) string {
	d := now.Sub(t)
	if d < time.Second {
		return "just now"
	}
	return approx(d) + " ago"
}

// approx is a duration as people read it at a glance, precise to the second
// under ten minutes (an approver racing an expiry needs that), coarser
// beyond: 45s, 4m30s, 25m, 3h20m, 30h, 5d.
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

// oneLine makes untrusted text safe to show on one terminal line: text with
// control or other non-printing characters is shown Go-quoted, so it cannot
// move the cursor or recolour the terminal (as classify does).
func oneLine(s string) string {
	for _, c := range s {
		if !unicode.IsPrint(c) && c != ' ' {
			return strconv.Quote(s)
		}
	}
	return s
}

// lines splits multi-line untrusted text (a raw command, a reason) into
// lines that are each safe to show: tabs become spaces, anything else
// non-printing is quoted.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		out = append(out, oneLine(strings.ReplaceAll(l, "\t", "    ")))
	}
	return out
}

// summary is a request's action in a few words: "write database:prod-db".
func summary(r approval.Request) string {
	return oneLine(r.Action) + " " + resource(r)
}

// approvers names who approved, in vote order: "bob, carol".
func approvers(r approval.Request) string {
	var names []string
	for _, v := range r.Votes {
		if v.Decision == approval.Approve {
			names = append(names, oneLine(v.By))
		}
	}
	return strings.Join(names, ", ")
}

// denial is the deny vote that ended a request.
func denial(r approval.Request) (approval.Vote, bool) {
	for _, v := range r.Votes {
		if v.Decision == approval.Deny {
			return v, true
		}
	}
	return approval.Vote{}, false
}

// plural is "1 approval" or "2 approvals".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// outcome is one line on how a decided request ended, for request --wait:
// "approved by bob", "denied by bob: not now", "expired".
func outcome(r approval.Request) string {
	switch r.Status {
	case approval.Approved:
		return "approved by " + approvers(r)
	case approval.Denied:
		v, _ := denial(r)
		return "denied by " + oneLine(v.By) + ": " + flatten(v.Reason)
	case approval.Expired:
		if n := r.Approvals(); n > 0 {
			return fmt.Sprintf("expired with %d of %d approvals", n, r.Quorum)
		}
		return "expired"
	}
	return string(r.Status)
}

// flatten puts multi-line text on one line.
func flatten(s string) string {
	return oneLine(strings.Join(strings.Fields(s), " "))
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
