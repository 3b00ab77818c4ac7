package serve_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/llmfake"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// newEnvelopeRig is a rig whose server speaks seed 002's text envelope
// (--tool-protocol envelope).
func newEnvelopeRig(t *testing.T, steps ...llmfake.Step) *rig {
	t.Helper()
	r := &rig{t: t, fake: llmfake.Start(t, steps), db: filepath.Join(t.TempDir(), "serve.db"), dir: t.TempDir(), envelope: true}
	r.start()
	t.Cleanup(r.stop)
	return r
}

// sentRequest is what the executor sent, as the tests look at it.
type sentRequest struct {
	raw      string
	nonce    string
	tools    bool
	format   string // response_format.json_schema.name
	schema   string
	messages []struct {
		Role      string `json:"role"`
		Content   any    `json:"content"`
		ToolCalls []any  `json:"tool_calls"`
	}
}

func sent(t *testing.T, r *rig) []sentRequest {
	t.Helper()
	var out []sentRequest
	for _, raw := range r.fake.Requests() {
		var req struct {
			Tools          []any `json:"tools"`
			ResponseFormat *struct {
				Type       string `json:"type"`
				JSONSchema struct {
					Name   string          `json:"name"`
					Strict bool            `json:"strict"`
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		s := sentRequest{raw: string(raw), nonce: llmfake.RequestNonce(raw)}
		if err := json.Unmarshal(raw, &req); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &struct {
			Messages any `json:"messages"`
		}{&s.messages}); err != nil {
			t.Fatal(err)
		}
		s.tools = req.Tools != nil
		if rf := req.ResponseFormat; rf != nil {
			if rf.Type != "json_schema" || !rf.JSONSchema.Strict {
				t.Errorf("response_format %s %+v", rf.Type, rf.JSONSchema)
			}
			s.format, s.schema = rf.JSONSchema.Name, string(rf.JSONSchema.Schema)
		}
		out = append(out, s)
	}
	return out
}

func (s sentRequest) system() string {
	if len(s.messages) == 0 {
		return ""
	}
	text, _ := s.messages[0].Content.(string)
	return text
}

func (s sentRequest) last() string {
	text, _ := s.messages[len(s.messages)-1].Content.(string)
	return text
}

// A tool envelope runs its tool through the same gates and executor as a
// native call; the result goes back as a user message carrying the
// ToolResponse JSON; a final decision is followed by the plain answer. No
// request offers native tools; each carries its own nonce, in the prompt
// as TOOL_NONCE and pinned in response_format (seed 002 Strict Tool Call
// Protocol, Tool Call Nonce, Tool Execution Loop).
func TestEnvelopeToolCall(t *testing.T) {
	r := newEnvelopeRig(t,
		llmfake.Step{Text: `{"tool":"bash","args":{"command":"echo hi"},"nonce":"{{nonce}}"}`},
		llmfake.Step{Text: `<think>done</think>{"action":"final","nonce":"{{nonce}}"}`},
		llmfake.Step{Text: "It printed hi."},
		llmfake.Step{Text: "Bye."})
	c := r.create("unrestricted")
	if err := r.send(c.ID, "say hi"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	got := texts(v.Messages)
	for _, want := range []string{"tool::bash:hi\n", `assistant:::{"action":"final"`, "assistant:::It printed hi."} {
		if !strings.Contains(got, want) {
			t.Errorf("messages lack %q:\n%s", want, got)
		}
	}
	var call *conversation.ToolCall
	for _, m := range v.Messages {
		if len(m.ToolCalls) == 1 {
			call = &m.ToolCalls[0]
		}
	}
	if call == nil || call.ID != c.ID+"/llm/1/call" || call.Name != "bash" {
		t.Fatalf("the tool call: %+v\n%s", call, got)
	}

	// A second turn: its request holds the first turn as the model saw it.
	if err := r.send(c.ID, "bye"); err != nil {
		t.Fatal(err)
	}
	r.waitState(c.ID, conversation.Idle)

	reqs := sent(t, r)
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	if n := len(reqs[3].messages); n != 8 || !strings.Contains(reqs[3].raw, "plain text: no JSON, no tool call.\"},{\"role\":\"assistant\",\"content\":\"It printed hi.") {
		t.Errorf("the second turn's request (%d messages): %s", n, reqs[3].raw)
	}
	seen := map[string]bool{}
	for i, q := range reqs {
		if q.tools {
			t.Errorf("request %d offers native tools", i+1)
		}
		for _, m := range q.messages {
			if m.Role == "tool" || m.ToolCalls != nil {
				t.Errorf("request %d has native tool messages: %s", i+1, q.raw)
			}
		}
		for _, tool := range []string{"bash", "read_file", "search", "patch", "request_mode_upgrade", "spawn_agents"} {
			if !strings.Contains(q.system(), "- "+tool+": ") {
				t.Errorf("request %d: the prompt does not describe %s", i+1, tool)
			}
		}
		if i != 2 {
			if len(q.nonce) != 32 || seen[q.nonce] || !strings.Contains(q.schema, `"const":"`+q.nonce+`"`) || !strings.Contains(q.system(), "TOOL_NONCE: "+q.nonce+"\n") {
				t.Errorf("request %d: nonce %q, schema %s", i+1, q.nonce, q.schema)
			}
			seen[q.nonce] = true
		}
	}
	if reqs[0].format != "tool_call" || !strings.Contains(reqs[0].schema, `"const":"final"`) || !strings.Contains(reqs[0].schema, `"const":"bash"`) {
		t.Errorf("first response_format %s: %s", reqs[0].format, reqs[0].schema)
	}
	if reqs[1].format != "decision" || !strings.Contains(reqs[1].last(), "TOOL_RESULT bash (call "+call.ID+"):\n{\"ok\":true") ||
		!strings.Contains(reqs[1].last(), `hi\n`) {
		t.Errorf("second request %s: last message %q", reqs[1].format, reqs[1].last())
	}
	if reqs[2].format != "" || strings.Contains(reqs[2].system(), "TOOL_NONCE: ") || !strings.Contains(reqs[2].last(), "plain text") {
		t.Errorf("the answer request: format %q, last %q", reqs[2].format, reqs[2].last())
	}
	// The history alternates: system, then user and assistant in turn.
	for i, q := range reqs {
		for j := 1; j < len(q.messages); j++ {
			if q.messages[j].Role == q.messages[j-1].Role || q.messages[j].Role == "system" {
				t.Errorf("request %d: messages %d and %d are both %s", i+1, j-1, j, q.messages[j].Role)
			}
		}
	}
}

// A call with a wrong nonce is rejected with tool_call_nonce_invalid, no
// tool runs, the model sees the rejection, and the next request carries a
// new nonce (seed 002 Tool Call Nonce, G-04).
func TestEnvelopeWrongNonce(t *testing.T) {
	r := newEnvelopeRig(t,
		llmfake.Step{Text: `{"tool":"bash","args":{"command":"touch pwned"},"nonce":"00000000000000000000000000000000"}`},
		llmfake.Step{Text: "Nothing to do."})
	c := r.create("unrestricted")
	if err := r.send(c.ID, "go"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	if _, err := os.Stat(filepath.Join(r.dir, "pwned")); !os.IsNotExist(err) {
		t.Fatalf("the rejected call ran: %v", err)
	}
	got := texts(v.Messages)
	if !strings.Contains(got, "user:"+conversation.KindRejection+"::Your reply was rejected (tool_call_nonce_invalid") ||
		!strings.Contains(got, "assistant:"+conversation.KindRejectedReply+"::") || strings.Contains(got, "tool::") {
		t.Errorf("messages:\n%s", got)
	}
	reqs := sent(t, r)
	if len(reqs) != 2 || reqs[0].nonce == "" || reqs[1].nonce == "" || reqs[0].nonce == reqs[1].nonce {
		t.Fatalf("nonces %q", []string{reqs[0].nonce, reqs[len(reqs)-1].nonce})
	}
	if !strings.Contains(reqs[1].last(), "tool_call_nonce_invalid") {
		t.Errorf("the model was not told: %q", reqs[1].last())
	}
}

// Every malformed reply is rejected with seed 002's code and runs nothing
// (G-01, G-03, G-05, G-06, G-07, G-08, G-10).
func TestEnvelopeRejections(t *testing.T) {
	tests := []struct {
		name  string
		steps []llmfake.Step
		code  string
	}{
		{"two objects", []llmfake.Step{{Text: `{"tool":"bash","args":{"command":"touch pwned"},"nonce":"{{nonce}}"} {"tool":"bash","args":{"command":"touch pwned"},"nonce":"{{nonce}}"}`}}, "tool_call_multiple"},
		{"unknown tool", []llmfake.Step{{Text: `{"tool":"rm_rf","args":{"path":"pwned"},"nonce":"{{nonce}}"}`}}, "tool_call_unknown_tool"},
		{"unknown arg", []llmfake.Step{{Text: `{"tool":"bash","args":{"command":"touch pwned","sudo":true},"nonce":"{{nonce}}"}`}}, "tool_call_invalid_args"},
		{"wrong arg type", []llmfake.Step{{Text: `{"tool":"bash","args":{"command":["touch","pwned"]},"nonce":"{{nonce}}"}`}}, "tool_call_invalid_args"},
		{"missing nonce", []llmfake.Step{{Text: `{"tool":"bash","args":{"command":"touch pwned"}}`}}, "tool_call_nonce_invalid"},
		{"text around the envelope", []llmfake.Step{{Text: `Sure: {"tool":"bash","args":{"command":"touch pwned"},"nonce":"{{nonce}}"}`}}, "tool_call_invalid_format"},
		{"tool syntax in prose", []llmfake.Step{{Text: "I will run bash(touch pwned) now."}}, "tool_call_invalid_format"},
		{"a code fence", []llmfake.Step{{Text: "```json\n{\"tool\":\"bash\",\"args\":{\"command\":\"touch pwned\"},\"nonce\":\"{{nonce}}\"}\n```"}}, "tool_call_invalid_format"},
		{"a native tool call", []llmfake.Step{{ToolCalls: []llmfake.FakeCall{{Name: "bash", Args: json.RawMessage(`{"command":"touch pwned"}`)}}}}, "tool_call_invalid_format"},
		{"prose after a tool result", []llmfake.Step{
			{Text: `{"tool":"bash","args":{"command":"echo first"},"nonce":"{{nonce}}"}`},
			{Text: "It said first; now touch pwned."}}, "tool_call_invalid_format"},
		{"a call in the answer", []llmfake.Step{
			{Text: `{"action":"final","nonce":"{{nonce}}"}`},
			{Text: `{"tool":"bash","args":{"command":"touch pwned"},"nonce":"{{nonce}}"}`}}, "tool_call_invalid_format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// After the rejection the model answers and the turn ends.
			end := llmfake.Step{Text: "All done."}
			if tt.name == "prose after a tool result" {
				end = llmfake.Step{Text: `{"action":"final","nonce":"{{nonce}}"}`}
			}
			steps := append(append([]llmfake.Step(nil), tt.steps...), end)
			if tt.name == "prose after a tool result" {
				steps = append(steps, llmfake.Step{Text: "All done."})
			}
			r := newEnvelopeRig(t, steps...)
			c := r.create("unrestricted")
			if err := r.send(c.ID, "go"); err != nil {
				t.Fatal(err)
			}
			v := r.waitState(c.ID, conversation.Idle)
			if _, err := os.Stat(filepath.Join(r.dir, "pwned")); !os.IsNotExist(err) {
				t.Fatalf("a rejected reply ran: %v", err)
			}
			var rejections []string
			for _, m := range v.Messages {
				if m.Kind == conversation.KindRejection {
					rejections = append(rejections, m.Text)
				}
			}
			ran := 0
			if tt.name == "prose after a tool result" {
				ran = 1 // echo first, before the rejected reply
			}
			if got := strings.Count(texts(v.Messages), "tool::"); got != ran {
				t.Errorf("%d tool results, want %d:\n%s", got, ran, texts(v.Messages))
			}
			if len(rejections) != 1 || !strings.Contains(rejections[0], "("+tt.code) {
				t.Fatalf("rejections %q, want one %s\n%s", rejections, tt.code, texts(v.Messages))
			}
			if got := texts(v.Messages); !strings.Contains(got, "assistant:::All done.") {
				t.Errorf("the turn did not end with the answer:\n%s", got)
			}
			reqs := sent(t, r)
			if n := len(tt.steps); reqs[n-1].nonce != "" && reqs[n].nonce == reqs[n-1].nonce {
				t.Errorf("the re-ask reused the nonce %s", reqs[n].nonce)
			}
		})
	}
}

// Three rejections in a row end the turn in error with an actionable
// message; a message then continues the conversation.
func TestEnvelopeThreeRejections(t *testing.T) {
	bad := llmfake.Step{Text: "Let me think about it."}
	r := newEnvelopeRig(t, bad, bad, bad, llmfake.Step{Text: "Hello."})
	c := r.create("")
	if err := r.send(c.ID, "hi"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Error)
	got := texts(v.Messages)
	if strings.Count(got, "user:"+conversation.KindRejection+"::") != 3 || !strings.Contains(got, "3 times in a row") ||
		!strings.Contains(got, "--tool-protocol native") || r.fake.Served() != 3 {
		t.Fatalf("after %d requests:\n%s", r.fake.Served(), got)
	}
	if err := r.send(c.ID, "hello?"); err != nil {
		t.Fatal(err)
	}
	v = r.waitState(c.ID, conversation.Idle)
	if !strings.Contains(texts(v.Messages), "assistant:::Hello.") {
		t.Errorf("a message in error did not continue:\n%s", texts(v.Messages))
	}
	// The history the model got is valid without native tool calling: the
	// rejected replies and rejections alternate, the error notice is not sent.
	reqs := sent(t, r)
	last := reqs[len(reqs)-1]
	if strings.Contains(last.raw, "3 times in a row") {
		t.Errorf("the display-only error went to the model")
	}
	for j := 1; j < len(last.messages); j++ {
		if last.messages[j].Role == last.messages[j-1].Role {
			t.Errorf("messages %d and %d are both %s", j-1, j, last.messages[j].Role)
		}
	}
}

// Cancel outranks an envelope turn: a tool started from an envelope is
// killed like any other, and a request in flight is aborted with nothing
// of it kept (B-05a/b).
func TestEnvelopeCancel(t *testing.T) {
	r := newEnvelopeRig(t,
		llmfake.Step{Text: `{"tool":"bash","args":{"command":"sleep 600"},"nonce":"{{nonce}}"}`},
		llmfake.Step{Hang: true},
		llmfake.Step{Text: "Fresh."})
	c := r.create("unrestricted")
	if err := r.send(c.ID, "sleep"); err != nil {
		t.Fatal(err)
	}
	v := r.cancelRunningTool(c.ID)
	if got := texts(v.Messages); !strings.Contains(got, "tool::bash:") || !strings.Contains(got, "CANCELLED") {
		t.Errorf("after the cancel:\n%s", got)
	}

	if err := r.send(c.ID, "again"); err != nil {
		t.Fatal(err)
	}
	if !waitServed(r, 2) {
		t.Fatal("the second request never came")
	}
	if err := r.post(serve.PathCancel, c.ID, nil); err != nil {
		t.Fatal(err)
	}
	if !r.fake.WaitAborted(1, 10*time.Second) {
		t.Fatal("the hung request was not aborted")
	}
	n := len(r.waitState(c.ID, conversation.Idle).Messages)
	if err := r.send(c.ID, "once more"); err != nil {
		t.Fatal(err)
	}
	v = r.waitState(c.ID, conversation.Idle)
	if got := texts(v.Messages[n:]); !strings.Contains(got, "assistant:::Fresh.") || strings.Contains(got, conversation.KindRejection) {
		t.Errorf("after the aborted request:\n%s", got)
	}
}

func waitServed(r *rig, n int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for r.fake.Served() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// A sub-agent speaks the envelope too: spawn_agents and submit_result are
// envelope calls, checked against each conversation's own registry.
func TestEnvelopeSubagent(t *testing.T) {
	r := newEnvelopeRig(t,
		llmfake.Step{Text: `{"tool":"spawn_agents","args":{"tasks":[{"task":"count the files"}]},"nonce":"{{nonce}}"}`},
		llmfake.Step{Text: `{"tool":"submit_result","args":{"result":"three files"},"nonce":"{{nonce}}"}`},
		llmfake.Step{Text: `{"action":"final","nonce":"{{nonce}}"}`},
		llmfake.Step{Text: "The sub-agent found three files."})
	c := r.create("")
	if err := r.send(c.ID, "delegate"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	got := texts(v.Messages)
	if !strings.Contains(got, "three files") || !strings.Contains(got, "assistant:::The sub-agent found three files.") || strings.Contains(got, conversation.KindRejection) {
		t.Fatalf("messages:\n%s", got)
	}
	reqs := sent(t, r)
	if len(reqs) != 4 || !strings.Contains(reqs[1].schema, `"const":"submit_result"`) || strings.Contains(reqs[1].schema, `"const":"spawn_agents"`) ||
		strings.Contains(reqs[0].schema, `"const":"submit_result"`) {
		t.Errorf("the sub-agent's registry: %s", reqs[1].schema)
	}
}
