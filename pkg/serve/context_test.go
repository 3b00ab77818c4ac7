package serve_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/llmfake"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// window is the test model's context window: small, so that scripted
// usage crosses the thresholds.
const window = 1000

func smallWindow(o *serve.Options) { o.ContextWindows = map[string]int{"test-model": window} }

func usage(total int) *llmfake.Usage {
	return &llmfake.Usage{PromptTokens: total - 10, CompletionTokens: 10, TotalTokens: total}
}

// At 90% of the window the requested tools do not run; a summary is asked
// for without tools, naming them; then the conversation is
// context_exhausted with the summary and refuses messages; a new
// conversation from its continuation is linked to it and starts from the
// summary (B-19, B-20a/b, B-21, B-22).
func TestContinuationAt90(t *testing.T) {
	r := newRigWith(t, smallWindow,
		llmfake.Step{ToolCalls: []llmfake.FakeCall{{ID: "touch", Name: "bash", Args: args(map[string]string{"command": "touch ran-past-the-limit"})}}, Usage: usage(950)},
		llmfake.Step{Text: "SUMMARY: we were about to touch a file.", Usage: usage(990)},
		llmfake.Step{Text: "carrying on", Usage: usage(120)})
	c := r.create("unrestricted")
	if c.ContextWindow != window {
		t.Fatalf("context window %d, want %d", c.ContextWindow, window)
	}
	if err := r.send(c.ID, "touch the file"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.ContextExhausted)
	if fileExists(filepath.Join(r.dir, "ran-past-the-limit")) {
		t.Fatal("the tool requested at 95% of the window ran")
	}
	res, ok := toolResult(v.Messages, "bash")
	if !ok || !res.IsError || !strings.Contains(res.Text, conversation.CodeNotExecuted) {
		t.Errorf("the bash call's result: %+v", res)
	}
	reqs := r.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	sum := decodeRequest(t, reqs[1])
	if len(sum.Tools) != 0 || !strings.Contains(string(reqs[1]), "These tools were requested but not executed: bash (touch)") {
		t.Errorf("the summary request offers %v and says: %s", sum.toolNames(), reqs[1])
	}
	last := v.Messages[len(v.Messages)-1]
	if last.Kind != conversation.KindContinuation || last.Text != "SUMMARY: we were about to touch a file." {
		t.Errorf("the last message: %+v", last)
	}

	// Exhausted: a message is refused and not stored.
	apiError(t, r.send(c.ID, "one more thing"), http.StatusConflict, conversation.CodeContextExhausted)
	if got := r.show(c.ID); len(got.Messages) != len(v.Messages) {
		t.Errorf("the refused message was stored:\n%s", texts(got.Messages))
	}

	// The continuation: a new conversation linked to the old one, which
	// the model sees the summary of.
	var n serve.StateView
	if err := r.c.Do(context.Background(), http.MethodPost, path(serve.PathContinuation, c.ID), nil, &n); err != nil {
		t.Fatal(err)
	}
	if n.ID == c.ID || n.ContinuedFrom != c.ID || n.State != conversation.Idle || n.Cwd != c.Cwd {
		t.Fatalf("the continuation: %+v", n)
	}
	found := false
	for _, l := range r.list("") {
		found = found || (l.ID == n.ID && l.ContinuedFrom == c.ID)
	}
	if !found {
		t.Errorf("the listing does not link %s to %s: %+v", n.ID, c.ID, r.list(""))
	}
	if err := r.send(n.ID, "go on"); err != nil {
		t.Fatal(err)
	}
	nv := r.waitState(n.ID, conversation.Idle)
	if got := texts(nv.Messages); !strings.Contains(got, "SUMMARY: we were about to touch a file.") || !strings.Contains(got, c.ID) {
		t.Errorf("the continued conversation:\n%s", got)
	}
	reqs = r.fake.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[2]), "SUMMARY: we were about to touch a file.") || len(decodeRequest(t, reqs[2]).Tools) == 0 {
		t.Errorf("the continued conversation's request: %s", reqs[len(reqs)-1])
	}
}

