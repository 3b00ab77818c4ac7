package hook

import (
	"cmp"
	"encoding/json"
	"errors"
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
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

// The other hooks (same reference), each an executable named after the
// hook, all with the base fields and all answered the same way:
//
//	PostToolUse: postToolUse {toolName, parameters, result, success,
//	  executionTimeMs}; it cannot undo the call.
//	UserPromptSubmit: userPromptSubmit {prompt, attachments}.
//	TaskStart: taskStart {taskMetadata {taskId, ulid, initialTask}};
//	TaskResume: taskResume {taskMetadata, previousState}: a session starts
//	  or resumes. TaskCancel: the task is cancelled (it may be resumed).
//	TaskComplete: the task is complete — Cline's end of a turn, but it runs
//	  after the fact: no hook can keep a task going (StopBlocks).
//
// PreCompact is not governed: Decode refuses it.
type clineEvent struct {
	HookName       string   `json:"hookName"`
	TaskID         string   `json:"taskId"`
	WorkspaceRoots []string `json:"workspaceRoots"`
	WorkspacePath  string   `json:"workspacePath"` // older docs
	PreToolUse     *struct {
		ToolName   string          `json:"toolName"`
		Tool       string          `json:"tool"` // older docs
		Parameters json.RawMessage `json:"parameters"`
	} `json:"preToolUse"`
	PostToolUse *struct {
		ToolName   string          `json:"toolName"`
		Parameters json.RawMessage `json:"parameters"`
		Result     json.RawMessage `json:"result"`
		Success    *bool           `json:"success"`
	} `json:"postToolUse"`
	UserPromptSubmit *struct {
		Prompt string `json:"prompt"`
	} `json:"userPromptSubmit"`
}

func (cline) Decode(raw []byte) (Event, error) {
	var e clineEvent
	if err := decodeObject(raw, &e); err != nil {
		return Event{}, err
	}
	ev := Event{Cwd: e.WorkspacePath, SessionID: e.TaskID}
	if len(e.WorkspaceRoots) > 0 {
		ev.Cwd = e.WorkspaceRoots[0]
	}
	switch e.HookName {
	case "", "PreToolUse": // a missing hookName is PreToolUse, as classify hook reads it
		if e.PreToolUse == nil {
			return Event{}, errors.New("no preToolUse object")
		}
		ev.Tool = cmp.Or(e.PreToolUse.ToolName, e.PreToolUse.Tool)
		if ev.Tool == "" {
			return Event{}, errors.New("preToolUse has no toolName")
		}
		return clineTool(ev, e.PreToolUse.Parameters)
	case "PostToolUse":
		p := e.PostToolUse
		if p == nil {
			return Event{}, errors.New("no postToolUse object")
		}
		if p.ToolName == "" {
			return Event{}, errors.New("postToolUse has no toolName")
		}
		ev.Kind, ev.Tool, ev.Output = PostTool, p.ToolName, p.Result
		if p.Success != nil && !*p.Success {
			ev.Failed, ev.ErrorText = true, textOf(p.Result)
		}
		return clineTool(ev, p.Parameters)
	case "UserPromptSubmit":
		if e.UserPromptSubmit == nil {
			return Event{}, errors.New("no userPromptSubmit object")
		}
		ev.Kind, ev.Prompt = Prompt, e.UserPromptSubmit.Prompt
	case "TaskStart":
		ev.Kind, ev.Source = SessionStart, "startup"
	case "TaskResume":
		ev.Kind, ev.Source = SessionStart, "resume"
	case "TaskCancel":
		ev.Kind, ev.Source = SessionEnd, "cancel"
	case "TaskComplete":
		ev.Kind = Stop
	default:
		return Event{}, errors.New("hookName " + termtext.Quote(e.HookName, 60) + " is not a hook govkit answers")
	}
	return ev, nil
}

// clineTool completes a tool event: parameters are its input, and the
// shell tool is execute_command.
func clineTool(ev Event, params json.RawMessage) (Event, error) {
	input, err := objectInput(params)
	if err != nil {
		return Event{}, err
	}
	ev.Input = input
	return withShell(ev, "execute_command")
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

// Answer: every Cline hook is answered with {"cancel":…}: cancel false
// lets the task go on (contextModification reaching the model's next
// request), cancel true is the blocking form. A refused stop can only be
// that blocking form on TaskComplete, which stops nothing (StopBlocks).
func (c cline) Answer(k EventKind, d Decision) Answer {
	switch k {
	case PreTool:
		return c.Encode(d)
	case PostTool, Stop:
		if !d.Allowed() {
			r := denyReason(d)
			return Answer{Stdout: encodeJSON(struct {
				Cancel              bool   `json:"cancel"`
				ErrorMessage        string `json:"errorMessage"`
				ContextModification string `json:"contextModification"`
			}{true, r, strings.TrimSpace(r + "\n\n" + d.Context)})}
		}
		return clineContext(d.Context)
	case SessionStart, SessionEnd, Prompt:
		return clineContext(neutralContext(d))
	}
	return c.Encode(Failure("an event of unknown kind " + k.String()))
}

func clineContext(ctx string) Answer {
	if ctx == "" {
		return Answer{Stdout: []byte(`{"cancel":false}` + "\n")}
	}
	return Answer{Stdout: encodeJSON(struct {
		Cancel              bool   `json:"cancel"`
		ContextModification string `json:"contextModification"`
	}{false, ctx})}
}
