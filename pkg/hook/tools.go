package hook

import "strings"

// ToolKind is what a non-shell tool does, by its name.
type ToolKind int

const (
	ToolUnknown ToolKind = iota // seed 000 P-34: unknown tools are writes
	ToolRead
	ToolWrite
)

// toolKinds classifies the agents' built-in tools by lower-cased name, from
// each agent's tool reference (cited in the dialect files). Tools that read
// files, search, list, fetch, or only talk to the user or plan are reads;
// tools that edit, write, patch, delete or save are writes. Sub-agent tools
// (Agent/Task) are reads: the sub-agent's own calls reach this hook too.
// Anything else — every MCP tool, browser automation, a PowerShell command —
// is unknown, and so treated as a write.
var toolKinds = map[string]ToolKind{}

func init() {
	for _, n := range []string{
		// Claude Code
		"read", "glob", "grep", "lsp", "webfetch", "websearch", "listmcpresourcestool",
		"readmcpresourcetool", "agent", "task", "skill", "askuserquestion", "exitplanmode",
		"taskcreate", "taskget", "tasklist", "taskupdate", "todowrite", "bashoutput", "ls",
		// Gemini CLI
		"read_file", "read_many_files", "list_directory", "grep_search", "search_file_content",
		"web_fetch", "google_web_search", "write_todos", "ask_user", "enter_plan_mode",
		"exit_plan_mode", "activate_skill", "get_internal_docs",
		// Cline
		"list_files", "search_files", "list_code_definition_names", "ask_followup_question",
		"attempt_completion", "plan_mode_respond", "web_search", "access_mcp_resource",
		// Copilot and Cursor
		"view",
	} {
		toolKinds[n] = ToolRead
	}
	for _, n := range []string{
		"write", "edit", "multiedit", "notebookedit", // Claude Code
		"apply_patch",                          // Codex (and Cline)
		"write_file", "replace", "save_memory", // Gemini CLI
		"write_to_file", "replace_in_file", "new_task", // Cline
		"create", "delete", // Copilot, Cursor
		"killshell", "killbash",
	} {
		toolKinds[n] = ToolWrite
	}
}

// KindOf returns a non-shell tool's kind.
func KindOf(tool string) ToolKind {
	return toolKinds[strings.ToLower(tool)]
}
