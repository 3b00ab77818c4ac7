package conversation

import (
	"strings"
	"testing"
)

func (h *harness) rejected(text, code, detail string) []Effect {
	return h.do(Event{Type: EvLLMRejected, RequestID: h.c.RequestID, Text: text, Code: code, Detail: detail})
}

// llm_rejected is seed 002's envelope rejection in the machine: nothing
// runs, the reply and the rejection stay in the history for the model, the
// model is asked again under a new request, and MaxRejections in a row end
// the turn in error. Cancel outranks it.
func TestLLMRejected(t *testing.T) {
	const nonceBad = "tool_call_nonce_invalid"
	tests := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"a rejection asks again under a new request", func(t *testing.T, h *harness) {
			h.user("list the files")
			before := h.c.RequestID
			h.rejected(`{"tool":"bash","args":{},"nonce":"old"}`, nonceBad, "nonce missing or not this turn's")
			h.want(AwaitingLLM)
			h.wantEffects(EfPersist, EfState, EfCallLLM)
			if h.c.RequestID == before || h.eff[2].RequestID != h.c.RequestID || !h.eff[2].Tools {
				t.Fatalf("call_llm %+v after %s", h.eff[2], before)
			}
			m := h.eff[0].Messages
			if len(m) != 2 || m[0].Role != RoleAssistant || m[0].Kind != KindRejectedReply || !strings.Contains(m[0].Text, `"nonce":"old"`) ||
				m[1].Role != RoleUser || m[1].Kind != KindRejection || !m[1].Synthetic ||
				!strings.Contains(m[1].Text, nonceBad) || !strings.Contains(m[1].Text, "not this turn's") || !strings.Contains(m[1].Text, "STOP_HOOK: tool_call_rejected") {
				t.Fatalf("persisted %+v", m)
			}
			if !m[0].ForLLM() || !m[1].ForLLM() || h.c.Rejections != 1 {
				t.Fatalf("the model must see both; rejections %d", h.c.Rejections)
			}
		}},
		{"three in a row: error with an actionable message", func(t *testing.T, h *harness) {
			h.user("go")
			for i := 0; i < MaxRejections-1; i++ {
				h.rejected("prose", "tool_call_invalid_format", "decision JSON required after a tool result")
				h.want(AwaitingLLM)
			}
			h.rejected("{} {}", "tool_call_multiple", "more than one JSON object in the message")
			h.want(Error)
			h.wantEffects(EfPersist, EfState, EfNotify)
			if !strings.Contains(h.c.LastError, "3 times") || !strings.Contains(h.c.LastError, "tool_call_multiple") ||
				!strings.Contains(h.c.LastError, "--tool-protocol native") || !strings.Contains(h.c.LastError, "send a message") {
				t.Fatalf("last error %q", h.c.LastError)
			}
			if h.c.InFlight || h.c.RequestID != "" {
				t.Fatalf("a request is still out: %+v", h.c)
			}
			// A message in error continues, with a fresh count.
			h.user("try again")
			h.want(AwaitingLLM)
			if h.c.Rejections != 0 {
				t.Fatalf("rejections %d after a user message", h.c.Rejections)
			}
		}},
		{"an accepted reply resets the count", func(t *testing.T, h *harness) {
			h.user("go")
			h.rejected("x", "tool_call_invalid_format", "a")
			h.rejected("x", "tool_call_invalid_format", "b")
			h.reply(`{"tool":"read_file","args":{"path":"a"},"nonce":"n"}`, false, 0, call("r1", "read_file", `{"path":"a"}`))
			h.want(ToolExecuting)
			h.result(true, "contents")
			h.want(AwaitingLLM)
			if h.c.Rejections != 0 {
				t.Fatalf("rejections %d", h.c.Rejections)
			}
			h.rejected("x", "tool_call_invalid_format", "c")
			h.want(AwaitingLLM)
		}},
		{"nothing executes on a rejection", func(t *testing.T, h *harness) {
			h.user("go")
			for i := 0; i < MaxRejections; i++ {
				for _, e := range h.rejected(`{"tool":"bash","args":{"command":"rm -rf /"},"nonce":"guess"}`, nonceBad, "") {
					if e.Type == EfExecuteTool {
						t.Fatal("a rejected reply executed a tool")
					}
				}
			}
			if err := matched(h.c); err != nil {
				t.Fatal(err)
			}
		}},
		{"cancel outranks a late rejection", func(t *testing.T, h *harness) {
			h.user("go")
			id := h.c.RequestID
			h.do(Event{Type: EvCancel})
			h.want(Idle)
			n := len(h.c.Messages)
			h.do(Event{Type: EvLLMRejected, RequestID: id, Text: "late", Code: nonceBad})
			h.want(Idle)
			h.wantEffects(EfError)
			if h.eff[0].Code != CodeStale || len(h.c.Messages) != n {
				t.Fatalf("late rejection %+v, %d messages", h.eff, len(h.c.Messages)-n)
			}
		}},
		{"cancel while the re-ask is out", func(t *testing.T, h *harness) {
			h.user("go")
			h.rejected("x", "tool_call_invalid_format", "")
			h.do(Event{Type: EvCancel})
			h.want(Idle)
			h.wantEffects(EfPersist, EfState, EfAbortLLM)
		}},
		{"a sub-agent fails after three", func(t *testing.T, h *harness) {
			for i := 0; i < MaxRejections; i++ {
				h.rejected("x", "tool_call_unknown_tool", `tool "nope" is not registered`)
			}
			h.want(Error)
			var done *Effect
			for i, e := range h.eff {
				if e.Type == EfSubagentDone {
					done = &h.eff[i]
				}
			}
			if done == nil || !h.c.Finished || !strings.Contains(done.Error, "tool_call_unknown_tool") {
				t.Fatalf("effects %v, finished %v", types(h.eff), h.c.Finished)
			}
		}},
		{"a continuation summary is never rejected away", func(t *testing.T, h *harness) {
			h.user("go")
			h.reply("", false, 950, call("c1", "bash", `{"command":"ls"}`))
			if !h.c.Continuing {
				t.Fatalf("not continuing: %s", h.c.State)
			}
			h.rejected("the summary", "tool_call_invalid_format", "")
			h.want(ContextExhausted)
			if h.c.Summary != "the summary" {
				t.Fatalf("summary %q", h.c.Summary)
			}
		}},
		{"at 90% a rejection starts the continuation", func(t *testing.T, h *harness) {
			h.user("go")
			h.do(Event{Type: EvLLMRejected, RequestID: h.c.RequestID, Text: "x", Code: nonceBad, Usage: &Usage{TotalTokens: 950}})
			if !h.c.Continuing || h.c.State != AwaitingLLM || h.eff[len(h.eff)-1].Tools {
				t.Fatalf("state %s continuing %v effects %v", h.c.State, h.c.Continuing, types(h.eff))
			}
		}},
		{"a stale rejection in idle changes nothing", func(t *testing.T, h *harness) {
			h.rejected("x", nonceBad, "")
			h.want(Idle)
			h.wantEffects(EfError)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parentCfg()
			if strings.Contains(tt.name, "sub-agent") {
				cfg = subCfg()
			}
			tt.run(t, start(t, cfg))
		})
	}
}
