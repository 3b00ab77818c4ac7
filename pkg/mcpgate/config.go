// Package mcpgate is gate's MCP front-end: a stdio proxy that relays an MCP
// client's JSON-RPC to a server it starts, and puts every tools/call through
// the session reducer first (DESIGN §14).
package mcpgate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/workflow"
	"github.com/govkit/govkit/pkg/strictjson"
)

// MaxConfig bounds a config file (DESIGN §3: bounded reads).
const MaxConfig = 1 << 20

// Config is the "mcp" section of gate mcp's --config file: which kind each
// of the server's tools is, how a resolve tool's result names resources, and
// the session's settings. The rest of the file is govkit's ordinary config
// (a "gate" section, shared keys such as url), which gate reads as it reads
// any config file.
type Config struct {
	// Tools are matched in order; the first rule whose name (exact, or a
	// path.Match glob) matches a tool decides its kind.
	Tools []ToolRule `yaml:"tools"`
	// StrictResolution: writes need their target discovered first (seed
	// 000 §4); nil means gate's default, on.
	StrictResolution *bool `yaml:"strict_resolution"`
	// Read is seed 004's read budget and ref gate for the tools of kind
	// read and search.
	Read *ReadConfig `yaml:"read"`
	// SessionID names the session in receipts; empty: gate draws one.
	SessionID string `yaml:"session_id"`
	// WorkspaceRoot keys the session (default: gate's working directory).
	WorkspaceRoot string `yaml:"workspace_root"`
	// AgentID goes into receipts.
	AgentID string `yaml:"agent_id"`
}

// ReadConfig is session.ReadConfig in YAML (docs/session.md "read").
type ReadConfig struct {
	MaxReads           int     `yaml:"max_reads"`
	MaxTotalLines      int     `yaml:"max_total_lines"`
	MaxSingleReadLines int     `yaml:"max_single_read_lines"`
	MaxPreviewChars    int     `yaml:"max_preview_chars"`
	SoftRatio          float64 `yaml:"soft_ratio"`
	MaxRangeLines      int     `yaml:"max_range_lines"`
	TopK               int     `yaml:"top_k"`
	Mode               string  `yaml:"mode"`
}

// ToolRule gives the tools it matches a kind, as session_start's ToolDecl
// does (docs/session.md "Tools").
type ToolRule struct {
	Name string `yaml:"name"`
	Kind string `yaml:"kind"`
	// Action is the class governance sees: read, write or destructive.
	// Default: read for resolve, read and search; destructive for write
	// unless the server says destructiveHint: false.
	Action      string            `yaml:"action"`
	ActionArg   string            `yaml:"action_arg"`
	ActionKinds map[string]string `yaml:"action_kinds"`
	TargetArgs  []string          `yaml:"target_args"`
	// Paths says the target arguments are file-system paths: they are
	// cleaned, and a path no result has shown yet (a new file) stands for
	// its directory when that was listed.
	Paths bool `yaml:"paths"`
	// Resources says how a resolve tool's result names the resources it
	// discovered.
	Resources *ResourceRule `yaml:"resources"`

	line *regexp.Regexp
}

// ResourceRule reads resources out of a resolve tool's text result.
type ResourceRule struct {
	// Kind of the resources (default "file"); a (?P<kind>…) group in Line
	// overrides it per line, lower-cased.
	Kind string `yaml:"kind"`
	// Line is a regexp applied to each line of the result's text; its
	// (?P<name>…) group, else its first group, else the whole match names
	// a resource.
	Line string `yaml:"line"`
	// Join is the argument naming the directory that relative names are
	// in: the resource is path.Join(args[Join], name).
	Join string `yaml:"join"`
	// Self registers the argument Join names as a resource itself (the
	// listed directory; get_file_info's file).
	Self bool `yaml:"self"`
}

// Actions: the class of what a tool does, for governance (toolgov's
// Call.Action).
const (
	ActionRead        = "read"
	ActionWrite       = "write"
	ActionDestructive = "destructive"
)

