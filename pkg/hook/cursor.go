package hook

import (
	"cmp"
	"encoding/json"
	"errors"
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
)

// Cursor (cursor.com/docs/hooks): beforeShellExecution has command, cwd and
// sandbox besides the common conversation_id, generation_id, model,
// hook_event_name, cursor_version, workspace_roots; beforeMCPExecution has
// tool_name and tool_input (a JSON string); beforeReadFile has file_path;
// preToolUse has tool_name ("Shell", "Read", "Write", …) and tool_input.
// The answer is {"permission":"allow|deny|ask","user_message":"…",
// "agent_message":"…"}; beforeReadFile has no ask, and preToolUse does not
// enforce ask. Exit 2 blocks like deny; other exit codes fail open unless
// the hook is registered with "failClosed": true (install does that).
type cursor struct{}

// The other events (same page; every event has conversation_id,
// generation_id, model, hook_event_name, cursor_version, workspace_roots,
// user_email, transcript_path):
//
//	postToolUse: tool_name, tool_input, tool_output (a JSON string),
//	  tool_use_id, cwd, duration; the answer may add additional_context.
//	  postToolUseFailure: the same with error_message, failure_type
//	  (error, timeout, permission_denied) and is_interrupt; neither can
//	  undo the call.
//	afterShellExecution (command, output, duration), afterMCPExecution
//	  (tool_name, tool_input, result_json) and afterFileEdit (file_path,
//	  edits) report what ran; they are observation only.
//	stop: status (completed, aborted, error) and loop_count; the answer
//	  may give followup_message, which Cursor submits as the next user
//	  message (at most loop_limit times, 5 by default).
//	sessionStart: session_id; the answer may add additional_context.
//	  sessionEnd: session_id, reason (completed, aborted, error,
//	  window_close, user_close); fire and forget.
//	beforeSubmitPrompt: prompt, attachments; the answer is
//	  {"continue":true|false,"user_message"}.
//
// afterAgentResponse, afterAgentThought, preCompact, subagentStart and the
// Tab hooks are not governed: Decode refuses them.
type cursorEvent struct {
	HookEventName  string          `json:"hook_event_name"`
	ConversationID string          `json:"conversation_id"`
	SessionID      string          `json:"session_id"`
	TranscriptPath *string         `json:"transcript_path"`
	WorkspaceRoots []string        `json:"workspace_roots"`
	Command        *string         `json:"command"`
	Cwd            string          `json:"cwd"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	ToolOutput     json.RawMessage `json:"tool_output"`
	Output         json.RawMessage `json:"output"`
	ResultJSON     json.RawMessage `json:"result_json"`
	ErrorMessage   string          `json:"error_message"`
	FilePath       string          `json:"file_path"`
	Edits          json.RawMessage `json:"edits"`
	Status         string          `json:"status"`
	LoopCount      int             `json:"loop_count"`
	Reason         string          `json:"reason"`
	Prompt         string          `json:"prompt"`
}

func (cursor) Decode(raw []byte) (Event, error) {
	var e cursorEvent
	if err := decodeObject(raw, &e); err != nil {
		return Event{}, err
	}
	switch e.HookEventName {
	case "beforeShellExecution":
		if e.Command == nil {
			return Event{}, errors.New("beforeShellExecution without command")
		}
		return e.base(PreTool, Event{Tool: "Shell", Shell: true, Command: *e.Command, Cwd: e.Cwd})
	case "beforeMCPExecution":
		return e.base(PreTool, Event{Tool: "mcp:" + e.ToolName, Cwd: e.Cwd})
	case "beforeReadFile":
		return e.base(PreTool, Event{Tool: "Read", Cwd: e.Cwd, NoAsk: true})
	case "preToolUse", "postToolUse", "postToolUseFailure":
		kind := PreTool
		if e.HookEventName != "preToolUse" {
			kind = PostTool
		}
		if e.ToolName == "" {
			return Event{}, errors.New(e.HookEventName + " without tool_name")
		}
		ev := Event{Tool: e.ToolName, Cwd: e.Cwd, NoAsk: kind == PreTool}
		if kind == PostTool {
			ev.Output = e.ToolOutput
			if e.HookEventName == "postToolUseFailure" {
				ev.Failed, ev.ErrorText = true, e.ErrorMessage
			}
		}
		ev, err := e.base(kind, ev)
		if err != nil {
			return Event{}, err
		}
		return withShell(ev, "Shell")
	case "afterShellExecution":
		if e.Command == nil {
			return Event{}, errors.New("afterShellExecution without command")
		}
		return e.base(PostTool, Event{Tool: "Shell", Shell: true, Command: *e.Command, Cwd: e.Cwd, Output: e.Output})
	case "afterMCPExecution":
		return e.base(PostTool, Event{Tool: "mcp:" + e.ToolName, Cwd: e.Cwd, Output: e.ResultJSON})
	case "afterFileEdit":
		if e.FilePath == "" {
			return Event{}, errors.New("afterFileEdit without file_path")
		}
		input := map[string]any{"file_path": e.FilePath}
		if present(e.Edits) {
			input["edits"] = e.Edits
		}
		b, err := json.Marshal(input)
		if err != nil {
			return Event{}, err
		}
		ev, err := e.base(PostTool, Event{Tool: "Write"})
		ev.Input = b
		return ev, err
	case "stop":
		return e.base(Stop, Event{Source: e.Status, StopActive: e.LoopCount > 0})
	case "sessionStart":
		return e.base(SessionStart, Event{Source: "startup"})
	case "sessionEnd":
		return e.base(SessionEnd, Event{Source: e.Reason})
	case "beforeSubmitPrompt":
		return e.base(Prompt, Event{Prompt: e.Prompt})
	}
	return Event{}, errors.New("unsupported hook_event_name " + termtext.Quote(e.HookEventName, 60))
}

// base completes ev with what every Cursor event carries: the session (the
// conversation), the transcript, the tool input and call id, and — for
// events other than a pre-tool call, whose cwd classify hook reads as
// given — the first workspace root as the directory when no cwd is given.
func (e cursorEvent) base(kind EventKind, ev Event) (Event, error) {
	ev.Kind = kind
	ev.SessionID = cmp.Or(e.ConversationID, e.SessionID)
	ev.CallID = e.ToolUseID
	if e.TranscriptPath != nil {
		ev.Transcript = *e.TranscriptPath
	}
	if kind != PreTool && ev.Cwd == "" && len(e.WorkspaceRoots) > 0 {
		ev.Cwd = e.WorkspaceRoots[0]
	}
	if ev.Input == nil {
		input, err := objectInput(e.ToolInput)
		if err != nil {
			return Event{}, err
		}
		ev.Input = input
	}
	return ev, nil
}

func (cursor) Encode(d Decision) Answer {
	// Events that do not enforce ask are marked NoAsk when decoded, and
	// Respond turns their asks into denies before they get here.
	d = settle(d, true)
	ans := Answer{Stdout: encodeJSON(struct {
		Permission   string `json:"permission"`
		UserMessage  string `json:"user_message"`
		AgentMessage string `json:"agent_message"`
	}{string(d.Permission), d.Reason, d.Reason})}
	if d.Permission == Deny {
		ans.Exit, ans.Stderr = 2, d.Reason
	}
	return ans
}

// Answers to the other events. Cursor cannot block after a tool ran, and
// the stop hook cannot refuse a stop: a refusal is a followup_message,
// which makes the agent go on. A post-tool refusal becomes
// additional_context, the only way to reach the model there. Every answer
// exits 0: for these events the meaning of exit 2 is not documented.
func (c cursor) Answer(k EventKind, d Decision) Answer {
	switch k {
	case PreTool:
		return c.Encode(d)
	case PostTool:
		ctx := d.Context
		if !d.Allowed() {
			ctx = strings.TrimSpace(denyReason(d) + "\n\n" + d.Context)
		}
		return cursorContext(ctx)
	case Stop:
		if !d.Allowed() {
			return Answer{Stdout: encodeJSON(struct {
				FollowupMessage string `json:"followup_message"`
			}{denyReason(d)})}
		}
		return Answer{Stdout: []byte("{}\n")}
	case SessionStart:
		return cursorContext(neutralContext(d))
	case Prompt:
		return Answer{Stdout: []byte(`{"continue":true}` + "\n")}
	case SessionEnd:
		return Answer{Stdout: []byte("{}\n")}
	}
	return c.Encode(Failure("an event of unknown kind " + k.String()))
}

func cursorContext(ctx string) Answer {
	if ctx == "" {
		return Answer{Stdout: []byte("{}\n")}
	}
	return Answer{Stdout: encodeJSON(struct {
		AdditionalContext string `json:"additional_context"`
	}{ctx})}
}
