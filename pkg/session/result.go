package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/session/receipt"
	"github.com/govkit/govkit/pkg/session/resolved"
	"github.com/govkit/govkit/pkg/session/workflow"
)

// toolResult applies the outcome of an allowed call: a receipt for every
// execution (seed 002), the FSM transition of a success (seed 000 §8), the
// resources a resolve tool discovered (§5), and seed 004's read hook.
func (st *State) toolResult(ev *Event) {
	c, ok := st.pending[ev.CallID]
	if !ok {
		st.fail(ErrUnknownCall, "call_id "+ev.CallID+" was not allowed by this session, or its result already came")
		return
	}
	if ev.OK == nil {
		st.fail(ErrInvalidField, "tool_result.ok: required (true or false)")
		return
	}
	delete(st.pending, ev.CallID)
	out, errText := payloadText(ev.Data), ""
	if !*ev.OK {
		errText = payloadText(ev.Error)
	}
	excerpt := st.mintReceipt(c, *ev.OK, out, errText)
	if st.protocol == ProtocolEnvelope || c.text {
		st.turn.steps++
		st.turn.bytes += excerpt
		st.turn.afterResult = true
		if st.turn.steps >= st.cfg.steps || st.turn.bytes >= st.cfg.turnBytes {
			// Seed 002: at the cap the system forces a final response.
			st.turn.exhausted = true
			reason := "MAX_TOOL_BYTES_PER_TURN"
			if st.turn.steps >= st.cfg.steps {
				reason = "MAX_TOOL_STEPS"
			}
			st.emit(Effect{Type: EfForceFinal, TurnID: st.turn.id(), Reason: reason})
		}
	}
	if !*ev.OK {
		return // a failed tool causes no transition (seed 000 §7)
	}
	before := st.fsm.State
	st.fsm.OnToolSuccess(c.kind, c.name)
	if pr := st.fsm.CheckRecoverySuccess(c.name, st.now); pr != nil {
		st.metric(mRecoverySuccess, "error_code", pr.ErrorCode, "tool", pr.Tool)
	}
	switch c.kind {
	case workflow.KindResolve:
		st.register(ev.Resources)
	case workflow.KindRead:
		st.readResult(c, ev, out)
	case workflow.KindSearch:
		st.searchResult(c, ev.Data)
	}
	if st.fsm.State != before {
		st.emitState()
	}
}

// register adds what a resolve tool discovered. Only resolve tools may
// (seed 000 §5 Authoritative); a single resource is a get and marks
// explicit access, many are bulk discovery and never do (§2 Invariant 7).
func (st *State) register(regs []resolved.Registration) {
	explicit := len(regs) == 1
	for i, r := range regs {
		if _, err := st.ctx.Register(r, st.now, explicit); err != nil {
			st.fail(ErrInvalidField, fmt.Sprintf("tool_result.resources[%d]: %v", i, err))
		}
	}
}

// readResult is the exit half of seed 004's read hook: count, degrade,
// aggregate; and remember what was read, for the Evidence line's quotes.
func (st *State) readResult(c *call, ev *Event, out string) {
	lines, chars := strings.Count(out, "\n"), len(out)
	if out != "" && !strings.HasSuffix(out, "\n") {
		lines++
	}
	if ev.Lines != nil {
		lines = *ev.Lines
	}
	if ev.Chars != nil {
		chars = *ev.Chars
	}
	meta := st.guard.OnReadResult(c.read, lines, chars)
	meta.Warnings = append(c.meta.Warnings, meta.Warnings...)
	meta.ReasonCodes = mergeCodes(c.meta.ReasonCodes, meta.ReasonCodes)
	sm := &StabilizationMeta{Meta: meta}
	if out != "" {
		path := c.read.Path
		if path == "" {
			path = c.meta.Path
		}
		agg := st.agg.Add(path, c.read.StartLine, out)
		sm.Aggregated = &agg
		if st.evidence {
			// Only the Evidence line quotes the corpus: a session without
			// it (gate hook's) keeps no copy of what it read.
			st.content.add(path, out)
		}
	}
	for _, code := range meta.ReasonCodes {
		st.metric(mStabilization, "code", code)
	}
	st.emit(Effect{Type: EfStabilization, CallID: c.id, Meta: sm})
}

// searchResult issues seed 004's refs for a search's paths. The paths come
// from data as a list of strings, {"paths": […]} or {"results": [{"path"}]}.
func (st *State) searchResult(c *call, data json.RawMessage) {
	query, _ := c.args["query"].(string)
	meta := st.guard.OnSearchResult(c.name, st.readTool, query, searchPaths(data))
	for _, code := range meta.ReasonCodes {
		st.metric(mStabilization, "code", code)
	}
	st.emit(Effect{Type: EfStabilization, CallID: c.id, Meta: &StabilizationMeta{Meta: meta}})
}

func searchPaths(data json.RawMessage) []string {
	var paths []string
	if json.Unmarshal(data, &paths) == nil {
		return paths
	}
	var obj struct {
		Paths   []string `json:"paths"`
		Results []struct {
			Path string `json:"path"`
		} `json:"results"`
	}
	if json.Unmarshal(data, &obj) != nil {
		return nil
	}
	paths = obj.Paths
	for _, r := range obj.Results {
		if r.Path != "" {
			paths = append(paths, r.Path)
		}
	}
	return paths
}

func mergeCodes(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, c := range b {
		found := false
		for _, x := range out {
			if x == c {
				found = true
				break
			}
		}
		if !found {
			out = append(out, c)
		}
	}
	return out
}

// payloadText is a result's text: a JSON string's contents, an object's
// "content" string, else the JSON itself.
func payloadText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	if raw[0] == '{' {
		var obj struct {
			Content *string `json:"content"`
		}
		if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
			return *obj.Content
		}
	}
	return string(raw)
}

