package session

import (
	"encoding/json"
	"sort"

	"github.com/govkit/govkit/pkg/session/conversation"
	"github.com/govkit/govkit/pkg/session/response"
)

// Conversation is a seed 001 conversation governed by this reducer: every
// tool call the machine admits also passes seeds 000/002/004's gates, and
// every result goes through them too (receipts, read budgets). Both halves
// stay pure; the executor persists Machine as JSON and Gates.Snapshot().
type Conversation struct {
	Machine *conversation.Conversation
	// Gates is a started session (session_start applied) whose tools are
	// the executor's tools.
	Gates *State
}

// Apply passes one event through both machines and returns the
// conversation's effects in order. An execute_tool the gates block is
// never seen by the executor: the block's envelope goes back to the
// machine as the call's error result. A tool_result of a call the gates
// allowed goes through their tool_result first (even when the machine
// finds it stale, e.g. a killed call's confirmation: the tool did run), and
// its receipt comes out as a receipt effect.
func (c *Conversation) Apply(ev conversation.Event) []conversation.Effect {
	var gated []conversation.Effect
	if ev.Type == conversation.EvToolResult && c.allowed(ev.CallID) {
		gated = c.gateResult(ev.CallID, ev.OK, ev.Output, ev.Error, ev.At)
	}
	out := c.govern(conversation.Transition(c.Machine, ev), ev.At)
	return append(out, gated...)
}

// Restore is conversation.Restore for both halves: a call the gates allowed
// whose result never came (the restart cut it short) is closed there as a
// failure, so its receipt says it did not complete (B-07b).
func (c *Conversation) Restore(at string) []conversation.Effect {
	out := conversation.Restore(c.Machine, at)
	ids := make([]string, 0, len(c.Gates.pending))
	for id := range c.Gates.pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		out = append(out, c.gateResult(id, false, "", "interrupted by a server restart", at)...)
	}
	return out
}

func (c *Conversation) allowed(id string) bool {
	_, ok := c.Gates.pending[id]
	return ok
}

// govern walks the machine's effects: each execute_tool is put to the
// gates; a refusal is fed back to the machine, whose own effects are
// governed in turn (the next queued call may start).
func (c *Conversation) govern(effs []conversation.Effect, at string) []conversation.Effect {
	out := make([]conversation.Effect, 0, len(effs))
	for _, e := range effs {
		if e.Type != conversation.EfExecuteTool || e.Call == nil {
			out = append(out, e)
			continue
		}
		refusal, side := c.gateCall(*e.Call, at)
		out = append(out, side...)
		if refusal == nil {
			out = append(out, e)
			continue
		}
		b, _ := json.Marshal(refusal)
		next := conversation.Transition(c.Machine, conversation.Event{Type: conversation.EvToolResult, At: at,
			CallID: e.Call.ID, Generation: e.Generation, OK: false, Error: string(b)})
		out = append(out, c.govern(next, at)...)
	}
	return out
}

// gateCall asks the gates about one call: nil when allowed, else the
// response to return as the call's result. Anything but an allow is a
// refusal: a call the gates could not judge does not run.
func (c *Conversation) gateCall(call conversation.ToolCall, at string) (*response.ToolResponse, []conversation.Effect) {
	var args map[string]any
	if json.Unmarshal(call.Args, &args) != nil || args == nil {
		args = map[string]any{}
		var raw string
		if json.Unmarshal(call.Args, &raw) == nil {
			args["raw"] = raw
		}
	}
	_, effs := Transition(c.Gates, Event{Type: EvToolCall, At: at, CallID: call.ID, Name: call.Name, Args: args})
	var verdict *response.ToolResponse
	allowed := false
	var side []conversation.Effect
	detail := "the session gates gave no verdict"
	for _, g := range effs {
		switch g.Type {
		case EfAllow:
			allowed = true
		case EfBlock:
			if g.Response != nil {
				r := *g.Response
				verdict = &r
			}
		default:
			if g.Type == EfError {
				detail = g.Code + ": " + g.Detail
			}
			side = append(side, gateEffect(g))
		}
	}
	if allowed && verdict == nil {
		return nil, side
	}
	if verdict == nil {
		r := response.Blocked(response.ExecutionFailed, "the call was not admitted by the session gates ("+detail+")",
			map[string]any{"recovery_hint": "report this to the user", "auto_recoverable": false})
		verdict = &r
	}
	return verdict, side
}

// gateResult closes an allowed call in the gates.
func (c *Conversation) gateResult(id string, ok bool, output, errText, at string) []conversation.Effect {
	data, _ := json.Marshal(output)
	ev := Event{Type: EvToolResult, At: at, CallID: id, OK: &ok, Data: data}
	if !ok {
		ev.Error, _ = json.Marshal(errText)
	}
	_, effs := Transition(c.Gates, ev)
	out := make([]conversation.Effect, 0, len(effs))
	for _, g := range effs {
		out = append(out, gateEffect(g))
	}
	return out
}

// gateEffect carries a gate effect to the conversation side: a receipt as
// a receipt effect, anything else verbatim.
func gateEffect(g Effect) conversation.Effect {
	if g.Type == EfReceipt && g.Receipt != nil {
		b, _ := json.Marshal(g.Receipt)
		return conversation.Effect{Type: conversation.EfReceipt, CallID: g.CallID, Receipt: b}
	}
	b, _ := json.Marshal(g)
	return conversation.Effect{Type: conversation.EfGate, CallID: g.CallID, Gate: b}
}
