package mcpgate

import (
	"context"
	"encoding/json"
	"path"
	"time"

	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/intent"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/session/response"
	"github.com/govkit/govkit/pkg/toolgov"
)

// governTimeout bounds one exchange with governance.
const governTimeout = 10 * time.Second

// maxApprovals bounds the approvals a session waits on.
const maxApprovals = 256

// govCall is a call as auditd sees it: the client's own arguments (not the
// reducer's substitute target) as the command an approval releases, and
// the target path, for a tool whose targets are paths, as the resource.
func (p *Proxy) govCall(v *verdict) toolgov.Call {
	in, _ := json.Marshal(v.asked)
	c := toolgov.Call{SessionID: p.gov.id, CallID: v.callID, Agent: "mcp:" + p.opts.ServerName,
		Tool: v.kind.Name, Action: v.kind.Action, RawCommand: v.kind.Name + " " + string(in)}
	if r := v.kind.rule; r != nil && r.Paths {
		for _, a := range r.TargetArgs {
			if s, ok := v.asked[a].(string); ok && s != "" {
				c.Resource = govapi.Resource{Type: fileResource, Name: path.Clean(s)}
				break
			}
		}
	}
	return c
}

// fileResource is the resource type of a file a tool acts on, as gate hook
// names it, so that one policy file governs both gates.
const fileResource = "file"

// govern asks governance about a call the reducer allowed (DESIGN §14):
// a write goes to auditd's policy, with the approval this session holds
// for exactly this call; every call that may run is recorded before it
// runs, and one that cannot be recorded does not run. A refusal is the
// envelope to answer with, and the reducer hears the call did not run.
func (p *Proxy) govern(g toolgov.Governance, v *verdict) *response.ToolResponse {
	ctx, cancel := context.WithTimeout(context.Background(), governTimeout)
	defer cancel()
	p.mu.Lock()
	c := p.govCall(v)
	key := c.RawCommand
	c.ApprovalID = p.approvals[key]
	p.mu.Unlock()

	var resp *response.ToolResponse
	if c.Action != string(intent.ActionRead) {
		resp = p.decide(ctx, g, c, key, v)
	}
	if resp == nil {
		rec := toolgov.Record{Call: c, Type: toolgov.TypeHookDecision, Status: "allow", ApprovalID: v.approvalID}
		if err := g.Record(ctx, rec); err != nil {
			r := response.Blocked(response.PolicyBlocked, "auditd did not record the decision, so the call does not run: "+err.Error(),
				map[string]any{"recovery_hint": "retry later; auditd at --url did not answer"})
			resp = &r
		}
	}
	if resp == nil {
		return nil
	}
	p.mu.Lock()
	p.gov.result(v, false, "", "refused by governance: "+resp.Error.Code)
	p.mu.Unlock()
	return resp
}

// decide asks auditd's policy about a write; nil means allowed.
func (p *Proxy) decide(ctx context.Context, g toolgov.Governance, c toolgov.Call, key string, v *verdict) *response.ToolResponse {
	gv, err := g.Decide(ctx, c)
	p.mu.Lock()
	switch {
	case err == nil && gv.Effect == policy.EffectRequireApproval && gv.ApprovalID != "":
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
	case gv.Effect == policy.EffectAllow:
		if gv.Consumed {
			v.approvalID = gv.ApprovalID
		}
		return nil
	case gv.Effect == policy.EffectRequireApproval:
		resp = response.Blocked(response.ApprovalRequired, gv.Reason,
			map[string]any{"approval_id": gv.ApprovalID, "recovery_hint": "ask a person to run 'approvals approve " + gv.ApprovalID + "', then retry the same call"})
	default:
		resp = response.Blocked(response.PolicyBlocked, gv.Reason,
			map[string]any{"recovery_hint": "policy denies this call; do something else"})
	}
	return &resp
}

// record tells governance about a refusal by the reducer or by gate.
func (p *Proxy) record(v *verdict, status string, resp response.ToolResponse) {
	g := p.opts.Governance
	if g == nil {
		return
	}
	p.mu.Lock()
	c := p.govCall(v)
	p.mu.Unlock()
	r := toolgov.Record{Call: c, Type: toolgov.TypeHookDecision, Status: status}
	if resp.Error != nil {
		r.Code, r.Reason = resp.Error.Code, resp.Error.Message
		if resp.Error.Failed {
			r.Type, r.Error = toolgov.TypeToolExecution, resp.Error.Message
		}
	}
	p.send(g, r)
}

// recordOutcome tells governance what became of a call that ran: its
// receipt, the approval it consumed, and excerpts of its result or error.
func (p *Proxy) recordOutcome(v *verdict, ok bool, text, errText string, out outcome) {
	g := p.opts.Governance
	if g == nil {
		return
	}
	p.mu.Lock()
	c := p.govCall(v)
	p.mu.Unlock()
	r := toolgov.Record{Call: c, Type: toolgov.TypeToolExecution, Status: "success", ApprovalID: v.approvalID, Result: text}
	if !ok {
		r.Status, r.Reason, r.Error = "error", errText, errText
	}
	if out.receipt != nil {
		r.ReceiptID = out.receipt.ReceiptID
	}
	p.send(g, r)
}

func (p *Proxy) send(g toolgov.Governance, r toolgov.Record) {
	ctx, cancel := context.WithTimeout(context.Background(), governTimeout)
	defer cancel()
	if err := g.Record(ctx, r); err != nil {
		p.logf("recording a %s of %s in auditd: %v", r.Type, r.Call.Tool, err)
	}
}
