package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Setup is how one agent registers a hook: where, what to add, and how to
// recognise and exercise a registration (for `classify hook install` and
// `classify doctor`).
type Setup struct {
	// Files are where the agent reads hook registrations: "~/" is the
	// user's home, anything else is relative to the project directory.
	// A "*" matches like filepath.Glob.
	Files []string
	// Target is the file Snippet is meant for (one of Files).
	Target string
	// Snippet renders what to add to Target for a hook command.
	Snippet func(command string) string
	// Script reports that the registration is an executable file (Cline),
	// not a settings entry that names a command.
	Script bool
	// Notes are extra steps the agent needs.
	Notes []string
	// Sample is an event for a shell command, as the agent would send it.
	Sample func(command, cwd string) []byte
	// Outcome reads an answer as the agent would: does the call run, get
	// blocked, or go to the user?
	Outcome func(stdout []byte, exit int) Permission

	// GateSnippet renders, as JSON only (it goes to stdout, for jq), what
	// registers command for every event gate hook needs (GateEvents) in
	// Target. For Cline, whose hooks are executables named after the
	// event, it is a JSON object {path: script}.
	GateSnippet func(command string) string
	// GateEvents names the agent's hook events GateSnippet registers.
	GateEvents []string
	// SampleEvent renders an event of kind k as the agent sends it (gate
	// doctor): tool and input for PreTool and PostTool, output for
	// PostTool, lastMessage for Stop where the agent's event carries it.
	// It is nil for a kind the agent has no event for (Codex SessionEnd).
	SampleEvent func(k EventKind, session, cwd, tool string, input, output json.RawMessage, lastMessage string) []byte
	// StopOutcome reads a Stop answer as the agent would: Deny means the
	// stop was refused and the agent goes on; Allow means the turn ends.
	StopOutcome func(stdout []byte, exit int) Permission
	// ReadTool and WriteTool are the agent's tools that read and write a
	// file, and FileInput renders their input for path: gate doctor's
	// write → stop → read → stop. Codex has no file tools: it reads with
	// its shell and writes with apply_patch.
	ReadTool, WriteTool string
	FileInput           func(tool, path string) json.RawMessage
}

// Setups are the agents' setups, by --agent name.
var Setups = map[string]Setup{
	"claude": {
		Files:  []string{"~/.claude/settings.json", ".claude/settings.json", ".claude/settings.local.json"},
		Target: ".claude/settings.json",
		Snippet: func(cmd string) string {
			return jsonSnippet(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
				"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": cmd, "timeout": 10}}}}}})
		},
		Notes:   []string{"merge each entry of \"hooks\" into the file's existing \"hooks\" object; /hooks in Claude Code lists what is active"},
		Sample:  preToolUseSample,
		Outcome: preToolUseOutcome(true),
	},
	"codex": {
		Files:  []string{"~/.codex/hooks.json", ".codex/hooks.json", "~/.codex/config.toml", ".codex/config.toml"},
		Target: "~/.codex/hooks.json",
		Snippet: func(cmd string) string {
			return jsonSnippet(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
				"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": cmd, "timeout": 10}}}}}})
		},
		Notes: []string{
			"Codex runs a hook only after you review and trust it: open /hooks in Codex and trust this one",
			"project hooks (.codex/) load only in trusted projects",
		},
		Sample:  preToolUseSample,
		Outcome: preToolUseOutcome(false),
	},
	"gemini": {
		Files:  []string{"~/.gemini/settings.json", ".gemini/settings.json"},
		Target: ".gemini/settings.json",
		Snippet: func(cmd string) string {
			return jsonSnippet(map[string]any{"hooks": map[string]any{"BeforeTool": []any{map[string]any{
				"matcher": "*", "hooks": []any{map[string]any{"name": "govkit-classify", "type": "command", "command": cmd, "timeout": 10000}}}}}})
		},
		Notes: []string{"the timeout is in milliseconds", "older Gemini CLI versions need \"tools\": {\"enableHooks\": true} in settings.json"},
		Sample: func(command, cwd string) []byte {
			return jsonLine(map[string]any{"session_id": "govkit-doctor", "transcript_path": "", "cwd": cwd,
				"hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00Z", "tool_name": "run_shell_command",
				"tool_input": map[string]any{"command": command, "description": "govkit doctor sample"}})
		},
		Outcome: func(stdout []byte, exit int) Permission {
			if exit == 2 {
				return Deny
			}
			var a struct{ Decision string }
			if exit != 0 || json.Unmarshal(stdout, &a) != nil {
				return Allow // any other failure lets the call run
			}
			if a.Decision == "deny" || a.Decision == "block" {
				return Deny
			}
			return Allow
		},
	},
	"cursor": {
		Files:  []string{"~/.cursor/hooks.json", ".cursor/hooks.json"},
		Target: ".cursor/hooks.json",
		Snippet: func(cmd string) string {
			h := []any{map[string]any{"command": cmd, "timeout": 10, "failClosed": true}}
			return jsonSnippet(map[string]any{"version": 1, "hooks": map[string]any{"beforeShellExecution": h, "beforeMCPExecution": h}})
		},
		Notes: []string{"\"failClosed\": true makes Cursor block when the hook crashes or times out"},
		Sample: func(command, cwd string) []byte {
			return jsonLine(map[string]any{"conversation_id": "govkit-doctor", "generation_id": "govkit-doctor",
				"hook_event_name": "beforeShellExecution", "command": command, "cwd": cwd, "workspace_roots": []string{cwd}})
		},
		Outcome: func(stdout []byte, exit int) Permission {
			if exit == 2 {
				return Deny
			}
			var a struct{ Permission string }
			if exit != 0 || json.Unmarshal(stdout, &a) != nil {
				return Deny // registered with failClosed
			}
			return Permission(a.Permission)
		},
	},
	"cline": {
		Files:  []string{".clinerules/hooks/PreToolUse", "~/Documents/Cline/Hooks/PreToolUse"},
		Target: ".clinerules/hooks/PreToolUse",
		Script: true,
		Snippet: func(cmd string) string {
			return "#!/bin/sh\n# govkit: judge every Cline tool call with classify.\nexec " + cmd + "\n"
		},
		Notes: []string{"make the file executable: chmod +x .clinerules/hooks/PreToolUse", "turn hooks on in Cline's settings (CLI: cline config set hooks-enabled=true)"},
		Sample: func(command, cwd string) []byte {
			return jsonLine(map[string]any{"clineVersion": "doctor", "hookName": "PreToolUse", "timestamp": "0",
				"taskId": "govkit-doctor", "workspaceRoots": []string{cwd}, "userId": "doctor",
				"preToolUse": map[string]any{"toolName": "execute_command", "parameters": map[string]string{"command": command}}})
		},
		Outcome: func(stdout []byte, exit int) Permission {
			var a struct{ Cancel bool }
			if exit != 0 || json.Unmarshal(stdout, &a) != nil || !a.Cancel {
				return Allow // Cline goes on when a hook fails
			}
			return Deny
		},
	},
	"copilot": {
		Files:  []string{".github/hooks/*.json", "~/.copilot/hooks/*.json"},
		Target: ".github/hooks/govkit.json",
		Snippet: func(cmd string) string {
			return jsonSnippet(map[string]any{"version": 1, "hooks": map[string]any{"preToolUse": []any{map[string]any{
				"type": "command", "bash": cmd, "timeoutSec": 10}}}})
		},
		Notes: []string{"the coding agent reads .github/hooks/ from the repository's default branch"},
		Sample: func(command, cwd string) []byte {
			args, _ := json.Marshal(map[string]string{"command": command, "description": "govkit doctor sample"})
			return jsonLine(map[string]any{"sessionId": "govkit-doctor", "timestamp": 0, "cwd": cwd, "toolName": "bash", "toolArgs": string(args)})
		},
		Outcome: func(stdout []byte, exit int) Permission {
			var a struct{ PermissionDecision string }
			if exit != 0 || json.Unmarshal(stdout, &a) != nil {
				return Allow // failures are skipped, and exit 2 is only a warning
			}
			switch p := Permission(a.PermissionDecision); p {
			case Deny, Ask:
				return p
			}
			return Allow
		},
	},
}

