package hookgate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"

	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/resolved"
)

// role is what an agent's tool does to the session: the reducer sees files
// as resources (an Edit of a file never read or listed is STRICT_RESOLUTION).
type role int

const (
	roleOther   role = iota // an MCP tool (by config) or an unknown tool: a write (seed 000 P-34)
	roleNeutral             // talks to the user, plans, spawns a sub-agent: no resource, not a step of the workflow
	roleShell               // a shell command: pkg/intent decides read or write
	roleRead                // reads one file
	roleSearch              // lists or searches files
	roleWrite               // changes a file
	roleFetch               // reads something that is not a file (WebFetch)
)

// toolSpec says where a tool's input names its file or directory (the
// first field present wins) and its search pattern.
type toolSpec struct {
	role  role
	paths []string
	query []string
}

// fileTools are the agents' built-in file tools, by lower-cased name, from
// each agent's tool reference (the dialect files in pkg/hook cite them).
// Names shared between agents list every agent's field names.
var fileTools = map[string]toolSpec{
	// Claude Code, Cursor (preToolUse uses the same names)
	"read":         {roleRead, []string{"file_path", "path"}, nil},
	"glob":         {roleSearch, []string{"path", "dir_path"}, []string{"pattern"}},
	"grep":         {roleSearch, []string{"path", "dir_path"}, []string{"pattern"}},
	"ls":           {roleSearch, []string{"path"}, nil},
	"edit":         {roleWrite, []string{"file_path", "path"}, nil},
	"multiedit":    {roleWrite, []string{"file_path"}, nil},
	"write":        {roleWrite, []string{"file_path", "path"}, nil},
	"notebookedit": {roleWrite, []string{"notebook_path"}, nil},
	"delete":       {roleWrite, []string{"file_path", "path"}, nil},
	"webfetch":     {roleFetch, []string{"url"}, nil},
	"websearch":    {roleFetch, nil, []string{"query"}},
	// Gemini CLI
	"read_file":           {roleRead, []string{"file_path", "absolute_path", "path"}, nil},
	"read_many_files":     {roleRead, nil, nil},
	"list_directory":      {roleSearch, []string{"dir_path", "path"}, nil},
	"search_file_content": {roleSearch, []string{"dir_path", "path"}, []string{"pattern"}},
	"grep_search":         {roleSearch, []string{"dir_path", "path"}, []string{"pattern"}},
	"write_file":          {roleWrite, []string{"file_path", "path"}, nil},
	"replace":             {roleWrite, []string{"file_path"}, nil},
	"web_fetch":           {roleFetch, nil, []string{"prompt"}},
	"google_web_search":   {roleFetch, nil, []string{"query"}},
	// Cline
	"list_files":                 {roleSearch, []string{"path"}, nil},
	"search_files":               {roleSearch, []string{"path"}, []string{"regex"}},
	"list_code_definition_names": {roleSearch, []string{"path"}, nil},
	"write_to_file":              {roleWrite, []string{"path"}, nil},
	"replace_in_file":            {roleWrite, []string{"path"}, nil},
	// GitHub Copilot
	"view":   {roleRead, []string{"path"}, nil},
	"create": {roleWrite, []string{"path"}, nil},
	// Codex: apply_patch names its files inside the patch (patchFiles).
	"apply_patch": {roleWrite, nil, nil},
}

// specOf is a tool's role: its built-in file role, the shell, a read-only
// tool that is not a workflow step (pkg/hook's table), or other.
func specOf(ev hook.Event) toolSpec {
	if ev.Shell {
		return toolSpec{role: roleShell}
	}
	name := strings.ToLower(ev.Tool)
	if s, ok := fileTools[name]; ok {
		return s
	}
	if hook.KindOf(ev.Tool) == hook.ToolRead {
		return toolSpec{role: roleNeutral}
	}
	return toolSpec{role: roleOther}
}

// Shell tools as each agent names them (pkg/hook's dialects): declared in
// every session so that a call is a read only when the front-end proved its
// command read-only and bounded (args.intent), else a write.
var shellTools = []string{"Bash", "run_shell_command", "Shell", "execute_command", "bash"}