// mintReceipt signs a receipt for one execution, success or not (seed 002
// Tool Receipts), and returns how many bytes of output it fed back.
func (st *State) mintReceipt(c *call, ok bool, output, errText string) int {
	if st.opts.ReceiptKey == nil {
		st.fail("RECEIPT_KEY_MISSING", "no receipt key: the call "+c.id+" ran without a receipt")
		return 0
	}
	limit := st.cfg.stepBytes
	if left := st.cfg.turnBytes - st.turn.bytes; left < limit {
		limit = max(left, 0)
	}
	excerpt, sum, full, truncated := receipt.Excerpt([]byte(output), limit)
	inputs, _ := json.Marshal(c.args)
	if c.args == nil {
		inputs = []byte("{}")
	}
	st.nReceipt++
	r := receipt.Receipt{
		ReceiptID: "rcpt_" + st.derive("receipt", st.nReceipt)[:16],
		SessionID: st.id,
		TurnID:    st.turn.id(),
		AgentID:   st.agentID,
		ToolID:    c.name,
		CallID:    c.id,
		OK:        ok,
		Inputs:    inputs,
		Excerpt:   excerpt,
		SHA256:    sum,
		FullSize:  full,
		Truncated: truncated,
		Timestamp: st.now.UTC().Format(time.RFC3339Nano),
	}
	if !truncated {
		r.Outputs, r.Excerpt = excerpt, ""
	}
	if !ok {
		r.Error = errText
	}
	if c.kind == workflow.KindRead && c.read.Path != "" {
		_, esum, _, _ := receipt.Excerpt([]byte(excerpt), len(excerpt))
		r.FileRefs = []receipt.FileRef{{Path: c.read.Path, ExcerptSHA256: esum}}
	}
	receipt.Sign(&r, st.opts.ReceiptKey)
	st.receipts[r.ReceiptID] = true
	st.emit(Effect{Type: EfReceipt, CallID: c.id, Receipt: &r})
	return len(excerpt)
}

// resolve applies a user's @mention: a registration, or the name of a
// resource already known. It marks explicit access unless explicit is
// false, and counts as a resolution for the FSM.
func (st *State) resolve(ev *Event) {
	explicit := ev.Explicit == nil || *ev.Explicit
	raw := bytes.TrimSpace(ev.Resource)
	if len(raw) == 0 {
		st.fail(ErrInvalidField, "resolve.resource: required (a registration object or a known name)")
		return
	}
	var key string
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			st.fail(ErrInvalidField, "resolve.resource: "+err.Error())
			return
		}
		if explicit {
			if !st.ctx.MarkExplicitAccess(name, st.now) {
				st.fail(ErrUnknownResource, "resolve.resource: "+name+" is not in this session's resolved context; send its registration")
				return
			}
		} else if _, ok := st.ctx.Lookup(name, st.now); !ok {
			st.fail(ErrUnknownResource, "resolve.resource: "+name+" is not in this session's resolved context; send its registration")
			return
		}
		key = name
	} else {
		var reg resolved.Registration
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&reg); err != nil {
			st.fail(ErrInvalidField, "resolve.resource: "+decodeError(err).Detail)
			return
		}
		r, err := st.ctx.Register(reg, st.now, explicit)
		if err != nil {
			st.fail(ErrInvalidField, "resolve.resource: "+err.Error())
			return
		}
		key = r.ID
	}
	if ev.Pin {
		st.ctx.Pin(key, st.now)
	}
	before := st.fsm.State
	st.fsm.OnToolSuccess(workflow.KindResolve, "resolve")
	if st.fsm.State != before {
		st.emitState()
	}
}

// clear is seed 000's ClearSessionState: the context and the FSM reset
// together, never one without the other (§5 Coherent Reset).
func (st *State) clear(keepPinned bool) {
	st.ctx.Clear(keepPinned)
	if keepPinned && st.ctx.HasAny(st.now) {
		st.fsm.ResetKeepProgress()
	} else {
		st.fsm.Reset()
	}
	st.agg.Break()
	st.emitState()
}

// tick advances the session's clock without any other event: TTLs and
// recovery expiry follow it.
func (st *State) tick(now string) {
	t, err := time.Parse(time.RFC3339Nano, now)
	if err != nil {
		st.fail(ErrInvalidField, fmt.Sprintf("tick.now: %q is not an RFC 3339 time", now))
		return
	}
	if t.After(st.now) {
		st.now = t
	}
	st.fsm.PendingRecoveries(st.now)
}

// corpus is what the session read through receipted tool results, for the
// Evidence line's quotes (seed 002), bounded so a long session cannot grow
// it without limit: the oldest reads go first.
type corpus struct {
	files map[string]string
	order []string
	size  int
}

const corpusLimit = 8 << 20

func newCorpus() corpus { return corpus{files: map[string]string{}} }

func (c *corpus) add(path, text string) {
	if old, ok := c.files[path]; ok {
		c.size -= len(old)
	} else {
		c.order = append(c.order, path)
	}
	c.files[path] = text
	c.size += len(text)
	for c.size > corpusLimit && len(c.order) > 1 {
		p := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.files[p])
		delete(c.files, p)
	}
}

// sources adapts the session to evidence.Sources.
type sources struct{ st *State }

func (s sources) Content(path string) (string, bool) {
	t, ok := s.st.content.files[path]
	return t, ok
}

func (s sources) HasReceipt(id string) bool { return s.st.receipts[id] }

func (s sources) AnyContent(quote string) bool {
	for _, t := range s.st.content.files {
		if strings.Contains(t, quote) {
			return true
		}
	}
	return false
}