func preToolUseSample(command, cwd string) []byte {
	return jsonLine(map[string]any{"session_id": "govkit-doctor", "transcript_path": "", "cwd": cwd,
		"permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": command, "description": "govkit doctor sample"}, "tool_use_id": "doctor"})
}

// preToolUseOutcome reads a Claude Code or Codex answer. With canAsk false
// (Codex) an ask or an allow in JSON is a hook failure, and the call runs.
func preToolUseOutcome(canAsk bool) func([]byte, int) Permission {
	return func(stdout []byte, exit int) Permission {
		if exit == 2 {
			return Deny
		}
		var a preToolUseAnswer
		if exit != 0 || len(bytes.TrimSpace(stdout)) == 0 || json.Unmarshal(stdout, &a) != nil {
			return Allow
		}
		switch p := Permission(a.HookSpecificOutput.PermissionDecision); p {
		case Deny:
			return Deny
		case Ask:
			if canAsk {
				return Ask
			}
		}
		return Allow
	}
}

func jsonSnippet(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b) + "\n"
}

func jsonLine(v any) []byte {
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// RegisteredCommands finds the hook commands a settings file registers that
// run `classify hook` or `gate hook`. For a script registration (Cline) the
// file itself is the command when it runs one of them.
func (s Setup) RegisteredCommands(path string, data []byte) ([]string, error) {
	if s.Script {
		if hookCommand.Match(data) {
			return []string{path}, nil
		}
		return nil, nil
	}
	if strings.HasSuffix(path, ".toml") {
		// Codex config.toml: command = "…" lines (a full TOML parser is
		// not worth a dependency for a diagnostic).
		var out []string
		for _, m := range tomlCommand.FindAllSubmatch(data, -1) {
			var cmd string
			if json.Unmarshal(m[1], &cmd) == nil && hookCommand.MatchString(cmd) {
				out = append(out, cmd)
			}
		}
		return out, nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %v", filepath.Base(path), err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "command" || k == "bash") && hookCommand.MatchString(s) {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	sort.Strings(out)
	return slices.Compact(out), nil // Cursor registers one command for two events
}

var (
	// \b keeps "aggregate hook" from counting as gate hook.
	hookCommand = regexp.MustCompile(`\b(classify|gate)\S*\s+hook\b`)
	tomlCommand = regexp.MustCompile(`(?m)^\s*command\s*=\s*("(?:[^"\\]|\\.)*")`)
)
