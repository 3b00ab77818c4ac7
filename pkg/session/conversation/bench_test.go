package conversation

import (
	"encoding/json"
	"testing"
)

// BenchmarkTurn is one turn with a tool round: user message, a response
// with two calls, their results, the final answer.
func BenchmarkTurn(b *testing.B) {
	c, _ := New(parentCfg())
	calls := []ToolCall{call("", "read_file", `{"path":"a"}`), call("", "bash", `{"command":"ls"}`)}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Transition(c, Event{Type: EvUserMessage, Text: "look", At: "2026-05-01T09:00:00Z"})
		Transition(c, Event{Type: EvLLMResponse, RequestID: c.RequestID, ToolCalls: calls, Usage: &Usage{TotalTokens: 100}})
		for c.Running != nil {
			Transition(c, Event{Type: EvToolResult, CallID: c.Running.Call.ID, OK: true, Output: "x"})
		}
		Transition(c, Event{Type: EvLLMResponse, RequestID: c.RequestID, Text: "done", EndTurn: true, Usage: &Usage{TotalTokens: 100}})
		if len(c.Messages) > 200 {
			c.Messages = c.Messages[:0:0]
		}
	}
}

// BenchmarkSnapshot is the executor's persist: json.Marshal of a
// conversation of 100 messages.
func BenchmarkSnapshot(b *testing.B) {
	c, _ := New(parentCfg())
	for len(c.Messages) < 100 {
		Transition(c, Event{Type: EvUserMessage, Text: "a question of some length about the code", At: "2026-05-01T09:00:00Z"})
		Transition(c, Event{Type: EvLLMResponse, RequestID: c.RequestID, Text: "an answer of some length about the code", EndTurn: true})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := json.Marshal(c); err != nil {
			b.Fatal(err)
		}
	}
}
