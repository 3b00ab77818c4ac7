package auditor

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/detect"
)

// hookServer is a stand-in for an incident webhook (a third-party service):
// it records each POST and answers with the next status of a script (200
// once the script is used up).
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []string
	statuses []int
	hold     chan struct{} // when not nil, every request waits for it to close
}

func newHookServer(t *testing.T, statuses ...int) *hookServer {
	h := &hookServer{statuses: statuses}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, string(body))
		code := http.StatusOK
		if len(h.statuses) > 0 {
			code, h.statuses = h.statuses[0], h.statuses[1:]
		}
		hold := h.hold
		h.mu.Unlock()
		if hold != nil {
			<-hold
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

func destructiveEdit(ev *audit.Event) {
	ev.ActionClass = audit.ActionDestructive
	ev.Tool.RawCommand = "DROP TABLE orders"
}

// H-44: each alert is POSTed as the JSON line printed on stdout; a failure
// is retried with backoff and logged.
func TestWebhookDelivers(t *testing.T) {
	isolate(t)
	d := startAuditd(t, nil)
	hook := newHookServer(t, http.StatusServiceUnavailable, http.StatusTooManyRequests)
	d.post("db-agent", 2, destructiveEdit)
	r := auditor(t, nil, "--once", "--audit-url", d.URL, "--since-seq", "0", "--incident-webhook", hook.URL+"/hook/secret-path")
	r.want(2)
	lines := strings.Split(strings.TrimSpace(r.stdout.String()), "\n")
	got := hook.received()
	if len(lines) != 2 || len(got) != 4 {
		t.Fatalf("%d alerts, %d posts:\n%s\n%q", len(lines), len(got), r.stdout.String(), got)
	}
	// Two failed attempts, then each alert once, in order.
	if got[0] != lines[0] || got[1] != lines[0] || got[2] != lines[0] || got[3] != lines[1] {
		t.Errorf("posted %q\nprinted %q", got, lines)
	}
	var a detect.Alert
	if err := json.Unmarshal([]byte(got[3]), &a); err != nil || a.Type != detect.UnauthorizedDestructive || a.Agent != "db-agent" || a.Seq != 2 {
		t.Errorf("payload %s: %v", got[3], err)
	}
	stderr := r.stderr.String()
	for _, want := range []string{
		"auditor: webhook: attempt 1/4 to deliver the unauthorized_destructive alert of seq 1 failed: webhook " + hook.URL + "/… answered 503 Service Unavailable; retrying in ",
		"attempt 2/4 to deliver the unauthorized_destructive alert of seq 1 failed: webhook " + hook.URL + "/… answered 429 Too Many Requests",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "secret-path") {
		t.Errorf("the webhook's path is logged:\n%s", stderr)
	}
}

// A refused alert (4xx) is not retried; an unreachable webhook gives up
// after a few attempts. Neither changes the exit status or the output.
func TestWebhookFailures(t *testing.T) {
	isolate(t)
	d := startAuditd(t, nil)
	d.post("db-agent", 1, destructiveEdit)
	hook := newHookServer(t, http.StatusBadRequest)
	r := auditor(t, nil, "--once", "--audit-url", d.URL, "--since-seq", "0", "--incident-webhook", hook.URL)
	r.want(2)
	if n := len(hook.received()); n != 1 {
		t.Errorf("%d posts of a refused alert", n)
	}
	if !strings.Contains(r.stderr.String(), "auditor: webhook: failed to deliver the unauthorized_destructive alert of seq 1 (not retrying): webhook "+hook.URL+" answered 400 Bad Request") {
		t.Errorf("stderr:\n%s", r.stderr.String())
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/token/abc"
	dead.Close()
	r = auditor(t, nil, "--once", "--audit-url", d.URL, "--since-seq", "0", "--incident-webhook", deadURL)
	r.want(2)
	if len(r.alerts()) != 1 || !strings.Contains(r.stderr.String(), "auditor: webhook: failed to deliver the unauthorized_destructive alert of seq 1 after 4 attempts: ") ||
		!strings.Contains(r.stderr.String(), "connection refused") || strings.Contains(r.stderr.String(), "/token/abc") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout.String(), r.stderr.String())
	}
}

// A webhook that hangs never holds up detection: alerts keep coming on
// stdout while the first post waits.
func TestWebhookNeverBlocks(t *testing.T) {
	isolate(t)
	d := startAuditd(t, nil)
	hook := newHookServer(t)
	hook.hold = make(chan struct{})
	r := background(t, nil, "--socket", d.Socket, "--audit-url", d.URL, "--incident-webhook", hook.URL)
	r.waitStderr(`auditor: watching `)
	d.post("db-agent", 20, destructiveEdit)
	r.waitFor("20 alerts", func() bool { return len(r.alerts()) == 20 })
	if n := len(hook.received()); n != 1 {
		t.Errorf("%d posts while the first hangs", n)
	}
	close(hook.hold)
	r.waitFor("20 posts", func() bool { return len(hook.received()) == 20 })
	r.stop()
	r.want(0)
	// Nothing was left to deliver at the stop: no alert dropped, given up
	// or posted twice (stop's own bound catches a stop that hangs).
	if n := len(hook.received()); n != 20 || strings.Contains(r.stderr.String(), "webhook:") {
		t.Errorf("%d posts; stderr:\n%s", n, r.stderr.String())
	}
}

// A Slack incoming webhook gets a Slack message: the alert in one line
// of mrkdwn, whose client-supplied text pkg/notify escapes.
func TestWebhookPayloadSlack(t *testing.T) {
	n := alertNotice(detect.Alert{Type: detect.HighVolume, Severity: detect.Warning, Agent: "k8s_`agent`", Seq: 7,
		Message: "High event volume detected: 150 events in the last minute <!channel>"})
	if n.Subject != "the high_volume alert of seq 7" || n.Text != "*auditor: high_volume* (warning) agent `k8s_'agent'` seq 7\nHigh event volume detected: 150 events in the last minute <!channel>" {
		t.Errorf("notice = %+v", n)
	}
	hook := newHookServer(t)
	o := &Options{Webhook: "https://hooks.slack.com/services/T/B/secret", WebhookClient: redirectTo(hook.URL)}
	w, err := newWebhook(o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if w.shown != "https://hooks.slack.com/…" {
		t.Errorf("shown = %q", w.shown)
	}
	w.Send(detect.Alert{Type: detect.HighVolume, Severity: detect.Warning, Seq: 7, Message: "a <b> & c"})
	w.Close(t.Context())
	got := hook.received()
	if len(got) != 1 || !strings.Contains(got[0], `"text":"*auditor: high_volume* (warning) seq 7\na \u0026lt;b\u0026gt; \u0026amp; c"`) {
		t.Errorf("posted %q", got)
	}
}

// redirectTo is a client that sends every request to the test server at
// base, whatever host the URL names (a stand-in for hooks.slack.com).
func redirectTo(base string) *http.Client {
	u, _ := url.Parse(base)
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = u.Scheme, u.Host
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
