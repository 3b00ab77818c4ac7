package hook

import (
	"encoding/json"
	"errors"
	"path/filepath"
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

type geminiEvent struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	Cwd           string          `json:"cwd"`
	MCPContext    json.RawMessage `json:"mcp_context"`
}

func (gemini) Decode(raw []byte) (Event, error) {
	var e geminiEvent
	if err := decodeObject(raw, &e); err != nil {
		return Event{}, err
	}
	if e.HookEventName != "" && e.HookEventName != "BeforeTool" {
		return Event{}, errors.New("hook_event_name is " + e.HookEventName + ", not BeforeTool")
	}
	if e.ToolName == "" {
		return Event{}, errors.New("no tool_name")
	}
	ev := Event{Tool: e.ToolName, Cwd: e.Cwd}
	if len(e.MCPContext) > 0 && string(e.MCPContext) != "null" {
		ev.Tool = "mcp:" + e.ToolName // an MCP tool, whatever its name says
		return ev, nil
	}
	if e.ToolName != "run_shell_command" {
		return ev, nil
	}
	ev, err := shellEvent(ev, e.ToolInput)
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
