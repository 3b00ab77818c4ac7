package auditor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/notify"
	"github.com/govkit/govkit/pkg/termtext"
)

// Delivery limits of the incident webhook (seed 003 "Webhook Alerts").
// Detection never waits for the webhook: alerts queue in pkg/notify's
// Dispatcher (issue 20: one delivery path), which posts them in order, each
// with a bounded timeout and a few retries.
const (
	webhookAttempts = 4
	webhookTimeout  = 10 * time.Second
	webhookBackoff  = time.Second // doubling, at most webhookMaxWait
	webhookMaxWait  = 30 * time.Second
	webhookQueue    = 1024
)

// webhook posts alerts to --incident-webhook in the background: the alert's
// JSON (the stdout line), or a Slack message for a Slack incoming webhook,
// which accepts nothing else.
type webhook struct {
	d     *notify.Dispatcher
	shown string // scheme://host/…
}

func newWebhook(o *Options, logf func(format string, args ...any)) (*webhook, error) {
	n, err := notify.NewWebhook(notify.WebhookConfig{Name: "webhook", URL: o.Webhook, HTTPClient: o.WebhookClient,
		UserAgent: "govkit-auditor/" + build.String()})
	if err != nil {
		return nil, err
	}
	backoff := o.WebhookBackoff
	if backoff <= 0 {
		backoff = webhookBackoff
	}
	d := notify.NewDispatcher([]notify.Notifier{n}, notify.Options{
		Now:      o.now,
		Attempts: webhookAttempts, Backoff: backoff, MaxBackoff: webhookMaxWait, AttemptTimeout: webhookTimeout, QueueSize: webhookQueue,
		// "notify: webhook: attempt 1/4 to deliver the high_volume alert of
		// seq 7 failed: …", in auditor's voice.
		Logf: func(format string, args ...any) {
			logf("%s", strings.TrimPrefix(fmt.Sprintf(format, args...), "notify: "))
		},
	})
	return &webhook{d: d, shown: notify.RedactURL(o.Webhook)}, nil
}

// Send queues a; it never blocks. When the queue is full (the webhook has
// been failing for a while) the alert is dropped for the webhook, and
// said so: it was printed on standard output already.
func (w *webhook) Send(a detect.Alert) {
	w.d.Send(notify.Message{Kind: notify.KindNotice, Notice: alertNotice(a)})
}

// Close stops taking alerts and delivers the queued ones until ctx ends;
// then it abandons the rest, saying which.
func (w *webhook) Close(ctx context.Context) { _ = w.d.Close(ctx) }

// alertNotice is a as a notice: its JSON for a generic webhook, a line of
// text for Slack (escaped by pkg/notify).
func alertNotice(a detect.Alert) *notify.Notice {
	subject := "the " + a.Type + " alert"
	if a.Seq != 0 {
		subject += fmt.Sprintf(" of seq %d", a.Seq)
	}
	return &notify.Notice{Subject: termtext.Printable(subject), Payload: a, Text: slackText(a)}
}

// slackText is the Slack message's text: mrkdwn whose client-supplied
// parts pkg/notify escapes.
func slackText(a detect.Alert) string {
	text := fmt.Sprintf("*auditor: %s* (%s)", a.Type, a.Severity)
	if a.Agent != "" {
		text += " agent `" + strings.ReplaceAll(a.Agent, "`", "'") + "`"
	}
	if a.Seq != 0 {
		text += fmt.Sprintf(" seq %d", a.Seq)
	}
	return text + "\n" + a.Message
}
