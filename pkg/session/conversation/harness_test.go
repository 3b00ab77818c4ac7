package conversation

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// harness drives one conversation the way an executor does: events
// stamped with a clock, answers built from the current request and call.
type harness struct {
	t     testing.TB
	c     *Conversation
	eff   []Effect
	clock time.Time
}

func parentCfg() Config {
	return Config{ID: "conv1", Cwd: "/work/repo", Model: "gpt-4o", LandlockAvailable: true, At: "2026-05-01T09:00:00Z",
		ContextWindows: map[string]int{"gpt-4o": 1000, "small": 500}}
}

func subCfg() Config {
	c := parentCfg()
	c.ID, c.ParentID, c.Subagent, c.Task = "conv1/sub/1", "conv1", true, "find the config loader"
	return c
}

func start(t testing.TB, cfg Config) *harness {
	t.Helper()
	c, eff := New(cfg)
	return &harness{t: t, c: c, eff: eff, clock: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)}
}

func (h *harness) do(ev Event) []Effect {
	h.t.Helper()
	h.clock = h.clock.Add(time.Second)
	ev.At = h.clock.Format(time.RFC3339)
	h.eff = Transition(h.c, ev)
	return h.eff
}

func (h *harness) user(text string) []Effect {
	return h.do(Event{Type: EvUserMessage, Text: text})
}

func (h *harness) reply(text string, endTurn bool, total int, calls ...ToolCall) []Effect {
	ev := Event{Type: EvLLMResponse, RequestID: h.c.RequestID, Text: text, EndTurn: endTurn, ToolCalls: calls}
	if total > 0 {
		ev.Usage = &Usage{InputTokens: total - 10, OutputTokens: 10, TotalTokens: total}
	}
	return h.do(ev)
}

func (h *harness) llmErr(status int, retryable bool) []Effect {
	return h.do(Event{Type: EvLLMError, RequestID: h.c.RequestID, Status: status, Retryable: retryable, Error: "boom"})
}

// result answers the running call.
func (h *harness) result(ok bool, out string) []Effect {
	h.t.Helper()
	if h.c.Running == nil {
		h.t.Fatalf("no running call (state %s)", h.c.State)
	}
	ev := Event{Type: EvToolResult, CallID: h.c.Running.Call.ID, Generation: h.c.Running.Generation, OK: ok}
	if ok {
		ev.Output = out
	} else {
		ev.Error = out
	}
	return h.do(ev)
}

func call(id, name, args string) ToolCall {
	if args == "" {
		args = "{}"
	}
	return ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

func types(eff []Effect) []string {
	out := make([]string, len(eff))
	for i, e := range eff {
		out[i] = e.Type
	}
	return out
}

func find(eff []Effect, typ string) *Effect {
	for i := range eff {
		if eff[i].Type == typ {
			return &eff[i]
		}
	}
	return nil
}

func (h *harness) want(s State) {
	h.t.Helper()
	if h.c.State != s {
		h.t.Fatalf("state %s, want %s (effects %v)", h.c.State, s, types(h.eff))
	}
}

func (h *harness) wantEffects(want ...string) {
	h.t.Helper()
	if got := strings.Join(types(h.eff), " "); got != strings.Join(want, " ") {
		h.t.Fatalf("effects %q, want %q", got, strings.Join(want, " "))
	}
}

// toolResults maps call id → its tool messages.
func toolResults(c *Conversation) map[string][]Message {
	out := map[string][]Message{}
	for _, m := range c.Messages {
		if m.Role == RoleTool {
			out[m.CallID] = append(out[m.CallID], m)
		}
	}
	return out
}

// matched checks every requested call has exactly one result, after it,
// with only results between an assistant's calls and their results (B-05d).
func matched(c *Conversation) error {
	for i, m := range c.Messages {
		if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, tc := range m.ToolCalls {
			want[tc.ID] = true
		}
		j := i + 1
		for ; j < len(c.Messages) && len(want) > 0; j++ {
			r := c.Messages[j]
			if r.Role != RoleTool {
				if !r.ForLLM() {
					continue
				}
				return fmt.Errorf("message %d (%s %s) between calls of %d and their results", r.Seq, r.Role, r.Kind, m.Seq)
			}
			if !want[r.CallID] {
				return fmt.Errorf("result %d for %s is not for a call of %d", r.Seq, r.CallID, m.Seq)
			}
			delete(want, r.CallID)
		}
		if len(want) > 0 && !(c.State.Busy() && j == len(c.Messages)) {
			return fmt.Errorf("calls %v of message %d have no result (state %s)", want, m.Seq, c.State)
		}
	}
	for id, rs := range toolResults(c) {
		if len(rs) != 1 {
			return fmt.Errorf("call %s has %d results", id, len(rs))
		}
	}
	return nil
}
