package hookgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/intent"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/resolved"
	"github.com/govkit/govkit/pkg/session/response"
	"github.com/govkit/govkit/pkg/termtext"
	"github.com/govkit/govkit/pkg/toolgov"
)

// call is a pre-tool event as the reducer and auditd see it.
type call struct {
	spec   toolSpec
	name   string // the reducer's tool name
	args   map[string]any
	path   string   // the file or directory it acts on
	extra  []string // further files an apply_patch changes
	action string   // read | write | destructive
	raw    string   // the command, else the input, for auditd
	class  *intent.Result
}

// preTool decides a tool call: the session reducer first (Gate 1, strict
// resolution, routing, the read guard), then, for a write, auditd's policy
// with --url or --on-write without.
func (r *run) preTool(ctx context.Context, ev hook.Event) hook.Decision {
	c, early := r.describe(ev)
	if early != nil {
		r.record(ctx, c, toolgov.Record{Type: toolgov.TypeHookDecision, Status: string(early.Permission), Reason: early.Reason, Code: codeOf(*early)})
		return *early
	}
	r.mem.Next++
	id := "c" + strconv.Itoa(r.mem.Next)
	key := callKey(ev)
	if old, ok := r.mem.take(ev.CallID, key); ok && ev.CallID != "" {
		// The agent sent this call again: the first one never ran.
		r.notRun(old, "the agent sent the call again")
	} else if ok {
		r.mem.add(old) // same tool and input, different call: keep it
	}
	if len(c.extra) > 0 {
		for _, f := range c.extra {
			if !r.st.Resolved(fileKey(f)) && r.strict() {
				resp := resolved.StrictResolution(f, "write")
				d := blocked(resp)
				r.record(ctx, c, toolgov.Record{Type: toolgov.TypeHookDecision, Status: "deny", Code: response.StrictResolution, Reason: d.Reason})
				return d
			}
		}
	}
	effects := r.transition(session.Event{Type: session.EvToolCall, CallID: id, Name: c.name, Args: c.args})
	var warnings []string
	allowed := false
	for _, e := range effects {
		switch e.Type {
		case session.EfBlock:
			d := blocked(*e.Response)
			r.record(ctx, c, toolgov.Record{Type: toolgov.TypeHookDecision, Status: "deny", Code: e.Response.Error.Code, Reason: d.Reason})
			return d
		case session.EfAllow:
			allowed = true
			warnings = append(warnings, e.Warnings...)
		case session.EfError:
			return Failure("the session refused the event: " + e.Code + ": " + e.Detail)
		}
	}
	if !allowed {
		return Failure("the session gave no decision")
	}
	p := pending{ID: id, AgentID: ev.CallID, Key: key, Tool: ev.Tool, Role: c.spec.role, Path: c.path, Action: c.action, Raw: c.raw}
	var d hook.Decision
	if c.action == string(intent.ActionRead) {
		d = hook.Decision{Permission: hook.Allow, Reason: "govkit gate: " + ev.Tool + " reads; the session allows it"}
	} else {
		d = r.decideWrite(ctx, ev, c, &p)
	}
	if len(warnings) > 0 {
		d.Context = "govkit gate: " + strings.Join(warnings, " ")
	}
	if d.Permission != hook.Deny {
		// Every call that may run is in auditd's chain first (with --url):
		// one that cannot be recorded does not run.
		err := r.record(ctx, c, toolgov.Record{Type: toolgov.TypeHookDecision, Status: string(d.Permission), Reason: d.Reason, ApprovalID: p.ApprovalID, Call: toolgov.Call{CallID: id}})
		if err != nil {
			d = Failure("auditd did not record the decision: " + err.Error())
		}
	}
	if d.Permission == hook.Deny {
		r.notRun(p, "refused: "+d.Reason)
		return d
	}
	for _, old := range r.mem.add(p) {
		r.notRun(old, "no result was reported for it")
	}
	return d
}

