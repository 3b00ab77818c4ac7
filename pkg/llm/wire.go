package llm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Request is one chat completion request.
type Request struct {
	Model          string
	Messages       []Message
	Tools          []Tool          // offered for native tool calling; none: the model answers in text
	ResponseFormat *ResponseFormat // the envelope tool protocol's JSON schema (EnvelopeFormat)
	MaxTokens      int             // 0: the server's default
}

// Message is one message of the history sent to the model.
type Message struct {
	Role       string     // system | user | assistant | tool
	Content    string     // the text
	Images     []Image    // user: sent as image_url content parts
	ToolCalls  []ToolCall // assistant: the calls it made
	ToolCallID string     // tool: the call this result answers
	Name       string     // optional participant or tool name
}

// Image is an image attached to a user message (REQ-BED-013), sent inline
// as a data: URL, the one form every OpenAI-compatible server accepts.
type Image struct {
	MediaType string // image/png, image/jpeg, …
	Data      []byte
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments object
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // raw JSON text as the model sent it: it may be invalid
}

// Response is the model's answer.
type Response struct {
	Text         string
	ToolCalls    []ToolCall
	FinishReason string // as the server said: stop, length, tool_calls, …
	// EndTurn: the model has finished its turn (REQ-BED-003). True when it
	// asked for no tool and was not cut off (finish_reason "length"): a
	// non-streamed answer is complete, whatever else a server names its
	// finish (stop, eos, content_filter, none at all).
	EndTurn bool
	Usage   Usage
	Model   string // the model that answered, as the server names it
}

// Usage is the token count the server reported (REQ-BED-012).
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// ResponseFormat constrains the answer's text, for the envelope tool
// protocol (seed 002's strict envelope).
type ResponseFormat struct {
	Type       string      `json:"type"` // "json_schema"
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is a named schema the answer must satisfy.
type JSONSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

// EnvelopeFormat asks for text that satisfies schema, strictly: the
// envelope tool protocol's answer format.
func EnvelopeFormat(name string, schema json.RawMessage) *ResponseFormat {
	return &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Name: name, Strict: true, Schema: schema}}
}

// Wire forms of the OpenAI chat completion API.
type (
	wireRequest struct {
		Model          string          `json:"model"`
		Messages       []wireMessage   `json:"messages"`
		Tools          []wireTool      `json:"tools,omitempty"`
		ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
		MaxTokens      int             `json:"max_tokens,omitempty"`
		Stream         bool            `json:"stream"`
	}
	wireMessage struct {
		Role string `json:"role"`
		// Content is a string, or content parts when images ride along.
		// Always present: llama.cpp and LM Studio reject an assistant
		// tool-call message whose content is null or missing
		// (ggml-org/llama.cpp#13471, lmstudio-bug-tracker#261), and
		// OpenAI accepts "".
		Content    any            `json:"content"`
		ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
		Name       string         `json:"name,omitempty"`
	}
	wirePart struct {
		Type     string        `json:"type"`
		Text     string        `json:"text,omitempty"`
		ImageURL *wireImageURL `json:"image_url,omitempty"`
	}
	wireImageURL struct {
		URL string `json:"url"`
	}
	wireTool struct {
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	wireToolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
)

var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// encodeRequest checks req and renders it as the server expects; its
// errors name the field.
func encodeRequest(req Request) ([]byte, error) {
	if req.Model == "" {
		return nil, errors.New("llm: request: model is empty")
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("llm: request: no messages")
	}
	if req.MaxTokens < 0 {
		return nil, fmt.Errorf("llm: request: max_tokens %d is negative", req.MaxTokens)
	}
	w := wireRequest{Model: req.Model, ResponseFormat: req.ResponseFormat, MaxTokens: req.MaxTokens}
	for i, m := range req.Messages {
		if !roles[m.Role] {
			return nil, fmt.Errorf("llm: request: messages[%d].role %q is not system, user, assistant or tool", i, m.Role)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return nil, fmt.Errorf("llm: request: messages[%d] is a tool result without tool_call_id", i)
		}
		if len(m.Images) > 0 && m.Role != "user" {
			return nil, fmt.Errorf("llm: request: messages[%d] has images but role %q: only user messages carry images", i, m.Role)
		}
		wm := wireMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		if len(m.Images) > 0 {
			parts := make([]wirePart, 0, len(m.Images)+1)
			if m.Content != "" {
				parts = append(parts, wirePart{Type: "text", Text: m.Content})
			}
			for j, img := range m.Images {
				if !strings.HasPrefix(img.MediaType, "image/") || len(img.Data) == 0 {
					return nil, fmt.Errorf("llm: request: messages[%d].images[%d]: media type %q with %d bytes is not an image", i, j, img.MediaType, len(img.Data))
				}
				url := "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
				parts = append(parts, wirePart{Type: "image_url", ImageURL: &wireImageURL{URL: url}})
			}
			wm.Content = parts
		}
		for j, tc := range m.ToolCalls {
			if m.Role != "assistant" {
				return nil, fmt.Errorf("llm: request: messages[%d] has tool_calls but role %q", i, m.Role)
			}
			if tc.ID == "" || tc.Name == "" {
				return nil, fmt.Errorf("llm: request: messages[%d].tool_calls[%d]: id and name are required", i, j)
			}
			var wc wireToolCall
			wc.ID, wc.Type = tc.ID, "function"
			wc.Function.Name, wc.Function.Arguments = tc.Name, tc.Arguments
			if wc.Function.Arguments == "" {
				wc.Function.Arguments = "{}"
			}
			wm.ToolCalls = append(wm.ToolCalls, wc)
		}
		w.Messages = append(w.Messages, wm)
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return nil, fmt.Errorf("llm: request: tools[%d].name is empty", i)
		}
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		} else if !json.Valid(params) {
			return nil, fmt.Errorf("llm: request: tools[%d] (%s).parameters is not valid JSON", i, t.Name)
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil && !json.Valid(rf.JSONSchema.Schema) {
		return nil, errors.New("llm: request: response_format.json_schema.schema is not valid JSON")
	}
	data, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("llm: request: %v", err)
	}
	return data, nil
}

