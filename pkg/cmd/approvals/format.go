package approvals

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/table"
	"github.com/govkit/govkit/pkg/termtext"
)

// writeTable writes requests as an aligned table without borders, one
// request per line, with relative times from now.
func writeTable(w io.Writer, reqs []approval.Request, now time.Time) error {
	rows := make([][]string, len(reqs))
	for i, r := range reqs {
		rows[i] = []string{
			termtext.OneLine(r.ID), string(r.Status), resource(r), termtext.OneLine(r.Action), termtext.OneLine(r.RequestedBy),
			ago(r.CreatedAt, now), expires(r, now), fmt.Sprintf("%d/%d", r.Approvals(), r.Quorum),
		}
	}
	out, err := table.Render("", []string{"ID", "STATUS", "RESOURCE", "ACTION", "REQUESTED BY", "CREATED", "EXPIRES", "VOTES"}, rows)
	if err != nil {
		return cli.Failf("formatting the table: %v", err)
	}
	if _, err := io.WriteString(w, out); err != nil {
		return cli.Failf("writing the output: %v", err)
	}
	return nil
}

// resource is TYPE:NAME.
func resource(r approval.Request) string {
	return termtext.OneLine(r.Resource.Type + ":" + r.Resource.Name)
}

// expires says when a pending request expires or when an expired one did;
// a decided request no longer expires ("-").
func expires(r approval.Request, now time.Time) string {
	switch {
	case r.Status == approval.Expired || (r.Status == approval.Pending && !now.Before(r.ExpiresAt)):
		return "expired " + ago(r.ExpiresAt, now)
	case r.Status == approval.Pending:
		return "in " + cli.Approx(r.ExpiresAt.Sub(now))
	}
	return "-"
}

// ago is how long before now t was: "3m ago", or "just now".
func ago(t, now time.Time) string {
	d := now.Sub(t)
	if d < time.Second {
		return "just now"
	}
	return cli.Approx(d) + " ago"
}

// lines splits multi-line untrusted text (a raw command, a reason) into
// lines that are each safe to show: tabs become spaces, anything else
// non-printing is quoted.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		out = append(out, termtext.OneLine(strings.ReplaceAll(l, "\t", "    ")))
	}
	return out
}

// summary is a request's action in a few words: "write database:prod-db".
func summary(r approval.Request) string {
	return termtext.OneLine(r.Action) + " " + resource(r)
}

// approvers names who approved, in vote order: "bob, carol".
func approvers(r approval.Request) string {
	var names []string
	for _, v := range r.Votes {
		if v.Decision == approval.Approve {
			names = append(names, termtext.OneLine(v.By))
		}
	}
	return strings.Join(names, ", ")
}

// outcome is one line on how a decided request ended, for request --wait:
// "approved by bob", "denied by bob: not now", "expired".
func outcome(r approval.Request) string {
	switch r.Status {
	case approval.Approved:
		return "approved by " + approvers(r)
	case approval.Denied:
		v, _ := r.Denial()
		return "denied by " + termtext.OneLine(v.By) + ": " + flatten(v.Reason)
	case approval.Expired:
		if n := r.Approvals(); n > 0 {
			return fmt.Sprintf("expired with %d of %d approvals", n, r.Quorum)
		}
		return "expired"
	case approval.Cancelled:
		return "cancelled by " + termtext.OneLine(r.CancelledBy)
	case approval.Consumed:
		return "approved by " + approvers(r) + ", consumed by " + termtext.OneLine(r.ConsumedBy)
	}
	return string(r.Status)
}

// flatten puts multi-line text on one line.
func flatten(s string) string {
	return termtext.OneLine(strings.Join(strings.Fields(s), " "))
}
