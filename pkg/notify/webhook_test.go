package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/govkit/govkit/pkg/approval"
)

// hook is a local stand-in for Slack or a webhook receiver (DESIGN §9:
// fakes only for third-party services).
type hook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	posts  []post
	status int
	header http.Header
}

type post struct {
	host, path, contentType string
	body                    []byte
}

func newHook(t *testing.T) *hook {
	h := &hook{status: http.StatusOK, header: http.Header{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.posts = append(h.posts, post{r.Host, r.URL.Path, r.Header.Get("Content-Type"), body})
		status := h.status
		for k, v := range h.header {
			w.Header()[k] = v
		}
		h.mu.Unlock()
		if r.Method != http.MethodPost {
			status = http.StatusMethodNotAllowed
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) last(t *testing.T) post {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.posts) == 0 {
		t.Fatal("nothing was posted")
	}
	return h.posts[len(h.posts)-1]
}

// routeTo sends every request to h whatever its URL, the way DNS would
// send hooks.slack.com to Slack; the request keeps its original Host.
func routeTo(h *hook) *http.Client {
	target, _ := url.Parse(h.srv.URL)
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func only(t *testing.T, c Config) Notifier {
	t.Helper()
	ns, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 1 {
		t.Fatalf("New made %d notifiers; want 1", len(ns))
	}
	return ns[0]
}

// slackTexts decodes a Slack webhook body with slack-go (so it is a
// message Slack's own library reads back) and returns the fallback text and
// every text in its blocks, joined by newlines.
func slackTexts(t *testing.T, body []byte) (fallback, blocks string) {
	t.Helper()
	var msg slack.WebhookMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("not a Slack message: %v\n%s", err, body)
	}
	if msg.Blocks == nil || len(msg.Blocks.BlockSet) == 0 {
		t.Fatalf("no blocks:\n%s", body)
	}
	var raw struct {
		Blocks []json.RawMessage `json:"blocks"`
	}
	_ = json.Unmarshal(body, &raw)
	var texts []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["text"].(string); ok {
				texts = append(texts, s)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, b := range raw.Blocks {
		var v any
		_ = json.Unmarshal(b, &v)
		walk(v)
	}
	return msg.Text, strings.Join(texts, "\n")
}

func TestSlackRequested(t *testing.T) {
	h := newHook(t)
	n := only(t, Config{SlackWebhook: h.srv.URL + "/services/T0/B0/secret", BaseURL: testBase})
	if n.Name() != "slack" {
		t.Errorf("Name = %q", n.Name())
	}
	if err := n.Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now}); err != nil {
		t.Fatal(err)
	}
	p := h.last(t)
	if p.path != "/services/T0/B0/secret" || p.contentType != "application/json" {
		t.Errorf("posted to %s as %s", p.path, p.contentType)
	}
	fallback, blocks := slackTexts(t, p.body)
	for _, want := range []string{
		"Approval requested: write on database:prod-db",
		"*Resource*\ndatabase:prod-db",
		"*Tags*\nproduction, pii",
		"*Action*\nwrite",
		"*Requested by*\nalice",
		"*Quorum*\n0 of 2 approvals",
		"*Expiry*\nexpires in 4m59s, at 10:05:00 UTC",
		"*Policy*\nprod-db-guard",
		"*Reason*\n> unstick order 7",
		"*Policy explanation*\n> " + explanation,
		"```psql -c \"UPDATE orders SET state='open' WHERE id=7\"```",
		"*Approve:* `approvals approve apr_01HX --url http://auditd.internal:1199`",
		"*Deny:* `approvals deny apr_01HX --reason \"…\" --url http://auditd.internal:1199`",
		"<http://auditd.internal:1199/v1/approvals/apr_01HX|approval apr_01HX>",
	} {
		if !strings.Contains(blocks, want) {
			t.Errorf("blocks lack %q:\n%s", want, blocks)
		}
	}
	for _, want := range []string{
		"Approval requested: write on database:prod-db (requested by alice, expires in 4m59s, at 10:05:00 UTC)",
		"approvals approve apr_01HX --url http://auditd.internal:1199",
		`approvals deny apr_01HX --reason "…" --url http://auditd.internal:1199`,
		"http://auditd.internal:1199/v1/approvals/apr_01HX",
	} {
		if !strings.Contains(fallback, want) {
			t.Errorf("text lacks %q:\n%s", want, fallback)
		}
	}
}

func TestSlackResolved(t *testing.T) {
	h := newHook(t)
	n := only(t, Config{SlackWebhook: h.srv.URL + "/services/T0/B0/secret"})
	tests := []struct {
		name string
		m    Message
		want []string
	}{
		{"denied", Message{Kind: Resolved, Request: denied(t), Now: created.Add(time.Minute)}, []string{
			"Approval denied by carol: write on database:prod-db",
			"*Denied by carol*\n> not during the freeze",
			"*Resolved*\ndecided at 10:01:00 UTC",
			"*Votes*\nbob: approve at 10:00:30 UTC (looks fine)\ncarol: deny at 10:01:00 UTC (not during the freeze)",
		}},
		{"approved", Message{Kind: Resolved, Request: approved(t), Now: created.Add(time.Minute)}, []string{
			"Approval approved by dave: write on database:prod-db",
			"*Approved by dave*\n> ticket OPS-12",
			"*Quorum*\n2 of 2 approvals",
		}},
		{"expired", Message{Kind: Resolved, Request: expired(t), Now: created.Add(6 * time.Minute)}, []string{
			"Approval expired, no decision: write on database:prod-db",
			"*Expired, no decision*",
			"*Resolved*\nexpired at 10:05:00 UTC",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := n.Notify(context.Background(), tt.m); err != nil {
				t.Fatal(err)
			}
			fallback, blocks := slackTexts(t, h.last(t).body)
			for _, want := range tt.want {
				if !strings.Contains(blocks, want) {
					t.Errorf("blocks lack %q:\n%s", want, blocks)
				}
			}
			if !strings.HasPrefix(fallback, tt.want[0]) {
				t.Errorf("text = %q; want it to start with %q", fallback, tt.want[0])
			}
			if strings.Contains(blocks+fallback, "approvals approve") {
				t.Errorf("a resolved message offers the approve command:\n%s", blocks)
			}
		})
	}
}

// A reason is untrusted: it must not ping the channel or hide a link.
func TestSlackEscapesRequestFields(t *testing.T) {
	h := newHook(t)
	n := only(t, Config{SlackWebhook: h.srv.URL + "/x"})
	r := pending(t)
	r.Reason = "<!channel> urgent, see <https://evil.test|the runbook> & approve"
	r.RequestedBy = "<@U0ADMIN>"
	if err := n.Notify(context.Background(), Message{Kind: Requested, Request: r, Now: now}); err != nil {
		t.Fatal(err)
	}
	body := string(h.last(t).body)
	fallback, blocks := slackTexts(t, []byte(body))
	for _, bad := range []string{"<!channel>", "<https://evil.test", "<@U0ADMIN>"} {
		if strings.Contains(blocks+fallback, bad) {
			t.Errorf("message carries %q unescaped:\n%s", bad, body)
		}
	}
	if !strings.Contains(blocks, "&lt;!channel&gt; urgent, see &lt;https://evil.test|the runbook&gt; &amp; approve") {
		t.Errorf("reason not escaped:\n%s", blocks)
	}
}

// Seed compatibility: HELPDESK_APPROVAL_WEBHOOK is a Slack URL, so a
// GOVKIT_APPROVAL_WEBHOOK at hooks.slack.com gets a Slack message, any
// other host the generic JSON.
func TestWebhookHostDecidesFormat(t *testing.T) {
	tests := []struct {
		url   string
		slack bool
	}{
		{"https://hooks.slack.com/services/T000/B000/XXXX", true},
		{"https://HOOKS.SLACK.COM:443/services/T000/B000/XXXX", true},
		{"https://hooks.slack-gov.com/services/T000/B000/XXXX", true},
		{"https://hooks.slack.com.evil.test/services/T000/B000/XXXX", false},
		{"https://alerts.example.com/hooks/approvals?token=t", false},
	}
	for _, tt := range tests {
		h := newHook(t)
		n := only(t, Config{Webhook: tt.url, HTTPClient: routeTo(h)})
		if n.Name() != "webhook" {
			t.Errorf("%s: Name = %q", tt.url, n.Name())
		}
		if err := n.Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now}); err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		p := h.last(t)
		u, _ := url.Parse(tt.url)
		if p.host != u.Host {
			t.Errorf("%s: request went to host %q", tt.url, p.host)
		}
		var v map[string]any
		if err := json.Unmarshal(p.body, &v); err != nil {
			t.Fatal(err)
		}
		_, isSlack := v["blocks"]
		_, isGeneric := v["schema_version"]
		if isSlack != tt.slack || isGeneric == tt.slack {
			t.Errorf("%s: slack format %v, generic %v; want slack %v", tt.url, isSlack, isGeneric, tt.slack)
		}
	}
}

