package llmfake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/llm"
)

func TestLoad(t *testing.T) {
	steps, err := Load(strings.NewReader(`
# a comment, then a blank line

{"text":"hello","usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}
{"tool_calls":[{"name":"bash","args":{"command":"ls"}}]}
{"status":429,"error":"slow down"}
{"hang":true}
{"delay":"150ms","text":"late"}
{"status":200,"body":"not json"}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{Text: "hello", Usage: &Usage{10, 2, 12}},
		{ToolCalls: []FakeCall{{Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}}},
		{Status: 429, Error: "slow down"},
		{Hang: true},
		{Delay: 150 * time.Millisecond, Text: "late"},
		{Status: 200, Body: "not json"},
	}
	if !reflect.DeepEqual(steps, want) {
		t.Errorf("got  %+v\nwant %+v", steps, want)
	}

	for _, tc := range []struct{ script, want string }{
		{"{\"text\":\"a\"}\n{\"txt\":\"b\"}", `line 2: json: unknown field "txt"`},
		{"{nope", "line 1: invalid character"},
		{`{"text":"a"} {"text":"b"}`, "line 1: more than one JSON value"},
		{`{"delay":"soon"}`, `line 1: delay "soon" is not a duration`},
		{`{"delay":"-1s"}`, `line 1: delay "-1s"`},
		{`{"status":42}`, "line 1: status 42 is not an HTTP status"},
		{`{"hang":true,"text":"x"}`, "line 1: a hang answers nothing"},
		{`{"body":"{}","text":"x"}`, "line 1: body is the whole answer"},
		{`{"status":503,"text":"x"}`, "line 1: status 503 answers an error"},
		{`{"error":"x"}`, "line 1: error needs an error status"},
		{`{"tool_calls":[{"args":{}}]}`, "line 1: tool_calls[0].name is empty"},
		{strings.Repeat("x", maxLine+1), "token too long"},
	} {
		_, err := Load(strings.NewReader(tc.script))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%.40q) = %v, want an error containing %q", tc.script, err, tc.want)
		}
	}
}

var hello = llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "hi"}}}

func newClient(t *testing.T, s *Server) *llm.Client {
	c, err := llm.New(s.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestScript serves each kind of step in order, read by pkg/llm's client:
// the fake speaks what the real client understands.
func TestScript(t *testing.T) {
	s := Start(t, []Step{
		{Text: "hello", Usage: &Usage{10, 2, 12}},
		{Text: "Let me look.", ToolCalls: []FakeCall{{Name: "bash", Args: json.RawMessage(`{ "command": "ls" }`)}, {ID: "mine", Name: "read_file"}}},
		{Text: "Once upon", FinishReason: "length"},
		{Status: 429},
		{Status: 503, Error: "overloaded, try later"},
		{Status: 401},
		{Body: `{"choices":[]}`},
	})
	c := newClient(t, s)
	type result struct {
		resp      llm.Response
		status    int
		retryable bool
		msg       string
	}
	want := []result{
		{resp: llm.Response{Text: "hello", FinishReason: "stop", EndTurn: true, Model: "m", Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}},
		{resp: llm.Response{Text: "Let me look.", FinishReason: "tool_calls", Model: "m", ToolCalls: []llm.ToolCall{
			{ID: "call_2_0", Name: "bash", Arguments: `{"command":"ls"}`}, {ID: "mine", Name: "read_file", Arguments: "{}"}}}},
		{resp: llm.Response{Text: "Once upon", FinishReason: "length", Model: "m"}},
		{status: 429, retryable: true, msg: "scripted 429 Too Many Requests (step 4)"},
		{status: 503, retryable: true, msg: "overloaded, try later"},
		{status: 401, msg: "scripted 401 Unauthorized (step 6)"},
		{status: 200, msg: "choices is empty"},
		{status: 500, retryable: true, msg: "the script has 7 steps and this is request 8: past its end"},
		{status: 500, retryable: true, msg: "this is request 9"},
	}
	for i, w := range want {
		resp, err := c.Complete(context.Background(), hello)
		var e *llm.Error
		switch {
		case w.status == 0 && err != nil:
			t.Errorf("request %d: %v", i+1, err)
		case w.status == 0:
			if w.resp.Usage == (llm.Usage{}) {
				resp.Usage = llm.Usage{} // estimated: checked below
			}
			if !reflect.DeepEqual(resp, w.resp) {
				t.Errorf("request %d:\ngot  %+v\nwant %+v", i+1, resp, w.resp)
			}
		case !errors.As(err, &e):
			t.Errorf("request %d: %v, want an *llm.Error", i+1, err)
		case e.Status != w.status || e.Retryable != w.retryable || !strings.Contains(e.Message, w.msg):
			t.Errorf("request %d: %+v, want status %d retryable %v message containing %q", i+1, e, w.status, w.retryable, w.msg)
		}
	}
	if got := s.Served(); got != 7 {
		t.Errorf("Served() = %d, want 7", got)
	}
	if got := len(s.Requests()); got != 9 {
		t.Errorf("%d requests recorded, want 9", got)
	}
}

func TestEstimatedUsage(t *testing.T) {
	s := Start(t, []Step{{Text: strings.Repeat("word ", 40)}})
	resp, err := newClient(t, s).Complete(context.Background(), hello)
	if err != nil {
		t.Fatal(err)
	}
	if u := resp.Usage; u.PromptTokens == 0 || u.CompletionTokens != 50 || u.TotalTokens != u.PromptTokens+50 {
		t.Errorf("usage %+v, want prompt > 0 and 50 completion tokens", u)
	}
}

// TestHangAborted: a hung request that the client cancels is counted, and
// the client gets its context's error (B-05a).
func TestHangAborted(t *testing.T) {
	s := Start(t, []Step{{Hang: true}, {Text: "after"}})
	c := newClient(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Complete(ctx, hello); done <- err }()
	for s.Served() < 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if !s.WaitAborted(1, 5*time.Second) {
		t.Fatalf("Aborted() = %d after 5s, want 1", s.Aborted())
	}
	resp, err := c.Complete(context.Background(), hello)
	if err != nil || resp.Text != "after" {
		t.Fatalf("the step after the hang: %+v, %v", resp, err)
	}
	if s.WaitAborted(2, 10*time.Millisecond) {
		t.Errorf("Aborted() = %d, want 1", s.Aborted())
	}
}

func TestDelay(t *testing.T) {
	s := Start(t, []Step{{Delay: 30 * time.Millisecond, Text: "late"}, {Delay: time.Hour, Text: "never"}})
	c := newClient(t, s)
	start := time.Now()
	resp, err := c.Complete(context.Background(), hello)
	if err != nil || resp.Text != "late" {
		t.Fatalf("%+v, %v", resp, err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("answered after %v, before the delay", d)
	}
	// A client that gives up during a delay abandons it too.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Complete(ctx, hello); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if !s.WaitAborted(1, 5*time.Second) {
		t.Fatal("the abandoned delay was not counted")
	}
}

// TestCloseReleasesHang: Close returns while a client still waits on a
// hung request, and that request is not counted as abandoned.
func TestCloseReleasesHang(t *testing.T) {
	s, err := Listen([]Step{{Hang: true}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := newClient(t, s).Complete(context.Background(), hello); done <- err }()
	for s.Served() < 1 {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocked on a hung request")
	}
	if err := <-done; err == nil {
		t.Error("the hung request got an answer")
	}
	if s.Aborted() != 0 {
		t.Errorf("Aborted() = %d after Close, want 0", s.Aborted())
	}
	s.Close() // twice is fine
}

// TestRequestChecks: a request a real server would refuse gets a 400
// naming the problem, and does not consume a step.
func TestRequestChecks(t *testing.T) {
	s := Start(t, []Step{{Text: "ok"}})
	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/v1/chat/completions", ``, "405 "},
		{"POST", "/v1/completions", `{}`, "404 "},
		{"POST", "/v1/chat/completions", `not json`, "400 llmfake: the request body is not a chat completion request"},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, "400 llmfake: model is missing"},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[]}`, "400 llmfake: messages is missing or empty"},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"bot"}]}`, `400 llmfake: messages[0].role "bot"`},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user"}],"tools":[{"name":"bash"}]}`, "400 llmfake: tools[0]: want"},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"x"}}]},{"role":"tool","tool_call_id":"a"}]}`,
			"400 llmfake: messages[0].tool_calls[0]: want id, type function, function.name and function.arguments"},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user"},{"role":"tool","content":"x"}]}`, "400 llmfake: messages[1]: a tool message without tool_call_id"},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user"},{"role":"tool","tool_call_id":"zz"}]}`, `400 llmfake: messages[1]: tool_call_id "zz" answers no pending tool call`},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user"},` + calls("a", "b") + `,{"role":"tool","tool_call_id":"a"},{"role":"user"}]}`,
			`400 llmfake: messages[3] (user): the tool calls "b" of the assistant message before have no tool message answering them`},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user"},` + calls("a", "b") + `]}`,
			`400 llmfake: the tool calls "a", "b" of the last assistant message have no tool message answering them`},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user"},` + calls("a") + `,{"role":"tool","tool_call_id":"a"},{"role":"tool","tool_call_id":"a"}]}`,
			`400 llmfake: messages[3]: tool_call_id "a" answers no pending`},
	} {
		req, _ := http.NewRequest(tc.method, strings.TrimSuffix(s.URL, "/v1")+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal(body, &e)
		if got := resp.Status[:4] + e.Error.Message; !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s %s %s:\n got %s\nwant %s…", tc.method, tc.path, tc.body, got, tc.want)
		}
	}
	if s.Served() != 0 {
		t.Fatalf("refused requests consumed %d steps", s.Served())
	}
	// A well-formed history with answered calls passes.
	ok := `{"model":"m","messages":[{"role":"user"},` + calls("a", "b") + `,{"role":"tool","tool_call_id":"b"},{"role":"tool","tool_call_id":"a"},{"role":"assistant","content":"done"},{"role":"user","content":"again"}]}`
	resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(ok))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || s.Served() != 1 {
		t.Fatalf("a good request: %s, served %d", resp.Status, s.Served())
	}
}

