package serve_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/llmfake"
	"github.com/govkit/govkit/pkg/convstore"
	"github.com/govkit/govkit/pkg/convtools"
	"github.com/govkit/govkit/pkg/llm"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/token"
)

// TestTokens: with a tokens file, the API knows its callers by their
// tokens alone, and each sees and acts on their own conversations. Each
// case is an attack it stops.
func TestTokens(t *testing.T) {
	fake := llmfake.Start(t, []llmfake.Step{{Text: "hello"}})
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.yaml")
	mint := func(name string, roles ...token.Role) string {
		tok, err := token.Create(file, name, roles, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ana, bo, admin, auditor := mint("ana", token.Agent), mint("bo", token.Agent), mint("root", token.Admin), mint("audit", token.Auditor)
	set, err := token.NewSet(file, nil, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	st, err := convstore.Open(filepath.Join(dir, "serve.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lc, err := llm.New(fake.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Options{Store: st, LLM: lc, Model: "m", Tools: &convtools.Runner{}, Tokens: set,
		Session: session.Options{ReceiptKey: []byte("0123456789abcdef0123456789abcdef")}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	as := func(tok string) *serve.Client {
		c, err := serve.NewClient(hs.URL, serve.WithToken(tok))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	status := func(err error) int {
		var ae *serve.APIError
		if errors.As(err, &ae) {
			return ae.Status
		}
		if err != nil {
			t.Fatalf("not an API error: %v", err)
		}
		return 200
	}
	list := func(c *serve.Client) []string {
		var out struct {
			Conversations []serve.StateView `json:"conversations"`
		}
		if err := c.Do(ctx, http.MethodGet, serve.PathConversations, nil, &out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, v := range out.Conversations {
			ids = append(ids, v.ID)
		}
		return ids
	}

	// No token, or one not in the file: nothing but /health.
	for _, c := range []*serve.Client{as(""), as("gk_not-a-token")} {
		if s := status(c.Do(ctx, http.MethodGet, serve.PathConversations, nil, nil)); s != http.StatusUnauthorized {
			t.Errorf("list without a valid token: %d, want 401", s)
		}
	}
	if s := status(as("").Do(ctx, http.MethodGet, "/health", nil, nil)); s != 200 {
		t.Errorf("health without a token: %d", s)
	}

	var mine serve.StateView
	if err := as(ana).Do(ctx, http.MethodPost, serve.PathConversations, serve.CreateInput{Cwd: t.TempDir()}, &mine); err != nil {
		t.Fatal(err)
	}
	at := func(pattern string) string { return replaceID(pattern, mine.ID) }

	// Another agent neither lists, reads, watches, messages, cancels nor
	// approves ana's conversation: it does not exist for bo.
	if got := list(as(bo)); len(got) != 0 {
		t.Errorf("bo lists %v", got)
	}
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, at(serve.PathConversation), nil},
		{http.MethodPost, at(serve.PathMessages), serve.MessageInput{Text: "hi"}},
		{http.MethodPost, at(serve.PathCancel), struct{}{}},
		{http.MethodPost, at(serve.PathMode), serve.ModeInput{Action: "approve"}},
	} {
		if s := status(as(bo).Do(ctx, tc.method, tc.path, tc.body, nil)); s != http.StatusNotFound {
			t.Errorf("bo %s %s: %d, want 404", tc.method, tc.path, s)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if s := status(as(bo).Watch(wctx, mine.ID, func(serve.Frame) error { return nil })); s != http.StatusNotFound {
		t.Errorf("bo watches ana's conversation: %d, want 404", s)
	}

	// The owner, an admin and (reading only) an auditor do.
	if got := list(as(ana)); len(got) != 1 || got[0] != mine.ID {
		t.Errorf("ana lists %v", got)
	}
	if got := list(as(admin)); len(got) != 1 || got[0] != mine.ID {
		t.Errorf("admin lists %v", got)
	}
	if s := status(as(auditor).Do(ctx, http.MethodGet, at(serve.PathConversation), nil, nil)); s != 200 {
		t.Errorf("auditor reads: %d", s)
	}
	if s := status(as(auditor).Do(ctx, http.MethodPost, at(serve.PathMessages), serve.MessageInput{Text: "hi"}, nil)); s != http.StatusNotFound {
		t.Errorf("auditor writes: %d, want 404", s)
	}
	if err := as(ana).Do(ctx, http.MethodPost, at(serve.PathMessages), serve.MessageInput{Text: "hi"}, nil); err != nil {
		t.Errorf("ana sends: %v", err)
	}
}

func replaceID(pattern, id string) string { return strings.Replace(pattern, "{id}", id, 1) }