// describe turns a pre-tool event into the reducer's call, or decides it
// at once: a tool that acts on nothing, a command that never ends.
func (r *run) describe(ev hook.Event) (call, *hook.Decision) {
	spec := specOf(ev)
	input := inputMap(ev.Input)
	c := call{spec: spec, name: reducerName(ev), args: map[string]any{}, action: string(intent.ActionWrite)}
	raw, _ := json.Marshal(input)
	c.raw = rawOf(ev.Tool + " " + string(raw))
	cwd := ev.Cwd
	switch spec.role {
	case roleNeutral:
		c.action = string(intent.ActionRead)
		return c, &hook.Decision{Permission: hook.Allow, Reason: "govkit gate: " + ev.Tool + " acts on no file or system"}
	case roleShell:
		c.raw = rawOf(ev.Command)
		if strings.TrimSpace(ev.Command) == "" {
			d := Failure("the event has no command")
			return c, &d
		}
		res := r.g.Classify(ev.Command, cwd)
		c.class = &res
		c.args["command"] = ev.Command
		switch {
		case res.Verdict() == intent.VerdictUnbounded:
			d := hook.DecideCommand(res, r.g.Policy)
			return c, &d
		case res.ReadOnly() && res.Bounded:
			c.args["intent"] = "read_only"
			c.action = string(intent.ActionRead)
		default:
			c.args["intent"] = "write"
			if res.ActionClass == intent.ActionDestructive {
				c.action = string(intent.ActionDestructive)
			}
		}
	case roleRead:
		c.action = string(intent.ActionRead)
		c.path = absPath(stringIn(input, spec.paths), cwd)
		if c.path != "" {
			c.args["path"] = c.path
		}
		start, limit := intIn(input, "offset", "start_line"), intIn(input, "limit", "")
		if end := intIn(input, "end_line", ""); end > 0 {
			limit = end - max(start, 1) + 1
		}
		if limit > 0 {
			start = max(start, 1)
			c.args["start_line"], c.args["end_line"] = start, start+limit-1
		}
	case roleSearch:
		c.action = string(intent.ActionRead)
		c.path = absPath(stringIn(input, spec.paths), cwd)
		if c.path == "" {
			c.path = absPath(".", cwd)
		}
		c.args["query"] = stringIn(input, spec.query)
		if c.path != "" {
			c.args["path"] = c.path
		}
	case roleFetch:
		c.action = string(intent.ActionRead)
		if u := stringIn(input, []string{"url", "query", "prompt"}); u != "" {
			c.args["query"] = termtext.Truncate(u, 512)
		}
	case roleWrite:
		files := []string{stringIn(input, spec.paths)}
		if strings.EqualFold(ev.Tool, "apply_patch") {
			files, _ = patchFiles(input)
		}
		var targets []string
		for _, f := range files {
			if p := absPath(f, cwd); p != "" {
				targets = append(targets, p)
			}
		}
		if len(targets) == 0 {
			break // no file named: a write without a target (Gate 1 still applies)
		}
		if strings.EqualFold(ev.Tool, "delete") {
			c.action = string(intent.ActionDestructive)
		}
		c.path = targets[0]
		c.args["target"] = writeTarget(targets[0])
		for _, t := range targets[1:] {
			c.extra = append(c.extra, writeTargetPath(t))
		}
	case roleOther:
		if kind := r.g.Config.mcpKind(ev.Tool); kind != "" {
			c.name = mcpKindTools[kind]
			c.args["tool"] = ev.Tool
			c.action = string(intent.ActionRead)
		}
	}
	return c, nil
}

// writeTarget is the resource a write needs resolved: the file itself, or,
// for a file that does not exist yet, the directory it is created in (a
// new file cannot have been read; its directory can have been listed).
func writeTarget(path string) string { return fileKey(writeTargetPath(path)) }

func writeTargetPath(path string) string {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return filepath.Dir(path)
	}
	return path
}

func intIn(input map[string]any, a, b string) int {
	for _, n := range []string{a, b} {
		if n == "" {
			continue
		}
		if f, ok := input[n].(float64); ok && f > 0 && f == float64(int(f)) {
			return int(f)
		}
	}
	return 0
}