// When the summary request fails (here a 401, not retried), the
// conversation is context_exhausted all the same, with a fallback summary
// that keeps the last user message and the tools not run (B-20b).
func TestContinuationFallbackSummary(t *testing.T) {
	r := newRigWith(t, smallWindow,
		llmfake.Step{ToolCalls: []llmfake.FakeCall{{ID: "p", Name: "patch", Args: args(map[string]string{"path": "x.txt", "old_text": "", "new_text": "x"})}}, Usage: usage(920)},
		llmfake.Step{Status: http.StatusUnauthorized})
	c := r.create("unrestricted")
	if err := r.send(c.ID, "write x.txt"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.ContextExhausted)
	last := v.Messages[len(v.Messages)-1]
	for _, want := range []string{"could not be generated (HTTP 401", "write x.txt", "These tools were requested but not executed: patch (p)"} {
		if last.Kind != conversation.KindContinuation || !strings.Contains(last.Text, want) {
			t.Errorf("the fallback summary lacks %q: %+v", want, last)
		}
	}
	if fileExists(filepath.Join(r.dir, "x.txt")) || r.fake.Served() != 2 {
		t.Errorf("patch ran, or %d requests (want 2)", r.fake.Served())
	}
	var n serve.StateView
	if err := r.c.Do(context.Background(), http.MethodPost, path(serve.PathContinuation, c.ID), nil, &n); err != nil || n.ContinuedFrom != c.ID {
		t.Errorf("a continuation from the fallback: %+v, %v", n, err)
	}
}

// At 80% the user is warned (a notice the model is not sent) and may
// continue by hand, which is the same summary flow; below 80% a manual
// continue is refused (B-23).
func TestWarningAt80AndManualContinue(t *testing.T) {
	r := newRigWith(t, smallWindow,
		llmfake.Step{Text: "first", Usage: usage(300)},
		llmfake.Step{Text: "second", Usage: usage(850)},
		llmfake.Step{Text: "third", Usage: usage(870)},
		llmfake.Step{Text: "SUMMARY by hand", Usage: usage(900)})
	c := r.create("")
	if err := r.send(c.ID, "one"); err != nil {
		t.Fatal(err)
	}
	r.waitState(c.ID, conversation.Idle)
	apiError(t, r.post(serve.PathContinue, c.ID, nil), http.StatusConflict, conversation.CodeNotApplicable)

	if err := r.send(c.ID, "two"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	var warnings []string
	for _, m := range v.Messages {
		if m.Kind == conversation.KindContextWarning {
			warnings = append(warnings, m.Text)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "850 of 1000 tokens (85%)") {
		t.Fatalf("warnings: %q", warnings)
	}
	// Warned once, and never to the model.
	if err := r.send(c.ID, "three"); err != nil {
		t.Fatal(err)
	}
	v = r.waitState(c.ID, conversation.Idle)
	n := 0
	for _, m := range v.Messages {
		if m.Kind == conversation.KindContextWarning {
			n++
		}
	}
	if reqs := r.fake.Requests(); n != 1 || strings.Contains(string(reqs[2]), "850 of 1000") {
		t.Errorf("%d warnings; the model was sent: %s", n, reqs[2])
	}

	if err := r.post(serve.PathContinue, c.ID, nil); err != nil {
		t.Fatal(err)
	}
	v = r.waitState(c.ID, conversation.ContextExhausted)
	reqs := r.fake.Requests()
	sum := decodeRequest(t, reqs[len(reqs)-1])
	if len(reqs) != 4 || len(sum.Tools) != 0 || !strings.Contains(string(reqs[3]), "No tool request is pending") {
		t.Errorf("the manual summary request (%d requests): %s", len(reqs), reqs[len(reqs)-1])
	}
	if last := v.Messages[len(v.Messages)-1]; last.Text != "SUMMARY by hand" || last.Kind != conversation.KindContinuation {
		t.Errorf("the last message: %+v", last)
	}
}
