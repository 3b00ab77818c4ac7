package hook

import (
	"encoding/json"
	"errors"
	"path/filepath"

	"github.com/govkit/govkit/pkg/termtext"
)

// Gemini CLI (google-gemini/gemini-cli docs/hooks/reference.md,
// "BeforeTool"): stdin has session_id, transcript_path, cwd,
// hook_event_name, timestamp, tool_name, tool_input, and mcp_context for MCP
// tools. The shell tool is run_shell_command {command, description,
// dir_path, is_background}. The answer is {} to allow or
// {"decision":"deny","reason":"…"} (the reason goes to the agent); exit 2
// also blocks with stderr as the reason, other exit codes fail open. Newer
// versions accept {"decision":"ask"} (PR #21146), but the reference does not
// document it and an older CLI would not enforce it, so ask becomes deny.
type gemini struct{}

// The other events (same reference): every event has session_id,
// transcript_path, cwd, hook_event_name and timestamp.
//
//	AfterTool: tool_name, tool_input, tool_response ({llmContent,
//	  returnDisplay, error?}: a failed tool has an error), mcp_context.
//	  {"decision":"deny","reason"} or exit 2 hides the tool's result and
//	  sends the reason in its place; hookSpecificOutput.additionalContext
//	  is appended to the result.
//	AfterAgent: prompt, prompt_response (the final text), stop_hook_active.
//	  {"decision":"deny","reason"} or exit 2 rejects the response and
//	  retries the turn with the reason as the prompt.
//	BeforeAgent: prompt; additionalContext is appended to it.
//	SessionStart: source (startup, resume, clear); additionalContext, and
//	  it never blocks. SessionEnd: reason (exit, clear, logout,
//	  prompt_input_exit, other); the CLI does not wait for it.
//
// BeforeModel, AfterModel, BeforeToolSelection, Notification and
// PreCompress are not governed: Decode refuses them.
type geminiEvent struct {
	HookEventName  string          `json:"hook_event_name"`
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolResponse   json.RawMessage `json:"tool_response"`
	Cwd            string          `json:"cwd"`
	MCPContext     json.RawMessage `json:"mcp_context"`
	Prompt         string          `json:"prompt"`
	PromptResponse *string         `json:"prompt_response"`
	StopHookActive bool            `json:"stop_hook_active"`
	Source         string          `json:"source"`
	Reason         string          `json:"reason"`
}

var geminiEvents = map[string]EventKind{
	"BeforeTool": PreTool, "AfterTool": PostTool, "AfterAgent": Stop, "BeforeAgent": Prompt,
	"SessionStart": SessionStart, "SessionEnd": SessionEnd,
}

func (gemini) Decode(raw []byte) (Event, error) {
	var e geminiEvent
	if err := decodeObject(raw, &e); err != nil {
		return Event{}, err
	}
	kind := PreTool // a missing hook_event_name is BeforeTool, as classify hook reads it
	if e.HookEventName != "" {
		k, ok := geminiEvents[e.HookEventName]
		if !ok {
			return Event{}, errors.New("hook_event_name " + termtext.Quote(e.HookEventName, 60) + " is not an event govkit answers")
		}
		kind = k
	}
	ev := Event{Kind: kind, Cwd: e.Cwd, SessionID: e.SessionID, Transcript: e.TranscriptPath}
	switch kind {
	case Stop:
		ev.StopActive, ev.Prompt = e.StopHookActive, e.Prompt
		if e.PromptResponse != nil {
			ev.LastMessage = *e.PromptResponse
		}
		return ev, nil
	case Prompt:
		ev.Prompt = e.Prompt
		return ev, nil
	case SessionStart:
		ev.Source = e.Source
		return ev, nil
	case SessionEnd:
		ev.Source = e.Reason
		return ev, nil
	}
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
		var resp struct {
			Error json.RawMessage `json:"error"`
		}
		if present(e.ToolResponse) && json.Unmarshal(e.ToolResponse, &resp) == nil && present(resp.Error) {
			ev.Failed, ev.ErrorText = true, textOf(resp.Error)
		}
	}
	if len(e.MCPContext) > 0 && string(e.MCPContext) != "null" {
		ev.Tool = "mcp:" + e.ToolName // an MCP tool, whatever its name says
		return ev, nil
	}
	if e.ToolName != "run_shell_command" {
		return ev, nil
	}
	ev, err = shellEvent(ev, e.ToolInput)
	if err != nil {
		return Event{}, err
	}
	if dir, ok, _ := stringField(e.ToolInput, "dir_path"); ok && dir != "" {
		if filepath.IsAbs(dir) || ev.Cwd == "" {
			ev.Cwd = dir
		} else {
			ev.Cwd = filepath.Join(ev.Cwd, dir)
		}
	}
	return ev, nil
}

func (gemini) Encode(d Decision) Answer {
	d = settle(d, false)
	if d.Allowed() {
		return Answer{Stdout: []byte("{}\n")}
	}
	return Answer{
		Stdout: encodeJSON(struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}{"deny", d.Reason}),
		Stderr: d.Reason,
		Exit:   2,
	}
}

type geminiContext struct {
	HookSpecificOutput struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

func geminiWithContext(event, context string) Answer {
	if context == "" {
		return Answer{Stdout: []byte("{}\n")}
	}
	var a geminiContext
	a.HookSpecificOutput.HookEventName = event
	a.HookSpecificOutput.AdditionalContext = context
	return Answer{Stdout: encodeJSON(a)}
}

// geminiDeny is the deny form of AfterTool and AfterAgent: the JSON deny
// and exit 2 with the reason on stderr, as for BeforeTool.
func geminiDeny(d Decision) Answer {
	r := denyReason(d)
	return Answer{
		Stdout: encodeJSON(struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}{"deny", r}),
		Stderr: r,
		Exit:   2,
	}
}

func (g gemini) Answer(k EventKind, d Decision) Answer {
	switch k {
	case PreTool:
		return g.Encode(d)
	case PostTool:
		if !d.Allowed() {
			return geminiDeny(d)
		}
		return geminiWithContext("AfterTool", d.Context)
	case Stop:
		if !d.Allowed() {
			return geminiDeny(d)
		}
		return Answer{Stdout: []byte("{}\n")}
	case Prompt:
		return geminiWithContext("BeforeAgent", neutralContext(d))
	case SessionStart:
		return geminiWithContext("SessionStart", neutralContext(d))
	case SessionEnd:
		return Answer{Stdout: []byte("{}\n")}
	}
	return g.Encode(Failure("an event of unknown kind " + k.String()))
}
