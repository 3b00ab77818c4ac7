package hook

import (
	"encoding/json"
	"errors"
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

type cursorEvent struct {
	HookEventName string          `json:"hook_event_name"`
	Command       *string         `json:"command"`
	Cwd           string          `json:"cwd"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	FilePath      string          `json:"file_path"`
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
		return Event{Tool: "Shell", Shell: true, Command: *e.Command, Cwd: e.Cwd}, nil
	case "beforeMCPExecution":
		return Event{Tool: "mcp:" + e.ToolName, Cwd: e.Cwd}, nil
	case "beforeReadFile":
		return Event{Tool: "Read", Cwd: e.Cwd, NoAsk: true}, nil
	case "preToolUse":
		if e.ToolName == "" {
			return Event{}, errors.New("preToolUse without tool_name")
		}
		if e.ToolName != "Shell" {
			return Event{Tool: e.ToolName, Cwd: e.Cwd, NoAsk: true}, nil
		}
		return shellEvent(Event{Tool: "Shell", Cwd: e.Cwd, NoAsk: true}, e.ToolInput)
	}
	return Event{}, errors.New("unsupported hook_event_name " + quoteShort(e.HookEventName))
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

func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}