// ParseConfig reads a config file: its "mcp" section, which must be valid;
// a file without one gives the zero Config (annotations decide). Other
// top-level keys belong to govkit's ordinary config and are not looked at.
func ParseConfig(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxConfig+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxConfig {
		return nil, fmt.Errorf("larger than %d bytes", MaxConfig)
	}
	var top struct {
		MCP yaml.Node `yaml:"mcp"`
	}
	if err := yaml.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	cfg := &Config{}
	if top.MCP.Kind == 0 {
		return cfg, nil
	}
	if top.MCP.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: mcp: must be a mapping", top.MCP.Line)
	}
	// Decode the file again, the section strictly: a misspelt key would
	// otherwise silently leave a tool a write. The other sections go to
	// rest, unlooked at; errors keep the file's lines and name members and
	// types in the file's terms, never Go's (issue 20: not "field tols not
	// found in type mcpgate.Config").
	var strict struct {
		MCP  *Config        `yaml:"mcp"`
		Rest map[string]any `yaml:",inline"`
	}
	strict.MCP = cfg
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&strict); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("mcp: %w", strictjson.ExplainYAML(err, reflect.TypeFor[Config]()))
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Validate checks every rule and compiles its regexp; errors name the field.
func (c *Config) Validate() error {
	for i := range c.Tools {
		r := &c.Tools[i]
		field := fmt.Sprintf("mcp.tools[%d]", i)
		if r.Name == "" {
			return fmt.Errorf("%s.name: required (a tool name or a glob such as read_*)", field)
		}
		if _, err := path.Match(r.Name, ""); err != nil {
			return fmt.Errorf("%s.name: %q is not a valid glob", field, r.Name)
		}
		if r.Kind != "" {
			if _, ok := workflow.ParseKind(r.Kind); !ok {
				return fmt.Errorf("%s.kind: %q is not resolve, read, write or search", field, r.Kind)
			}
		}
		switch r.Action {
		case "", ActionRead, ActionWrite, ActionDestructive:
		default:
			return fmt.Errorf("%s.action: %q is not read, write or destructive", field, r.Action)
		}
		for v, k := range r.ActionKinds {
			if _, ok := workflow.ParseKind(k); !ok {
				return fmt.Errorf("%s.action_kinds[%q]: %q is not resolve, read, write or search", field, v, k)
			}
		}
		if rr := r.Resources; rr != nil {
			if r.Kind != "" && r.Kind != "resolve" {
				return fmt.Errorf("%s.resources: only a resolve tool registers resources (kind is %s)", field, r.Kind)
			}
			if rr.Line == "" && !rr.Self {
				return fmt.Errorf("%s.resources: give line (a regexp over the result's lines) or self: true", field)
			}
			if rr.Self && rr.Join == "" {
				return fmt.Errorf("%s.resources.self: needs join, the argument that names the resource", field)
			}
			if rr.Kind != "" && strings.ContainsAny(rr.Kind, ": \t") {
				return fmt.Errorf("%s.resources.kind: %q may not contain ':' or spaces", field, rr.Kind)
			}
			if rr.Line != "" {
				re, err := regexp.Compile(rr.Line)
				if err != nil {
					return fmt.Errorf("%s.resources.line: %v", field, err)
				}
				r.line = re
			}
		}
	}
	if c.Read != nil {
		switch c.Read.Mode {
		case "", "enforce", "warn", "off":
		default:
			return fmt.Errorf("mcp.read.mode: %q is not enforce, warn or off", c.Read.Mode)
		}
	}
	return nil
}

// sessionRead is the read section as session_start carries it.
func (c *Config) sessionRead() *session.ReadConfig {
	if c == nil || c.Read == nil {
		return nil
	}
	r := c.Read
	return &session.ReadConfig{MaxReads: r.MaxReads, MaxTotalLines: r.MaxTotalLines,
		MaxSingleReadLines: r.MaxSingleReadLines, MaxPreviewChars: r.MaxPreviewChars,
		SoftRatio: r.SoftRatio, MaxRangeLines: r.MaxRangeLines, TopK: r.TopK, Mode: r.Mode}
}

// rule is the first rule matching name, or nil.
func (c *Config) rule(name string) *ToolRule {
	if c == nil {
		return nil
	}
	for i := range c.Tools {
		r := &c.Tools[i]
		if r.Name == name {
			return r
		}
		if ok, _ := path.Match(r.Name, name); ok {
			return r
		}
	}
	return nil
}
