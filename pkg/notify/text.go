package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// Bounds on what a message shows of a request: the full request is one
// `approvals show ID` away, and Slack refuses text blocks over 3,000
// characters.
const (
	maxLine      = 256
	maxReason    = 1000
	maxCommand   = 1500
	maxExplained = 1500
	maxVotes     = 10
)

// Commands returns the exact commands an approver runs to approve or deny
// r, with --url when baseURL (GOVKIT_APPROVAL_BASE_URL) is set. The deny
// command's reason is a placeholder to replace: a deny needs one.
func Commands(r approval.Request, baseURL string) (approve, deny string) {
	id := shellQuote(r.ID)
	approve = "approvals approve " + id
	deny = "approvals deny " + id + ` --reason "…"`
	if base := strings.TrimRight(baseURL, "/"); base != "" {
		approve += " --url " + shellQuote(base)
		deny += " --url " + shellQuote(base)
	}
	return approve, deny
}

// Link is the request's govapi.PathApproval under baseURL
// (BASE/v1/approvals/ID), or "" without a base URL.
func Link(r approval.Request, baseURL string) string {
	base := strings.TrimRight(baseURL, "/")
	if base == "" {
		return ""
	}
	return base + govapi.WithID(govapi.PathApproval, r.ID)
}

// shellQuote leaves plain words alone and single-quotes anything else, so a
// pasted command runs with exactly these arguments.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:/@%+=,", c)))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// view is what every channel shows of a message, with each request field
// made safe to show: one-line fields have no line breaks (no header
// injection in email, no fake lines in Slack), no field has control or
// bidi-override characters, and long fields are cut.
type view struct {
	Kind          Kind
	Title         string
	ID            string
	Resource      string // type:name
	Tags          string
	Action        string
	RequestedBy   string
	Tool          string
	Command       string // may span lines
	Reason        string // may span lines
	Policy        string
	Explanation   string // may span lines
	Quorum        string // "1 of 2 approvals"
	Votes         []string
	When          string // "expires in 4m59s, at 10:05:00 UTC" / "decided at …"
	Outcome       string // resolved only: "approved by bob", "expired, no decision"
	OutcomeReason string // the deciding vote's reason
	Approve, Deny string // pending only
	Link          string
}

// newView is what every channel shows of an approval message; m.Now is
// set (the notifiers refuse a message without it).
func newView(m Message, baseURL string) view {
	r, now := m.Request, m.Now
	v := view{
		Kind:        m.Kind,
		ID:          oneLine(r.ID, maxLine),
		Resource:    oneLine(r.Resource.Type+":"+r.Resource.Name, maxLine),
		Action:      oneLine(r.Action, maxLine),
		RequestedBy: oneLine(r.RequestedBy, maxLine),
		Tool:        oneLine(r.Tool, maxLine),
		Command:     multiLine(r.RawCommand, maxCommand),
		Reason:      multiLine(r.Reason, maxReason),
		Link:        Link(r, baseURL),
	}
	if len(r.Resource.Tags) > 0 {
		v.Tags = oneLine(strings.Join(r.Resource.Tags, ", "), maxLine)
	}
	v.Policy, v.Explanation = policyOf(r.PolicyDecision)
	quorum := r.Quorum
	if quorum < 1 {
		quorum = 1
	}
	v.Quorum = fmt.Sprintf("%d of %d approval%s", r.Approvals(), quorum, plural(quorum))
	for i, vote := range r.Votes {
		if i == maxVotes {
			v.Votes = append(v.Votes, fmt.Sprintf("… and %d more", len(r.Votes)-maxVotes))
			break
		}
		s := fmt.Sprintf("%s: %s at %s", oneLine(vote.By, maxLine), oneLine(string(vote.Decision), maxLine), clock(vote.At, now))
		if vote.Reason != "" {
			s += " (" + oneLine(vote.Reason, maxLine) + ")"
		}
		v.Votes = append(v.Votes, s)
	}

	what := v.Action + " on " + v.Resource
	if m.Kind == Resolved || r.Status != approval.Pending {
		v.Outcome = string(r.Status)
		var last *approval.Vote
		if n := len(r.Votes); n > 0 {
			last = &r.Votes[n-1]
		}
		switch {
		case r.Status == approval.Expired:
			v.Outcome = "expired, no decision"
		case (r.Status == approval.Approved || r.Status == approval.Denied) && last != nil:
			v.Outcome = string(r.Status) + " by " + oneLine(last.By, maxLine)
			v.OutcomeReason = multiLine(last.Reason, maxReason)
		}
		switch {
		case r.Status == approval.Expired:
			v.When = "expired at " + clock(r.ExpiresAt, now)
		case r.DecidedAt != nil:
			v.When = "decided at " + clock(*r.DecidedAt, now)
		default:
			v.When = ttl(r.ExpiresAt, now)
		}
		v.Title = "Approval " + v.Outcome + ": " + what
	} else {
		v.When = ttl(r.ExpiresAt, now)
		v.Approve, v.Deny = Commands(r, baseURL)
		v.Title = "Approval requested: " + what
	}
	return v
}