// decideWrite asks auditd's policy about a write the session allowed, or
// applies --on-write without auditd.
func (r *run) decideWrite(ctx context.Context, ev hook.Event, c call, p *pending) hook.Decision {
	if r.g.Gov == nil {
		var d hook.Decision
		if c.class != nil {
			d = hook.DecideCommand(*c.class, r.g.Policy)
		} else {
			kind := hook.ToolWrite
			if c.spec.role == roleOther {
				kind = hook.ToolUnknown
			}
			d = hook.DecideTool(ev.Tool, kind, r.g.Policy)
		}
		if d.Permission == hook.Allow {
			d.Reason = "govkit gate: " + ev.Tool + " writes; the session allows it (--on-write allow)"
		}
		if c.action == string(intent.ActionDestructive) && d.Permission == hook.Allow && r.g.OnDestructive != "" && r.g.OnDestructive != hook.Allow {
			d.Permission = r.g.OnDestructive
			d.Reason = "govkit gate: " + ev.Tool + " is destructive (--on-destructive " + string(r.g.OnDestructive) + ")"
			if c.class != nil {
				d.Reason += ": " + hook.DecideCommand(*c.class, hook.Policy{OnWrite: hook.Ask}).Reason
			}
		}
		return d
	}
	key := p.Key
	gc := r.govCall(c, p.ID)
	gc.ApprovalID = r.mem.Approvals[key]
	gctx, cancel := r.g.govContext(ctx)
	defer cancel()
	v, err := r.g.Gov.Decide(gctx, gc)
	p.Governed = true
	if err != nil {
		return Failure("auditd's policy could not be asked: " + err.Error())
	}
	switch v.Effect {
	case policy.EffectAllow:
		if v.Consumed {
			delete(r.mem.Approvals, key)
			p.ApprovalID = v.ApprovalID
		}
		return hook.Decision{Permission: hook.Allow, Reason: "govkit gate: " + v.Reason}
	case policy.EffectRequireApproval:
		if r.mem.Approvals == nil {
			r.mem.Approvals = map[string]string{}
		}
		r.mem.Approvals[key] = v.ApprovalID
		p.ApprovalID = v.ApprovalID
		return hook.Decision{Permission: hook.Ask, Reason: "govkit gate: " + v.Reason, Codes: []intent.Code{response.ApprovalRequired}}
	}
	delete(r.mem.Approvals, key)
	return hook.Decision{Permission: hook.Deny, Reason: "govkit gate: " + v.Reason, Codes: []intent.Code{response.PolicyBlocked}}
}

func (r *run) govCall(c call, id string) toolgov.Call {
	gc := toolgov.Call{SessionID: r.ev.SessionID, CallID: id, Agent: r.g.Agent, Tool: r.ev.Tool, Action: c.action, RawCommand: c.raw}
	if c.path != "" {
		gc.Resource = govapi.Resource{Type: fileKind, Name: c.path}
	}
	return gc
}

// notRun closes a call the reducer allowed but that never ran (refused by
// policy or the user, or never reported): its receipt says so, and the
// session does not wait for it.
func (r *run) notRun(p pending, why string) {
	ok := false
	msg, _ := json.Marshal("not run: " + why)
	r.transition(session.Event{Type: session.EvToolResult, CallID: p.ID, OK: &ok, Error: msg})
}

