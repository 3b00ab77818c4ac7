package hook

import (
	"encoding/json"
	"errors"
)

// Claude Code and OpenAI Codex share one PreToolUse event shape.
//
// Claude Code (code.claude.com/docs/en/hooks, "PreToolUse"): stdin has
// session_id, transcript_path, cwd, permission_mode, hook_event_name,
// tool_name, tool_input (Bash and PowerShell: command, description, timeout,
// run_in_background), tool_use_id. The answer is
// {"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":
// "allow|deny|ask","permissionDecisionReason":"…"}}; the reason of a deny is
// shown to Claude, of an ask to the user. Exit 2 blocks (stderr is the
// reason) whatever stdout says; any other non-zero exit, a timeout or a
// missing script lets the call through — so every deny here is also exit 2
// with the reason on stderr.
type preToolUseEvent struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	Cwd           string          `json:"cwd"`
}

type preToolUseAnswer struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// decodePreToolUse reads the shared shape; shell names the shell tool.
func decodePreToolUse(raw []byte, shell string) (Event, error) {
	var e preToolUseEvent
	if err := decodeObject(raw, &e); err != nil {
		return Event{}, err
	}
	if e.HookEventName != "" && e.HookEventName != "PreToolUse" {
		return Event{}, errors.New("hook_event_name is " + e.HookEventName + ", not PreToolUse")
	}
	if e.ToolName == "" {
		return Event{}, errors.New("no tool_name")
	}
	ev := Event{Tool: e.ToolName, Cwd: e.Cwd}
	if e.ToolName != shell {
		return ev, nil
	}
	return shellEvent(ev, e.ToolInput)
}

func encodePreToolUse(d Decision) preToolUseAnswer {
	var a preToolUseAnswer
	a.HookSpecificOutput.HookEventName = "PreToolUse"
	a.HookSpecificOutput.PermissionDecision = string(d.Permission)
	a.HookSpecificOutput.PermissionDecisionReason = d.Reason
	return a
}

type claude struct{}

// Decode: the shell tool is Bash. PowerShell commands are not bash, so they
// are judged as an unknown tool (a write).
func (claude) Decode(raw []byte) (Event, error) { return decodePreToolUse(raw, "Bash") }

func (claude) Encode(d Decision) Answer {
	d = settle(d, true)
	ans := Answer{Stdout: encodeJSON(encodePreToolUse(d))}
	if !d.Allowed() && d.Permission != Ask {
		ans.Exit, ans.Stderr = 2, d.Reason
	}
	return ans
}

// OpenAI Codex (developers.openai.com/codex/hooks, "PreToolUse"; source
// openai/codex codex-rs/hooks/src/events/pre_tool_use.rs): the same event
// plus model and turn_id; the shell tool reaches hooks as Bash with
// tool_input.command, patches as apply_patch. A bare permissionDecision
// "allow" is reported as a hook failure and the call continues, and "ask"
// is not supported (also fail-open), so: allow is silence (exit 0, no
// output), ask becomes deny with a reason, and deny is the JSON deny plus
// exit 2 with a non-empty stderr (exit 2 with empty stderr does not block).
type codex struct{}

func (codex) Decode(raw []byte) (Event, error) { return decodePreToolUse(raw, "Bash") }

func (codex) Encode(d Decision) Answer {
	d = settle(d, false)
	if d.Allowed() {
		return Answer{}
	}
	return Answer{Stdout: encodeJSON(encodePreToolUse(d)), Stderr: d.Reason, Exit: 2}
}
