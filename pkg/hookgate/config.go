package hookgate

import (
	"fmt"
	"path"
	"time"

	"github.com/govkit/govkit/pkg/session"
)

// Config is what a hook session is started with: the session reducer's
// knobs as `gate hook` exposes them.
type Config struct {
	// StrictResolution: an edit of a file never read or listed in the
	// session is refused (STRICT_RESOLUTION). nil: on.
	StrictResolution *bool
	// ContextTTL: a file not touched for this long must be looked at again;
	// the state file itself expires after it (seed 000 §5's sliding TTL).
	ContextTTL time.Duration
	// ContextMaxEntries bounds the files a session remembers (LRU).
	ContextMaxEntries int
	// ReadBudget is "warn" (the default: budgets are soft limits whose
	// warnings reach the model) or "enforce" (a spent budget refuses the
	// read, seed 004 BUDGET_HARD_LIMIT).
	ReadBudget string
	// ReadMode is seed 004's search → ref → read gate: "off" (the default
	// for coding agents), "warn" or "enforce".
	ReadMode string
	// Read overrides seed 004's limits (max_reads, max_total_lines, …).
	Read session.ReadConfig
	// MCPTools give MCP tools a kind (read, search, resolve; anything
	// else is a write): first match wins.
	MCPTools []ToolRule
}

// ToolRule gives the tools whose name matches Match (a path.Match glob) a
// kind.
type ToolRule struct {
	Match string `yaml:"match" json:"match"`
	Kind  string `yaml:"kind" json:"kind"`
}

// Defaults for coding agents.
const (
	DefaultContextTTL        = 45 * time.Minute
	DefaultContextMaxEntries = 1000
)

// Validate names the first setting that cannot work.
func (c Config) Validate() error {
	if c.ContextTTL < 0 {
		return fmt.Errorf("context TTL %v is negative", c.ContextTTL)
	}
	if c.ContextMaxEntries < 0 {
		return fmt.Errorf("context max entries %d is negative", c.ContextMaxEntries)
	}
	switch c.ReadBudget {
	case "", "warn", "enforce":
	default:
		return fmt.Errorf("read budget %q is neither warn nor enforce", c.ReadBudget)
	}
	switch c.ReadMode {
	case "", "off", "warn", "enforce":
	default:
		return fmt.Errorf("read mode %q is not off, warn or enforce", c.ReadMode)
	}
	for i, r := range c.MCPTools {
		if _, err := path.Match(r.Match, ""); err != nil || r.Match == "" {
			return fmt.Errorf("mcp_tools[%d].match: %q is not a glob", i, r.Match)
		}
		switch r.Kind {
		case "read", "search", "resolve", "write":
		default:
			return fmt.Errorf("mcp_tools[%d].kind: %q is not read, search, resolve or write", i, r.Kind)
		}
	}
	return nil
}

// TTL is the effective context TTL.
func (c Config) TTL() time.Duration {
	if c.ContextTTL > 0 {
		return c.ContextTTL
	}
	return DefaultContextTTL
}

// mcpKind is the kind configuration gives an MCP tool ("" for write).
func (c Config) mcpKind(tool string) string {
	for _, r := range c.MCPTools {
		if ok, _ := path.Match(r.Match, tool); ok {
			if r.Kind == "write" {
				return ""
			}
			return r.Kind
		}
	}
	return ""
}

// sessionConfig is session_start.config for a hook session.
func (c Config) sessionConfig(agent string) *session.Config {
	rc := c.Read
	rc.Mode = c.ReadMode
	if rc.Mode == "" {
		rc.Mode = "off"
	}
	rc.Budget = c.ReadBudget
	if rc.Budget == "" {
		rc.Budget = "warn"
	}
	max := c.ContextMaxEntries
	if max == 0 {
		max = DefaultContextMaxEntries
	}
	evidence := false
	return &session.Config{
		StrictResolution:  c.StrictResolution,
		ContextTTLSeconds: int(c.TTL() / time.Second),
		ContextMaxEntries: max,
		Read:              &rc,
		Evidence:          &evidence,
		AgentID:           agent,
	}
}
