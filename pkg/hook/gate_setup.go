package hook

import (
	"bytes"
	"encoding/json"
	"strings"
)

// gateSetups are the parts of each agent's Setup that `gate hook install`
// and `gate doctor --agent` use (issue 17, "Setup"): the registration of
// every event gate hook needs, samples of those events as the agent sends
// them, and how the agent reads a Stop answer. Sources are cited in the
// dialect files.
var gateSetups = map[string]Setup{
	"claude": {
		// SubagentStop too: a sub-agent's turn ends there, not at Stop, and
		// would otherwise finish with its claims unchecked.
		GateEvents: []string{"PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "SessionStart", "SessionEnd", "UserPromptSubmit"},
		GateSnippet: func(cmd string) string {
			return claudeShapeSnippet(cmd, []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"},
				[]string{"Stop", "SubagentStop", "SessionStart", "SessionEnd", "UserPromptSubmit"}, nil)
		},
		SampleEvent: func(k EventKind, session, cwd, tool string, input, output json.RawMessage, last string) []byte {
			return claudeShapeSample(k, session, cwd, tool, input, output, last, nil)
		},
		StopOutcome: claudeStopOutcome,
		ReadTool:    "Read", WriteTool: "Write",
		FileInput: func(tool, path string) json.RawMessage {
			if tool == "Write" {
				return jsonRaw(map[string]string{"file_path": path, "content": "govkit doctor\n"})
			}
			return jsonRaw(map[string]string{"file_path": path})
		},
	},
	"codex": {
		// Thread-spawned sub-agents end at SubagentStop instead of Stop.
		GateEvents: []string{"PreToolUse", "PostToolUse", "Stop", "SubagentStop", "SessionStart", "UserPromptSubmit"},
		GateSnippet: func(cmd string) string {
			return claudeShapeSnippet(cmd, []string{"PreToolUse", "PostToolUse"},
				[]string{"Stop", "SubagentStop", "SessionStart", "UserPromptSubmit"}, nil)
		},
		SampleEvent: func(k EventKind, session, cwd, tool string, input, output json.RawMessage, last string) []byte {
			if k == SessionEnd {
				return nil // Codex has no SessionEnd
			}
			return claudeShapeSample(k, session, cwd, tool, input, output, last,
				map[string]any{"turn_id": "govkit-doctor", "model": "govkit-doctor"})
		},
		StopOutcome: claudeStopOutcome,
		ReadTool:    "Bash", WriteTool: "apply_patch",
		FileInput: func(tool, path string) json.RawMessage {
			if tool == "apply_patch" {
				return jsonRaw(map[string]string{"command": "*** Begin Patch\n*** Add File: " + path + "\n+govkit doctor\n*** End Patch\n"})
			}
			return jsonRaw(map[string]string{"command": "cat " + shellQuote(path)})
		},
	},
	"gemini": {
		GateEvents: []string{"BeforeTool", "AfterTool", "AfterAgent", "BeforeAgent", "SessionStart", "SessionEnd"},
		GateSnippet: func(cmd string) string {
			return claudeShapeSnippet(cmd, []string{"BeforeTool", "AfterTool"},
				[]string{"AfterAgent", "BeforeAgent", "SessionStart", "SessionEnd"},
				map[string]any{"name": "govkit-gate", "timeout": 10000})
		},
		SampleEvent: geminiSample,
		StopOutcome: func(stdout []byte, exit int) Permission {
			if exit == 2 {
				return Deny
			}
			var a struct{ Decision string }
			if exit != 0 || json.Unmarshal(stdout, &a) != nil {
				return Allow // any other failure lets the turn end
			}
			if a.Decision == "deny" || a.Decision == "block" {
				return Deny
			}
			return Allow
		},
		ReadTool: "read_file", WriteTool: "write_file",
		FileInput: func(tool, path string) json.RawMessage {
			if tool == "write_file" {
				return jsonRaw(map[string]string{"file_path": path, "content": "govkit doctor\n"})
			}
			return jsonRaw(map[string]string{"absolute_path": path})
		},
	},
	"cursor": {
		GateEvents: []string{"preToolUse", "postToolUse", "postToolUseFailure", "stop", "sessionStart", "sessionEnd", "beforeSubmitPrompt"},
		GateSnippet: func(cmd string) string {
			hooks := map[string]any{}
			for _, ev := range []string{"preToolUse", "postToolUse", "postToolUseFailure", "stop", "sessionStart", "sessionEnd", "beforeSubmitPrompt"} {
				hooks[ev] = []any{map[string]any{"command": cmd, "timeout": 10, "failClosed": true}}
			}
			return jsonSnippet(map[string]any{"version": 1, "hooks": hooks})
		},
		SampleEvent: cursorSample,
		StopOutcome: func(stdout []byte, exit int) Permission {
			var a struct {
				FollowupMessage string `json:"followup_message"`
			}
			if exit == 0 && json.Unmarshal(stdout, &a) == nil && strings.TrimSpace(a.FollowupMessage) != "" {
				return Deny // the follow-up keeps the agent going
			}
			return Allow
		},
		ReadTool: "Read", WriteTool: "Write",
		FileInput: func(tool, path string) json.RawMessage {
			if tool == "Write" {
				return jsonRaw(map[string]string{"file_path": path, "contents": "govkit doctor\n"})
			}
			return jsonRaw(map[string]string{"file_path": path})
		},
	},
	"cline": {
		GateEvents: clineGateHooks,
		GateSnippet: func(cmd string) string {
			scripts := map[string]string{}
			for _, h := range clineGateHooks {
				scripts[".clinerules/hooks/"+h] = "#!/bin/sh\n# govkit: gate hook answers Cline's " + h + " hook.\nexec " + cmd + "\n"
			}
			return jsonSnippet(scripts)
		},
		SampleEvent: clineSample,
		// Cline's TaskComplete runs after the task is complete: no answer
		// keeps it going (StopBlocks).
		StopOutcome: func([]byte, int) Permission { return Allow },
		ReadTool:    "read_file", WriteTool: "write_to_file",
		FileInput: func(tool, path string) json.RawMessage {
			if tool == "write_to_file" {
				return jsonRaw(map[string]string{"path": path, "content": "govkit doctor\n"})
			}
			return jsonRaw(map[string]string{"path": path})
		},
	},
	"copilot": {
		GateEvents: copilotGateHooks,
		GateSnippet: func(cmd string) string {
			hooks := map[string]any{}
			for _, ev := range copilotGateHooks {
				hooks[ev] = []any{map[string]any{"type": "command", "bash": cmd, "timeoutSec": 10}}
			}
			return jsonSnippet(map[string]any{"version": 1, "hooks": hooks})
		},
		SampleEvent: copilotSample,
		StopOutcome: func(stdout []byte, exit int) Permission {
			var a struct{ Decision, Reason string }
			if exit == 0 && json.Unmarshal(stdout, &a) == nil && a.Decision == "block" && strings.TrimSpace(a.Reason) != "" {
				return Deny
			}
			return Allow // failures are skipped: the turn ends
		},
		ReadTool: "view", WriteTool: "create",
		FileInput: func(tool, path string) json.RawMessage {
			if tool == "create" {
				return jsonRaw(map[string]string{"path": path, "file_text": "govkit doctor\n"})
			}
			return jsonRaw(map[string]string{"path": path})
		},
	},
}

// copilotGateHooks are the Copilot events gate hook registers: agentStop
// ends the main agent's turn, subagentStop a sub-agent's.
var copilotGateHooks = []string{"preToolUse", "postToolUse", "postToolUseFailure", "agentStop", "subagentStop", "sessionStart", "sessionEnd", "userPromptSubmitted"}

var clineGateHooks = []string{"PreToolUse", "PostToolUse", "UserPromptSubmit", "TaskStart", "TaskResume", "TaskCancel", "TaskComplete"}

func init() {
	for agent, g := range gateSetups {
		s := Setups[agent]
		s.GateSnippet, s.GateEvents, s.SampleEvent, s.StopOutcome = g.GateSnippet, g.GateEvents, g.SampleEvent, g.StopOutcome
		s.ReadTool, s.WriteTool, s.FileInput = g.ReadTool, g.WriteTool, g.FileInput
		Setups[agent] = s
	}
}

// claudeShapeSnippet registers cmd for tool events (matcher "*") and the
// other events (no matcher) in the {"hooks":{Event:[{matcher,hooks}]}}
// layout Claude Code, Codex and Gemini CLI share; extra adds fields to
// the hook entry (Gemini's name, a timeout in milliseconds).
func claudeShapeSnippet(cmd string, toolEvents, otherEvents []string, extra map[string]any) string {
	entry := map[string]any{"type": "command", "command": cmd, "timeout": 10}
	for k, v := range extra {
		entry[k] = v
	}
	hooks := map[string]any{}
	for _, ev := range toolEvents {
		hooks[ev] = []any{map[string]any{"matcher": "*", "hooks": []any{entry}}}
	}
	for _, ev := range otherEvents {
		hooks[ev] = []any{map[string]any{"hooks": []any{entry}}}
	}
	return jsonSnippet(map[string]any{"hooks": hooks})
}

func claudeShapeSample(k EventKind, session, cwd, tool string, input, output json.RawMessage, last string, extra map[string]any) []byte {
	ev := map[string]any{"session_id": session, "transcript_path": "", "cwd": cwd, "permission_mode": "default"}
	for k, v := range extra {
		ev[k] = v
	}
	switch k {
	case PreTool, PostTool:
		ev["hook_event_name"], ev["tool_name"], ev["tool_input"], ev["tool_use_id"] = "PreToolUse", tool, object(input), "govkit-doctor"
		if k == PostTool {
			ev["hook_event_name"], ev["tool_response"] = "PostToolUse", object(output)
		}
	case Stop:
		ev["hook_event_name"], ev["stop_hook_active"], ev["last_assistant_message"] = "Stop", false, last
	case SessionStart:
		ev["hook_event_name"], ev["source"] = "SessionStart", "startup"
	case SessionEnd:
		ev["hook_event_name"], ev["reason"] = "SessionEnd", "other"
	case Prompt:
		ev["hook_event_name"], ev["prompt"] = "UserPromptSubmit", "govkit doctor"
	default:
		return nil
	}
	return jsonLine(ev)
}

// claudeStopOutcome reads a Claude Code or Codex Stop answer: exit 2 or
// decision block refuses the stop; anything else lets the turn end.
func claudeStopOutcome(stdout []byte, exit int) Permission {
	if exit == 2 {
		return Deny
	}
	var a blockAnswer
	if exit == 0 && json.Unmarshal(stdout, &a) == nil && a.Decision == "block" {
		return Deny
	}
	return Allow
}

func geminiSample(k EventKind, session, cwd, tool string, input, output json.RawMessage, last string) []byte {
	ev := map[string]any{"session_id": session, "transcript_path": "", "cwd": cwd, "timestamp": "2026-01-01T00:00:00Z"}
	switch k {
	case PreTool, PostTool:
		ev["hook_event_name"], ev["tool_name"], ev["tool_input"] = "BeforeTool", tool, object(input)
		if k == PostTool {
			resp := output
			if text, ok := jsonString(output); ok || !present(output) {
				resp = jsonRaw(map[string]string{"llmContent": text, "returnDisplay": text})
			}
			ev["hook_event_name"], ev["tool_response"] = "AfterTool", resp
		}
	case Stop:
		ev["hook_event_name"], ev["prompt"], ev["prompt_response"], ev["stop_hook_active"] = "AfterAgent", "govkit doctor", last, false
	case SessionStart:
		ev["hook_event_name"], ev["source"] = "SessionStart", "startup"
	case SessionEnd:
		ev["hook_event_name"], ev["reason"] = "SessionEnd", "exit"
	case Prompt:
		ev["hook_event_name"], ev["prompt"] = "BeforeAgent", "govkit doctor"
	default:
		return nil
	}
	return jsonLine(ev)
}

func cursorSample(k EventKind, session, cwd, tool string, input, output json.RawMessage, last string) []byte {
	ev := map[string]any{"conversation_id": session, "generation_id": "govkit-doctor", "workspace_roots": []string{cwd}}
	switch k {
	case PreTool, PostTool:
		ev["hook_event_name"], ev["tool_name"], ev["tool_input"], ev["tool_use_id"], ev["cwd"] = "preToolUse", tool, object(input), "govkit-doctor", cwd
		if k == PostTool {
			text, ok := jsonString(output)
			if !ok && present(output) {
				text = string(output)
			}
			ev["hook_event_name"], ev["tool_output"], ev["duration"] = "postToolUse", text, 1
		}
	case Stop:
		ev["hook_event_name"], ev["status"], ev["loop_count"] = "stop", "completed", 0
	case SessionStart:
		ev["hook_event_name"], ev["session_id"] = "sessionStart", session
	case SessionEnd:
		ev["hook_event_name"], ev["session_id"], ev["reason"] = "sessionEnd", session, "completed"
	case Prompt:
		ev["hook_event_name"], ev["prompt"] = "beforeSubmitPrompt", "govkit doctor"
	default:
		return nil
	}
	return jsonLine(ev)
}

func clineSample(k EventKind, session, cwd, tool string, input, output json.RawMessage, last string) []byte {
	ev := map[string]any{"clineVersion": "doctor", "timestamp": "0", "taskId": session, "workspaceRoots": []string{cwd}, "userId": "doctor"}
	meta := map[string]any{"taskMetadata": map[string]string{"taskId": session, "ulid": session}}
	switch k {
	case PreTool:
		ev["hookName"], ev["preToolUse"] = "PreToolUse", map[string]any{"toolName": tool, "parameters": object(input)}
	case PostTool:
		text, ok := jsonString(output)
		if !ok && present(output) {
			text = string(output)
		}
		ev["hookName"], ev["postToolUse"] = "PostToolUse", map[string]any{"toolName": tool, "parameters": object(input),
			"result": text, "success": true, "executionTimeMs": 1}
	case Stop:
		ev["hookName"], ev["taskComplete"] = "TaskComplete", meta
	case SessionStart:
		ev["hookName"], ev["taskStart"] = "TaskStart", meta
	case SessionEnd:
		ev["hookName"], ev["taskCancel"] = "TaskCancel", meta
	case Prompt:
		ev["hookName"], ev["userPromptSubmit"] = "UserPromptSubmit", map[string]any{"prompt": "govkit doctor", "attachments": []string{}}
	default:
		return nil
	}
	return jsonLine(ev)
}

func copilotSample(k EventKind, session, cwd, tool string, input, output json.RawMessage, last string) []byte {
	ev := map[string]any{"sessionId": session, "timestamp": 0, "cwd": cwd}
	switch k {
	case PreTool, PostTool:
		ev["toolName"], ev["toolArgs"] = tool, object(input)
		if k == PostTool {
			text, ok := jsonString(output)
			if !ok && present(output) {
				text = string(output)
			}
			ev["toolResult"] = map[string]string{"resultType": "success", "textResultForLlm": text}
		}
	case Stop:
		ev["transcriptPath"], ev["stopReason"], ev["stop_hook_active"] = "", "end_turn", false
	case SessionStart:
		ev["source"] = "startup"
	case SessionEnd:
		ev["reason"] = "complete"
	case Prompt:
		ev["prompt"] = "govkit doctor"
	default:
		return nil
	}
	return jsonLine(ev)
}

// object is raw as a JSON value for a sample, {} when absent.
func object(raw json.RawMessage) json.RawMessage {
	if !present(raw) {
		return json.RawMessage("{}")
	}
	return raw
}

// jsonString reports whether raw is a JSON string, and its value.
func jsonString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return "", false
}

func jsonRaw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// shellQuote quotes a path for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
