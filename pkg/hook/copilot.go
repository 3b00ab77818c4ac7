package hook

import (
	"encoding/json"
	"errors"
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

type copilotEvent struct {
	ToolName  string          `json:"toolName"`
	ToolArgs  json.RawMessage `json:"toolArgs"`
	ToolName2 string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	Cwd       string          `json:"cwd"`
}

func (copilot) Decode(raw []byte) (Event, error) {
	var e copilotEvent
	if err := decodeObject(raw, &e); err != nil {
		return Event{}, err
	}
	tool, args := e.ToolName, e.ToolArgs
	if tool == "" {
		tool, args = e.ToolName2, e.ToolInput
	}
	if tool == "" {
		return Event{}, errors.New("no toolName")
	}
	ev := Event{Tool: tool, Cwd: e.Cwd}
	if tool != "bash" {
		return ev, nil
	}
	return shellEvent(ev, args)
}

func (copilot) Encode(d Decision) Answer {
	d = settle(d, true)
	return Answer{Stdout: encodeJSON(struct {
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	}{string(d.Permission), d.Reason})}
}
