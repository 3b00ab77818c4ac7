package govreport

import (
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/notify"
	"github.com/govkit/govkit/pkg/termtext"
)

// Phase 7's optional Slack post (seed 003 "Compliance Reporting": "compliance
// report + optional Slack alert"), delivered by pkg/notify's Dispatcher:
// these are the messages, escaped with notify's one Slack escape.

// maxSlackFindings bounds the findings listed in the Slack message; the
// message links nothing, so the rest are counted.
const maxSlackFindings = 15

// Notice is the report as a notify.Notice: the Slack message of
// SlackSummary, and the report itself for a generic webhook.
func (r *Report) Notice() *notify.Notice {
	m := SlackSummary(r)
	return &notify.Notice{Subject: "the compliance report", Payload: r, Slack: m, Text: m.Text}
}

// UnreachableNotice is the notice for exit 1: a report that cannot be made
// is news too, or a dead gateway would silence the channel.
func UnreachableNotice(reason string, now time.Time) *notify.Notice {
	m := SlackUnreachable(reason, now)
	return &notify.Notice{Subject: "the unreachable-gateway notice", Payload: map[string]any{
		"schema_version": 1, "status": "unreachable", "generated_at": now.UTC(),
		"message": "govbot could not make the compliance report: " + flatten(reason, 500),
	}, Slack: m, Text: m.Text}
}

// SlackSummary is phase 7 as a Slack message: the status, the counts of
// each phase, and the findings (alerts, warnings, then notices), with every client-supplied string escaped
// so that it cannot mention @channel or smuggle in a link.
func SlackSummary(r *Report) *slack.WebhookMessage {
	s := r.Summary
	status := strings.ToUpper(s.Status)
	title := fmt.Sprintf("govbot compliance report: %s", status)
	counts := fmt.Sprintf("%s, %s", cli.Plural(int64(len(s.Alerts)), "alert", "alerts"), cli.Plural(int64(len(s.Warnings)), "warning", "warnings"))
	if len(s.Notices) > 0 {
		counts += ", " + cli.Plural(int64(len(s.Notices)), "notice", "notices")
	}

	chain := "verified"
	if !r.Chain.Verified {
		chain = "BROKEN"
	}
	overview := fmt.Sprintf("*%s* — %s\n%s in the last %s · %s (%d no match) · %d pending approvals (%d stale) · chain %s",
		status, counts, cli.Plural(r.Activity.Events, "event", "events"), r.Window.Since,
		cli.Plural(r.Decisions.Total, "decision", "decisions"), r.Decisions.NoMatch, r.Approvals.Pending, r.Approvals.Stale, chain)

	if t := r.Trend; t != nil && t.Previous != nil {
		overview += fmt.Sprintf("\nsince the previous run (%s): alerts %s, warnings %s", t.Previous.GeneratedAt.UTC().Format(time.RFC3339),
			signed(t.AlertsChange), signed(t.WarningsChange))
		if len(t.NewCodes) > 0 {
			overview += "; new " + notify.SlackEscape(termtext.OneLine(strings.Join(t.NewCodes, ", ")))
		}
		if len(t.ResolvedCodes) > 0 {
			overview += "; resolved " + notify.SlackEscape(termtext.OneLine(strings.Join(t.ResolvedCodes, ", ")))
		}
	}

	var lines []string
	add := func(level string, f Finding) {
		lines = append(lines, fmt.Sprintf("• *%s* `%s` %s", level, f.Code, notify.SlackEscape(flatten(f.Message, 400))))
	}
	for _, f := range s.Alerts {
		add("ALERT", f)
	}
	for _, f := range s.Warnings {
		add("warning", f)
	}
	// Notices (DEAD_RULES) change neither the status nor the exit code,
	// but they are what an auditor reviews: the channel sees them as the
	// text report lists them, last, so that the bound cuts them first.
	for _, f := range s.Notices {
		add("notice", f)
	}
	if len(lines) > maxSlackFindings {
		lines = append(lines[:maxSlackFindings], fmt.Sprintf("… and %d more (see govbot -o json)", len(lines)-maxSlackFindings))
	}

	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, title, false, false)),
		slack.NewSectionBlock(mrkdwn(notify.SlackCut(overview, 2900)), nil, nil),
	}
	if len(lines) > 0 {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(notify.SlackCut(strings.Join(lines, "\n"), 2900)), nil, nil))
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(notify.SlackEscape(fmt.Sprintf("gateway %s · generated %s",
		r.Gateway, r.GeneratedAt.UTC().Format(time.RFC3339))))))
	return &slack.WebhookMessage{
		Text:   notify.SlackEscape(title + " (" + counts + ")"),
		Blocks: &slack.Blocks{BlockSet: blocks},
	}
}

// SlackUnreachable is UnreachableNotice's Slack message.
func SlackUnreachable(reason string, now time.Time) *slack.WebhookMessage {
	title := "govbot compliance report: GATEWAY UNREACHABLE"
	text := "govbot could not make the compliance report: " + flatten(reason, 500)
	return &slack.WebhookMessage{
		Text: notify.SlackEscape(text),
		Blocks: &slack.Blocks{BlockSet: []slack.Block{
			slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, title, false, false)),
			slack.NewSectionBlock(mrkdwn(notify.SlackCut(notify.SlackEscape(text), 2900)), nil, nil),
			slack.NewContextBlock("", mrkdwn("generated "+now.UTC().Format(time.RFC3339))),
		}},
	}
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}
