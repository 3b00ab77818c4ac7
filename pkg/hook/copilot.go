package hook

import (
	"cmp"
	"encoding/json"
	"errors"
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
)

// GitHub Copilot CLI and coding agent (github/docs content/copilot/
// reference/hooks-reference.md, "preToolUse"): registered in
// .github/hooks/*.json. With the camelCase event name the input is
// {sessionId, timestamp, cwd, toolName, toolArgs} where toolArgs may be an
// object or a JSON string (older docs); with PascalCase PreToolUse it is
// {hook_event_name, session_id, cwd, tool_name, tool_input}. The shell tool
// is bash {command, description} (powershell on Windows is not bash and is
// judged as an unknown tool). The answer is {"permissionDecision":
// "allow|deny|ask","permissionDecisionReason":"…"}; the cloud agent treats
// ask as deny. Exit 2 is NOT a block for preToolUse (only a warning), and
// other failures are skipped: a deny must be printed, with exit 0.
type copilot struct{}

// The other events (same reference). A camelCase registration gets
// camelCase fields and NO event name, so Decode tells the events apart by
// their fields; a PascalCase (VS Code compatible) registration gets
// hook_event_name and snake_case fields. Every event has sessionId
// (session_id), timestamp and cwd.
//
//	postToolUse: toolName, toolArgs, toolResult {resultType,
//	  textResultForLlm}; the answer may add additionalContext (appended to
//	  the result) or replace the result. postToolUseFailure: toolName,
//	  toolArgs, error (a string); additionalContext gives recovery advice.
//	agentStop (Stop): transcriptPath, stopReason "end_turn",
//	  stop_hook_active; {"decision":"block","reason"} forces another turn
//	  with the reason as the prompt. subagentStop adds agentId, agentName
//	  and response (the sub-agent's final text).
//	sessionStart: source (startup, resume, new), initialPrompt.
//	  sessionEnd: reason (complete, error, abort, timeout, user_exit).
//	userPromptSubmitted: prompt; a command hook's output is dropped.
//
// Exit codes other than 0 are warnings for these events (the run goes
// on), so every answer is JSON with exit 0. errorOccurred, notification,
// preCompact and subagentStart are not governed: Decode refuses them.
type copilotEvent struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"toolName"`
	ToolArgs      json.RawMessage `json:"toolArgs"`
	ToolName2     string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	Cwd           string          `json:"cwd"`

	SessionID       string          `json:"sessionId"`
	SessionID2      string          `json:"session_id"`
	ToolResult      json.RawMessage `json:"toolResult"`
	ToolResult2     json.RawMessage `json:"tool_result"`
	Error           json.RawMessage `json:"error"`
	StopReason      *string         `json:"stopReason"`
	StopReason2     *string         `json:"stop_reason"`
	StopHookActive  bool            `json:"stop_hook_active"`
	TranscriptPath  string          `json:"transcriptPath"`
	TranscriptPath2 string          `json:"transcript_path"`
	AgentID         string          `json:"agentId"`
	AgentID2        string          `json:"agent_id"`
	Response        *string         `json:"response"`
	LastMessage     *string         `json:"last_assistant_message"`
	Source          *string         `json:"source"`
	Reason          *string         `json:"reason"`
	Prompt          *string         `json:"prompt"`
	ErrorContext    json.RawMessage `json:"errorContext"`
	NotificationTyp json.RawMessage `json:"notification_type"`
}

var copilotEvents = map[string]EventKind{
	"PreToolUse": PreTool, "PostToolUse": PostTool, "PostToolUseFailure": PostTool, "Stop": Stop,
	"SubagentStop": Stop, "SessionStart": SessionStart, "SessionEnd": SessionEnd, "UserPromptSubmit": Prompt,
}

// kind tells which event e is: by hook_event_name when there is one, else
// by the fields only that event has. Anything unrecognised is read as a
// pre-tool call, as classify hook always has, and fails there without a
// toolName.
func (e copilotEvent) kind() (EventKind, error) {
	if e.HookEventName != "" {
		k, ok := copilotEvents[e.HookEventName]
		if !ok {
			return 0, errors.New("hook_event_name " + termtext.Quote(e.HookEventName, 60) + " is not an event govkit answers")
		}
		return k, nil
	}
	tool := e.ToolName != "" || e.ToolName2 != ""
	switch {
	case tool && (present(e.ToolResult) || present(e.ToolResult2) || present(e.Error)):
		return PostTool, nil
	case tool:
		return PreTool, nil
	case present(e.ErrorContext) || present(e.NotificationTyp):
		return 0, errors.New("an errorOccurred or notification event, which govkit does not answer")
	case e.StopReason != nil || e.StopReason2 != nil:
		return Stop, nil
	case e.Source != nil:
		return SessionStart, nil
	case e.Reason != nil:
		return SessionEnd, nil
	case e.Prompt != nil:
		return Prompt, nil
	}
	return PreTool, nil
}

func (copilot) Decode(raw []byte) (Event, error) {
	var e copilotEvent
	if err := decodeObject(raw, &e); err != nil {
		return Event{}, err
	}
	kind, err := e.kind()
	if err != nil {
		return Event{}, err
	}
	ev := Event{Kind: kind, Cwd: e.Cwd, SessionID: cmp.Or(e.SessionID, e.SessionID2),
		Transcript: cmp.Or(e.TranscriptPath, e.TranscriptPath2)}
	switch kind {
	case Stop:
		ev.StopActive = e.StopHookActive
		ev.Subagent = cmp.Or(e.AgentID, e.AgentID2)
		if m := cmp.Or(e.Response, e.LastMessage); m != nil {
			ev.LastMessage = *m
		}
		return ev, nil
	case SessionStart:
		ev.Source = deref(e.Source)
		return ev, nil
	case SessionEnd:
		ev.Source = deref(e.Reason)
		return ev, nil
	case Prompt:
		ev.Prompt = deref(e.Prompt)
		return ev, nil
	}
	tool, args := e.ToolName, e.ToolArgs
	if tool == "" {
		tool, args = e.ToolName2, e.ToolInput
	}
	if tool == "" {
		return Event{}, errors.New("no toolName")
	}
	ev.Tool = tool
	if ev.Input, err = objectInput(args); err != nil {
		return Event{}, err
	}
	if kind == PostTool {
		ev.Output = e.ToolResult
		if !present(ev.Output) {
			ev.Output = e.ToolResult2
		}
		var r struct {
			ResultType  string `json:"resultType"`
			ResultType2 string `json:"result_type"`
		}
		failed := present(e.Error) || e.HookEventName == "PostToolUseFailure"
		if present(ev.Output) && json.Unmarshal(ev.Output, &r) == nil && cmp.Or(r.ResultType, r.ResultType2) == "failure" {
			failed = true
		}
		if failed {
			ev.Failed, ev.ErrorText = true, textOf(e.Error)
		}
	}
	return withShell(ev, "bash")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (copilot) Encode(d Decision) Answer {
	d = settle(d, true)
	return Answer{Stdout: encodeJSON(struct {
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	}{string(d.Permission), d.Reason})}
}

// Answer: PostTool cannot undo the call, so a refusal reaches the model as
// additionalContext after the result; Stop refuses with decision block.
func (c copilot) Answer(k EventKind, d Decision) Answer {
	switch k {
	case PreTool:
		return c.Encode(d)
	case PostTool:
		ctx := d.Context
		if !d.Allowed() {
			ctx = strings.TrimSpace(denyReason(d) + "\n\n" + d.Context)
		}
		return copilotContext(ctx)
	case Stop:
		if !d.Allowed() {
			return Answer{Stdout: encodeJSON(blockAnswer{"block", denyReason(d)})}
		}
		return Answer{Stdout: []byte("{}\n")}
	case SessionStart:
		return copilotContext(neutralContext(d))
	case SessionEnd, Prompt:
		return Answer{Stdout: []byte("{}\n")}
	}
	return c.Encode(Failure("an event of unknown kind " + k.String()))
}

func copilotContext(ctx string) Answer {
	if ctx == "" {
		return Answer{Stdout: []byte("{}\n")}
	}
	return Answer{Stdout: encodeJSON(struct {
		AdditionalContext string `json:"additionalContext"`
	}{ctx})}
}
