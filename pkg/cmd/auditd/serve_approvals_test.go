package auditd

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/notify"
	"github.com/govkit/govkit/pkg/token"
)

// TestServeTokensAndNotifications runs the daemon as `auditd --tokens FILE
// --policy FILE --approval-webhook URL` does: bearer tokens decide who
// acts, the policy that an approval is needed (DESIGN §11), and the webhook
// (a local httptest server standing in for the receiver) hears of the new
// request and of its resolution.
func TestServeTokensAndNotifications(t *testing.T) {
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policies.yaml")
	if err := os.WriteFile(policyFile, []byte(auditdtest.RequireApprovalPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.yaml")
	agentTok, err := token.Create(tokens, "agent-7", []token.Role{token.Agent}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bobTok, err := token.Create(tokens, "bob", []token.Role{token.Approver, token.Auditor}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var hooks []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("webhook body %q: %v", b, err)
		}
		mu.Lock()
		hooks = append(hooks, m)
		mu.Unlock()
	}))
	defer hook.Close()

	streams, _, _, _ := cli.Test()
	var errOut lockedBuffer
	streams.ErrOut = &errOut
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveRun(&ServeOptions{
			IO: streams, Addr: "127.0.0.1:0", DB: filepath.Join(dir, "audit.db"), Context: ctx,
			Tokens: tokens, PolicyFile: policyFile, ApprovalTimeout: time.Minute,
			Notify: notify.Config{Webhook: hook.URL, BaseURL: "http://auditd.internal:1199"},
		})
	}()
	addr := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(10 * time.Second)
	for addr.FindStringSubmatch(errOut.String()) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line: %q", errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	url := "http://" + addr.FindStringSubmatch(errOut.String())[1]
	as := func(tok string) *client.Client {
		c, err := client.New(url, client.WithToken(tok))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	req, err := as(agentTok).RequestApproval(ctx, approval.Input{
		Resource: audit.Resource{Type: "database", Name: "prod-db"}, Action: "write", Reason: "migration 42",
	})
	if err != nil {
		t.Fatal(err)
	}
	if req.RequestedBy != "agent-7" || !req.ExpiresAt.Equal(req.CreatedAt.Add(time.Minute)) {
		t.Errorf("request %+v: want agent-7's, expiring after --approval-timeout", req)
	}
	if _, err := as(agentTok).Approve(ctx, req.ID, ""); err == nil {
		t.Error("an agent token approved")
	}
	if _, err := as(bobTok).Approve(ctx, req.ID, "ok"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(hooks)
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook got %d messages, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if hooks[0]["kind"] != "approval_requested" || hooks[1]["kind"] != "approval_resolved" ||
		!strings.Contains(hooks[0]["approve_command"].(string), "approvals approve "+req.ID) {
		t.Errorf("webhook messages: %v", hooks)
	}
	mu.Unlock()

	// The metric is readable by the auditor role.
	mreq, _ := http.NewRequest("GET", url+govapi.PathMetrics, nil)
	mreq.Header.Set("Authorization", "Bearer "+bobTok)
	resp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `govkit_auditd_approval_notifications_total{notifier="webhook",result="sent"} 2`) {
		t.Errorf("metrics lack the sent notifications:\n%s", grepLines(string(body), "notifications"))
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "clients authenticate with bearer tokens from "+tokens) ||
		!strings.Contains(errOut.String(), "approval notifications: webhook") {
		t.Errorf("start messages: %q", errOut.String())
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestServeFlagsForApprovals(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GOVKIT_APPROVAL_TIMEOUT", "15m")
	t.Setenv("GOVKIT_TOKENS_FILE", "/etc/govkit/tokens.yaml")
	t.Setenv("GOVKIT_APPROVAL_EMAIL_TO", "oncall@example.com, dba@example.com")
	t.Setenv("GOVKIT_SMTP_HOST", "smtp.example.com")
	t.Setenv("GOVKIT_SMTP_FROM", "govkit@example.com")
	// With a tokens file auditd may listen beyond loopback.
	o, code, stderr := parse(t, "--addr", "0.0.0.0:1199")
	if code != 0 || o == nil {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if o.ApprovalTimeout != 15*time.Minute || o.Tokens != "/etc/govkit/tokens.yaml" || o.Notify.SMTP.Host != "smtp.example.com" ||
		len(o.Notify.SMTP.To) != 1 || o.Notify.SMTP.Port != notify.DefaultSMTPPort {
		t.Errorf("options %+v", o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--approval-timeout", "0s"}, "--approval-timeout 0s is not between"},
		{[]string{"--approval-webhook", "ftp://x"}, "GOVKIT_APPROVAL_WEBHOOK"},
		{[]string{"--smtp-from", "not an address"}, "GOVKIT_SMTP_FROM"},
	} {
		if _, code, stderr := parse(t, tc.args...); code != 3 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 3 naming %s", tc.args, code, stderr, tc.want)
		}
	}
}
