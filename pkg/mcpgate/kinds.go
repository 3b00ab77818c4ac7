package mcpgate

import (
	"encoding/json"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/govkit/govkit/pkg/session"
)

// Tool is what gate needs of one entry of the server's tools/list.
type Tool struct {
	Name        string
	Annotations *mcp.ToolAnnotations
	// OutputSchema: the tool declares one, so a TypeScript SDK client
	// validates any structuredContent against it, even of an error result.
	OutputSchema bool
}

// ToolKind is how gate governs one tool, and why (`gate mcp --print-kinds`).
type ToolKind struct {
	Name string `json:"name"`
	// Kind is the reducer's: resolve, read, write or search.
	Kind string `json:"kind"`
	// Action is the class governance sees: read, write or destructive.
	Action string `json:"action"`
	// Source says what decided: "config" (the rule's name), "annotations"
	// (which hint), or "default" (unknown tools are writes: seed 000 §7).
	Source      string            `json:"source"`
	Idempotent  bool              `json:"idempotent,omitempty"`
	ActionKinds map[string]string `json:"action_kinds,omitempty"`

	rule *ToolRule
}

// toolsFromList reads the tools of a tools/list result; entries that are not
// tools are skipped, never fatal: the client gets the list as it was.
func toolsFromList(result json.RawMessage) (tools []Tool, next string) {
	var list struct {
		Tools []struct {
			Name         string               `json:"name"`
			Annotations  *mcp.ToolAnnotations `json:"annotations"`
			OutputSchema json.RawMessage      `json:"outputSchema"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if json.Unmarshal(result, &list) != nil {
		return nil, ""
	}
	for _, t := range list.Tools {
		if t.Name == "" {
			continue
		}
		tools = append(tools, Tool{Name: t.Name, Annotations: t.Annotations,
			OutputSchema: len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null"})
	}
	return tools, list.NextCursor
}

// Classify gives each tool its kind: the config's first matching rule, else
// the server's annotations (readOnlyHint → read; otherwise a write, and
// destructive unless destructiveHint is false, as the MCP spec defaults it),
// else write (seed 000 §7: unknown tools are writes).
func (c *Config) Classify(t Tool) ToolKind {
	k := ToolKind{Name: t.Name, Kind: "write", Action: ActionDestructive, Source: "default"}
	a := t.Annotations
	if a != nil {
		k.Idempotent = a.IdempotentHint
		switch {
		case a.ReadOnlyHint:
			k.Kind, k.Action, k.Source = "read", ActionRead, "annotations: readOnlyHint"
		case a.DestructiveHint != nil && !*a.DestructiveHint:
			k.Action, k.Source = ActionWrite, "annotations: destructiveHint false"
		case a.DestructiveHint != nil:
			k.Source = "annotations: destructiveHint"
		default:
			k.Source = "annotations: readOnlyHint false"
		}
	}
	r := c.rule(t.Name)
	if r == nil {
		return k
	}
	k.rule = r
	k.Source = "config: " + r.Name
	if r.Kind != "" {
		k.Kind = r.Kind
		switch r.Kind {
		case "write":
			if k.Action == ActionRead {
				k.Action = ActionDestructive
			}
		default:
			k.Action = ActionRead
		}
	}
	if r.Action != "" {
		k.Action = r.Action
	}
	if len(r.ActionKinds) > 0 {
		k.ActionKinds = r.ActionKinds
	}
	return k
}

// targetArg is the argument gate sets when a path target stands for its
// directory (ToolRule.Paths): the reducer checks it first, and a receipt's
// inputs show which resource the call was resolved against.
const targetArg = "govkit/target"

// decls declares the session's tools (session_start), sorted by name so
// that the same server gives the same session.
func decls(kinds map[string]ToolKind) []session.ToolDecl {
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]session.ToolDecl, 0, len(names))
	for _, n := range names {
		k := kinds[n]
		d := session.ToolDecl{Name: n, Kind: k.Kind}
		if r := k.rule; r != nil {
			d.ActionArg, d.ActionKinds = r.ActionArg, r.ActionKinds
			if len(r.TargetArgs) > 0 {
				d.TargetArgs = append([]string{targetArg}, r.TargetArgs...)
			}
		}
		out = append(out, d)
	}
	return out
}

// Kinds classifies a server's tools and the config's exact names the
// server did not list (a rule may name a tool the server adds later), in
// the server's order, then by name.
func (c *Config) Kinds(tools []Tool) []ToolKind {
	seen := map[string]bool{}
	var out []ToolKind
	for _, t := range tools {
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		out = append(out, c.Classify(t))
	}
	var extra []ToolKind
	if c != nil {
		for _, r := range c.Tools {
			if seen[r.Name] || hasMeta(r.Name) {
				continue
			}
			seen[r.Name] = true
			extra = append(extra, c.Classify(Tool{Name: r.Name}))
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i].Name < extra[j].Name })
	return append(out, extra...)
}

// hasMeta reports whether a rule name is a glob rather than a tool name.
func hasMeta(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}