// policyOf reads the explanation and the deciding policy's name from a
// policy decision (DESIGN §5 trace: "explanation" at the top, "policy_name"
// at the top or under "decision").
func policyOf(raw json.RawMessage) (policy, explanation string) {
	if len(raw) == 0 {
		return "", ""
	}
	var pd struct {
		Explanation string `json:"explanation"`
		PolicyName  string `json:"policy_name"`
		Decision    struct {
			PolicyName string `json:"policy_name"`
		} `json:"decision"`
	}
	if json.Unmarshal(raw, &pd) != nil {
		return "", ""
	}
	policy = pd.PolicyName
	if policy == "" {
		policy = pd.Decision.PolicyName
	}
	return oneLine(policy, maxLine), multiLine(pd.Explanation, maxExplained)
}

// ttl says when a pending request expires, relative and absolute:
// "expires in 4m59s, at 10:05:00 UTC".
func ttl(expires, now time.Time) string {
	if expires.IsZero() {
		return "no expiry set"
	}
	d := expires.Sub(now)
	if d <= 0 {
		return fmt.Sprintf("expired %s ago, at %s", (-d).Truncate(time.Second), clock(expires, now))
	}
	return fmt.Sprintf("expires in %s, at %s", d.Truncate(time.Second), clock(expires, now))
}

// clock is a UTC time of day, with the date when it is not today's.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		return t.Format("15:04:05 UTC")
	}
	return t.Format("2006-01-02 15:04:05 UTC")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// oneLine makes s safe for a header or a single line: line breaks and tabs
// become spaces, every other rune termtext does not show (controls, bidi
// overrides, zero-width and format characters, invalid bytes) becomes
// U+FFFD, and it is cut to max bytes by termtext.Truncate.
func oneLine(s string, max int) string {
	return termtext.Truncate(termtext.Printable(flat.Replace(s)), max)
}

// multiLine is oneLine that keeps line breaks (CR LF and lone CR become LF).
func multiLine(s string, max int) string {
	lines := strings.Split(lineBreaks.Replace(s), "\n")
	for i, l := range lines {
		lines[i] = termtext.Printable(l)
	}
	return termtext.Truncate(strings.Join(lines, "\n"), max)
}

var (
	flat       = strings.NewReplacer("\r", " ", "\n", " ", "\t", " ")
	lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\t", " ")
)

// text is the plain-text rendering: the email body and the generic
// webhook's "text".
func (v view) text() string {
	var b strings.Builder
	b.WriteString(v.Title + "\n\n")
	field := func(label, value string) {
		if value == "" {
			return
		}
		const pad = 14
		b.WriteString(label + ":" + strings.Repeat(" ", max(1, pad-len(label)-1)))
		b.WriteString(strings.ReplaceAll(value, "\n", "\n"+strings.Repeat(" ", pad)))
		b.WriteByte('\n')
	}
	if v.Outcome != "" {
		field("Outcome", v.Outcome)
		field("Why", v.OutcomeReason)
	}
	field("ID", v.ID)
	field("Resource", v.Resource)
	field("Tags", v.Tags)
	field("Action", v.Action)
	field("Requested by", v.RequestedBy)
	field("Tool", v.Tool)
	field("Command", v.Command)
	field("Reason", v.Reason)
	field("Policy", v.Policy)
	field("Explanation", v.Explanation)
	field("Quorum", v.Quorum)
	field("Votes", strings.Join(v.Votes, "\n"))
	if v.Outcome != "" {
		field("Resolved", v.When)
	} else {
		field("Expiry", v.When)
	}
	if v.Approve != "" {
		b.WriteString("\nTo approve:\n    " + v.Approve + "\n")
		b.WriteString("To deny:\n    " + v.Deny + "\n")
	}
	if v.Link != "" {
		b.WriteString("\n" + v.Link + "\n")
	}
	return b.String()
}
