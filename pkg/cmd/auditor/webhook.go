package auditor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/notify"
)

// Delivery limits of the incident webhook (seed 003 "Webhook Alerts").
// Detection never waits for the webhook: alerts queue, and one goroutine
// posts them in order, each with a bounded timeout and a few retries.
const (
	webhookAttempts = 4
	webhookTimeout  = 10 * time.Second
	webhookBackoff  = time.Second // doubling, at most webhookMaxWait
	webhookMaxWait  = 30 * time.Second
	webhookQueue    = 1024
)

// webhook posts alerts to --incident-webhook in the background.
//
// pkg/notify's Dispatcher has the same shape but carries approval
// messages; this is its counterpart for alerts, and reuses notify's
// recognition of Slack URLs.
type webhook struct {
	url     string // may hold a secret: logged only as shown
	shown   string // scheme://host/…
	slack   bool
	client  *http.Client
	backoff time.Duration
	logf    func(format string, args ...any)

	queue  chan detect.Alert
	ctx    context.Context // ends when Close gives up
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	closed bool
}

func newWebhook(rawURL string, hc *http.Client, backoff time.Duration, logf func(string, ...any)) *webhook {
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if backoff <= 0 {
		backoff = webhookBackoff
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &webhook{url: rawURL, shown: redactURL(rawURL), slack: notify.IsSlackWebhook(rawURL), client: hc, backoff: backoff,
		logf: logf, queue: make(chan detect.Alert, webhookQueue), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go w.loop()
	return w
}

// Send queues a; it never blocks. When the queue is full (the webhook has
// been failing for a while) the alert is dropped for the webhook, and
// said so: it was printed on standard output already.
func (w *webhook) Send(a detect.Alert) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	select {
	case w.queue <- a:
	default:
		w.logf("webhook %s: queue full (%d alerts); dropped the %s alert of seq %d", w.shown, webhookQueue, a.Type, a.Seq)
	}
}

// Close stops taking alerts and delivers the queued ones until ctx ends;
// then it abandons the rest, saying how many.
func (w *webhook) Close(ctx context.Context) {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		w.cancel()
		<-w.done
	}
	w.cancel()
}

func (w *webhook) loop() {
	defer close(w.done)
	abandoned := 0
	for a := range w.queue {
		if w.ctx.Err() != nil {
			abandoned++
			continue
		}
		w.deliver(a)
	}
	if abandoned > 0 {
		w.logf("webhook %s: gave up on %d queued alert(s) at exit", w.shown, abandoned)
	}
}

// deliver posts a until it is accepted, refused for good, or the attempts
// run out.
func (w *webhook) deliver(a detect.Alert) {
	body, err := w.payload(a)
	if err != nil {
		w.logf("webhook %s: encoding the %s alert: %v", w.shown, a.Type, err)
		return
	}
	wait := w.backoff
	for attempt := 1; ; attempt++ {
		err := w.post(body)
		if err == nil {
			return
		}
		var perm *permanentError
		switch {
		case w.ctx.Err() != nil:
			w.logf("webhook %s: gave up on the %s alert of seq %d at exit: %v", w.shown, a.Type, a.Seq, err)
			return
		case errors.As(err, &perm):
			w.logf("webhook %s: the %s alert of seq %d was refused (not retrying): %v", w.shown, a.Type, a.Seq, err)
			return
		case attempt >= webhookAttempts:
			w.logf("webhook %s: failed to deliver the %s alert of seq %d after %d attempts: %v", w.shown, a.Type, a.Seq, attempt, err)
			return
		}
		d := wait - time.Duration(rand.Int64N(int64(wait)/5+1)) // up to 20% jitter
		w.logf("webhook %s: attempt %d/%d for the %s alert failed: %v; retrying in %s", w.shown, attempt, webhookAttempts, a.Type, err, d.Round(time.Millisecond))
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
		}
		wait = min(2*wait, webhookMaxWait)
	}
}

// payload is the alert's JSON (the stdout line), or a Slack message for a
// Slack incoming webhook, which accepts nothing else.
func (w *webhook) payload(a detect.Alert) ([]byte, error) {
	if !w.slack {
		return json.Marshal(a)
	}
	text := fmt.Sprintf("*auditor: %s* (%s)", a.Type, a.Severity)
	if a.Agent != "" {
		text += " agent `" + a.Agent + "`"
	}
	if a.Seq != 0 {
		text += fmt.Sprintf(" seq %d", a.Seq)
	}
	text += "\n" + a.Message
	return json.Marshal(struct {
		Text string `json:"text"`
	}{text})
}

type permanentError struct{ error }

func (w *webhook) post(body []byte) error {
	ctx, cancel := context.WithTimeout(w.ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return &permanentError{errors.New("cannot build the request")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "govkit-auditor/"+build.String())
	resp, err := w.client.Do(req)
	if err != nil {
		return errors.New(scrub(err, w.url, w.shown))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		return nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return fmt.Errorf("answered %s", resp.Status)
	case code >= 400:
		return &permanentError{fmt.Errorf("answered %s", resp.Status)}
	}
	return fmt.Errorf("answered %s", resp.Status) // 1xx, 3xx: maybe a proxy that recovers
}

// redactURL shows where a URL points without its path and query, which
// often hold the webhook's secret (Slack's do).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	s := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		s += "/…"
	}
	return s
}

// scrub is err's text without the URL net/http puts into it.
func scrub(err error, raw, shown string) string {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error()
	}
	return strings.ReplaceAll(msg, raw, shown)
}