// wireResponse is what decodeResponse reads; fields servers disagree on
// stay raw until their form is known.
type wireResponse struct {
	Model   string          `json:"model"`
	Error   json.RawMessage `json:"error"`
	Choices []struct {
		Message *struct {
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function *struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// decodeResponse reads a 200 answer. Its errors name the field that is
// wrong; an error object in a 200 body (some proxies send one) is an
// *Error carrying the status it names.
func decodeResponse(data []byte) (Response, error) {
	var w wireResponse
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&w); err != nil {
		return Response{}, fmt.Errorf("response is not a chat completion: %v", jsonProblem(err))
	}
	if dec.More() {
		return Response{}, errors.New("response has data after its JSON object")
	}
	if len(w.Error) > 0 && string(w.Error) != "null" && len(w.Choices) == 0 {
		e := &Error{Status: 200, Message: errorMessage(append(append([]byte(`{"error":`), w.Error...), '}'))}
		var code struct {
			Code json.RawMessage `json:"code"`
		}
		if json.Unmarshal(w.Error, &code) == nil {
			if n, err := strconv.Atoi(strings.Trim(string(code.Code), `"`)); err == nil && n >= 400 && n <= 599 {
				e.Status = n
			}
		}
		e.Retryable = retryable(e.Status)
		return Response{}, e
	}
	if len(w.Choices) == 0 {
		return Response{}, errors.New("response: choices is empty")
	}
	ch := w.Choices[0]
	if ch.Message == nil {
		return Response{}, errors.New("response: choices[0].message is missing")
	}
	out := Response{Model: w.Model}
	text, err := contentText(ch.Message.Content)
	if err != nil {
		return Response{}, fmt.Errorf("response: choices[0].message.content: %v", err)
	}
	out.Text = text
	for i, tc := range ch.Message.ToolCalls {
		field := fmt.Sprintf("response: choices[0].message.tool_calls[%d]", i)
		if tc.Type != "" && tc.Type != "function" {
			return Response{}, fmt.Errorf("%s.type %q is not function", field, tc.Type)
		}
		if tc.Function == nil || tc.Function.Name == "" {
			return Response{}, fmt.Errorf("%s.function.name is missing", field)
		}
		args, err := arguments(tc.Function.Arguments)
		if err != nil {
			return Response{}, fmt.Errorf("%s.function.arguments: %v", field, err)
		}
		id := tc.ID
		if id == "" {
			// Some local servers send calls without ids; the history needs
			// one to pair each result with its call.
			id = "call_" + strconv.Itoa(i)
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Arguments: args})
	}
	if ch.FinishReason != nil {
		out.FinishReason = *ch.FinishReason
	}
	out.EndTurn = len(out.ToolCalls) == 0 && out.FinishReason != "length"
	if u := w.Usage; u != nil {
		if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 {
			return Response{}, errors.New("response: usage has a negative token count")
		}
		out.Usage = Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
		if out.Usage.TotalTokens == 0 {
			out.Usage.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
	}
	return out, nil
}

// contentText reads a message's content: a string, null, or content parts
// whose text parts are joined.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("is neither a string nor content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// arguments reads a call's arguments: OpenAI sends a JSON string holding
// JSON text; some servers send the object itself.
func arguments(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	if raw[0] == '{' {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err == nil {
			return b.String(), nil
		}
	}
	return "", errors.New("is neither a string nor an object")
}

// jsonProblem says where the JSON broke, without echoing the body.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("%s is a JSON %s, want %s", te.Field, te.Value, te.Type)
		}
		return fmt.Sprintf("a JSON %s, want an object", te.Value)
	}
	return err.Error()
}
