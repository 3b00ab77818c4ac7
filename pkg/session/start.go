package session

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/govkit/govkit/pkg/session/aggregate"
	"github.com/govkit/govkit/pkg/session/envelope"
	"github.com/govkit/govkit/pkg/session/phantom"
	"github.com/govkit/govkit/pkg/session/readguard"
	"github.com/govkit/govkit/pkg/session/resolved"
	"github.com/govkit/govkit/pkg/session/workflow"
)

// Protocols of a session: native tool_call events under seeds 000/004, or
// seed 002's text envelope on top.
const (
	ProtocolNative   = "native"
	ProtocolEnvelope = "envelope"
)

// Seed 002's per-turn budgets (Tool Execution Loop constants).
const (
	defaultMaxToolSteps = 3
	defaultStepBytes    = 2000
	defaultTurnBytes    = 6000
)

// start applies session_start: every guard is built from the declared
// tools and config, or the session does not start and the error names the
// field.
func (st *State) start(ev *Event) {
	if st.started {
		st.fail(ErrAlreadyStarted, "this connection already carries session "+st.id+"; start another connection for a new session")
		return
	}
	if ev.SchemaVersion != SchemaVersion {
		st.fail(ErrInvalidField, fmt.Sprintf("schema_version: got %d, this gate speaks %d", ev.SchemaVersion, SchemaVersion))
		return
	}
	cfg := Config{}
	if ev.Config != nil {
		cfg = *ev.Config
	}
	if cfg.StrictSessionID && ev.SessionID == "" {
		st.fail(ErrSessionIDRequired, "session_id: required when config.strict_session_id is set (seed 004 STRICT_SESSION_ID)")
		return
	}
	switch cfg.Protocol {
	case "", ProtocolNative, ProtocolEnvelope:
	default:
		st.fail(ErrInvalidField, fmt.Sprintf("config.protocol: %q is neither %q nor %q", cfg.Protocol, ProtocolNative, ProtocolEnvelope))
		return
	}
	tools, schema, err := buildTools(ev.Tools)
	if err != nil {
		st.fail(ErrInvalidField, err.Error())
		return
	}
	rcfg, err := readConfig(cfg.Read)
	if err != nil {
		st.fail(ErrInvalidField, err.Error())
		return
	}
	det, err := phantom.Default().With(cfg.PhantomPatterns)
	if err != nil {
		st.fail(ErrInvalidField, "config.phantom_patterns: "+err.Error())
		return
	}
	seed, err := hex.DecodeString(ev.Seed)
	if err != nil || (ev.Seed != "" && len(seed) < 16) {
		st.fail(ErrInvalidField, "seed: want at least 16 bytes of hex")
		return
	}
	if len(seed) == 0 {
		// Without a driver's seed (a hand-written log, a unit test) the
		// session still replays; its nonces are then guessable, which is why
		// gate session always stamps one.
		s := sha256.Sum256([]byte("govkit session seed\x00" + ev.SessionID))
		seed = s[:]
	}

	st.started = true
	// Only session_start's own fields: a driver that builds events in Go
	// may leave others set, and Restore replays exactly this.
	st.begin = Event{Type: ev.Type, At: ev.At, SchemaVersion: ev.SchemaVersion, SessionID: ev.SessionID,
		WorkspaceRoot: ev.WorkspaceRoot, ConnectionID: ev.ConnectionID, Mode: ev.Mode, Model: ev.Model,
		ContextWindow: ev.ContextWindow, Tools: ev.Tools, Config: ev.Config, Seed: ev.Seed,
		ServerConnectionID: ev.ServerConnectionID, WorkspaceRealpath: ev.WorkspaceRealpath}
	st.id = ev.SessionID
	st.seed = seed
	st.client = ev.ConnectionID
	st.conn = ev.ServerConnectionID
	if st.conn == "" {
		st.conn = "conn-" + st.derive("connection", 0)[:16]
	}
	st.key = sessionKey(ev, st.conn)
	st.protocol = cfg.Protocol
	if st.protocol == "" {
		st.protocol = ProtocolNative
	}
	st.strict = true
	if st.opts.StrictResolution != nil {
		st.strict = *st.opts.StrictResolution
	}
	if cfg.StrictResolution != nil {
		st.strict = *cfg.StrictResolution
	}
	st.classify = cfg.ClassifyCommands
	st.evidence = cfg.Evidence == nil || *cfg.Evidence
	st.provider = sanitizeLabel(cfg.Provider)
	st.model = sanitizeLabel(ev.Model)
	st.agent = sanitizeLabel(cfg.AgentID)
	st.agentID = cfg.AgentID
	st.tools = tools
	st.schema = schema
	if len(cfg.AllowedTools) > 0 {
		st.allowed = map[string]bool{}
		for _, n := range cfg.AllowedTools {
			st.allowed[n] = true
		}
	}
	st.fsm = workflow.NewFSM()
	ccfg := resolved.DefaultConfig()
	if cfg.ContextTTLSeconds > 0 {
		ccfg.TTL = time.Duration(cfg.ContextTTLSeconds) * time.Second
		ccfg.ExplicitWindow = ccfg.TTL
	}
	if cfg.ContextMaxEntries > 0 {
		ccfg.MaxEntries = cfg.ContextMaxEntries
	}
	st.ctx = resolved.New(ccfg)
	hasSearch := false
	for _, d := range ev.Tools {
		if d.Kind == "search" {
			hasSearch = true
		}
		if d.Kind == "read" && st.readTool == "" {
			st.readTool = d.Name
		}
	}
	st.guard = readguard.New(rcfg, hasSearch)
	st.agg = aggregate.New(rcfg.MaxPreviewChars)
	st.phantom = det.WithToolNames(tools.Names())
	st.cfg = limits{steps: defaultMaxToolSteps, stepBytes: defaultStepBytes, turnBytes: defaultTurnBytes, requireTool: cfg.RequireTool}
	if cfg.MaxToolSteps > 0 {
		st.cfg.steps = cfg.MaxToolSteps
	}
	if cfg.MaxToolBytesPerStep > 0 {
		st.cfg.stepBytes = cfg.MaxToolBytesPerStep
	}
	if cfg.MaxToolBytesPerTurn > 0 {
		st.cfg.turnBytes = cfg.MaxToolBytesPerTurn
	}
	st.content = newCorpus()
	st.beginTurn()
	st.emitState()
	st.announceTurn()
}

