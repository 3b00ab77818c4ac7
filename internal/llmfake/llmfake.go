// Package llmfake is a scripted OpenAI-compatible chat completion server on
// loopback: the one fake issue 18 allows, since no model runs on this machine.
package llmfake

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Step is one scripted answer, served to one request in script order.
type Step struct {
	Status       int           `json:"status,omitempty"` // 0: 200; otherwise an OpenAI-shaped error body (429, 503, 401, …)
	Error        string        `json:"error,omitempty"`  // the error's message; default: one naming the status
	Text         string        `json:"text,omitempty"`   // {{nonce}} in it: the request's tool-call nonce (RequestNonce)
	ToolCalls    []FakeCall    `json:"tool_calls,omitempty"`
	FinishReason string        `json:"finish_reason,omitempty"` // default: tool_calls with calls, stop without
	Usage        *Usage        `json:"usage,omitempty"`         // default: estimated from the request and text sizes
	Hang         bool          `json:"hang,omitempty"`          // hold the request until the client goes away
	Delay        time.Duration `json:"-"`                       // wait before answering; "delay":"200ms" in a script
	Body         string        `json:"body,omitempty"`          // answer this raw body instead (with Status, default 200)
}

// FakeCall is a tool call in a scripted answer.
type FakeCall struct {
	ID   string          `json:"id,omitempty"` // default: call_<step>_<index>
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"` // sent as the arguments string; default {}
}

// Usage is a scripted token count.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// maxLine bounds a script line, maxRequest a request body.
const (
	maxLine    = 1 << 20
	maxRequest = 32 << 20
)

