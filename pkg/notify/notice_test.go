package notify

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// Issue 20 "one home for delivery": auditor's alerts and govbot's report
// go through the Dispatcher as notices, with the one URL check, redaction
// and Slack escape.

func TestNewWebhookChoosesTheFormat(t *testing.T) {
	h := newHook(t)
	alert := map[string]any{"type": "high_volume", "seq": 7}
	tests := []struct {
		name   string
		config WebhookConfig
		notice Notice
		want   string // the body posted
	}{
		{
			name:   "generic: the payload as it is",
			config: WebhookConfig{URL: h.srv.URL + "/hook/secret"},
			notice: Notice{Subject: "the high_volume alert", Payload: alert, Text: "ignored"},
			want:   `{"seq":7,"type":"high_volume"}`,
		},
		{
			name:   "slack forced: the text alone, escaped",
			config: WebhookConfig{URL: h.srv.URL + "/services/T/B/X", Slack: true},
			notice: Notice{Subject: "x", Payload: alert, Text: "<!channel> & <http://evil|click>"},
			want:   `{"text":"\u0026lt;!channel\u0026gt; \u0026amp; \u0026lt;http://evil|click\u0026gt;","replace_original":false,"delete_original":false}`, // slack-go escapes HTML
		},
		{
			name:   "slack forced: the notice's own message",
			config: WebhookConfig{URL: h.srv.URL + "/services/T/B/X", Slack: true},
			notice: Notice{Subject: "x", Slack: &slack.WebhookMessage{Text: "report"}, Text: "unused"},
			want:   `{"text":"report","replace_original":false,"delete_original":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := NewWebhook(tt.config)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Notify(context.Background(), Message{Kind: KindNotice, Notice: &tt.notice}); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(h.last(t).body)); got != tt.want {
				t.Errorf("posted %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestNewWebhookChecksTheURL(t *testing.T) {
	for raw, want := range map[string]string{
		"ftp://hooks.example/secret": "incident-webhook ftp://hooks.example/… is not an http or https URL",
		"hooks.example/secret":       "incident-webhook is not an absolute URL; want http:// or https://",
		"http://":                    "incident-webhook has no host",
		"http://h/%zz":               "incident-webhook is not a valid URL",
	} {
		_, err := NewWebhook(WebhookConfig{Name: "incident-webhook", URL: raw})
		if err == nil || err.Error() != want {
			t.Errorf("NewWebhook(%q) = %v, want %q", raw, err, want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T/B/SECRET": "https://hooks.slack.com/…",
		"http://127.0.0.1:9/":                         "http://127.0.0.1:9",
		"http://h/?token=x":                           "http://h/…",
		"http://h/%zz":                                "(invalid URL)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A notice's delivery is logged by its subject, and a caller that must
// report the failure itself gets the error, without the URL's secret.
func TestDispatcherNoticeFailure(t *testing.T) {
	h := newHook(t)
	h.status = http.StatusNotFound
	n, err := NewWebhook(WebhookConfig{URL: h.srv.URL + "/hook/SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecord()
	o := rec.options()
	var failed []error
	o.Failed = func(name string, m Message, err error) {
		if name != "webhook" || m.Notice == nil {
			t.Errorf("Failed(%q, %+v)", name, m)
		}
		failed = append(failed, err)
	}
	d := NewDispatcher([]Notifier{n}, o)
	d.Send(Message{Kind: KindNotice, Notice: &Notice{Subject: "the compliance report", Payload: map[string]int{"a": 1}}})
	closeNow(t, d)
	if len(failed) != 1 || !strings.Contains(failed[0].Error(), "answered 404") || strings.Contains(failed[0].Error(), "SECRET") {
		t.Errorf("failed = %v", failed)
	}
	if logs := rec.allLogs(); !strings.Contains(logs, "notify: webhook: failed to deliver the compliance report (not retrying): webhook "+h.srv.URL+"/… answered 404") {
		t.Errorf("logs:\n%s", logs)
	}
}

func TestEmailRefusesNotices(t *testing.T) {
	e := &emailNotifier{}
	err := e.Notify(context.Background(), Message{Kind: KindNotice, Notice: &Notice{Subject: "x"}})
	var perm *permanentError
	if !errors.As(err, &perm) {
		t.Errorf("Notify = %v, want a permanent error", err)
	}
}

// The JSON a notice carries is marshalled once, as the caller gave it.
func TestNoticePayloadIsCallerJSON(t *testing.T) {
	w := newWebhook("http://h", "", nil)
	b, err := w.body(Message{Notice: &Notice{Payload: json.RawMessage(`{"schema_version":1}`)}})
	if err != nil || string(b) != `{"schema_version":1}` {
		t.Errorf("body = %s, %v", b, err)
	}
}

// A notifier reads no clock of its own (issue 20): an approval message
// without Now, which a Dispatcher never passes, is refused before anything
// is sent, not shown with the wrong TTL and Date.
func TestNotifiersRefuseMessageWithoutNow(t *testing.T) {
	h := newHook(t)
	for _, n := range []Notifier{
		newWebhook(h.srv.URL+"/hook", testBase, h.srv.Client()),
		newSlack("slack", h.srv.URL+"/services/T0/B0/secret", testBase, h.srv.Client()),
		&emailNotifier{addr: "127.0.0.1:0"}, // refused before it dials
	} {
		for _, kind := range []Kind{Requested, Resolved} {
			err := n.Notify(context.Background(), Message{Kind: kind, Request: pending(t)})
			var perm *permanentError
			if !errors.Is(err, errNoNow) || !errors.As(err, &perm) || !strings.HasPrefix(err.Error(), n.Name()) {
				t.Errorf("%s: Notify(%s without Now) = %v, want a permanent %v", n.Name(), kind, err, errNoNow)
			}
		}
	}
	h.mu.Lock()
	posted := len(h.posts)
	h.mu.Unlock()
	if posted != 0 {
		t.Errorf("posted %d messages without Now", posted)
	}
	// A notice shows no time: it needs none.
	if err := newWebhook(h.srv.URL+"/hook", "", h.srv.Client()).Notify(context.Background(),
		Message{Kind: KindNotice, Notice: &Notice{Subject: "x", Payload: map[string]int{"n": 1}}}); err != nil {
		t.Errorf("notice without Now: %v", err)
	}
}
