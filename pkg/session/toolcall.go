package session

import (
	"github.com/govkit/govkit/pkg/intent"
	"github.com/govkit/govkit/pkg/session/readguard"
	"github.com/govkit/govkit/pkg/session/resolved"
	"github.com/govkit/govkit/pkg/session/response"
	"github.com/govkit/govkit/pkg/session/workflow"
)

// call is a tool call that was allowed and whose result is awaited.
type call struct {
	id       string
	name     string
	kind     workflow.Kind
	args     map[string]any
	target   string
	read     readguard.Read
	meta     readguard.Meta // the read guard's verdict before the read
	warnings []string
	text     bool // the model asked for it in text (seed 002's envelope)
}

// toolCall applies a native tool_call event.
func (st *State) toolCall(ev *Event) {
	if ev.CallID == "" || ev.Name == "" {
		st.fail(ErrInvalidField, "tool_call needs call_id and name")
		return
	}
	if _, dup := st.pending[ev.CallID]; dup {
		st.fail(ErrDuplicateCall, "call_id "+ev.CallID+" is already awaiting its tool_result")
		return
	}
	st.turn.calls++
	if st.allowed != nil && !st.allowed[ev.Name] {
		st.block(ev.CallID, ev.Name, workflow.KindWrite, response.Blocked(response.ActionNotAllowed,
			"tool "+ev.Name+" is not in this session's allowed_tools",
			map[string]any{"tool": ev.Name, "recovery_hint": "use one of the session's allowed tools"}))
		return
	}
	st.govern(ev.CallID, ev.Name, ev.Args, false)
}

// govern runs every guard in order, as seed 000's loop does (§8: Gate 1,
// then the executor's strict resolution and routing validation), then seed
// 004's read hook; the first refusal is the answer. An allowed call is
// remembered until its result.
func (st *State) govern(id, name string, args map[string]any, fromText bool) {
	kind, _ := st.tools.Classify(name, args)
	if resp := st.commandKind(name, args, &kind); resp != nil {
		st.block(id, name, kind, *resp)
		return
	}
	if resp := st.fsm.CanExecuteTool(kind, name); resp != nil {
		st.metric(mToolBlock, "state", st.fsm.State.String(), "tool", name, "kind", kind.String())
		st.block(id, name, kind, *resp)
		return
	}
	c := &call{id: id, name: name, kind: kind, args: args, text: fromText}
	if target, ok := st.tools.Target(name, args); ok {
		c.target = target
		if resp := st.resolution(c); resp != nil {
			st.metric(mStrictBlock, "tool", name, "action", actionOf(args, kind))
			st.block(id, name, kind, *resp)
			return
		}
		if kind == workflow.KindRead || kind == workflow.KindWrite {
			if m := st.ctx.CheckRouting(target, st.now); m != nil {
				st.metric(mRoutingBlock, "tool", name, "target_kind", m.TargetKind, "child_kind", m.ChildKind)
				st.block(id, name, kind, m.Response())
				return
			}
		}
	}
	if kind == workflow.KindRead {
		c.read = readOf(name, args)
		meta, block := st.guard.CheckRead(c.read)
		if block != nil {
			for _, code := range meta.ReasonCodes {
				st.metric(mStabilization, "code", code)
			}
			st.block(id, name, kind, *block)
			return
		}
		c.meta = meta
	} else {
		st.agg.Break()
	}
	st.pending[id] = c
	e := Effect{Type: EfAllow, CallID: id, Kind: kind.String(), Warnings: c.warnings}
	if fromText {
		// The driver learns what to run only from the reducer: the model's
		// text is never parsed twice.
		e.Name, e.Args = name, args
	}
	st.emit(e)
}

