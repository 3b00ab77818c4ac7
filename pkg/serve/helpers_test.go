package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// wireRequest is what the tests read of a chat completion request the
// scripted LLM received.
type wireRequest struct {
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func decodeRequest(t *testing.T, raw json.RawMessage) wireRequest {
	t.Helper()
	var w wireRequest
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("request %s: %v", raw, err)
	}
	return w
}

// toolNames are the tools a request offered, sorted.
func (w wireRequest) toolNames() []string {
	out := make([]string, 0, len(w.Tools))
	for _, t := range w.Tools {
		out = append(out, t.Function.Name)
	}
	sort.Strings(out)
	return out
}

// system is the request's system prompt.
func (w wireRequest) system() string {
	for _, m := range w.Messages {
		if m.Role == "system" {
			var s string
			_ = json.Unmarshal(m.Content, &s)
			return s
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// list is GET /api/v1/conversations with the query q.
func (r *rig) list(q string) []serve.StateView {
	r.t.Helper()
	var out struct {
		Conversations []serve.StateView `json:"conversations"`
	}
	if err := r.c.Do(context.Background(), http.MethodGet, serve.PathConversations+q, nil, &out); err != nil {
		r.t.Fatal(err)
	}
	return out.Conversations
}

// waitFor polls cond until it holds (tests never sleep a fixed time).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// toolResult is the result message of the call named tool (the last one).
func toolResult(msgs []conversation.Message, tool string) (conversation.Message, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == conversation.RoleTool && msgs[i].Tool == tool {
			return msgs[i], true
		}
	}
	return conversation.Message{}, false
}

// apiError asserts err is the API's answer status with code.
func apiError(t *testing.T, err error, status int, code string) *serve.APIError {
	t.Helper()
	e, ok := err.(*serve.APIError)
	if !ok || e.Status != status || e.Code != code {
		t.Fatalf("got %v, want %d %s", err, status, code)
	}
	return e
}

func path(pattern, id string) string { return strings.Replace(pattern, "{id}", id, 1) }

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// watch follows a conversation's event stream until the test ends; the
// frames arrive on the channel, which closes when the stream ends. The
// stream is attached once its first frame (the state) has arrived.
func (r *rig) watch(id string) <-chan serve.Frame {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan serve.Frame, 1024)
	done := make(chan struct{})
	r.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		defer close(ch)
		_ = r.c.Watch(ctx, id, func(f serve.Frame) error {
			ch <- f
			return nil
		})
	}()
	return ch
}

// next is the next frame, or a failure after a generous timeout.
func next(t *testing.T, ch <-chan serve.Frame) serve.Frame {
	t.Helper()
	select {
	case f, ok := <-ch:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return f
	case <-time.After(20 * time.Second):
		t.Fatal("no event on the stream")
	}
	return serve.Frame{}
}
