package serve_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/llmfake"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// frameLine is a message or state frame as one comparable line.
func frameLine(t *testing.T, f serve.Frame) string {
	t.Helper()
	switch f.Event {
	case "state":
		var v serve.StateView
		if err := json.Unmarshal(f.Data, &v); err != nil {
			t.Fatal(err)
		}
		return "state " + string(v.State)
	case "message":
		var m conversation.Message
		if err := json.Unmarshal(f.Data, &m); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("message %d %s %q", m.Seq, m.Role, m.Text)
	}
	return ""
}

func messageLine(m conversation.Message) string {
	return fmt.Sprintf("message %d %s %q", m.Seq, m.Role, m.Text)
}

// A client that connects mid-conversation gets the current state and the
// recent messages first, then every message as it is persisted and every
// state change, in order: each transition's messages before its state
// (REQ-BED-011).
func TestStreamMidConversation(t *testing.T) {
	r := newRig(t,
		llmfake.Step{Text: "first answer"},
		llmfake.Step{ToolCalls: []llmfake.FakeCall{bashCall("echo", "echo hi")}},
		llmfake.Step{Text: "second answer"})
	c := r.create("unrestricted")
	if err := r.send(c.ID, "one"); err != nil {
		t.Fatal(err)
	}
	before := r.waitState(c.ID, conversation.Idle)

	frames := r.watch(c.ID)
	if got := frameLine(t, next(t, frames)); got != "state idle" {
		t.Fatalf("the first frame: %s", got)
	}
	for _, m := range before.Messages {
		if got := frameLine(t, next(t, frames)); got != messageLine(m) {
			t.Fatalf("the snapshot: %s, want %s", got, messageLine(m))
		}
	}

	if err := r.send(c.ID, "two"); err != nil {
		t.Fatal(err)
	}
	var live []string
	for {
		line := frameLine(t, next(t, frames))
		if line == "" {
			continue // notices, receipts and the like
		}
		live = append(live, line)
		if line == "state idle" {
			break
		}
	}
	after := r.show(c.ID)
	added := after.Messages[len(before.Messages):]
	if len(added) != 4 {
		t.Fatalf("the second turn added:\n%s", texts(added))
	}
	want := []string{
		messageLine(added[0]), "state awaiting_llm", // the user's message
		messageLine(added[1]), "state tool_executing", // the tool call
		messageLine(added[2]), "state awaiting_llm", // its result, sent on
		messageLine(added[3]), "state idle", // the answer
	}
	if strings.Join(live, "\n") != strings.Join(want, "\n") {
		t.Errorf("the live stream:\n%s\nwant:\n%s", strings.Join(live, "\n"), strings.Join(want, "\n"))
	}
}

// A 401 is an error at once: one request, no retry scheduled (the stream
// never shows llm_requesting or a retry), and a message saying to check
// the API key (B-06c).
func TestUnauthorizedNoRetry(t *testing.T) {
	r := newRig(t, llmfake.Step{Status: http.StatusUnauthorized, Error: "invalid api key"}, llmfake.Step{Text: "never served"})
	c := r.create("")
	frames := r.watch(c.ID)
	next(t, frames) // attached
	if err := r.send(c.ID, "hello"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		f := next(t, frames)
		seen = append(seen, f.Event+" "+frameLine(t, f))
		if frameLine(t, f) == "state error" {
			break
		}
	}
	for _, s := range seen {
		if strings.Contains(s, "llm_requesting") || strings.HasPrefix(s, conversation.EfScheduleRetry) {
			t.Errorf("a retry on the stream: %s", s)
		}
	}
	v := r.show(c.ID)
	if r.fake.Served() != 1 || len(r.fake.Requests()) != 1 {
		t.Errorf("%d requests, want 1", len(r.fake.Requests()))
	}
	last := v.Messages[len(v.Messages)-1]
	if last.Kind != conversation.KindError || !strings.Contains(last.Text, "HTTP 401") || !strings.Contains(last.Text, "--api-key-file") {
		t.Errorf("the error message: %+v", last)
	}
}
