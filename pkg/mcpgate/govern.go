package mcpgate

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/receipt"
	"github.com/govkit/govkit/pkg/session/resolved"
	"github.com/govkit/govkit/pkg/session/response"
)

// governor drives one reducer session (pkg/session) for the proxy: a
// tools/call becomes a tool_call event, its result a tool_result event. It
// is not safe for concurrent use; the proxy holds its lock.
type governor struct {
	st    *session.State
	cfg   *Config
	kinds map[string]ToolKind // declared at session_start
	known map[string]bool     // resource names registered, for path targets
	now   func() time.Time
	n     int
	id    string
}

// maxKnown bounds the names kept for path targets; the reducer's own
// context is far smaller (500 entries, seed 000 §5), so a name forgotten
// here is one the reducer evicted long ago.
const maxKnown = 1 << 16

// maxResources bounds the registrations one result may make.
const maxResources = 1000

// sessionStart is what a session needs besides its tools.
type sessionStart struct {
	cfg        *Config
	opts       session.Options
	now        func() time.Time
	rand       io.Reader
	dir        string // workspace real path
	serverName string
}

// startGovernor starts a reducer session declaring kinds.
func startGovernor(s sessionStart, kinds map[string]ToolKind) (*governor, error) {
	var seed [48]byte
	if _, err := io.ReadFull(s.rand, seed[:]); err != nil {
		return nil, fmt.Errorf("drawing a session seed: %w", err)
	}
	cfg := s.cfg
	if cfg == nil {
		cfg = &Config{}
	}
	id := cfg.SessionID
	if id == "" {
		id = "mcp-" + hex.EncodeToString(seed[32:40])
	}
	conn := hex.EncodeToString(seed[40:48])
	g := &governor{st: session.New(s.opts), cfg: cfg, kinds: kinds, known: map[string]bool{}, now: s.now, id: id}
	sc := &session.Config{StrictResolution: cfg.StrictResolution, Read: cfg.sessionRead(),
		Provider: "mcp", AgentID: cfg.AgentID}
	if sc.AgentID == "" && s.serverName != "" {
		sc.AgentID = "mcp:" + s.serverName
	}
	ev := session.Event{Type: session.EvSessionStart, SchemaVersion: session.SchemaVersion,
		SessionID: id, WorkspaceRoot: cfg.WorkspaceRoot, Tools: decls(kinds), Config: sc,
		Seed: hex.EncodeToString(seed[:32]), ServerConnectionID: conn, WorkspaceRealpath: s.dir}
	for _, e := range g.apply(ev) {
		if e.Type == session.EfError {
			return nil, fmt.Errorf("%s", e.Detail)
		}
	}
	return g, nil
}

func (g *governor) apply(ev session.Event) []session.Effect {
	ev.At = g.now().UTC().Format(time.RFC3339Nano)
	_, effects := session.Transition(g.st, ev)
	return effects
}

// kind is how the session governs a tool: as declared, else a write (an
// undeclared tool is a write: seed 000 §7).
func (g *governor) kind(name string) ToolKind {
	if k, ok := g.kinds[name]; ok {
		return k
	}
	return ToolKind{Name: name, Kind: "write", Action: ActionDestructive, Source: "default: not listed when the session started"}
}

// verdict is the reducer's answer to a tool call.
type verdict struct {
	callID   string
	kind     ToolKind
	block    *response.ToolResponse // nil: allowed
	warnings []string
	args     map[string]any // as the reducer saw them
	asked    map[string]any // as the client sent them
	// approvalID is the approval auditd consumed for this call.
	approvalID string
}

// call puts one tools/call before the reducer.
func (g *governor) call(name string, args map[string]any) verdict {
	g.n++
	v := verdict{callID: "mcp-" + strconv.Itoa(g.n), kind: g.kind(name), args: g.target(name, args), asked: args}
	if v.args == nil {
		v.args = map[string]any{}
	}
	for _, e := range g.apply(session.Event{Type: session.EvToolCall, CallID: v.callID, Name: name, Args: v.args}) {
		switch e.Type {
		case session.EfAllow:
			v.warnings = e.Warnings
			if k := e.Kind; k != "" && k != v.kind.Kind {
				v.kind.Kind = k // action_kinds chose another kind for this call
			}
			return v
		case session.EfBlock:
			v.block = e.Response
			return v
		case session.EfError:
			// Fail closed (DESIGN §3): what the reducer could not take
			// does not run.
			r := response.Blocked(response.InvalidInput, "gate could not govern this call: "+e.Detail,
				map[string]any{"recovery_hint": "check the tool's arguments", "reducer_code": e.Code})
			v.block = &r
			return v
		}
	}
	r := response.Blocked(response.InvalidInput, "gate's session gave no verdict for this call",
		map[string]any{"recovery_hint": "retry the call"})
	v.block = &r
	return v
}

