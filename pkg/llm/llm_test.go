package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// server answers every request with status and body, and keeps the last
// request it received.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	body   []byte
	header http.Header
	path   string
}

func newServer(t *testing.T, status int, body string, header ...string) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.body, s.header, s.path = data, r.Header.Clone(), r.URL.Path
		s.mu.Unlock()
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) request(t *testing.T) map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(s.body, &m); err != nil {
		t.Fatalf("request body %q: %v", s.body, err)
	}
	return m
}

func client(t *testing.T, url, key string) *Client {
	t.Helper()
	c, err := New(url, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var hello = Request{Model: "qwen3-8b", Messages: []Message{{Role: "user", Content: "hello"}}}

func TestEndpointURL(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "http://127.0.0.1:1234", want: "http://127.0.0.1:1234/v1/chat/completions"},
		{in: "http://127.0.0.1:1234/", want: "http://127.0.0.1:1234/v1/chat/completions"},
		{in: "http://127.0.0.1:1234/v1", want: "http://127.0.0.1:1234/v1/chat/completions"},
		{in: "http://localhost:11434/v1/", want: "http://localhost:11434/v1/chat/completions"},
		{in: " https://generativelanguage.googleapis.com/v1beta/openai ", want: "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"},
		{in: "http://h/v1/chat/completions", want: "http://h/v1/chat/completions"},
		{in: "http://h/v1?x=1#f", want: "http://h/v1/chat/completions"},
		{in: "127.0.0.1:1234", err: "must start with http:// or https://"},
		{in: "ftp://h/v1", err: "scheme must be http or https"},
		{in: "http:///v1", err: "has no host"},
		{in: "http://user:secret@h/v1", err: "credentials"},
		{in: "http://h/%zz", err: "base URL"},
	} {
		c, err := New(tc.in, "")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("New(%q) = %v, want error containing %q", tc.in, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("New(%q) error echoes the password: %v", tc.in, err)
			}
			continue
		}
		if err != nil || c.Endpoint() != tc.want {
			t.Errorf("New(%q) = %v, %v; want %s", tc.in, c, err, tc.want)
		}
	}
}