func TestGenericWebhook(t *testing.T) {
	h := newHook(t)
	n := only(t, Config{Webhook: h.srv.URL + "/hook", BaseURL: testBase + "/"})
	if err := n.Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now}); err != nil {
		t.Fatal(err)
	}
	p := h.last(t)
	if p.contentType != "application/json" {
		t.Errorf("Content-Type = %q", p.contentType)
	}
	var got struct {
		SchemaVersion  int    `json:"schema_version"`
		Kind           string `json:"kind"`
		ApproveCommand string `json:"approve_command"`
		DenyCommand    string `json:"deny_command"`
		URL            string `json:"url"`
		Text           string `json:"text"`
		Request        struct {
			ID          string `json:"id"`
			Status      string `json:"status"`
			RequestedBy string `json:"requested_by"`
			Action      string `json:"action"`
			Reason      string `json:"reason"`
			Quorum      int    `json:"quorum"`
			ExpiresAt   string `json:"expires_at"`
			ActionHash  string `json:"action_hash"`
			Resource    struct {
				Type, Name string
				Tags       []string
			} `json:"resource"`
			Votes          []any `json:"votes"`
			PolicyDecision struct {
				Explanation string `json:"explanation"`
			} `json:"policy_decision"`
		} `json:"request"`
	}
	if err := json.Unmarshal(p.body, &got); err != nil {
		t.Fatal(err)
	}
	r := got.Request
	switch {
	case got.SchemaVersion != 1, got.Kind != "approval_requested":
		t.Errorf("schema_version %d, kind %q", got.SchemaVersion, got.Kind)
	case got.ApproveCommand != "approvals approve apr_01HX --url http://auditd.internal:1199":
		t.Errorf("approve_command = %q", got.ApproveCommand)
	case got.DenyCommand != `approvals deny apr_01HX --reason "…" --url http://auditd.internal:1199`:
		t.Errorf("deny_command = %q", got.DenyCommand)
	case got.URL != "http://auditd.internal:1199/v1/approvals/apr_01HX":
		t.Errorf("url = %q", got.URL)
	case r.ID != testID, r.Status != "pending", r.RequestedBy != "alice", r.Action != "write", r.Reason != "unstick order 7", r.Quorum != 2:
		t.Errorf("request = %+v", r)
	case r.Resource.Type != "database", r.Resource.Name != "prod-db", len(r.Resource.Tags) != 2:
		t.Errorf("resource = %+v", r.Resource)
	case r.ExpiresAt != "2025-03-04T10:05:00Z", len(r.ActionHash) != 64, r.Votes == nil:
		t.Errorf("expires_at %q, action_hash %q, votes %v", r.ExpiresAt, r.ActionHash, r.Votes)
	case r.PolicyDecision.Explanation != explanation:
		t.Errorf("policy_decision.explanation = %q", r.PolicyDecision.Explanation)
	case !strings.Contains(got.Text, "expires in 4m59s, at 10:05:00 UTC"):
		t.Errorf("text = %q", got.Text)
	}

	if err := n.Notify(context.Background(), Message{Kind: Resolved, Request: denied(t), Now: now}); err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(h.last(t).body, &res); err != nil {
		t.Fatal(err)
	}
	req := res["request"].(map[string]any)
	votes := req["votes"].([]any)
	last := votes[len(votes)-1].(map[string]any)
	if res["kind"] != "approval_resolved" || req["status"] != "denied" || last["by"] != "carol" || last["reason"] != "not during the freeze" {
		t.Errorf("resolved payload = %v", res)
	}
	if _, ok := res["approve_command"]; ok {
		t.Errorf("resolved payload offers approve_command: %v", res)
	}
	if !strings.Contains(res["text"].(string), "denied by carol") {
		t.Errorf("text = %q", res["text"])
	}
}

