package hook

import (
	"encoding/json"
	"errors"
)

// Cline (cline/cline proto/cline/hooks.proto, docs/features/hooks/
// hook-reference.mdx, "PreToolUse"): an executable named PreToolUse in
// .clinerules/hooks/ or ~/Documents/Cline/Hooks/ gets {clineVersion,
// hookName, timestamp, taskId, workspaceRoots, userId, preToolUse:
// {toolName, parameters}} where every parameter is a string; the shell tool
// is execute_command {command}. The answer is {"cancel":false} or
// {"cancel":true,"errorMessage":"…"} (shown to the user; the task stops),
// with contextModification reaching the model's next request. There is no
// ask. A non-zero exit, a timeout or bad JSON only marks the hook failed and
// the task continues — so this dialect always exits 0 and blocks with JSON.
type cline struct{}

type clineEvent struct {
	HookName       string   `json:"hookName"`
	WorkspaceRoots []string `json:"workspaceRoots"`
	WorkspacePath  string   `json:"workspacePath"` // older docs
	PreToolUse     *struct {
		ToolName   string          `json:"toolName"`
		Tool       string          `json:"tool"` // older docs
		Parameters json.RawMessage `json:"parameters"`
	} `json:"preToolUse"`
}

func (cline) Decode(raw []byte) (Event, error) {
	var e clineEvent
	if err := decodeObject(raw, &e); err != nil {
		return Event{}, err
	}
	if e.HookName != "" && e.HookName != "PreToolUse" {
		return Event{}, errors.New("hookName is " + quoteShort(e.HookName) + ", not PreToolUse")
	}
	if e.PreToolUse == nil {
		return Event{}, errors.New("no preToolUse object")
	}
	tool := e.PreToolUse.ToolName
	if tool == "" {
		tool = e.PreToolUse.Tool
	}
	if tool == "" {
		return Event{}, errors.New("preToolUse has no toolName")
	}
	ev := Event{Tool: tool, Cwd: e.WorkspacePath}
	if len(e.WorkspaceRoots) > 0 {
		ev.Cwd = e.WorkspaceRoots[0]
	}
	if tool != "execute_command" {
		return ev, nil
	}
	return shellEvent(ev, e.PreToolUse.Parameters)
}

func (cline) Encode(d Decision) Answer {
	d = settle(d, false)
	if d.Allowed() {
		return Answer{Stdout: []byte(`{"cancel":false}` + "\n")}
	}
	return Answer{Stdout: encodeJSON(struct {
		Cancel              bool   `json:"cancel"`
		ErrorMessage        string `json:"errorMessage"`
		ContextModification string `json:"contextModification"`
	}{true, d.Reason, d.Reason})}
}
