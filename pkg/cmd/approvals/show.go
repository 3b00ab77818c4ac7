package approvals

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/termtext"
)

// ShowOptions are the arguments of show.
type ShowOptions struct {
	*Options
	ID string
}

func newCmdShow(opts *Options, runF func(*ShowOptions) error) *cobra.Command {
	so := &ShowOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one approval request in full",
		Long: `Show prints every field of one request: status and expiry, who asked and why,
the resource, action, tool and exact command, the quorum and every vote, the
action hash that binds an approval to exactly this action, and the policy
decision that required the approval, with its explanation when it has one.
While the request is pending it ends with the commands that approve or deny
it. With -o json it prints the request object.`,
		Example: `  approvals show apr_2al33qaosuvdf2jaxgt5fxm46g
  approvals show apr_2al33qaosuvdf2jaxgt5fxm46g -o json | jq .votes`,
		Args:              requireID("show"),
		ValidArgsFunction: opts.completeID,
		RunE: func(c *cobra.Command, args []string) error {
			opts.prepare(c)
			so.ID = args[0]
			if runF != nil {
				return runF(so)
			}
			return showRun(so)
		},
	}
	return cmd
}

// requireID checks that a subcommand got exactly one argument, the ID.
func requireID(verb string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		switch {
		case len(args) == 0 || (len(args) == 1 && strings.TrimSpace(args[0]) == ""):
			return cli.Failf("%s needs the ID of an approval request", verb).
				WithHint("'approvals list --pending' shows the IDs")
		case len(args) > 1:
			return cli.Failf("%s takes one ID, got %d arguments", verb, len(args)).
				WithHint("quote a reason: --reason \"two words\"")
		}
		return nil
	}
}

func showRun(o *ShowOptions) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	r, err := c.Approval(ctx, o.ID)
	if err != nil {
		return o.apiError(err, o.ID)
	}
	if o.format() == cli.FormatJSON {
		return cli.WriteJSON(o.IO.Out, r)
	}
	var b strings.Builder
	writeDetails(&b, o.Options, r)
	if _, err := io.WriteString(o.IO.Out, b.String()); err != nil {
		return cli.Failf("writing the output: %v", err)
	}
	return nil
}

// writeDetails writes every field of r as labelled lines.
func writeDetails(w io.Writer, o *Options, r approval.Request) {
	now := o.now()
	const width = len("Requested by:  ")
	field := func(label string, values ...string) {
		for i, v := range values {
			if i == 0 {
				fmt.Fprintf(w, "%-*s%s\n", width, label+":", v)
			} else {
				fmt.Fprintf(w, "%*s%s\n", width, "", v)
			}
		}
	}
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }

	field("ID", termtext.OneLine(r.ID))
	status := string(r.Status)
	switch {
	case r.Status == approval.Pending && now.Before(r.ExpiresAt):
		status += fmt.Sprintf(" — %d of %s so far; expires in %s (%s)",
			r.Approvals(), cli.Plural(r.Quorum, "approval", "approvals"), cli.Approx(r.ExpiresAt.Sub(now)), stamp(r.ExpiresAt))
	case r.Status == approval.Pending: // past its expiry; auditd expires it at the next read
		status += fmt.Sprintf(" — past its expiry, %s (%s)", ago(r.ExpiresAt, now), stamp(r.ExpiresAt))
	case r.Status == approval.Expired:
		status += fmt.Sprintf(" — %s, with %d of %s (%s)", ago(r.ExpiresAt, now), r.Approvals(), cli.Plural(r.Quorum, "approval", "approvals"), stamp(r.ExpiresAt))
	case r.DecidedAt != nil:
		status += fmt.Sprintf(" — %s (%s)", ago(*r.DecidedAt, now), stamp(*r.DecidedAt))
	}
	field("Status", status)
	field("Requested by", fmt.Sprintf("%s, %s (%s)", termtext.OneLine(r.RequestedBy), ago(r.CreatedAt, now), stamp(r.CreatedAt)))
	res := resource(r)
	if len(r.Resource.Tags) > 0 {
		tags := make([]string, len(r.Resource.Tags))
		for i, t := range r.Resource.Tags {
			tags[i] = termtext.OneLine(t)
		}
		res += " (tags: " + strings.Join(tags, ", ") + ")"
	}
	field("Resource", res)
	field("Action", termtext.OneLine(r.Action))
	if r.Tool != "" {
		field("Tool", termtext.OneLine(r.Tool))
	}
	if r.RawCommand != "" {
		field("Command", lines(r.RawCommand)...)
	}
	if r.Reason != "" {
		field("Reason", lines(r.Reason)...)
	}
	field("Quorum", cli.Plural(r.Quorum, "approval", "approvals"))
	if len(r.Votes) == 0 {
		field("Votes", "none yet")
	} else {
		var votes []string
		for _, v := range r.Votes {
			line := fmt.Sprintf("%s %s, %s (%s)", termtext.OneLine(v.By), voteWord(v.Decision), ago(v.At, now), stamp(v.At))
			if v.Reason != "" {
				line += ": " + flatten(v.Reason)
			}
			votes = append(votes, line)
		}
		field("Votes", votes...)
	}
	field("Action hash", termtext.OneLine(r.ActionHash))
	if p := policyLines(r.PolicyDecision); len(p) > 0 {
		field("Policy", p...)
	}
	if r.Status == approval.Pending && now.Before(r.ExpiresAt) {
		fmt.Fprintln(w)
		field("Approve", o.command("approve "+r.ID))
		field("Deny", o.command("deny "+r.ID+" --reason TEXT"))
	}
}

func voteWord(d approval.Decision) string {
	switch d {
	case approval.Approve:
		return "approved"
	case approval.Deny:
		return "denied"
	}
	return termtext.OneLine(string(d))
}

// policyLines describes the policy decision that required the approval:
// its effect and deciding policy, and its explanation when it carries one
// (a decision trace, DESIGN §5, or a decision with "explanation").
func policyLines(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	type decision struct {
		Effect         string `json:"effect"`
		EnforcedEffect string `json:"enforced_effect"`
		PolicyName     string `json:"policy_name"`
		RuleIndex      *int   `json:"rule_index"`
		Message        string `json:"message"`
		DryRun         bool   `json:"dry_run"`
	}
	var p struct {
		decision
		Decision    *decision `json:"decision"`
		Explanation string    `json:"explanation"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return []string{"(not readable: " + termtext.OneLine(err.Error()) + ")"}
	}
	d := p.decision
	if p.Decision != nil {
		d = *p.Decision
	}
	var out []string
	if d.Effect != "" {
		line := termtext.OneLine(d.Effect)
		if d.DryRun && d.EnforcedEffect != "" && d.EnforcedEffect != d.Effect {
			// An enforcement: audit policy's outcome is only recorded:
			// say what is enforced first, as the explanation's headline
			// does (issue 20).
			line = termtext.OneLine(d.EnforcedEffect) + " (enforced); audit-only: " + line
		}
		if d.PolicyName != "" {
			line += " by policy " + termtext.OneLine(d.PolicyName)
			if d.RuleIndex != nil {
				line += fmt.Sprintf(", rule %d", *d.RuleIndex)
			}
		}
		if d.Message != "" {
			line += ": " + flatten(d.Message)
		}
		out = append(out, line)
	}
	if p.Explanation != "" {
		out = append(out, lines(strings.TrimRight(p.Explanation, "\n"))...)
	}
	if len(out) == 0 {
		// Something we do not know how to read: show it compact, bounded.
		out = append(out, flatten(termtext.Truncate(string(raw), 300)))
	}
	return out
}
