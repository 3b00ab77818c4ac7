package auditd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/token"
)

// RequestApproval opens an approval request for in on behalf of id, only
// when the loaded policy requires one (DESIGN §11 "Approvals come from
// policy"): the principal comes from id's token, the tags from the infra
// file, and the quorum and the policy_decision approvers see from the
// evaluation. An action the policy allows is refused with 409
// approval_not_required (the decision in its detail), one it denies with
// 403 policy_denied (the trace in its detail), and without a policy 503
// no_policy. Before issue 13 an agent could open a request for a denied
// action with its own quorum and its own policy_decision text, and
// `approvals request --wait` exited 0 in CI once someone approved it.
func (s *Server) RequestApproval(ctx context.Context, id token.Identity, in govapi.ApprovalInput) (approval.Request, error) {
	switch {
	case in.Quorum != 0:
		return approval.Request{}, badField("quorum", "is set by the policy (the approval_quorum of the rule that requires approval); remove it")
	case len(in.PolicyDecision) > 0:
		return approval.Request{}, badField("policy_decision", "is the evaluation auditd makes itself; remove it")
	}
	// Any case, lower-cased, as every endpoint takes actions (issue 20): the
	// request and its action_hash then name the action an execution records.
	if err := checkAction("action", &in.Action); err != nil {
		return approval.Request{}, err
	}
	if err := checkName("resource.type", in.Resource.Type, true); err != nil {
		return approval.Request{}, err
	}
	if err := checkName("resource.name", in.Resource.Name, true); err != nil {
		return approval.Request{}, err
	}
	var asserted policy.RequestPrincipal
	if in.Principal != nil {
		asserted = *in.Principal
	}
	principal, agent, err := s.principalFor(id, asserted, in.Agent)
	if err != nil {
		return approval.Request{}, err
	}
	g := s.gov.cur.Load()
	if g == nil || g.engine == nil {
		return approval.Request{}, refuse(Unavailable, govapi.CodeNoPolicy, "%s", errNoPolicy)
	}
	tags, note, err := s.tagsFor(id, g, in.Resource.Type, in.Resource.Name, in.Resource.Tags)
	if err != nil {
		return approval.Request{}, err
	}
	req := policy.Request{
		Principal: principal,
		Resource:  policy.RequestResource{Type: in.Resource.Type, Name: in.Resource.Name, Tags: tags},
		Action:    policy.Action(in.Action),
	}
	trace := s.evaluate(g, req, false)
	target := fmt.Sprintf("%s on %s:%s", in.Action, in.Resource.Type, in.Resource.Name)
	switch trace.Decision.EnforcedEffect {
	case policy.EffectAllow:
		return approval.Request{}, &Refusal{Kind: Conflict, Code: govapi.CodeApprovalNotRequired,
			Msg:    fmt.Sprintf("the policy allows %s for %s without approval: no request was opened", target, principal.UserID),
			Detail: trace.Decision}
	case policy.EffectDeny:
		return approval.Request{}, &Refusal{Kind: Forbidden, Code: govapi.CodePolicyDenied,
			Msg:    fmt.Sprintf("the policy denies %s for %s: no approval can release it (%s)", target, principal.UserID, trace.Explanation),
			Detail: govapi.Explanation{SchemaVersion: audit.SchemaVersion, DecisionTrace: trace, Note: note}}
	}
	trace = trace.ApprovalRequested(req)
	dr := govapi.DecisionRequest{Agent: agent, Principal: principal, Resource: govapi.Resource{Type: in.Resource.Type, Name: in.Resource.Name}, Action: in.Action}
	record := decisionRecord(dr, tags, note, trace, g.SHA256)
	ai := in.Input
	ai.Resource.Tags = tags
	ai.Quorum = max(trace.Decision.ApprovalQuorum, 1)
	requester := agent
	if requester == "" {
		requester = principal.UserID
	}
	return s.openApproval(ctx, ai, record, requester, principal.UserID, s.callerOf(id))
}

// openApproval creates the approval request a decision requires, carrying
// the decision record that required it (DESIGN §7 policy_decision).
func (s *Server) openApproval(ctx context.Context, ai approval.Input, record govapi.DecisionRecord, requester, requestedFor string, caller *audit.Caller) (approval.Request, error) {
	if requester == "" {
		return approval.Request{}, badRequest(errors.New("the action requires approval and nobody can be named as its requester: in local mode, send the " + govapi.UserHeader + " header (the CLIs send $USER)"))
	}
	// Canonical (RFC 8785), as the chain stores it: the approval request
	// then carries byte for byte the record the decision event holds.
	recordJSON, err := audit.Canonical(record)
	if err != nil {
		return approval.Request{}, fmt.Errorf("encoding the decision: %w", err)
	}
	if len(recordJSON) > audit.MaxJSONField {
		// A trace over thousands of policies can outgrow what an approval
		// request carries; a refused approval would turn every such
		// decision into an error. The request keeps the decision and its
		// explanation; the decision event keeps the whole trace.
		record.Trace.PoliciesEvaluated = nil
		record.Trace.Explanation = ""
		record.Note = strings.TrimPrefix(record.Note+"; the full trace is too large for the approval request: GET "+govapi.PathEventExplain+" has it", "; ")
		if recordJSON, err = audit.Canonical(record); err != nil {
			return approval.Request{}, err
		}
	}
	ai.PolicyDecision = recordJSON
	return s.ap.create(ctx, ai, requester, requestedFor, caller)
}

// Consume releases the one execution approval id allows, for the action
// whose approval.ActionHash is actionHash, on behalf of id: its requester,
// or a gateway acting for it (DESIGN §11). It answers 409
// approval_consumed the second time, 409 action_mismatch for another
// action, and 410 approval_stale past the approval's validity window.
func (s *Server) Consume(ctx context.Context, id token.Identity, approvalID, actionHash string) (approval.Request, error) {
	if !audit.IsHash(actionHash) {
		return approval.Request{}, badField("action_hash", "must be 64 lowercase hex digits: the approval.ActionHash of the action about to run (approvals show prints the approved one)")
	}
	who, err := actor(id)
	if err != nil {
		return approval.Request{}, err
	}
	return s.ap.consume(ctx, approvalID, who, actsForOthers(id), actionHash, s.callerOf(id))
}