// postTool feeds a tool's result to the reducer: its receipt, the FSM's
// transition, the files it read or listed, the read guard's counts.
func (r *run) postTool(ctx context.Context, ev hook.Event) hook.Decision {
	p, found := r.mem.take(ev.CallID, callKey(ev))
	if !found {
		// Not a call this session allowed: a tool that acts on nothing,
		// or one that started before the hook was installed.
		return hook.Decision{Permission: hook.Allow, Reason: "govkit gate: no call of this session awaits this result"}
	}
	ok := !ev.Failed
	tr := session.Event{Type: session.EvToolResult, CallID: p.ID, OK: &ok}
	content := toolText(ev.Output)
	if ok {
		data, _ := json.Marshal(content)
		tr.Data = data
		if p.Role == roleRead {
			lines := strings.Count(content, "\n")
			if content != "" && !strings.HasSuffix(content, "\n") {
				lines++
			}
			chars := len(content)
			tr.Lines, tr.Chars = &lines, &chars
		}
	} else {
		msg, _ := json.Marshal(termtext.Truncate(ev.ErrorText+content, 4096))
		tr.Error = msg
	}
	var notes []string
	receiptID := ""
	for _, e := range r.transition(tr) {
		switch e.Type {
		case session.EfReceipt:
			receiptID = e.Receipt.ReceiptID
		case session.EfStabilization:
			if e.Meta != nil {
				notes = append(notes, e.Meta.Warnings...)
			}
		}
	}
	if ok {
		switch p.Role {
		case roleRead:
			r.register(p.Path, true)
			r.register(filepath.Dir(p.Path), false)
		case roleSearch:
			r.register(p.Path, false)
			for _, f := range listedPaths(ev.Output, p.Path) {
				r.register(f, false)
				r.register(filepath.Dir(f), false)
			}
		case roleShell:
			if p.Action == string(intent.ActionRead) {
				// A read-only command that names files read them (cat,
				// head, grep PATTERN FILE…): agents without a file tool
				// (Codex) read through the shell.
				for _, f := range namedFiles(p.Raw, ev.Cwd) {
					r.register(f, false)
					r.register(filepath.Dir(f), false)
				}
			}
		}
	}
	status := "success"
	if !ok {
		status = "error"
	}
	rec := toolgov.Record{Type: toolgov.TypeToolExecution, Status: status, ReceiptID: receiptID, ApprovalID: p.ApprovalID,
		Call: toolgov.Call{CallID: p.ID, Tool: p.Tool, Action: p.Action, RawCommand: p.Raw}}
	if p.Path != "" {
		rec.Call.Resource = govapi.Resource{Type: fileKind, Name: p.Path}
	}
	if ok {
		rec.Result = termtext.Truncate(content, 500)
	} else {
		rec.Error = termtext.Truncate(ev.ErrorText, 500)
	}
	d := hook.Decision{Permission: hook.Allow, Reason: "govkit gate: result recorded (receipt " + receiptID + ")"}
	if err := r.recordErr(ctx, rec); err != nil {
		notes = append(notes, "govkit gate could not record this result in auditd: "+err.Error())
	}
	if len(notes) > 0 {
		d.Context = "govkit gate: " + strings.Join(notes, " ")
	}
	return d
}

// register adds a file or directory to the session's resolved context:
// explicit for a file read, bulk for a listing (seed 000 Invariant 7).
func (r *run) register(path string, explicit bool) {
	if path == "" || path == "." {
		return
	}
	reg, err := json.Marshal(fileRegistration(path))
	if err != nil {
		return
	}
	r.transition(session.Event{Type: session.EvResolve, Resource: reg, Explicit: &explicit})
}

// stop is seed 000's Gate 2 and phantom check on the agent's final
// answer: no answer while a write is unchecked, none claiming results no
// tool produced.
func (r *run) stop(ctx context.Context, ev hook.Event) hook.Decision {
	if ev.Subagent != "" {
		return r.subagentStop(ctx)
	}
	text := ev.LastMessage
	if text == "" && ev.Transcript != "" {
		read := r.g.Transcript
		if read == nil {
			read = LastAssistantText
		}
		t, err := read(ev.Transcript)
		if err == nil {
			text = t
		}
	}
	var d hook.Decision
	for _, e := range r.transition(session.Event{Type: session.EvFinal, Text: text}) {
		switch e.Type {
		case session.EfBlockFinal:
			d = hook.Decision{Permission: hook.Deny, Codes: []intent.Code{response.FSMBlocked},
				Reason: "govkit gate: " + e.Inject + " (the session is VERIFYING: a write has not been checked since it ran)"}
		case session.EfReplaceAnswer:
			d = hook.Decision{Permission: hook.Deny, Codes: []intent.Code{response.PhantomExecution},
				Reason: "govkit gate: this answer describes results that no tool produced in this turn (" + e.Detail + "). Run the tool that fetches them, or answer without claiming them."}
		case session.EfAllowFinal:
			d = hook.Decision{Permission: hook.Allow, Reason: "govkit gate: the answer may stand"}
		case session.EfError:
			d = Failure("the session refused the final answer: " + e.Code + ": " + e.Detail)
		}
	}
	if d.Reason == "" {
		d = Failure("the session gave no decision on the final answer")
	}
	r.record(ctx, call{name: "stop", action: string(intent.ActionRead)}, toolgov.Record{Type: toolgov.TypeHookDecision, Status: string(d.Permission), Reason: d.Reason, Code: codeOf(d)})
	return d
}

