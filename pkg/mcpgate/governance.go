package mcpgate

import (
	"context"
	"encoding/json"
	"time"

	"github.com/govkit/govkit/pkg/session/response"
)

// Governance is auditd behind the reducer (gate mcp --url): its policy for
// every call the reducer allowed, and a record of every decision and
// outcome with the session id (DESIGN §11, §14). pkg/toolgov's *Gov is
// meant to sit behind it through a small adapter in pkg/cmd/gate, so that
// this package does not depend on auditd's client.
type Governance interface {
	// Decide asks whether an allowed call may run. An error means
	// governance is unavailable: the call is refused (fail closed).
	Decide(ctx context.Context, c GovCall) (GovVerdict, error)
	// Record appends what became of a call, or a refusal by the reducer.
	Record(ctx context.Context, r GovRecord) error
}

// GovCall is one tool call as governance sees it (toolgov.Call).
type GovCall struct {
	SessionID string
	CallID    string
	Agent     string // "mcp:<server>"
	Tool      string
	Action    string // read | write | destructive
	Resource  string // the call's target, "" when none
	Input     string // the arguments as compact JSON, bounded
	// ApprovalID is an approval governance asked for earlier for exactly
	// this call (same tool, same arguments), which the retry may consume.
	ApprovalID string
}

// GovVerdict is governance's answer (toolgov.Verdict).
type GovVerdict struct {
	Effect     string // allow | deny | require_approval
	ApprovalID string
	Reason     string
}

// GovRecord is a decision or an outcome (toolgov.Record).
type GovRecord struct {
	Call       GovCall
	Type       string // tool_execution | hook_decision
	Status     string // success | error | allow | deny
	Code       string
	Reason     string
	ReceiptID  string
	ApprovalID string
}

// governTimeout bounds one exchange with governance.
const governTimeout = 10 * time.Second

// maxInput bounds a call's arguments as governance receives them.
const maxInput = 4 << 10

// maxApprovals bounds the approvals a session waits on.
const maxApprovals = 256

func (p *Proxy) govCall(v *verdict) GovCall {
	in, _ := json.Marshal(v.args)
	if len(in) > maxInput {
		in = in[:maxInput]
	}
	target := ""
	if k, ok := p.gov.kinds[v.kind.Name]; ok && k.rule != nil {
		for _, a := range append([]string{targetArg}, k.rule.TargetArgs...) {
			if s, ok := v.args[a].(string); ok && s != "" {
				target = s
				break
			}
		}
	}
	return GovCall{SessionID: p.gov.id, CallID: v.callID, Agent: "mcp:" + p.opts.ServerName,
		Tool: v.kind.Name, Action: v.kind.Action, Resource: target, Input: string(in)}
}

// govern asks governance about a call the reducer allowed; a refusal is
// the envelope to answer with, and the reducer hears the call failed.
func (p *Proxy) govern(g Governance, v *verdict, tool string, args map[string]any) *response.ToolResponse {
	ctx, cancel := context.WithTimeout(context.Background(), governTimeout)
	defer cancel()
	p.mu.Lock()
	c := p.govCall(v)
	key := c.Tool + "\x00" + c.Input
	c.ApprovalID = p.approvals[key]
	p.mu.Unlock()
	gv, err := g.Decide(ctx, c)
	p.mu.Lock()
	switch {
	case err == nil && gv.Effect == "require_approval" && gv.ApprovalID != "":
		if len(p.approvals) < maxApprovals {
			p.approvals[key] = gv.ApprovalID
		}
	case err == nil:
		delete(p.approvals, key) // consumed, denied, or no longer needed
	}
	p.mu.Unlock()
	var resp response.ToolResponse
	switch {
	case err != nil:
		resp = response.Blocked(response.PolicyBlocked, "governance is unavailable: "+err.Error(),
			map[string]any{"recovery_hint": "retry later; auditd at --url did not answer"})
	case gv.Effect == "allow":
		return nil
	case gv.Effect == "require_approval":
		resp = response.Blocked(response.ApprovalRequired, gv.Reason,
			map[string]any{"approval_id": gv.ApprovalID, "recovery_hint": "ask a person to run 'approvals approve " + gv.ApprovalID + "', then retry the same call"})
	default:
		resp = response.Blocked(response.PolicyBlocked, gv.Reason,
			map[string]any{"recovery_hint": "policy denies this call; do something else"})
	}
	p.mu.Lock()
	p.gov.result(v, false, "", "refused by governance: "+resp.Error.Code)
	p.mu.Unlock()
	return &resp
}

// record tells governance about a decision the reducer made.
func (p *Proxy) record(v *verdict, status string, resp response.ToolResponse) {
	g := p.opts.Governance
	if g == nil {
		return
	}
	p.mu.Lock()
	c := p.govCall(v)
	p.mu.Unlock()
	r := GovRecord{Call: c, Type: "hook_decision", Status: status}
	if resp.Error != nil {
		r.Code, r.Reason = resp.Error.Code, resp.Error.Message
		if resp.Error.Failed {
			r.Type = "tool_execution"
		}
	}
	p.send(g, r)
}

// recordOutcome tells governance what became of a call that ran.
func (p *Proxy) recordOutcome(v *verdict, ok bool, errText string) {
	g := p.opts.Governance
	if g == nil {
		return
	}
	p.mu.Lock()
	c := p.govCall(v)
	p.mu.Unlock()
	r := GovRecord{Call: c, Type: "tool_execution", Status: "success"}
	if !ok {
		r.Status, r.Reason = "error", errText
	}
	p.send(g, r)
}

func (p *Proxy) send(g Governance, r GovRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), governTimeout)
	defer cancel()
	if err := g.Record(ctx, r); err != nil {
		p.logf("recording a %s of %s in auditd: %v", r.Type, r.Call.Tool, err)
	}
}
