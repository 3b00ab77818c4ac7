package mcpgate

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"no name", "mcp:\n  tools:\n    - kind: read\n", "mcp.tools[0].name: required"},
		{"bad kind", "mcp:\n  tools:\n    - {name: a, kind: delete}\n", `mcp.tools[0].kind: "delete" is not`},
		{"bad action", "mcp:\n  tools:\n    - {name: a, action: nuke}\n", `mcp.tools[0].action: "nuke"`},
		{"bad action kind", "mcp:\n  tools:\n    - {name: a, action_kinds: {x: y}}\n", `action_kinds["x"]: "y"`},
		{"bad glob", "mcp:\n  tools:\n    - {name: '[', kind: read}\n", "not a valid glob"},
		{"bad regexp", "mcp:\n  tools:\n    - {name: a, kind: resolve, resources: {line: '('}}\n", "resources.line"},
		{"resources on a write", "mcp:\n  tools:\n    - {name: a, kind: write, resources: {self: true, join: p}}\n", "only a resolve tool"},
		{"self without join", "mcp:\n  tools:\n    - {name: a, kind: resolve, resources: {self: true}}\n", "needs join"},
		{"nothing to read", "mcp:\n  tools:\n    - {name: a, kind: resolve, resources: {kind: file}}\n", "give line"},
		{"unknown key", "mcp:\n  tools:\n    - {name: a, knd: read}\n",
			`mcp: line 3: unknown field "knd": takes {name, kind, action, action_arg, action_kinds, target_args, paths, resources}`},
		{"unknown section key", "url: x\n\nmcp:\n  tool: []\n", `mcp: line 4: unknown field "tool": takes {tools, strict_resolution, read, session_id, workspace_root, agent_id} (did you mean "tools"?)`},
		{"wrong type", "mcp:\n  tools: 3\n", "mcp: line 2: expected an array of objects {name, kind, action, action_arg, action_kinds, target_args, paths, resources}, not a number (3)"},
		{"wrong scalar", "mcp:\n  read: {max_reads: many}\n", `mcp: line 2: expected a whole number, not a string ("many")`},
		{"bad mode", "mcp:\n  read: {mode: strict}\n", `mcp.read.mode: "strict"`},
		{"not a mapping", "mcp: [1]\n", "mcp: must be a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(strings.NewReader(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseConfig: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseConfigIgnoresOtherSections(t *testing.T) {
	c, err := ParseConfig(strings.NewReader("url: http://127.0.0.1:1199\ngate:\n  output: json\n"))
	if err != nil || len(c.Tools) != 0 {
		t.Fatalf("a govkit config without an mcp section: %v %+v", err, c)
	}
}