func TestWebhookFailures(t *testing.T) {
	tests := []struct {
		status     int
		header     map[string]string
		permanent  bool
		retryAfter time.Duration
	}{
		{status: 500},
		{status: 503},
		{status: 404, permanent: true},
		{status: 400, permanent: true},
		{status: 429, header: map[string]string{"Retry-After": "7"}, retryAfter: 7 * time.Second},
		{status: 302, header: map[string]string{"Location": "/elsewhere"}}, // not followed: a redirected POST is not a delivery
	}
	for _, tt := range tests {
		h := newHook(t)
		h.status = tt.status
		for k, v := range tt.header {
			h.header.Set(k, v)
		}
		for _, c := range []Config{{Webhook: h.srv.URL + "/hook/secret"}, {SlackWebhook: h.srv.URL + "/services/T/B/secret"}} {
			n := only(t, c)
			err := n.Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now})
			if err == nil {
				t.Errorf("%s: status %d: no error", n.Name(), tt.status)
				continue
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: error shows the URL: %v", n.Name(), err)
			}
			var pe *permanentError
			if errors.As(err, &pe) != tt.permanent {
				t.Errorf("%s: status %d: permanent = %v; want %v (%v)", n.Name(), tt.status, !tt.permanent, tt.permanent, err)
			}
			var ra *retryAfterError
			if tt.retryAfter != 0 && (!errors.As(err, &ra) || ra.after != tt.retryAfter) {
				t.Errorf("%s: status %d: want retry after %s, got %v", n.Name(), tt.status, tt.retryAfter, err)
			}
		}
		if n := len(h.posts); n != 2 {
			t.Errorf("status %d: %d posts; want 2 (no redirect followed)", tt.status, n)
		}
	}
}

