package hook

import (
	"cmp"
	"encoding/json"
	"errors"

	"github.com/govkit/govkit/pkg/termtext"
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
type preToolUseAnswer struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// The other events of the shared shape (code.claude.com/docs/en/hooks,
// "Hook events"; Codex: developers.openai.com/codex/hooks and openai/codex
// codex-rs/hooks/src/schema.rs). Every event has session_id,
// transcript_path (null in Codex when there is none), cwd and
// hook_event_name; in a sub-agent, agent_id and agent_type.
//
//	PostToolUse: tool_name, tool_input, tool_response, tool_use_id.
//	PostToolUseFailure (Claude only): the same with error (a string) and
//	  is_interrupt instead of tool_response.
//	Stop: stop_hook_active (true when the agent already goes on because a
//	  stop hook blocked) and last_assistant_message (the final text).
//	SubagentStop: Stop's fields plus agent_id, agent_type,
//	  agent_transcript_path.
//	SessionStart: source (startup, resume, clear, compact; Codex startup,
//	  resume, clear). SessionEnd (Claude only): reason (clear, resume,
//	  logout, prompt_input_exit, bypass_permissions_disabled, other).
//	UserPromptSubmit: prompt.
//
// Claude also sends Notification, PreCompact, PermissionRequest,
// StopFailure and others that gate hook does not govern: Decode refuses
// them.
type claudeEvent struct {
	HookEventName        string          `json:"hook_event_name"`
	SessionID            string          `json:"session_id"`
	TranscriptPath       *string         `json:"transcript_path"`
	Cwd                  string          `json:"cwd"`
	ToolName             string          `json:"tool_name"`
	ToolInput            json.RawMessage `json:"tool_input"`
	ToolResponse         json.RawMessage `json:"tool_response"`
	ToolUseID            string          `json:"tool_use_id"`
	Error                json.RawMessage `json:"error"`
	Source               string          `json:"source"`
	Reason               string          `json:"reason"`
	Prompt               string          `json:"prompt"`
	StopHookActive       bool            `json:"stop_hook_active"`
	LastAssistantMessage *string         `json:"last_assistant_message"`
	AgentID              string          `json:"agent_id"`
	AgentType            string          `json:"agent_type"`
}

var (
	claudeEvents = map[string]EventKind{
		"PreToolUse": PreTool, "PostToolUse": PostTool, "PostToolUseFailure": PostTool,
		"Stop": Stop, "SubagentStop": Stop, "SessionStart": SessionStart, "SessionEnd": SessionEnd,
		"UserPromptSubmit": Prompt,
	}
	// Codex has no PostToolUseFailure (a failed call's tool_response says
	// so) and no SessionEnd.
	codexEvents = map[string]EventKind{
		"PreToolUse": PreTool, "PostToolUse": PostTool, "Stop": Stop, "SubagentStop": Stop,
		"SessionStart": SessionStart, "UserPromptSubmit": Prompt,
	}
)

// decodeClaudeShape reads the shared shape; shell names the shell tool and
// events the hook_event_names the agent has. A missing hook_event_name is
// PreToolUse, as classify hook has always read it.
func decodeClaudeShape(raw []byte, shell string, events map[string]EventKind) (Event, error) {
	var e claudeEvent
	if err := decodeObject(raw, &e); err != nil {
		return Event{}, err
	}
	kind := PreTool
	if e.HookEventName != "" {
		k, ok := events[e.HookEventName]
		if !ok {
			return Event{}, errors.New("hook_event_name " + termtext.Quote(e.HookEventName, 60) + " is not an event govkit answers")
		}
		kind = k
	}
	ev := Event{Kind: kind, Cwd: e.Cwd, SessionID: e.SessionID, CallID: e.ToolUseID}
	if e.TranscriptPath != nil {
		ev.Transcript = *e.TranscriptPath
	}
	if e.AgentID != "" || e.AgentType != "" {
		ev.Subagent = cmp.Or(e.AgentID, e.AgentType)
	}
	switch kind {
	case PreTool, PostTool:
		if e.ToolName == "" {
			return Event{}, errors.New("no tool_name")
		}
		ev.Tool = e.ToolName
		input, err := objectInput(e.ToolInput)
		if err != nil {
			return Event{}, err
		}
		ev.Input = input
		if kind == PostTool {
			ev.Output = e.ToolResponse
			if e.HookEventName == "PostToolUseFailure" {
				ev.Failed, ev.ErrorText = true, textOf(e.Error)
			}
		}
		return withShell(ev, shell)
	case Stop:
		ev.StopActive = e.StopHookActive
		if e.LastAssistantMessage != nil {
			ev.LastMessage = *e.LastAssistantMessage
		}
		if e.HookEventName == "SubagentStop" && ev.Subagent == "" {
			ev.Subagent = "subagent"
		}
	case SessionStart:
		ev.Source = e.Source
	case SessionEnd:
		ev.Source = e.Reason
	case Prompt:
		ev.Prompt = e.Prompt
	}
	return ev, nil
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
func (claude) Decode(raw []byte) (Event, error) {
	return decodeClaudeShape(raw, "Bash", claudeEvents)
}

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

func (codex) Decode(raw []byte) (Event, error) {
	return decodeClaudeShape(raw, "Bash", codexEvents)
}

func (codex) Encode(d Decision) Answer {
	d = settle(d, false)
	if d.Allowed() {
		return Answer{}
	}
	return Answer{Stdout: encodeJSON(encodePreToolUse(d)), Stderr: d.Reason, Exit: 2}
}

// Answers to the other events (sources above). A block is
// {"decision":"block","reason":…}: for PostToolUse the reason goes to the
// model (the tool already ran), for Stop and SubagentStop the agent goes on
// with it. Like a PreToolUse deny, every block is also exit 2 with the
// reason on stderr, which both agents read as the same block (Codex only
// with a non-empty stderr); a missing or failed hook would let the agent
// stop. Added context is hookSpecificOutput.additionalContext under the
// event's own name (Codex refuses unknown fields, so nothing else is
// sent). SessionEnd has no decision control: nothing to say.
type blockAnswer struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

type contextAnswer struct {
	HookSpecificOutput struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

func withContext(event, context string) Answer {
	if context == "" {
		return Answer{}
	}
	var a contextAnswer
	a.HookSpecificOutput.HookEventName = event
	a.HookSpecificOutput.AdditionalContext = context
	return Answer{Stdout: encodeJSON(a)}
}

func claudeBlock(d Decision) Answer {
	r := denyReason(d)
	return Answer{Stdout: encodeJSON(blockAnswer{"block", r}), Stderr: r, Exit: 2}
}

// answerClaudeShape answers an event of kind k; postEvent names the
// post-tool event the answer is for (PostToolUse or PostToolUseFailure).
func answerClaudeShape(dl Dialect, k EventKind, d Decision, postEvent string) Answer {
	switch k {
	case PreTool:
		return dl.Encode(d)
	case PostTool:
		if !d.Allowed() {
			return claudeBlock(d)
		}
		return withContext(postEvent, d.Context)
	case Stop:
		if !d.Allowed() {
			return claudeBlock(d)
		}
		return Answer{}
	case SessionStart:
		return withContext("SessionStart", neutralContext(d))
	case Prompt:
		return withContext("UserPromptSubmit", neutralContext(d))
	case SessionEnd:
		return Answer{}
	}
	return dl.Encode(Failure("an event of unknown kind " + k.String()))
}

func (c claude) Answer(k EventKind, d Decision) Answer {
	return answerClaudeShape(c, k, d, "PostToolUse")
}

// answerEvent: a failed tool's context must name PostToolUseFailure, the
// event it answers.
func (c claude) answerEvent(ev Event, d Decision) Answer {
	post := "PostToolUse"
	if ev.Failed {
		post = "PostToolUseFailure"
	}
	return answerClaudeShape(c, ev.Kind, d, post)
}

func (c codex) Answer(k EventKind, d Decision) Answer {
	return answerClaudeShape(c, k, d, "PostToolUse")
}