// buildTools turns the declared tools into the workflow table and, for the
// tools that declare args, seed 002's schema.
func buildTools(decls []ToolDecl) (*workflow.Table, *envelope.Schema, error) {
	tools := make([]workflow.Tool, 0, len(decls))
	args := map[string]map[string]envelope.ArgSpec{}
	for i, d := range decls {
		kind, ok := workflow.ParseKind(d.Kind)
		if !ok {
			return nil, nil, fmt.Errorf("tools[%d].kind: %q is not resolve, read, write or search", i, d.Kind)
		}
		t := workflow.Tool{Name: d.Name, Kind: kind, ActionArg: d.ActionArg, TargetArgs: d.TargetArgs, CommandArg: d.CommandArg}
		if len(d.ActionKinds) > 0 {
			t.ActionKinds = make(map[string]workflow.Kind, len(d.ActionKinds))
			values := make([]string, 0, len(d.ActionKinds))
			for v := range d.ActionKinds {
				values = append(values, v)
			}
			sort.Strings(values)
			for _, v := range values {
				k, ok := workflow.ParseKind(d.ActionKinds[v])
				if !ok {
					return nil, nil, fmt.Errorf("tools[%d].action_kinds[%q]: %q is not resolve, read, write or search", i, v, d.ActionKinds[v])
				}
				t.ActionKinds[v] = k
			}
		}
		tools = append(tools, t)
		args[d.Name] = d.Args // nil: args unchecked (pkg/session/envelope)
	}
	table, err := workflow.NewTable(tools)
	if err != nil {
		return nil, nil, fmt.Errorf("tools: %w", err)
	}
	schema, err := envelope.NewSchema(args)
	if err != nil {
		return nil, nil, fmt.Errorf("tools: %w", err)
	}
	return table, schema, nil
}

// readConfig overlays a session's read settings on seed 004's defaults.
func readConfig(rc *ReadConfig) (readguard.Config, error) {
	c := readguard.DefaultConfig()
	if rc == nil {
		return c, nil
	}
	set := func(dst *int, v int, name string) error {
		if v < 0 {
			return fmt.Errorf("config.read.%s: must not be negative", name)
		}
		if v > 0 {
			*dst = v
		}
		return nil
	}
	for _, f := range []struct {
		dst  *int
		v    int
		name string
	}{
		{&c.MaxReads, rc.MaxReads, "max_reads"},
		{&c.MaxTotalLines, rc.MaxTotalLines, "max_total_lines"},
		{&c.MaxSingleReadLines, rc.MaxSingleReadLines, "max_single_read_lines"},
		{&c.MaxPreviewChars, rc.MaxPreviewChars, "max_preview_chars"},
		{&c.MaxRangeLines, rc.MaxRangeLines, "max_range_lines"},
		{&c.TopK, rc.TopK, "top_k"},
	} {
		if err := set(f.dst, f.v, f.name); err != nil {
			return c, err
		}
	}
	if rc.SoftRatio < 0 || rc.SoftRatio > 1 {
		return c, fmt.Errorf("config.read.soft_ratio: %v is not between 0 and 1", rc.SoftRatio)
	}
	if rc.SoftRatio > 0 {
		c.SoftRatio = rc.SoftRatio
	}
	switch rc.Mode {
	case "":
	case "enforce", "warn", "off":
		c.Mode = rc.Mode
	default:
		return c, fmt.Errorf("config.read.mode: %q is not enforce, warn or off", rc.Mode)
	}
	switch rc.Budget {
	case "":
	case "enforce", "warn":
		c.Budget = rc.Budget
	default:
		return c, fmt.Errorf("config.read.budget: %q is neither enforce nor warn", rc.Budget)
	}
	return c, nil
}

// sessionKey is seed 004's session identity:
// ws:<sha1(workspace real path)[:12]>:sid:<session_id>, or :conn:<the
// connection id this driver issued> without a session id. The client's own
// connection id never enters it (seed 004 Session Identity).
func sessionKey(ev *Event, conn string) string {
	root := ev.WorkspaceRealpath
	if root == "" && ev.WorkspaceRoot != "" {
		root = filepath.Clean(ev.WorkspaceRoot)
	}
	sum := sha1.Sum([]byte(filepath.ToSlash(root)))
	ws := "ws:" + hex.EncodeToString(sum[:])[:12]
	if ev.SessionID != "" {
		return ws + ":sid:" + ev.SessionID
	}
	return ws + ":conn:" + conn
}

// derive draws the n-th value of a purpose from the session's seed: nonces
// and receipt ids the model cannot predict, which a replay reproduces.
func (st *State) derive(purpose string, n int) string {
	m := hmac.New(sha256.New, st.seed)
	fmt.Fprintf(m, "%s\x00%d", purpose, n)
	return hex.EncodeToString(m.Sum(nil))
}

func (st *State) emitState() {
	v := st.View()
	st.emit(Effect{Type: EfState, State: &v})
}
