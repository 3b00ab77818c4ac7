package serve

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/llm"
	"github.com/govkit/govkit/pkg/session/conversation"
	"github.com/govkit/govkit/pkg/session/envelope"
)

func TestStepOf(t *testing.T) {
	user := conversation.Message{Role: conversation.RoleUser, Text: "go"}
	call := conversation.Message{Role: conversation.RoleAssistant, Text: `{"tool":"bash"}`, ToolCalls: []conversation.ToolCall{{ID: "c", Name: "bash"}}}
	result := conversation.Message{Role: conversation.RoleTool, CallID: "c", Text: "out"}
	final := conversation.Message{Role: conversation.RoleAssistant, Text: `{"action":"final","nonce":"n"}`}
	rejectedFinal := conversation.Message{Role: conversation.RoleAssistant, Kind: conversation.KindRejectedReply, Text: `{"action":"final","nonce":"x"}`}
	rejection := conversation.Message{Role: conversation.RoleUser, Kind: conversation.KindRejection, Synthetic: true, Text: "rejected"}
	prose := conversation.Message{Role: conversation.RoleAssistant, Text: "the answer"}
	nudge := conversation.Message{Role: conversation.RoleUser, Synthetic: true, Text: "Call submit_result"}
	tests := []struct {
		name string
		hist []conversation.Message
		want envelopeStep
	}{
		{"a new message", []conversation.Message{user}, stepCall},
		{"after a result", []conversation.Message{user, call, result}, stepDecision},
		{"a rejection after a result", []conversation.Message{user, call, result, prose, rejection}, stepDecision},
		{"after a final decision", []conversation.Message{user, call, result, final}, stepAnswer},
		{"a rejected answer", []conversation.Message{user, final, call, rejection}, stepAnswer},
		{"a rejected final decision", []conversation.Message{user, rejectedFinal, rejection}, stepCall},
		{"a rejection before any result", []conversation.Message{user, prose, rejection}, stepCall},
		{"the last turn's result is past", []conversation.Message{user, call, result, final, prose, user}, stepCall},
		{"a sub-agent's nudge starts over", []conversation.Message{user, final, prose, nudge}, stepCall},
	}
	for _, tt := range tests {
		if got := stepOf(tt.hist); got != tt.want {
			t.Errorf("%s: step %d, want %d", tt.name, got, tt.want)
		}
	}
}

// The executor's tools translate to seed 002's registry; a schema it
// cannot express leaves that tool's args unchecked.
func TestArgSpecs(t *testing.T) {
	tests := []struct {
		name   string
		params string
		want   map[string]envelope.ArgSpec
	}{
		{"bash", `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}`,
			map[string]envelope.ArgSpec{"command": {Type: envelope.TypeString, Required: true}}},
		{"types", `{"type":"object","properties":{"n":{"type":"integer","minimum":1},"x":{"type":"number"},"b":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},"mode":{"type":"string","enum":["fast","deep"]}}}`,
			map[string]envelope.ArgSpec{"n": {Type: envelope.TypeInt}, "x": {Type: envelope.TypeNumber}, "b": {Type: envelope.TypeBool},
				"tags": {Type: envelope.TypeStringArray, Enum: []string{"a", "b"}}, "mode": {Type: envelope.TypeString, Enum: []string{"fast", "deep"}}}},
		{"no args", `{"type":"object","properties":{}}`, map[string]envelope.ArgSpec{}},
		{"a list of objects", `{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object"}}}}`, nil},
		{"an object arg", `{"type":"object","properties":{"o":{"type":"object"}}}`, nil},
		{"required but undeclared", `{"type":"object","properties":{},"required":["x"]}`, nil},
		{"not JSON", `{`, nil},
	}
	for _, tt := range tests {
		if got := argSpecs(json.RawMessage(tt.params)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %#v, want %#v", tt.name, got, tt.want)
		}
	}
	// Every offered tool, parent's and sub-agent's, makes a registry.
	for _, sub := range []bool{false, true} {
		offered := tools(&conversation.Conversation{Subagent: sub})
		s, err := envelopeSchema(offered)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Names()) != len(offered) || !s.Has("bash") || s.Has("submit_result") != sub {
			t.Errorf("sub-agent %v: %v", sub, s.Names())
		}
	}
}