// Load reads a script: one JSON Step per line; blank lines and lines
// starting with # are skipped. Unknown fields are errors, so a typo does
// not silently become a plain answer; errors name the line.
func Load(r io.Reader) ([]Step, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var steps []Step
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var s struct {
			Step
			Delay string `json:"delay,omitempty"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("llmfake: script line %d: %v", n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("llmfake: script line %d: more than one JSON value", n)
		}
		step := s.Step
		if s.Delay != "" {
			d, err := time.ParseDuration(s.Delay)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("llmfake: script line %d: delay %q is not a duration like 200ms", n, s.Delay)
			}
			step.Delay = d
		}
		if err := step.check(); err != nil {
			return nil, fmt.Errorf("llmfake: script line %d: %v", n, err)
		}
		steps = append(steps, step)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("llmfake: script: %v", err)
	}
	return steps, nil
}

func (s Step) check() error {
	answers := s.Text != "" || len(s.ToolCalls) > 0 || s.Usage != nil || s.FinishReason != ""
	switch {
	case s.Status != 0 && (s.Status < 100 || s.Status > 599):
		return fmt.Errorf("status %d is not an HTTP status", s.Status)
	case s.Hang && (answers || s.Status != 0 || s.Body != "" || s.Error != ""):
		return errors.New("a hang answers nothing: drop the other fields")
	case s.Body != "" && (answers || s.Error != ""):
		return errors.New("body is the whole answer: drop text, tool_calls, usage, finish_reason and error")
	case s.Status != 0 && s.Status != 200 && s.Body == "" && answers:
		return fmt.Errorf("status %d answers an error: drop text, tool_calls, usage and finish_reason", s.Status)
	case s.Error != "" && (s.Status == 0 || s.Status == 200):
		return errors.New("error needs an error status")
	case s.Delay < 0:
		return errors.New("delay is negative")
	}
	for i, c := range s.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("tool_calls[%d].name is empty", i)
		}
	}
	return nil
}

// Server serves a script. Its methods are safe for concurrent use.
type Server struct {
	URL string // base URL with /v1: "http://127.0.0.1:PORT/v1"

	steps    []Step
	srv      *http.Server
	ln       net.Listener
	stop     chan struct{} // closed by Close: releases hung requests
	recorder io.Writer

	mu       sync.Mutex
	next     int // the next step
	asked    int // well-formed requests received, past the script's end too
	requests []json.RawMessage
	aborted  int
	changed  chan struct{} // closed and replaced whenever a count changes
	closed   bool
}

// Option configures a Server.
type Option func(*Server)

// WithRecorder writes every request body to w as it arrives, one line of
// compact JSON each (the testscript command's $WORK/llm-requests.jsonl).
func WithRecorder(w io.Writer) Option { return func(s *Server) { s.recorder = w } }

// Start serves steps on 127.0.0.1 until the test ends.
func Start(t testing.TB, steps []Step, opts ...Option) *Server {
	t.Helper()
	s, err := Listen(steps, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Listen serves steps on 127.0.0.1 until Close.
func Listen(steps []Step, opts ...Option) (*Server, error) {
	for i, st := range steps {
		if err := st.check(); err != nil {
			return nil, fmt.Errorf("llmfake: step %d: %v", i+1, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("llmfake: %v", err)
	}
	s := &Server{
		URL:     "http://" + ln.Addr().String() + "/v1",
		steps:   steps,
		ln:      ln,
		stop:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server: hung requests are released (not counted as
// aborted) and it waits for every handler to return.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	// Shutdown waits for the handlers, which s.stop has released.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
}

// Requests are the request bodies received, in order, each compact JSON
// (a body that is not JSON is kept as a JSON string of its text).
func (s *Server) Requests() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.requests...)
}

// Served is the number of script steps consumed so far.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Aborted is the number of requests the client abandoned while a step
// held them (hang, delay): a cancelled LLM call shows here (B-05a).
func (s *Server) Aborted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

// WaitAborted waits until at least n requests were abandoned, or timeout:
// the server learns of an abandoned request a moment after the client
// gives it up. It reports whether n was reached.
func (s *Server) WaitAborted(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, changed := s.aborted, s.changed
		s.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// bump changes a count under s.mu and wakes the waiters.
func (s *Server) bump(f func()) {
	s.mu.Lock()
	f()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "llmfake: "+r.Method+" "+r.URL.Path+": only POST /v1/chat/completions is served")
		return
	}
	if r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "invalid_request_error", "llmfake: no route "+r.URL.Path+": only POST /v1/chat/completions is served")
		return
	}
	// Read the whole body first: net/http notices a client that goes
	// away only once the body is consumed.
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmfake: reading the request: "+err.Error())
		return
	}
	s.record(body)
	if len(body) > maxRequest {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("llmfake: request body exceeds %d MiB", maxRequest>>20))
		return
	}
	model, problem := checkRequest(body)
	if problem != "" {
		// Not a step: the executor's bug shows as the 400 a real server
		// would answer, and the script stays where it was.
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmfake: "+problem)
		return
	}

	s.mu.Lock()
	n := s.next
	s.asked++
	asked := s.asked
	if n < len(s.steps) {
		s.next++
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	if n >= len(s.steps) {
		writeError(w, http.StatusInternalServerError, "server_error",
			fmt.Sprintf("llmfake: the script has %d steps and this is request %d: past its end", len(s.steps), asked))
		return
	}
	step := s.steps[n]

	if step.Hang || step.Delay > 0 {
		var wait <-chan time.Time // nil: forever
		if !step.Hang {
			t := time.NewTimer(step.Delay)
			defer t.Stop()
			wait = t.C
		}
		select {
		case <-r.Context().Done():
			s.bump(func() { s.aborted++ })
			return
		case <-s.stop:
			return
		case <-wait:
		}
	}

	switch {
	case step.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(orDefault(step.Status, http.StatusOK))
		io.WriteString(w, step.Body)
	case step.Status != 0 && step.Status != http.StatusOK:
		msg := step.Error
		if msg == "" {
			msg = fmt.Sprintf("llmfake: scripted %d %s (step %d)", step.Status, http.StatusText(step.Status), n+1)
		}
		kind := "server_error"
		switch {
		case step.Status == http.StatusTooManyRequests:
			kind = "rate_limit_exceeded"
		case step.Status == http.StatusUnauthorized:
			kind = "invalid_api_key"
		case step.Status < 500:
			kind = "invalid_request_error"
		}
		writeError(w, step.Status, kind, msg)
	default:
		if strings.Contains(step.Text, NoncePlaceholder) {
			step.Text = strings.ReplaceAll(step.Text, NoncePlaceholder, RequestNonce(body))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(completion(step, n+1, model, len(body)))
	}
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// record keeps body and hands it to the recorder at once, so a script can
// look at a request while its answer is still held.
func (s *Server) record(body []byte) {
	var b bytes.Buffer
	if json.Compact(&b, body) != nil {
		b.Reset()
		q, _ := json.Marshal(strings.ToValidUTF8(string(body), "\uFFFD"))
		b.Write(q)
	}
	line := json.RawMessage(b.Bytes())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, line)
	if s.recorder != nil {
		s.recorder.Write(append(append([]byte(nil), line...), '\n'))
	}
}

// writeError answers OpenAI's error shape.
func writeError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": kind, "code": strconv.Itoa(status)}})
}

// completion is step's answer in OpenAI's chat.completion shape.
func completion(step Step, n int, model string, requestBytes int) map[string]any {
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": step.Text}
	if len(step.ToolCalls) > 0 {
		calls := make([]call, len(step.ToolCalls))
		for i, fc := range step.ToolCalls {
			c := call{ID: fc.ID, Type: "function"}
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d_%d", n, i)
			}
			c.Function.Name = fc.Name
			c.Function.Arguments = "{}"
			if len(fc.Args) > 0 {
				var b bytes.Buffer
				if json.Compact(&b, fc.Args) == nil {
					c.Function.Arguments = b.String()
				} else {
					c.Function.Arguments = string(fc.Args) // a model's broken JSON, on cue
				}
			}
			calls[i] = c
		}
		msg["tool_calls"] = calls
		if step.Text == "" {
			msg["content"] = nil
		}
	}
	finish := step.FinishReason
	if finish == "" {
		finish = "stop"
		if len(step.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	usage := step.Usage
	if usage == nil {
		// About four bytes a token, as tokenizers go: enough for context
		// tracking to move; scripts that test thresholds give usage.
		p, c := requestBytes/4, (len(step.Text)+len(fmt.Sprint(step.ToolCalls)))/4
		usage = &Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
	}
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-llmfake-%d", n),
		"object":  "chat.completion",
		"created": 0,
		"model":   model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usage,
	}
}

// NoncePlaceholder in a step's text is replaced by RequestNonce.
const NoncePlaceholder = "{{nonce}}"

// RequestNonce is the tool-call nonce of a request under seed 002's
// envelope protocol: the "const" of a "nonce" property in its
// response_format's schema, else the value of the last "TOOL_NONCE: " line
// of its messages; "" when it has neither.
func RequestNonce(body []byte) string {
	var req struct {
		ResponseFormat *struct {
			JSONSchema *struct {
				Schema any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		if n := schemaNonce(rf.JSONSchema.Schema); n != "" {
			return n
		}
	}
	nonce := ""
	for _, m := range req.Messages {
		text, _ := m.Content.(string)
		for _, line := range strings.Split(text, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "TOOL_NONCE: "); ok {
				nonce = strings.TrimSpace(v)
			}
		}
	}
	return nonce
}

// schemaNonce finds properties.nonce.const anywhere in a JSON Schema.
func schemaNonce(v any) string {
	switch x := v.(type) {
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok {
			if n, ok := props["nonce"].(map[string]any); ok {
				if c, ok := n["const"].(string); ok {
					return c
				}
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if n := schemaNonce(x[k]); n != "" {
				return n
			}
		}
	case []any:
		for _, e := range x {
			if n := schemaNonce(e); n != "" {
				return n
			}
		}
	}
	return ""
}

// checkRequest is the shape a real server insists on, lightly: a model,
// messages with known roles, and every tool call answered by a tool
// message, every tool message answering a call (OpenAI answers 400
// otherwise; B-05d: every tool request has a matching result). It returns
// the model, or what is wrong.
func checkRequest(body []byte) (model, problem string) {
	var req struct {
		Model    *string           `json:"model"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []struct {
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return "", "the request body is not a chat completion request: " + err.Error()
	}
	if req.Model == nil || *req.Model == "" {
		return "", "model is missing"
	}
	if len(req.Messages) == 0 {
		return "", "messages is missing or empty"
	}
	for i, t := range req.Tools {
		if t.Type != "function" || t.Function == nil || t.Function.Name == "" {
			return "", fmt.Sprintf("tools[%d]: want {\"type\":\"function\",\"function\":{\"name\":…}}", i)
		}
	}
	pending := map[string]bool{} // calls of the last assistant message not yet answered
	var order []string
	for i, raw := range req.Messages {
		var m struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function *struct {
					Name      string  `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", fmt.Sprintf("messages[%d]: %v", i, err)
		}
		if m.Role != "tool" && len(pending) > 0 {
			return "", fmt.Sprintf("messages[%d] (%s): the tool calls %s of the assistant message before have no tool message answering them", i, m.Role, strings.Join(unanswered(order, pending), ", "))
		}
		switch m.Role {
		case "system", "developer", "user":
		case "assistant":
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Type != "function" || c.Function == nil || c.Function.Name == "" || c.Function.Arguments == nil {
					return "", fmt.Sprintf("messages[%d].tool_calls[%d]: want id, type function, function.name and function.arguments (a string)", i, j)
				}
				pending[c.ID] = true
				order = append(order, c.ID)
			}
		case "tool":
			if m.ToolCallID == "" {
				return "", fmt.Sprintf("messages[%d]: a tool message without tool_call_id", i)
			}
			if !pending[m.ToolCallID] {
				return "", fmt.Sprintf("messages[%d]: tool_call_id %q answers no pending tool call of the assistant message before", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		default:
			return "", fmt.Sprintf("messages[%d].role %q is not system, user, assistant or tool", i, m.Role)
		}
		if len(pending) == 0 {
			order = order[:0]
		}
	}
	if len(pending) > 0 {
		return "", fmt.Sprintf("the tool calls %s of the last assistant message have no tool message answering them", strings.Join(unanswered(order, pending), ", "))
	}
	return *req.Model, ""
}

func unanswered(order []string, pending map[string]bool) []string {
	var out []string
	for _, id := range order {
		if pending[id] {
			out = append(out, strconv.Quote(id))
		}
	}
	return out
}