// TestExamplesParse keeps examples/mcp valid.
func TestExamplesParse(t *testing.T) {
	files, _ := filepath.Glob("../../examples/mcp/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples/mcp/*.yaml")
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseConfig(fh)
		fh.Close()
		if err != nil || len(c.Tools) == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestClassify(t *testing.T) {
	yes, no := true, false
	cfg, err := ParseConfig(strings.NewReader(`
mcp:
  tools:
    - {name: list_*, kind: resolve}
    - {name: edit, kind: write, action_arg: dryRun, action_kinds: {"true": read}}
    - {name: mkdir, action: write}
    - {name: ro_but_write, kind: write}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool Tool
		want ToolKind
	}{
		{Tool{Name: "unknown"}, ToolKind{Kind: "write", Action: "destructive", Source: "default"}},
		{Tool{Name: "cat", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			ToolKind{Kind: "read", Action: "read", Source: "annotations: readOnlyHint"}},
		{Tool{Name: "rm", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
			ToolKind{Kind: "write", Action: "destructive", Source: "annotations: destructiveHint"}},
		{Tool{Name: "touch", Annotations: &mcp.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true}},
			ToolKind{Kind: "write", Action: "write", Source: "annotations: destructiveHint false", Idempotent: true}},
		// The MCP spec: destructiveHint defaults to true.
		{Tool{Name: "put", Annotations: &mcp.ToolAnnotations{}},
			ToolKind{Kind: "write", Action: "destructive", Source: "annotations: readOnlyHint false"}},
		{Tool{Name: "list_dir"}, ToolKind{Kind: "resolve", Action: "read", Source: "config: list_*"}},
		{Tool{Name: "edit", Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}},
			ToolKind{Kind: "write", Action: "write", Source: "config: edit", ActionKinds: map[string]string{"true": "read"}}},
		// A rule without a kind keeps the annotations' kind.
		{Tool{Name: "mkdir", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
			ToolKind{Kind: "write", Action: "write", Source: "config: mkdir"}},
		// The config overrides a read-only annotation: a write, destructive.
		{Tool{Name: "ro_but_write", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			ToolKind{Kind: "write", Action: "destructive", Source: "config: ro_but_write"}},
	} {
		got := cfg.Classify(tc.tool)
		got.rule = nil
		tc.want.Name = tc.tool.Name
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Classify(%s) = %+v, want %+v", tc.tool.Name, got, tc.want)
		}
	}
}

func TestKindsAddsConfiguredNames(t *testing.T) {
	cfg, _ := ParseConfig(strings.NewReader("mcp:\n  tools:\n    - {name: later, kind: read}\n    - {name: 'x_*', kind: read}\n"))
	got := cfg.Kinds([]Tool{{Name: "b"}, {Name: "a"}, {Name: "b"}})
	var names []string
	for _, k := range got {
		names = append(names, k.Name)
	}
	if want := []string{"b", "a", "later"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Kinds names = %v, want %v (server order, then configured exact names)", names, want)
	}
}

func TestExtractResources(t *testing.T) {
	cfg, err := ParseConfig(strings.NewReader(`
mcp:
  tools:
    - {name: ls, kind: resolve, resources: {line: '^\[(?P<kind>FILE|DIR)\] (?P<name>.+)$', join: path, self: true}}
    - {name: find, kind: resolve, resources: {line: '^(/.+)$'}}
    - {name: stat, kind: resolve, resources: {join: path, self: true, kind: path}}
`))
	if err != nil {
		t.Fatal(err)
	}
	type reg struct{ kind, name string }
	for _, tc := range []struct {
		tool string
		args map[string]any
		text string
		want []reg
	}{
		{"ls", map[string]any{"path": "/srv/./x/"}, "[FILE] a.txt\n[DIR] sub\r\nnoise\n[FILE] a.txt",
			[]reg{{"dir", "/srv/x"}, {"file", "/srv/x/a.txt"}, {"dir", "/srv/x/sub"}}},
		{"ls", map[string]any{}, "[FILE] a.txt", []reg{{"file", "a.txt"}}},
		{"find", nil, "/a/b\nrelative\n/c/../d", []reg{{"file", "/a/b"}, {"file", "/d"}}},
		{"stat", map[string]any{"path": "/srv/a"}, "size: 3", []reg{{"path", "/srv/a"}}},
		{"ls", map[string]any{"path": "/d"}, "[FILE] bad\x01name", []reg{{"dir", "/d"}}},
	} {
		r := cfg.rule(tc.tool)
		regs := extractResources(r.Resources, r.line, tc.args, tc.text)
		var got []reg
		for _, x := range regs {
			got = append(got, reg{x.Kind, x.Name})
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %v: got %v, want %v", tc.tool, tc.args, got, tc.want)
		}
	}
}

// FuzzParseConfig: any input parses or is refused with an error, never a
// panic; a config that parses classifies any tool to a kind the reducer
// knows (the property).
func FuzzParseConfig(f *testing.F) {
	if b, err := os.ReadFile("../../examples/mcp/filesystem.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("mcp:\n  tools:\n    - {name: 'a*', kind: read, action_kinds: {x: write}}\n  read: {max_reads: 2}\n"))
	f.Add([]byte("mcp: 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		for _, name := range []string{"a", "abc", "read_file", ""} {
			switch k := c.Classify(Tool{Name: name}); k.Kind {
			case "resolve", "read", "write", "search":
			default:
				t.Fatalf("Classify(%q) = kind %q", name, k.Kind)
			}
		}
	})
}