// The first step's response_format admits every tool's envelope and the
// final decision, all with the request's nonce.
func TestCallOrFinalSchema(t *testing.T) {
	s, err := envelopeSchema(tools(&conversation.Conversation{}))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OneOf []struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"oneOf"`
	}
	if err := json.Unmarshal(callOrFinalSchema(s, "n0nce"), &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, alt := range doc.OneOf {
		if alt.Properties["nonce"]["const"] != "n0nce" {
			t.Errorf("an alternative without the nonce: %v", alt.Properties)
		}
		if c, ok := alt.Properties["tool"]["const"].(string); ok {
			names = append(names, c)
		} else if alt.Properties["action"]["const"] == "final" {
			names = append(names, "final")
		}
	}
	if strings.Join(names, " ") != strings.Join(append(s.Names(), "final"), " ") {
		t.Errorf("alternatives %v", names)
	}
	one, _ := envelope.NewSchema(map[string]map[string]envelope.ArgSpec{"bash": nil})
	if err := json.Unmarshal(callOrFinalSchema(one, "n"), &doc); err != nil || len(doc.OneOf) != 2 {
		t.Errorf("one tool: %d alternatives, %v", len(doc.OneOf), err)
	}
}

// The history for an endpoint without tool calling: leading notices in the
// system prompt, results as user messages with the ToolResponse JSON,
// native-era calls as envelopes, roles alternating.
func TestEnvelopeMessages(t *testing.T) {
	hist := []conversation.Message{
		{Role: conversation.RoleSystem, Kind: conversation.KindMode, Text: "Mode: restricted."},
		{Role: conversation.RoleUser, Text: "look"},
		{Role: conversation.RoleAssistant, ToolCalls: []conversation.ToolCall{{ID: "a", Name: "read_file", Args: json.RawMessage(`{"path":"x"}`)}, {ID: "b", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}}},
		{Role: conversation.RoleTool, CallID: "a", Tool: "read_file", Text: "contents"},
		{Role: conversation.RoleTool, CallID: "b", Tool: "bash", Text: "exit 2", IsError: true},
		{Role: conversation.RoleSystem, Kind: conversation.KindMode, Text: "Mode: unrestricted."},
		{Role: conversation.RoleAssistant, Text: `{"tool":"patch","args":{},"nonce":"n"}`, ToolCalls: []conversation.ToolCall{{ID: "c", Name: "patch", Args: json.RawMessage(`{}`)}}},
		{Role: conversation.RoleTool, CallID: "c", Tool: "patch", Text: `{"ok":false,"error":{"code":"ACTION_NOT_ALLOWED"}}`, IsError: true},
	}
	s := &Server{}
	msgs, err := s.envelopeMessages(context.Background(), "SYSTEM", hist)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Message{
		{Role: "system", Content: "SYSTEM\nMode: restricted.\n"},
		{Role: "user", Content: "look"},
		{Role: "assistant", Content: `{"args":{"path":"x"},"tool":"read_file"}` + "\n" + `{"args":{"command":"ls"},"tool":"bash"}`},
		{Role: "user", Content: "TOOL_RESULT read_file (call a):\n" + `{"ok":true,"data":{"output":"contents"}}` + "\n\n" +
			"TOOL_RESULT bash (call b):\n" + `{"ok":false,"error":{"code":"EXECUTION_FAILED","message":"exit 2","failed":true,"details":{"auto_recoverable":false}}}` + "\n\n" +
			"System notice: Mode: unrestricted."},
		{Role: "assistant", Content: `{"tool":"patch","args":{},"nonce":"n"}`},
		{Role: "user", Content: "TOOL_RESULT patch (call c):\n" + `{"ok":false,"error":{"code":"ACTION_NOT_ALLOWED"}}`},
	}
	if !reflect.DeepEqual(msgs, want) {
		g, _ := json.MarshalIndent(msgs, "", " ")
		t.Errorf("got %s", g)
	}
}

// Whatever the model writes, a tool runs only from one envelope with this
// request's nonce, for a registered tool, with args that are a JSON object;
// everything else is a rejection with a seed 002 code, or plain text.
func FuzzEnvelopeEvent(f *testing.F) {
	const nonce = "0123456789abcdef0123456789abcdef"
	for _, s := range []string{
		`{"tool":"bash","args":{"command":"ls"},"nonce":"` + nonce + `"}`,
		`{"action":"tool","tool":"read_file","args":{"path":"a"},"nonce":"` + nonce + `"}`,
		`{"action":"final","nonce":"` + nonce + `"}`,
		`<think>x</think>{"tool":"search","args":{"query":"q"},"nonce":"` + nonce + `"}`,
		`{"tool":"bash","args":{},"nonce":"x"} {"tool":"bash"}`,
		"plain answer", "bash(ls)", "```json\n{}\n```", "",
	} {
		for step := 0; step < 3; step++ {
			f.Add(s, uint8(step))
		}
	}
	schema, err := envelopeSchema(tools(&conversation.Conversation{}))
	if err != nil {
		f.Fatal(err)
	}
	codes := map[string]bool{envelope.InvalidFormat: true, envelope.UnknownTool: true, envelope.InvalidArgs: true, envelope.Multiple: true, envelope.NonceInvalid: true}
	f.Fuzz(func(t *testing.T, text string, step uint8) {
		turn := &envelopeTurn{step: envelopeStep(step % 3), nonce: nonce, schema: schema}
		if turn.step == stepAnswer {
			turn.nonce = ""
		}
		ev := turn.event("c/llm/1", llm.Response{Text: text, EndTurn: true})
		switch ev.Type {
		case conversation.EvLLMRejected:
			if !codes[ev.Code] || len(ev.Text) > maxRejectedReply+len(" …[cut]") || len(ev.ToolCalls) > 0 {
				t.Fatalf("rejection %+v", ev)
			}
		case conversation.EvLLMResponse:
			if len(ev.ToolCalls) == 0 {
				return
			}
			tc := ev.ToolCalls[0]
			var args map[string]any
			if len(ev.ToolCalls) != 1 || turn.step == stepAnswer || !strings.Contains(text, nonce) || !schema.Has(tc.Name) ||
				json.Unmarshal(tc.Args, &args) != nil || args == nil || tc.ID != "c/llm/1/call" || ev.EndTurn {
				t.Fatalf("call %+v from %q", ev, text)
			}
		default:
			t.Fatalf("event %s", ev.Type)
		}
	})
}
