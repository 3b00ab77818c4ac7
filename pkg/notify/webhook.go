package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/govkit/govkit/pkg/approval"
)

// WebhookPayload is the generic webhook's JSON body (DESIGN §3: snake_case,
// schema_version).
type WebhookPayload struct {
	SchemaVersion  int              `json:"schema_version"`
	Kind           Kind             `json:"kind"`
	Request        approval.Request `json:"request"`
	ApproveCommand string           `json:"approve_command,omitempty"` // pending requests only
	DenyCommand    string           `json:"deny_command,omitempty"`
	URL            string           `json:"url,omitempty"` // BASE/v1/approvals/ID when a base URL is set
	Text           string           `json:"text"`          // the email body: a ready-made human summary
}

// webhookNotifier POSTs a WebhookPayload, or a Notice's payload; any
// answer but 2xx is a failure.
type webhookNotifier struct {
	name      string
	url       string // may hold a token: never logged in full
	baseURL   string
	client    *http.Client
	userAgent string
}

var _ Notifier = (*webhookNotifier)(nil)

func newWebhook(url, baseURL string, client *http.Client) *webhookNotifier {
	return &webhookNotifier{name: "webhook", url: url, baseURL: baseURL, client: client, userAgent: "govkit-notify/1"}
}

func (w *webhookNotifier) Name() string { return w.name }

func (w *webhookNotifier) Notify(ctx context.Context, m Message) error {
	if m.Notice == nil && m.Now.IsZero() {
		return permanent(fmt.Errorf("webhook: %w", errNoNow))
	}
	body, err := w.body(m)
	if err != nil {
		return permanent(fmt.Errorf("webhook: encoding the payload: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return permanent(fmt.Errorf("webhook %s: %w", RedactURL(w.url), scrubURLError(err, w.url)))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.userAgent)
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", RedactURL(w.url), scrubURLError(err, w.url))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	err = fmt.Errorf("webhook %s answered %s", RedactURL(w.url), resp.Status)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs > 0 {
			return &retryAfterError{err, time.Duration(secs) * time.Second}
		}
		return err
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode >= 500:
		return err
	case resp.StatusCode >= 400:
		return permanent(err)
	}
	return err // 1xx, 3xx: not delivered; maybe a misconfigured proxy that recovers
}

// body is m's JSON: a Notice's payload as it is, or the WebhookPayload of
// an approval message.
func (w *webhookNotifier) body(m Message) ([]byte, error) {
	if m.Notice != nil {
		return json.Marshal(m.Notice.Payload)
	}
	v := newView(m, w.baseURL)
	p := WebhookPayload{
		SchemaVersion:  SchemaVersion,
		Kind:           m.Kind,
		Request:        m.Request,
		ApproveCommand: v.Approve,
		DenyCommand:    v.Deny,
		URL:            v.Link,
		Text:           v.text(),
	}
	if p.Request.Votes == nil {
		p.Request.Votes = []approval.Vote{}
	}
	return json.Marshal(p)
}
