package govbot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/govkit/govkit/pkg/cli"
)

// Phase 7's optional Slack post (seed 003 "Compliance Reporting": "compliance
// report + optional Slack alert"). pkg/notify's Slack notifier renders
// approval requests only, so govbot renders its own message and posts it
// with slack-go, as pkg/notify does. The webhook URL is a credential: it
// is never printed, only its scheme and host.

// maxSlackFindings bounds the findings listed in the Slack message; the
// message links nothing, so the rest are counted.
const maxSlackFindings = 15

// checkWebhook validates --webhook without echoing it.
func checkWebhook(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("is not an http:// or https:// URL (a Slack incoming webhook is https://hooks.slack.com/services/…)")
	case u.Host == "":
		return errors.New("has no host")
	}
	return nil
}

// redact shows where a URL points without its secret path and query.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	s := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		s += "/…"
	}
	return s
}

// postSlack posts msg to the webhook, bounded by timeout; the error never
// contains the URL.
func postSlack(ctx context.Context, hc *http.Client, webhook string, msg *slack.WebhookMessage) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	err := slack.PostWebhookCustomHTTPContext(ctx, webhook, hc, msg)
	if err == nil {
		return nil
	}
	text := strings.ReplaceAll(err.Error(), webhook, redact(webhook))
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" {
		text = strings.ReplaceAll(text, ue.URL, redact(ue.URL))
	}
	return errors.New(text)
}

// slackSummary is phase 7 as a Slack message: the status, the counts of
// each phase, and the findings, with every client-supplied string escaped
// so that it cannot mention @channel or smuggle in a link.
func slackSummary(r *Report) *slack.WebhookMessage {
	s := r.Summary
	status := strings.ToUpper(s.Status)
	title := fmt.Sprintf("govbot compliance report: %s", status)
	counts := fmt.Sprintf("%s, %s", cli.Plural(int64(len(s.Alerts)), "alert", "alerts"), cli.Plural(int64(len(s.Warnings)), "warning", "warnings"))

	chain := "verified"
	if !r.Chain.Verified {
		chain = "BROKEN"
	}
	overview := fmt.Sprintf("*%s* — %s\n%s in the last %s · %s (%d no match) · %d pending approvals (%d stale) · chain %s",
		status, counts, cli.Plural(r.Activity.Events, "event", "events"), r.Window.Since,
		cli.Plural(r.Decisions.Total, "decision", "decisions"), r.Decisions.NoMatch, r.Approvals.Pending, r.Approvals.Stale, chain)

	var lines []string
	add := func(level string, f Finding) {
		lines = append(lines, fmt.Sprintf("• *%s* `%s` %s", level, f.Code, slackEscape(flatten(f.Message, 400))))
	}
	for _, f := range s.Alerts {
		add("ALERT", f)
	}
	for _, f := range s.Warnings {
		add("warning", f)
	}
	if len(lines) > maxSlackFindings {
		lines = append(lines[:maxSlackFindings], fmt.Sprintf("… and %d more (see govbot -o json)", len(lines)-maxSlackFindings))
	}

	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, title, false, false)),
		slack.NewSectionBlock(mrkdwn(cut(overview, 2900)), nil, nil),
	}
	if len(lines) > 0 {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(cut(strings.Join(lines, "\n"), 2900)), nil, nil))
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(slackEscape(fmt.Sprintf("gateway %s · generated %s",
		r.Gateway, r.GeneratedAt.UTC().Format(time.RFC3339))))))
	return &slack.WebhookMessage{
		Text:   slackEscape(title + " (" + counts + ")"),
		Blocks: &slack.Blocks{BlockSet: blocks},
	}
}

// slackUnreachable is the message for exit 1: a report that cannot be
// made is news too, or a dead gateway would silence the channel.
func slackUnreachable(reason string, now time.Time) *slack.WebhookMessage {
	title := "govbot compliance report: GATEWAY UNREACHABLE"
	text := "govbot could not make the compliance report: " + flatten(reason, 500)
	return &slack.WebhookMessage{
		Text: slackEscape(text),
		Blocks: &slack.Blocks{BlockSet: []slack.Block{
			slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, title, false, false)),
			slack.NewSectionBlock(mrkdwn(cut(slackEscape(text), 2900)), nil, nil),
			slack.NewContextBlock("", mrkdwn("generated "+now.UTC().Format(time.RFC3339))),
		}},
	}
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

// slackEscape escapes the three characters Slack's mrkdwn reserves for
// links, mentions and entities.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// cut bounds a block's text (Slack refuses a section over 3000
// characters) without splitting an escape.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = cli.Truncate(s, n)
	if i := strings.LastIndexByte(s, '&'); i >= 0 && !strings.Contains(s[i:], ";") {
		s = s[:i] + "…"
	}
	return s
}
