package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/session/conversation"
)

// governed is a conversation over the session test's tools, unrestricted
// (no Landlock) so that only the session gates decide.
func governed(t *testing.T) *Conversation {
	t.Helper()
	gates := New(Options{ReceiptKey: testKey})
	if _, effs := Transition(gates, Decode([]byte(line(start)))); summary(effs) != "" {
		t.Fatalf("session_start: %s", summary(effs))
	}
	m, _ := conversation.New(conversation.Config{ID: "conv1", Cwd: "/w", Model: "m", At: "2026-05-01T09:00:00Z",
		ToolKinds: map[string]string{"run_read": "read", "run_command": "write", "file_edit": "write", "query": "read"}})
	return &Conversation{Machine: m, Gates: gates}
}

func effectTypes(effs []conversation.Effect) string {
	var s []string
	for _, e := range effs {
		s = append(s, e.Type)
	}
	return strings.Join(s, " ")
}

func findEffect(effs []conversation.Effect, typ string) *conversation.Effect {
	for i := range effs {
		if effs[i].Type == typ {
			return &effs[i]
		}
	}
	return nil
}

func TestConversationGates(t *testing.T) {
	c := governed(t)
	c.Apply(conversation.Event{Type: conversation.EvUserMessage, Text: "fix delly", At: "2026-05-01T09:00:01Z"})
	effs := c.Apply(conversation.Event{Type: conversation.EvLLMResponse, RequestID: c.Machine.RequestID, At: "2026-05-01T09:00:02Z",
		ToolCalls: []conversation.ToolCall{
			{ID: "w1", Name: "file_edit", Args: json.RawMessage(`{"target_host":"delly"}`)},
			{ID: "r1", Name: "run_read", Args: json.RawMessage(`{"command":"uptime"}`)},
		}})
	// A write before anything was discovered is blocked by seed 000's
	// workflow FSM: the executor never sees it, the machine gets the block
	// as w1's result and moves on to r1.
	e := findEffect(effs, conversation.EfExecuteTool)
	if e == nil || e.Call.ID != "r1" {
		t.Fatalf("effects %s", effectTypes(effs))
	}
	for _, x := range effs {
		if x.Type == conversation.EfExecuteTool && x.Call.ID == "w1" {
			t.Fatal("a blocked call reached the executor")
		}
	}
	var w1 conversation.Message
	for _, m := range c.Machine.Messages {
		if m.CallID == "w1" {
			w1 = m
		}
	}
	if !w1.IsError || !strings.Contains(w1.Text, "FSM_BLOCKED") {
		t.Fatalf("w1's result %+v", w1)
	}
	// r1's result goes through the gates: a receipt.
	effs = c.Apply(conversation.Event{Type: conversation.EvToolResult, CallID: "r1", Generation: e.Generation, OK: true, Output: "up 3 days", At: "2026-05-01T09:00:03Z"})
	if r := findEffect(effs, conversation.EfReceipt); r == nil || r.CallID != "r1" || len(r.Receipt) == 0 {
		t.Fatalf("effects %s", effectTypes(effs))
	}
	if effs[0].Type != conversation.EfPersist || findEffect(effs, conversation.EfCallLLM) == nil {
		t.Fatalf("effects %s", effectTypes(effs))
	}
	if len(c.Gates.pending) != 0 {
		t.Fatal("the gates still await r1")
	}
}

func TestConversationCancelAndRestore(t *testing.T) {
	c := governed(t)
	c.Apply(conversation.Event{Type: conversation.EvUserMessage, Text: "look", At: "2026-05-01T09:00:01Z"})
	c.Apply(conversation.Event{Type: conversation.EvLLMResponse, RequestID: c.Machine.RequestID, At: "2026-05-01T09:00:02Z",
		ToolCalls: []conversation.ToolCall{{ID: "r1", Name: "run_read", Args: json.RawMessage(`{"command":"sleep 30"}`)},
			{ID: "r2", Name: "run_read", Args: json.RawMessage(`{"command":"uptime"}`)}}})
	c.Apply(conversation.Event{Type: conversation.EvCancel, At: "2026-05-01T09:00:03Z"})
	// The killed call's confirmation closes it in the gates too.
	effs := c.Apply(conversation.Event{Type: conversation.EvToolResult, CallID: "r1", OK: false, Error: "killed", At: "2026-05-01T09:00:04Z"})
	if c.Machine.State != conversation.Idle || findEffect(effs, conversation.EfReceipt) == nil || len(c.Gates.pending) != 0 {
		t.Fatalf("state %s effects %s pending %d", c.Machine.State, effectTypes(effs), len(c.Gates.pending))
	}
	// A restart mid-tool: both halves restored, nothing left open.
	c.Apply(conversation.Event{Type: conversation.EvUserMessage, Text: "again", At: "2026-05-01T09:00:05Z"})
	c.Apply(conversation.Event{Type: conversation.EvLLMResponse, RequestID: c.Machine.RequestID, At: "2026-05-01T09:00:06Z",
		ToolCalls: []conversation.ToolCall{{ID: "r3", Name: "run_read", Args: json.RawMessage(`{"command":"uptime"}`)}}})
	snap, err := c.Gates.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := json.Marshal(c.Machine)
	gates, err := Restore(Options{ReceiptKey: testKey}, snap)
	if err != nil {
		t.Fatal(err)
	}
	var m conversation.Conversation
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	back := &Conversation{Machine: &m, Gates: gates}
	effs = back.Restore("2026-05-01T10:00:00Z")
	if m.State != conversation.Idle || len(gates.pending) != 0 || findEffect(effs, conversation.EfReceipt) == nil {
		t.Fatalf("restored %s effects %s pending %d", m.State, effectTypes(effs), len(gates.pending))
	}
}