// resolution is seed 000's strict resolution (§4, §6): a write needs its
// own target in the context; a read needs some resolved context at all.
// With strict resolution off an unknown target passes, but with a warning
// on the allow effect, never silently (seed 000 §4 Validation Flow).
func (st *State) resolution(c *call) *response.ToolResponse {
	if c.kind == workflow.KindResolve || c.kind == workflow.KindSearch {
		return nil
	}
	if _, ok := st.ctx.Lookup(c.target, st.now); ok {
		return nil
	}
	if c.kind == workflow.KindRead && st.ctx.HasAny(st.now) {
		return nil // scoped bypass: a read in a resolved session (seed 000 §6)
	}
	action := actionOf(c.args, c.kind)
	if !st.strict {
		c.warnings = append(c.warnings, "STRICT_RESOLUTION: "+c.target+" was not discovered in this session (strict resolution is off)")
		return nil
	}
	r := resolved.StrictResolution(c.target, action)
	return &r
}

// commandKind applies pkg/intent to a shell tool's command (seed 000
// pulse_read): a read tool refuses a command it cannot prove read-only and
// bounded; a write tool becomes a read only when the session opted in with
// classify_commands (otherwise the tool's kind alone decides: P-32).
func (st *State) commandKind(name string, args map[string]any, kind *workflow.Kind) *response.ToolResponse {
	t, ok := st.tools.Tool(name)
	if !ok || t.CommandArg == "" {
		return nil
	}
	cmd, ok := args[t.CommandArg].(string)
	if !ok || cmd == "" {
		return nil
	}
	if t.Kind != workflow.KindRead && !(st.classify && *kind == workflow.KindWrite) {
		return nil
	}
	r := intent.Classify(cmd)
	switch {
	case r.ReadOnly() && r.Bounded:
		if *kind == workflow.KindWrite {
			*kind = workflow.KindRead
		}
		return nil
	case *kind != workflow.KindRead:
		return nil
	case !r.ReadOnly():
		resp := response.Blocked(response.ActionNotAllowed,
			"read tool "+name+" runs only read-only commands; this one is "+string(r.Intent),
			map[string]any{"intent": string(r.Intent), "recovery_hint": "run it through a write tool, or run a read-only command"})
		return &resp
	default:
		hint := "bound the command (a line count, a time window)"
		if r.SuggestedRewrite != "" {
			hint = "run instead: " + r.SuggestedRewrite
		}
		resp := response.Blocked(response.InvalidInput, "command may never terminate ("+string(r.Interactive)+")",
			map[string]any{"interactive": string(r.Interactive), "suggested_rewrite": r.SuggestedRewrite,
				"auto_recoverable": r.SuggestedRewrite != "", "recovery_hint": hint})
		return &resp
	}
}

// block refuses a call: nothing runs, and the envelope says why and how to
// recover (seed 000 Invariant 3).
func (st *State) block(id, name string, kind workflow.Kind, resp response.ToolResponse) {
	if resp.Error != nil {
		switch resp.Error.Code {
		case response.FSMBlocked, response.StrictResolution, response.RoutingMismatch:
			st.trackRecovery(resp.Error.Code, name)
		}
	}
	st.emit(Effect{Type: EfBlock, CallID: id, Kind: kind.String(), Response: &resp})
}

// trackRecovery records a recoverable block so that a later success of the
// tool counts as an auto-recovery (seed 000 §7 Recovery Tracking).
func (st *State) trackRecovery(code, tool string) {
	st.fsm.TrackPendingRecovery(code, tool, st.now)
	st.metric(mRecoveryAttempt, "error_code", code, "tool", tool)
}

// actionOf is the action a call performs, for strict resolution's error and
// metric: its action argument, else its kind.
func actionOf(args map[string]any, kind workflow.Kind) string {
	if a, ok := args["action"].(string); ok && a != "" {
		return a
	}
	return kind.String()
}

// readOf extracts a read's target and ref (DESIGN §13: path, start_line,
// end_line, candidate_id, bundle_id).
func readOf(name string, args map[string]any) readguard.Read {
	r := readguard.Read{Tool: name}
	r.Path, _ = args["path"].(string)
	r.StartLine = intArg(args["start_line"])
	r.EndLine = intArg(args["end_line"])
	r.CandidateID, _ = args["candidate_id"].(string)
	r.BundleID, _ = args["bundle_id"].(string)
	return r
}

func intArg(v any) int {
	switch n := v.(type) {
	case float64:
		if n == float64(int(n)) {
			return int(n)
		}
	}
	return 0
}