// subagentStop holds a sub-agent to Gate 2 only: its answer goes to the
// main agent, not the user, and its stop does not end the main agent's
// turn (a phantom check on the main answer must still see the tools the
// sub-agent called).
func (r *run) subagentStop(ctx context.Context) hook.Decision {
	d := hook.Decision{Permission: hook.Allow, Reason: "govkit gate: the sub-agent may stop"}
	if r.st.View().FSMState == "VERIFYING" {
		d = hook.Decision{Permission: hook.Deny, Codes: []intent.Code{response.FSMBlocked},
			Reason: "govkit gate: Verification required: perform a read or status check on the last write before responding (the session is VERIFYING: a write has not been checked since it ran)"}
	}
	r.record(ctx, call{name: "stop", action: string(intent.ActionRead)}, toolgov.Record{Type: toolgov.TypeHookDecision, Status: string(d.Permission), Reason: d.Reason, Code: codeOf(d)})
	return d
}

// blocked is the agent's form of a reducer block: the envelope's message,
// code and recovery hint, which the agent reads and acts on.
func blocked(resp response.ToolResponse) hook.Decision {
	if resp.Error == nil {
		return Failure("a block without an error")
	}
	reason := "govkit gate: " + resp.Error.Message
	if !strings.Contains(reason, resp.Error.Code) {
		reason += " [" + resp.Error.Code + "]"
	}
	if hint, _ := resp.Error.Details["recovery_hint"].(string); hint != "" && !strings.Contains(reason, hint) {
		reason += " " + hint
	}
	return hook.Decision{Permission: hook.Deny, Reason: reason, Codes: []intent.Code{intent.Code(resp.Error.Code)}}
}

func codeOf(d hook.Decision) string {
	if len(d.Codes) > 0 {
		return string(d.Codes[0])
	}
	return ""
}

func (r *run) strict() bool { return r.st.View().StrictResolution }

// record appends a decision to auditd's chain, with --url.
func (r *run) record(ctx context.Context, c call, rec toolgov.Record) error {
	if r.g.Gov == nil {
		return nil
	}
	id := rec.Call.CallID
	rec.Call = r.govCall(c, id)
	if c.name == "stop" {
		rec.Call.Tool = "stop"
	}
	return r.recordErr(ctx, rec)
}

func (r *run) recordErr(ctx context.Context, rec toolgov.Record) error {
	if r.g.Gov == nil {
		return nil
	}
	rec.Call.SessionID, rec.Call.Agent = r.ev.SessionID, r.g.Agent
	if rec.Call.Tool == "" {
		rec.Call.Tool = r.ev.Tool
	}
	gctx, cancel := r.g.govContext(ctx)
	defer cancel()
	if err := r.g.Gov.Record(gctx, rec); err != nil {
		return fmt.Errorf("recording %s: %w", rec.Type, err)
	}
	return nil
}

// rawOf is a call's text for auditd and its approval: the command or the
// input itself when short, else its head and the digest of the whole, so
// that an approval still releases exactly this call (approval.ActionHash)
// while the chain keeps a bounded text.
func rawOf(s string) string {
	if len(s) <= 2048 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return termtext.Truncate(s, 1024) + " (sha256 " + hex.EncodeToString(sum[:]) + ")"
}

// namedFiles are the words of a read-only command that name existing
// files or directories, at most 32.
func namedFiles(command, cwd string) []string {
	words := strings.Fields(command)
	if len(words) > 256 {
		words = words[:256]
	}
	var out []string
	for i, w := range words {
		w = strings.Trim(w, `"'`)
		if i == 0 || w == "" || strings.HasPrefix(w, "-") || strings.ContainsAny(w, "|;&<>$`*?") {
			continue
		}
		if p := absPath(w, cwd); p != "" {
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
				if len(out) == 32 {
					break
				}
			}
		}
	}
	return out
}
