package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// slackNotifier posts to a Slack incoming webhook with slack-go.
type slackNotifier struct {
	name    string
	url     string // a secret: never logged or returned in an error
	baseURL string
	client  *http.Client
}

var _ Notifier = (*slackNotifier)(nil)

func newSlack(name, url, baseURL string, client *http.Client) *slackNotifier {
	return &slackNotifier{name: name, url: url, baseURL: baseURL, client: client}
}

func (s *slackNotifier) Name() string { return s.name }

func (s *slackNotifier) Notify(ctx context.Context, m Message) error {
	var msg *slack.WebhookMessage
	switch {
	case m.Notice != nil && m.Notice.Slack != nil:
		msg = m.Notice.Slack
	case m.Notice != nil:
		msg = &slack.WebhookMessage{Text: cut(SlackEscape(m.Notice.Text), 2900)}
	case m.Now.IsZero():
		return permanent(fmt.Errorf("slack webhook: %w", errNoNow))
	default:
		msg = slackMessage(newView(m, s.baseURL))
	}
	err := slack.PostWebhookCustomHTTPContext(ctx, s.url, s.client, msg)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("slack webhook %s: %w", RedactURL(s.url), scrubURLError(err, s.url))
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	switch {
	case errors.As(err, &rl):
		return &retryAfterError{err, rl.RetryAfter}
	case errors.As(err, &sc) && sc.Code >= 400 && sc.Code < 500 && sc.Code != http.StatusTooManyRequests && sc.Code != http.StatusRequestTimeout:
		// invalid_payload, no_service, channel_not_found…: the same
		// message to the same URL fails the same way.
		return permanent(err)
	}
	return err
}

// slackMessage renders v as Block Kit blocks plus the plain text Slack
// shows in notifications and in clients without blocks. Request fields are
// escaped (&, <, >), so a reason cannot smuggle in a link or an @channel
// mention.
func slackMessage(v view) *slack.WebhookMessage {
	mrkdwn := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	field := func(label, value string) *slack.TextBlockObject {
		return mrkdwn("*" + label + "*\n" + cut(SlackEscape(value), 1900))
	}
	section := func(s string) slack.Block {
		return slack.NewSectionBlock(mrkdwn(cut(s, 2900)), nil, nil)
	}

	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, cutPlain(v.Title, 150), false, false)),
	}
	if v.Outcome != "" {
		s := "*" + SlackEscape(upperFirst(v.Outcome)) + "*"
		if v.OutcomeReason != "" {
			s += "\n" + slackQuote(v.OutcomeReason)
		}
		blocks = append(blocks, section(s))
	}
	var fields []*slack.TextBlockObject
	add := func(label, value string) {
		if value != "" {
			fields = append(fields, field(label, value))
		}
	}
	add("Resource", v.Resource)
	add("Tags", v.Tags)
	add("Action", v.Action)
	add("Requested by", v.RequestedBy)
	add("Quorum", v.Quorum)
	if v.Outcome != "" {
		add("Resolved", v.When)
	} else {
		add("Expiry", v.When)
	}
	add("Policy", v.Policy)
	add("Tool", v.Tool)
	add("ID", v.ID) // ten fields at most (Slack's limit): this is the ninth
	blocks = append(blocks, slack.NewSectionBlock(nil, fields, nil))
	if v.Reason != "" {
		blocks = append(blocks, section("*Reason*\n"+slackQuote(v.Reason)))
	}
	if v.Command != "" {
		blocks = append(blocks, section("*Command*\n```"+cut(SlackEscape(strings.ReplaceAll(v.Command, "```", "'''")), 2800)+"```"))
	}
	if v.Explanation != "" {
		blocks = append(blocks, section("*Policy explanation*\n"+slackQuote(v.Explanation)))
	}
	if len(v.Votes) > 0 {
		blocks = append(blocks, section("*Votes*\n"+SlackEscape(strings.Join(v.Votes, "\n"))))
	}
	if v.Approve != "" {
		blocks = append(blocks, section("*Approve:* "+slackCode(v.Approve)+"\n*Deny:* "+slackCode(v.Deny)))
	}
	if v.Link != "" {
		// The link is built from the configured base URL and the
		// path-escaped ID; only its label needs escaping.
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn("<"+v.Link+"|"+SlackEscape("approval "+v.ID)+">")))
	}

	text := v.Title
	if v.Outcome == "" {
		text += " (requested by " + v.RequestedBy + ", " + v.When + "). Approve: " + v.Approve + " — Deny: " + v.Deny
	}
	if v.Link != "" {
		text += " " + v.Link
	}
	return &slack.WebhookMessage{
		Text:   cut(SlackEscape(text), 2900),
		Blocks: &slack.Blocks{BlockSet: blocks},
	}
}

// SlackEscape escapes the three characters Slack's mrkdwn reserves for
// links, mentions and entities (&, <, >), so that text from a client cannot
// mention @channel or smuggle in a link: the one Slack escape of govkit.
func SlackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func slackQuote(s string) string {
	return "> " + strings.ReplaceAll(SlackEscape(s), "\n", "\n> ")
}

func slackCode(s string) string {
	return "`" + SlackEscape(strings.ReplaceAll(s, "`", "'")) + "`"
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// SlackCut shortens escaped mrkdwn to at most n runes, not splitting an
// &entity; Slack refuses over-long texts (a section over 3000
// characters) rather than cutting them.
func SlackCut(s string, n int) string { return cut(s, n) }

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := string([]rune(s)[:n-1])
	if i := strings.LastIndexByte(r, '&'); i >= 0 && !strings.Contains(r[i:], ";") {
		r = r[:i]
	}
	return r + "…"
}

// cutPlain shortens plain text to at most n runes. cut and cutPlain count
// characters, not bytes as termtext.Truncate does, because Slack's limits
// (150 for a header, 3000 for a section) are in characters.
func cutPlain(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