// target applies ToolRule.Paths: the target argument cleaned, and a path
// no result has shown yet replaced by its directory when that was listed,
// so that creating a file in a listed directory is not STRICT_RESOLUTION.
// The substitute goes into its own argument (targetArg), so receipts show
// both what was asked and what it was resolved against.
func (g *governor) target(name string, args map[string]any) map[string]any {
	k, ok := g.kinds[name]
	if !ok || k.rule == nil || !k.rule.Paths {
		return args
	}
	for _, a := range k.rule.TargetArgs {
		s, ok := args[a].(string)
		if !ok || s == "" {
			continue
		}
		p := path.Clean(s)
		switch {
		case g.known[p]:
		case g.known[path.Dir(p)]:
			p = path.Dir(p)
		}
		if p == s {
			return args
		}
		out := make(map[string]any, len(args)+1)
		for k, v := range args {
			out[k] = v
		}
		out[targetArg] = p
		return out
	}
	return args
}

// outcome is what the reducer said of a result.
type outcome struct {
	receipt *receipt.Receipt
	meta    *session.StabilizationMeta
	errors  []string
}

// result feeds a call's result to the reducer: ok is !isError, text the
// result's text content; a resolve tool's resources are read from it.
func (g *governor) result(v *verdict, ok bool, text, errText string) outcome {
	ev := session.Event{Type: session.EvToolResult, CallID: v.callID, OK: &ok}
	if text != "" {
		ev.Data = jsonString(text)
	}
	if !ok && errText != "" {
		ev.Error = jsonString(errText)
	}
	if ok && v.kind.Kind == "resolve" {
		ev.Resources = g.resources(v, text)
	}
	var out outcome
	for _, e := range g.apply(ev) {
		switch e.Type {
		case session.EfReceipt:
			out.receipt = e.Receipt
		case session.EfStabilization:
			out.meta = e.Meta
		case session.EfError:
			out.errors = append(out.errors, e.Code+": "+e.Detail)
		}
	}
	return out
}

// resources reads what a resolve tool discovered (ToolRule.Resources).
func (g *governor) resources(v *verdict, text string) []resolved.Registration {
	if v.kind.rule == nil || v.kind.rule.Resources == nil {
		return nil
	}
	regs := extractResources(v.kind.rule.Resources, v.kind.rule.line, v.args, text)
	for _, r := range regs {
		if len(g.known) < maxKnown {
			g.known[r.Name] = true
		}
	}
	return regs
}

// extractResources applies a ResourceRule to a result's text.
func extractResources(rr *ResourceRule, re *regexp.Regexp, args map[string]any, text string) []resolved.Registration {
	kind := rr.Kind
	if kind == "" {
		kind = "file"
	}
	base := ""
	if rr.Join != "" {
		if s, ok := args[rr.Join].(string); ok && s != "" {
			base = path.Clean(s)
		}
	}
	var regs []resolved.Registration
	seen := map[string]bool{}
	add := func(kind, name string) {
		if name == "" || seen[name] || len(regs) >= maxResources {
			return
		}
		r := resolved.Registration{Kind: kind, ProviderUID: name, Name: name}
		if r.Validate() != nil {
			return // a name the context cannot hold (too long, control characters)
		}
		seen[name] = true
		regs = append(regs, r)
	}
	if rr.Self && base != "" {
		self := kind
		if re != nil {
			self = "dir"
		}
		add(self, base)
	}
	if re == nil {
		return regs
	}
	nameIdx, kindIdx := re.SubexpIndex("name"), re.SubexpIndex("kind")
	if nameIdx < 0 && re.NumSubexp() > 0 {
		nameIdx = 1
	}
	for _, line := range strings.Split(text, "\n") {
		m := re.FindStringSubmatch(strings.TrimRight(line, "\r"))
		if m == nil {
			continue
		}
		name := m[0]
		if nameIdx >= 0 {
			name = m[nameIdx]
		}
		if name == "" {
			continue
		}
		if base != "" && !path.IsAbs(name) {
			name = path.Join(base, name)
		} else {
			name = path.Clean(name)
		}
		k := kind
		if kindIdx >= 0 && m[kindIdx] != "" {
			k = strings.ToLower(m[kindIdx])
		}
		add(k, name)
	}
	return regs
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