func TestComplete(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Response
	}{
		{
			name: "text, stop: end of turn",
			body: `{"id":"c1","object":"chat.completion","model":"qwen3-8b","choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
			want: Response{Text: "Hi.", FinishReason: "stop", EndTurn: true, Model: "qwen3-8b", Usage: Usage{12, 3, 15}},
		},
		{
			name: "length: cut off, not the end of the turn",
			body: `{"choices":[{"message":{"role":"assistant","content":"Once upon"},"finish_reason":"length"}]}`,
			want: Response{Text: "Once upon", FinishReason: "length"},
		},
		{
			name: "tool calls, content null",
			body: `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[` +
				`{"id":"call_a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},` +
				`{"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"go.mod\"}"}}]},"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`,
			want: Response{FinishReason: "tool_calls", Usage: Usage{100, 20, 120}, ToolCalls: []ToolCall{
				{ID: "call_a", Name: "bash", Arguments: `{"command":"ls"}`},
				{ID: "call_b", Name: "read_file", Arguments: `{"path":"go.mod"}`},
			}},
		},
		{
			name: "tool call with text, finish stop (llama.cpp): still not the end of the turn",
			body: `{"choices":[{"message":{"content":"Let me look.","tool_calls":[{"id":"x","function":{"name":"search","arguments":"{}"}}]},"finish_reason":"stop"}]}`,
			want: Response{Text: "Let me look.", FinishReason: "stop", ToolCalls: []ToolCall{{ID: "x", Name: "search", Arguments: "{}"}}},
		},
		{
			name: "arguments as an object, no id, no type",
			body: `{"choices":[{"message":{"tool_calls":[{"function":{"name":"bash","arguments":{"command": "pwd"}}},{"function":{"name":"bash"}}]},"finish_reason":"tool_calls"}]}`,
			want: Response{FinishReason: "tool_calls", ToolCalls: []ToolCall{
				{ID: "call_0", Name: "bash", Arguments: `{"command":"pwd"}`},
				{ID: "call_1", Name: "bash", Arguments: `{}`},
			}},
		},
		{
			name: "content parts, no finish_reason, no total",
			body: `{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"no"},{"type":"text","text":"b"}]}}],"usage":{"prompt_tokens":4,"completion_tokens":2}}`,
			want: Response{Text: "ab", EndTurn: true, Usage: Usage{4, 2, 6}},
		},
		{
			name: "an error field beside choices is ignored",
			body: `{"error":null,"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`,
			want: Response{Text: "ok", FinishReason: "stop", EndTurn: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, 200, tc.body)
			got, err := client(t, s.URL+"/v1", "").Complete(context.Background(), hello)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestRequestShape checks what the server receives: native tool calling,
// images as content parts, tool results, the envelope format.
func TestRequestShape(t *testing.T) {
	s := newServer(t, 200, `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`)
	schema := json.RawMessage(`{"type":"object","properties":{"nonce":{"type":"string"}},"required":["nonce"]}`)
	req := Request{
		Model:     "llava",
		MaxTokens: 256,
		Messages: []Message{
			{Role: "system", Content: "Be brief."},
			{Role: "user", Content: "What is this?", Images: []Image{{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"ls"}`}, {ID: "call_2", Name: "search"}}},
			{Role: "tool", ToolCallID: "call_1", Name: "bash", Content: "go.mod"},
			{Role: "tool", ToolCallID: "call_2", Name: "search", Content: "cancelled"},
		},
		Tools:          []Tool{{Name: "bash", Description: "Run a command.", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}, {Name: "search"}},
		ResponseFormat: EnvelopeFormat("envelope", schema),
	}
	if _, err := client(t, s.URL, "sk-test").Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if s.path != "/v1/chat/completions" {
		t.Errorf("path %s", s.path)
	}
	if got := s.header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization %q", got)
	}
	if got := s.header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q", got)
	}
	got := s.request(t)
	want := map[string]any{}
	json.Unmarshal([]byte(`{
		"model": "llava", "max_tokens": 256, "stream": false,
		"messages": [
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": [
				{"type": "text", "text": "What is this?"},
				{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}]},
			{"role": "assistant", "content": "", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
			{"role": "tool", "tool_call_id": "call_1", "name": "bash", "content": "go.mod"},
			{"role": "tool", "tool_call_id": "call_2", "name": "search", "content": "cancelled"}],
		"tools": [
			{"type": "function", "function": {"name": "bash", "description": "Run a command.", "parameters": {"type":"object","properties":{"command":{"type":"string"}}}}},
			{"type": "function", "function": {"name": "search", "parameters": {"type":"object","properties":{}}}}],
		"response_format": {"type": "json_schema", "json_schema": {"name": "envelope", "strict": true,
			"schema": {"type":"object","properties":{"nonce":{"type":"string"}},"required":["nonce"]}}}
	}`), &want)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		t.Errorf("request body:\n%s", g)
	}

	// No key, no header: local servers need none.
	if _, err := client(t, s.URL, "").Complete(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	if got := s.header.Get("Authorization"); got != "" {
		t.Errorf("Authorization %q without a key", got)
	}
}

func TestRequestInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"no model", Request{Messages: hello.Messages}, "model is empty"},
		{"no messages", Request{Model: "m"}, "no messages"},
		{"bad role", Request{Model: "m", Messages: []Message{{Role: "bot"}}}, `messages[0].role "bot"`},
		{"tool without id", Request{Model: "m", Messages: []Message{{Role: "tool", Content: "x"}}}, "messages[0] is a tool result without tool_call_id"},
		{"image on assistant", Request{Model: "m", Messages: []Message{{Role: "assistant", Images: []Image{{"image/png", []byte{1}}}}}}, "only user messages carry images"},
		{"image without type", Request{Model: "m", Messages: []Message{{Role: "user", Images: []Image{{"", []byte{1}}}}}}, "messages[0].images[0]"},
		{"calls on user", Request{Model: "m", Messages: []Message{{Role: "user", ToolCalls: []ToolCall{{ID: "a", Name: "b"}}}}}, `tool_calls but role "user"`},
		{"call without id", Request{Model: "m", Messages: []Message{{Role: "assistant", ToolCalls: []ToolCall{{Name: "b"}}}}}, "messages[0].tool_calls[0]: id and name"},
		{"tool without name", Request{Model: "m", Messages: hello.Messages, Tools: []Tool{{}}}, "tools[0].name is empty"},
		{"tool bad schema", Request{Model: "m", Messages: hello.Messages, Tools: []Tool{{Name: "x", Parameters: json.RawMessage("{")}}}, "tools[0] (x).parameters"},
		{"bad envelope schema", Request{Model: "m", Messages: hello.Messages, ResponseFormat: EnvelopeFormat("e", json.RawMessage("nope"))}, "response_format.json_schema.schema"},
		{"negative max", Request{Model: "m", Messages: hello.Messages, MaxTokens: -1}, "max_tokens -1"},
	} {
		_, err := encodeRequest(tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	big := strings.Repeat("é", 2000)
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		header    []string
		retryable bool
		wantMsg   string
		wantCode  int
		after     time.Duration
	}{
		{name: "429 rate limit", status: 429, body: `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`, header: []string{"Retry-After", "7"}, retryable: true, wantMsg: "Rate limit reached for requests", after: 7 * time.Second},
		{name: "503 overloaded", status: 503, body: `{"error":{"message":"The server is overloaded"}}`, retryable: true, wantMsg: "The server is overloaded"},
		{name: "500 Ollama shape", status: 500, body: `{"error":"model requires more system memory"}`, retryable: true, wantMsg: "model requires more system memory"},
		{name: "502 proxy HTML", status: 502, body: "<html>\n<body>Bad   Gateway</body>\n</html>", retryable: true, wantMsg: "<html> <body>Bad Gateway</body> </html>"},
		{name: "408", status: 408, body: ``, retryable: true, wantMsg: "empty response body"},
		{name: "401 auth", status: 401, body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, wantMsg: "Incorrect API key provided"},
		{name: "403", status: 403, body: `{"message":"forbidden for this project"}`, wantMsg: "forbidden for this project"},
		{name: "404 model (vLLM)", status: 404, body: `{"object":"error","message":"The model does not exist.","type":"NotFoundError"}`, wantMsg: "The model does not exist."},
		{name: "422 FastAPI detail", status: 422, body: `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`, wantMsg: "field required"},
		{name: "400 long message bounded", status: 400, body: `{"error":{"message":"` + big + `"}}`, wantMsg: "éé…"},
		{name: "200 not JSON", status: 200, body: `<html>LM Studio</html>`, wantMsg: "not a chat completion: invalid JSON at byte 1", wantCode: 200},
		{name: "200 JSON array", status: 200, body: `[]`, wantMsg: "not a chat completion: a JSON array, want an object", wantCode: 200},
		{name: "200 trailing data", status: 200, body: `{"choices":[]} {}`, wantMsg: "data after its JSON object", wantCode: 200},
		{name: "200 no choices", status: 200, body: `{"id":"x","choices":[]}`, wantMsg: "choices is empty", wantCode: 200},
		{name: "200 no message", status: 200, body: `{"choices":[{"finish_reason":"stop"}]}`, wantMsg: "choices[0].message is missing", wantCode: 200},
		{name: "200 content a number", status: 200, body: `{"choices":[{"message":{"content":7}}]}`, wantMsg: "choices[0].message.content: is neither a string nor content parts", wantCode: 200},
		{name: "200 choices wrong type", status: 200, body: `{"choices":{}}`, wantMsg: "choices is a JSON object", wantCode: 200},
		{name: "200 call without name", status: 200, body: `{"choices":[{"message":{"tool_calls":[{"id":"a","type":"function","function":{"arguments":"{}"}}]}}]}`, wantMsg: "tool_calls[0].function.name is missing", wantCode: 200},
		{name: "200 call bad type", status: 200, body: `{"choices":[{"message":{"tool_calls":[{"id":"a","type":"code","function":{"name":"x"}}]}}]}`, wantMsg: `tool_calls[0].type "code"`, wantCode: 200},
		{name: "200 call bad arguments", status: 200, body: `{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":[1]}}]}}]}`, wantMsg: "tool_calls[0].function.arguments: is neither", wantCode: 200},
		{name: "200 negative usage", status: 200, body: `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":-1}}`, wantMsg: "negative token count", wantCode: 200},
		{name: "200 error body with a code", status: 200, body: `{"error":{"message":"Provider returned error","code":429}}`, retryable: true, wantMsg: "Provider returned error", wantCode: 429},
		{name: "200 error body", status: 200, body: `{"error":"context length exceeded"}`, wantMsg: "context length exceeded", wantCode: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.status, tc.body, tc.header...)
			_, err := client(t, s.URL, "").Complete(context.Background(), hello)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			code := tc.wantCode
			if code == 0 {
				code = tc.status
			}
			if e.Status != code || e.Retryable != tc.retryable || e.RetryAfter != tc.after {
				t.Errorf("got %+v, want status %d retryable %v after %v", e, code, tc.retryable, tc.after)
			}
			if !strings.Contains(e.Message, tc.wantMsg) {
				t.Errorf("message %q, want it to contain %q", e.Message, tc.wantMsg)
			}
			if len(e.Message) > maxErrorText+len("…") {
				t.Errorf("message of %d bytes, want ≤ %d", len(e.Message), maxErrorText)
			}
		})
	}
}

func TestResponseTooLarge(t *testing.T) {
	body := `{"choices":[{"message":{"content":"` + strings.Repeat("x", MaxResponse) + `"}}]}`
	s := newServer(t, 200, body)
	_, err := client(t, s.URL, "").Complete(context.Background(), hello)
	var e *Error
	if !errors.As(err, &e) || e.Retryable || !strings.Contains(e.Message, "exceeds 16 MiB") {
		t.Fatalf("got %v, want a non-retryable *Error naming the 16 MiB bound", err)
	}
}

func TestNetworkError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	_, err = client(t, "http://"+addr+"/v1", "sk-secret").Complete(context.Background(), hello)
	var e *Error
	if !errors.As(err, &e) || !e.Retryable || e.Status != 0 || !strings.Contains(e.Message, "refused") {
		t.Fatalf("got %#v, want a retryable network *Error", err)
	}
	if strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("error echoes the API key: %v", err)
	}

	// A server that drops the connection mid-answer.
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		io.WriteString(w, `{"choices":`)
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer s.Close()
	_, err = client(t, s.URL, "").Complete(context.Background(), hello)
	if !errors.As(err, &e) || !e.Retryable || !strings.Contains(e.Message, "reading the response") {
		t.Fatalf("got %#v, want a retryable *Error about reading the response", err)
	}
}

// TestCancelAbortsRequest: a cancel while the server has not answered
// returns the context's error at once, and the server sees the request go
// away (B-05a: the LLM request is aborted, not left running).
func TestCancelAbortsRequest(t *testing.T) {
	arrived := make(chan struct{})
	gone := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// net/http notices a client gone only once the body is read.
		io.ReadAll(r.Body)
		close(arrived)
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(30 * time.Second):
		}
	}))
	defer s.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := client(t, s.URL, "").Complete(ctx, hello)
		done <- err
	}()
	<-arrived
	start := time.Now()
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Complete did not return within 5s of the cancel")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v (%T), want context.Canceled", err, err)
	}
	var e *Error
	if errors.As(err, &e) {
		t.Errorf("a cancel is not the server's failure: %v", e)
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request aborted")
	}
	t.Logf("cancel to return: %v", time.Since(start))

	// A deadline is the context's error too.
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		<-r.Context().Done()
	}))
	defer hang.Close()
	if _, err := client(t, hang.URL, "").Complete(ctx, hello); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
}