// MCP tools that configuration maps to a kind other than write reach the
// reducer under these names, with the agent's own name in args.tool.
var mcpKindTools = map[string]string{"read": "mcp.read", "search": "mcp.search", "resolve": "mcp.resolve"}

// reducerName is the name a call reaches the reducer under: the declared
// spelling of a built-in tool, whatever case the agent used.
func reducerName(ev hook.Event) string {
	if ev.Shell {
		for _, n := range shellTools {
			if n == ev.Tool {
				return n
			}
		}
		return shellTools[0]
	}
	if n, ok := canonical[strings.ToLower(ev.Tool)]; ok {
		return n
	}
	return ev.Tool
}

// canonical maps a lower-cased built-in name to its declared spelling.
var canonical = map[string]string{}

func init() {
	for _, n := range []string{"Read", "Glob", "Grep", "LS", "Edit", "MultiEdit", "Write", "NotebookEdit", "Delete", "WebFetch", "WebSearch"} {
		canonical[strings.ToLower(n)] = n
	}
	for n := range fileTools {
		if _, ok := canonical[n]; !ok {
			canonical[n] = n
		}
	}
}

// sessionTools is the tool table every hook session starts with (seed 000
// §7's table, as data): the built-in file tools by role, the shell tools,
// and the MCP kinds. A write names its file in args.target; tools not
// declared are writes (P-34).
func sessionTools() []session.ToolDecl {
	var decls []session.ToolDecl
	for _, n := range shellTools {
		decls = append(decls, session.ToolDecl{Name: n, Kind: "write", ActionArg: "intent", ActionKinds: map[string]string{"read_only": "read"}})
	}
	names := make([]string, 0, len(canonical))
	for _, n := range canonical {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		kind := ""
		switch fileTools[strings.ToLower(n)].role {
		case roleRead, roleFetch:
			kind = "read"
		case roleSearch:
			kind = "search"
		case roleWrite:
			kind = "write"
		}
		d := session.ToolDecl{Name: n, Kind: kind}
		if kind == "write" {
			d.TargetArgs = []string{"target"}
		}
		decls = append(decls, d)
	}
	for _, k := range []string{"read", "resolve", "search"} {
		decls = append(decls, session.ToolDecl{Name: mcpKindTools[k], Kind: k})
	}
	return decls
}

// stringIn returns the first of names that input holds as a non-empty
// string.
func stringIn(input map[string]any, names []string) string {
	for _, n := range names {
		if s, ok := input[n].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// inputMap decodes a tool input object; anything else is empty.
func inputMap(raw json.RawMessage) map[string]any {
	var m map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &m) == nil {
		return m
	}
	return map[string]any{}
}

// absPath makes an agent's path absolute against the event's working
// directory, cleaned, so that "./a.go", "a.go" and "/repo/a.go" are one
// resource.
func absPath(p, cwd string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		if cwd == "" {
			return ""
		}
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// fileKind is the resource kind of files and directories.
const fileKind = "file"

// fileRegistration is a path as a resource. A path longer than a
// registration field may be is named by its digest, on both sides.
func fileRegistration(path string) resolved.Registration {
	return resolved.Registration{Kind: fileKind, ProviderUID: fileUID(path)}
}

func fileUID(path string) string {
	if len(path) <= resolved.MaxFieldBytes {
		return path
	}
	sum := sha256.Sum256([]byte(path))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// fileKey is the resource id strict resolution looks a path up by.
func fileKey(path string) string { return fileKind + ":" + fileUID(path) }

// patchFiles lists the files a Codex apply_patch input changes: the
// "*** Update File:", "*** Delete File:" and "*** Add File:" lines of the
// patch (openai/codex apply-patch format). existing reports whether the
// line names a file that must already exist.
func patchFiles(input map[string]any) (files []string, existing []bool) {
	text := stringIn(input, []string{"input", "patch", "command"})
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		for _, p := range [...]struct {
			prefix string
			exists bool
		}{{"*** Update File:", true}, {"*** Delete File:", true}, {"*** Add File:", false}, {"*** Move to:", false}} {
			if rest, ok := strings.CutPrefix(line, p.prefix); ok {
				if f := strings.TrimSpace(rest); f != "" {
					files = append(files, f)
					existing = append(existing, p.exists)
				}
			}
		}
	}
	return files, existing
}