// Slack webhook URLs are credentials: no error may show the path.
func TestUnreachableWebhookErrorHidesURL(t *testing.T) {
	h := newHook(t)
	dead := h.srv.URL
	h.srv.Close()
	for _, c := range []Config{{SlackWebhook: dead + "/services/T0/B0/secret"}, {Webhook: dead + "/hook?token=secret"}} {
		err := only(t, c).Notify(context.Background(), Message{Kind: Requested, Request: pending(t), Now: now})
		if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "/…") {
			t.Errorf("error = %v; want a failure that shows only the redacted URL", err)
		}
	}
}

// Slack refuses a header over 150 characters, a text over 3,000 and more
// than ten fields: a huge request must still make a message Slack takes.
func TestSlackLimits(t *testing.T) {
	r := pending(t)
	r.Resource.Name = strings.Repeat("n", 250)
	r.RawCommand = strings.Repeat("echo <&> ", 7000)
	r.Reason = strings.Repeat("why & ", 700)
	for i := range 30 {
		r.Votes = append(r.Votes, approval.Vote{By: fmt.Sprintf("user%d", i), Decision: approval.Approve, At: created})
	}
	msg := slackMessage(newView(Message{Kind: Requested, Request: r, Now: now}, testBase))
	body, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text *struct {
				Text string `json:"text"`
			} `json:"text"`
			Fields []struct {
				Text string `json:"text"`
			} `json:"fields"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(raw.Text); n > 3000 {
		t.Errorf("text is %d characters", n)
	}
	for _, b := range raw.Blocks {
		limit := 3000
		if b.Type == "header" {
			limit = 150
		}
		if b.Text != nil {
			if n := utf8.RuneCountInString(b.Text.Text); n > limit {
				t.Errorf("%s block text is %d characters; the limit is %d", b.Type, n, limit)
			}
			if strings.Contains(b.Text.Text, "&am…") || strings.Contains(b.Text.Text, "&l…") {
				t.Errorf("an entity was cut in half: …%s", b.Text.Text[len(b.Text.Text)-20:])
			}
		}
		if len(b.Fields) > 10 {
			t.Errorf("%d fields; Slack takes 10", len(b.Fields))
		}
		for _, f := range b.Fields {
			if n := utf8.RuneCountInString(f.Text); n > 2000 {
				t.Errorf("field is %d characters", n)
			}
		}
	}
	if !strings.Contains(string(body), "…```") {
		t.Error("the cut command lost its closing fence")
	}
	if !strings.Contains(string(body), "… and 20 more") {
		t.Error("votes were not cut at ten")
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 4, "abc…"},
		{"ab&amp;cd", 5, "ab…"},
		{"ab&amp;cd", 8, "ab&amp;…"},
		{"ééééé", 3, "éé…"},
	}
	for _, tt := range tests {
		if got := cut(tt.in, tt.n); got != tt.want {
			t.Errorf("cut(%q, %d) = %q; want %q", tt.in, tt.n, got, tt.want)
		}
	}
	if got := cutPlain("a & b & c", 4); got != "a &…" {
		t.Errorf("cutPlain = %q", got)
	}
}