// calls is an assistant message calling tools with these ids.
func calls(ids ...string) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, `{"id":"`+id+`","type":"function","function":{"name":"bash","arguments":"{}"}}`)
	}
	return `{"role":"assistant","content":"","tool_calls":[` + strings.Join(parts, ",") + `]}`
}

func TestRecorder(t *testing.T) {
	var rec bytes.Buffer
	s := Start(t, []Step{{Text: "a"}}, WithRecorder(&rec))
	c := newClient(t, s)
	if _, err := c.Complete(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader("{broken\n"))
	s.Close()
	lines := strings.Split(strings.TrimSuffix(rec.String(), "\n"), "\n")
	want := []string{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false}`, `"{broken\n"`}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("recorded\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	reqs := s.Requests()
	if len(reqs) != 2 || string(reqs[0]) != want[0] {
		t.Errorf("Requests() = %s", reqs)
	}
}

// {{nonce}} answers with the request's envelope nonce: the const its
// response_format pins, else its TOOL_NONCE line.
func TestRequestNonce(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"schema const", `{"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"oneOf":[{"properties":{"nonce":{"const":"abc"}}}]}}}}`, "abc"},
		{"prompt line", `{"messages":[{"role":"system","content":"x\nTOOL_NONCE: n1\n"},{"role":"user","content":"TOOL_NONCE: n2"}]}`, "n2"},
		{"schema first", `{"response_format":{"json_schema":{"schema":{"properties":{"nonce":{"const":"s"}}}}},"messages":[{"role":"system","content":"TOOL_NONCE: p"}]}`, "s"},
		{"none", `{"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"not json", `nope`, ""},
	}
	for _, tt := range tests {
		if got := RequestNonce([]byte(tt.body)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	s := Start(t, []Step{{Text: `{"nonce":"{{nonce}}"}`}})
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "hi"}},
		ResponseFormat: llm.EnvelopeFormat("t", json.RawMessage(`{"type":"object","properties":{"nonce":{"const":"deadbeef"}}}`))}
	resp, err := newClient(t, s).Complete(context.Background(), req)
	if err != nil || resp.Text != `{"nonce":"deadbeef"}` {
		t.Fatalf("%q, %v", resp.Text, err)
	}
}
