package auditd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/redact"
	"github.com/govkit/govkit/pkg/token"
)

func (s *Server) postDecision(r *http.Request) (reply, error) {
	var in govapi.DecisionRequest
	if err := decodeBody(r, &in, false); err != nil {
		return reply{}, err
	}
	res, err := s.Decide(r.Context(), identity(r), in)
	if err != nil {
		return reply{}, err
	}
	rep, err := jsonReply(res.status(), res.Value)
	if res.Created {
		rep.location = govapi.WithID(govapi.PathEvent, res.Value.Event.EventID)
	}
	return rep, err
}

// Decide evaluates a proposed action for caller against the policy in
// force, requests an approval when the enforced effect requires one, and
// records the decision with its full trace as a policy_decision event —
// allowed and denied decisions too (seed 003 "Policy Evaluation Flow",
// "Audit Enrichment"; H-11, H-60). With an event_id it is idempotent: a
// retry by the same caller with the same request gets the decision
// recorded first (Created false) and never a second approval.
func (s *Server) Decide(ctx context.Context, caller token.Identity, in govapi.DecisionRequest) (Recorded[govapi.DecisionResult], error) {
	var none Recorded[govapi.DecisionResult]
	if err := validateDecision(&in); err != nil {
		return none, err
	}
	// Who the decision is for comes from the token, unless a gateway
	// names it (DESIGN §11): before issue 13 an agent token could assert
	// principal.roles [dba] and turn a deny into an allow.
	principal, agent, err := s.principalFor(caller, in.Principal, in.Agent)
	if err != nil {
		return none, err
	}
	in.Principal, in.Agent = principal, agent
	fingerprint, err := requestFingerprint(in, s.cfg.Redactor)
	if err != nil {
		return none, err
	}

	clientID := in.EventID != ""
	if clientID {
		// One decision per event_id at a time, then look it up: a retry
		// gets the decision recorded first and never a second approval.
		unlock := s.gov.decisionLocks.lock(in.EventID)
		defer unlock()
		rec, found, err := s.st.Get(ctx, in.EventID)
		if err != nil {
			return none, fmt.Errorf("looking up event_id: %w", err)
		}
		if found {
			s.m.duplicates.Inc()
			return s.recordedDecision(ctx, rec.Body, fingerprint, caller)
		}
	} else {
		in.EventID = audit.NewEventID(s.cfg.Now(), s.cfg.Rand)
	}
	// After the lookup: a decision recorded before a restart without
	// --policy is still answered.
	g, err := s.policyInForce()
	if err != nil {
		return none, err
	}

	// The infra file is authoritative for tags (DESIGN §11): before issue
	// 13 an agent could send tags [staging] for a production database and
	// step outside the change freeze.
	tags, note, err := s.tagsFor(caller, g, in.Resource.Type, in.Resource.Name, in.Resource.Tags)
	if err != nil {
		return none, err
	}
	req := policy.Request{
		Principal: in.Principal,
		Resource:  policy.RequestResource{Type: in.Resource.Type, Name: in.Resource.Name, Tags: tags},
		Action:    policy.Action(in.Action),
		Context:   policy.RequestContext{RowsAffected: in.RowsAffected, PodsAffected: in.PodsAffected},
	}
	if g.engine.Guardrails() != nil && in.SessionID != "" && !in.PostExecution {
		// One decision per session at a time while guardrails count its
		// writes: two writes arriving together must not both see 19 of a
		// limit of 20 (the second is evaluated after the first is stored).
		unlock := s.gov.sessionLocks.lock(in.SessionID)
		defer unlock()
	}
	trace, err := s.guardedEvaluate(ctx, g, req, in.SessionID, in.PostExecution)
	if err != nil {
		return none, internal("", err)
	}
	// After execution a require_approval outcome was settled before the
	// tool ran (policy.CheckPostExecution): no new request then.
	// A caller holding an approval (gate run --approval) consumes it next;
	// a second request would only wait in the approvers' queue unused.
	requestApproval := trace.Decision.EnforcedEffect == policy.EffectRequireApproval && !in.PostExecution && in.ApprovalID == ""
	if requestApproval {
		trace = trace.ApprovalRequested(req)
	}
	record := decisionRecord(in, tags, note, trace, g.SHA256)
	recordJSON, err := audit.Canonical(record)
	if err != nil {
		return none, fmt.Errorf("encoding the decision: %w", err)
	}

	res := govapi.DecisionResult{Explanation: govapi.Explanation{SchemaVersion: audit.SchemaVersion, DecisionTrace: trace, Note: note}}
	ev := decisionEvent(in, tags, trace, recordJSON)
	ev.Caller = s.callerOf(caller)
	if requestApproval {
		ai := approval.Input{
			Resource: audit.Resource{Type: in.Resource.Type, Name: in.Resource.Name, Tags: tags},
			Action:   in.Action, Reason: in.Reason, TTL: in.ApprovalTTL,
			Quorum: max(record.Trace.Decision.ApprovalQuorum, 1),
		}
		if in.Tool != nil {
			ai.Tool, ai.RawCommand = in.Tool.Name, in.Tool.RawCommand
		}
		ap, err := s.openApproval(ctx, ai, record, in.Agent, in.Principal.UserID, ev.Caller)
		if err != nil {
			return none, err
		}
		ev.ApprovalID = ap.ID
		res.ApprovalID, res.ApprovalExpiresAt = ap.ID, &ap.ExpiresAt
	}
	ev.Data, err = json.Marshal(govapi.DecisionEventData{
		Caller: caller.Name, CallerRoles: roleNames(caller.Roles), Auth: s.authMode(), Service: in.Principal.Service,
		RowsAffected: in.RowsAffected, PodsAffected: in.PodsAffected, Reason: in.Reason, RequestSHA256: fingerprint,
	})
	if err != nil {
		return none, fmt.Errorf("encoding the decision: %w", err)
	}

	stored, err := s.append(ctx, ev, clientID)
	if err != nil {
		if res.ApprovalID != "" {
			s.cfg.Logf("error: approval %s was requested for decision %s, which could not be recorded (%v); the request expires unused", res.ApprovalID, in.EventID, err)
		}
		return none, internal("storing the event: ", err)
	}
	if !stored.created {
		// The same event_id was stored meanwhile by POST /api/events:
		// answer with what is stored, if it is this decision.
		if res.ApprovalID != "" {
			s.cfg.Logf("warning: approval %s was requested for decision %s, whose event_id another append took meanwhile; the request expires unused", res.ApprovalID, in.EventID)
		}
		return s.recordedDecision(ctx, stored.json, fingerprint, caller)
	}
	ref, err := storedRef(stored.json)
	if err != nil {
		return none, err
	}
	res.Event = &ref
	s.m.decisions.WithLabelValues(string(trace.Decision.EnforcedEffect)).Inc()
	return Recorded[govapi.DecisionResult]{Value: res, Created: true}, nil
}

// recordedDecision answers a retry with the decision recorded under its
// event_id, or Conflict event_id_reused when that event is something else
// or another caller's.
func (s *Server) recordedDecision(ctx context.Context, body []byte, fingerprint string, caller token.Identity) (Recorded[govapi.DecisionResult], error) {
	var none Recorded[govapi.DecisionResult]
	var stored struct {
		EventID   string          `json:"event_id"`
		EventType string          `json:"event_type"`
		Caller    *audit.Caller   `json:"caller"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &stored); err != nil {
		return none, fmt.Errorf("reading the stored event: %w", err)
	}
	var data govapi.DecisionEventData
	_ = json.Unmarshal(stored.Data, &data)
	// Never say what the stored event is unless this caller recorded it
	// with this very request (DESIGN §11: no reading by re-posting an id).
	if stored.EventType != audit.TypePolicyDecision || data.RequestSHA256 != fingerprint ||
		stored.Caller == nil || stored.Caller.Name != s.callerOf(caller).Name {
		return none, reusedID(stored.EventID)
	}
	ex, approvalID, err := explanationOf(body)
	if err != nil {
		return none, err
	}
	res := govapi.DecisionResult{Explanation: ex, ApprovalID: approvalID}
	if approvalID != "" {
		row, err := s.ap.get(ctx, approvalID)
		if err != nil {
			return none, err
		}
		at := row.Request.ExpiresAt
		res.ApprovalExpiresAt = &at
	}
	return Recorded[govapi.DecisionResult]{Value: res}, nil
}

// decisionRecord is the policy_decision member of the event: every field
// of seed 003 "Audit Enrichment" (H-60), allowed decisions too.
func decisionRecord(in govapi.DecisionRequest, tags []string, note string, tr policy.DecisionTrace, sha string) govapi.DecisionRecord {
	d := tr.Decision
	rec := govapi.DecisionRecord{
		ResourceType: in.Resource.Type, ResourceName: in.Resource.Name, Action: in.Action, Tags: tags,
		Effect: string(d.Effect), EnforcedEffect: string(d.EnforcedEffect), Message: d.Message, Note: note,
		DryRun: d.DryRun, PostExecution: d.PostExecution, DefaultApplied: tr.DefaultApplied,
		Trace: tr, Explanation: tr.Explanation, PolicySHA256: sha, Code: d.Code,
	}
	if !tr.DefaultApplied {
		name, idx := d.PolicyName, d.RuleIndex
		rec.PolicyName, rec.RuleIndex = &name, &idx
	}
	return rec
}

// decisionEvent is the policy_decision audit event for a decision.
func decisionEvent(in govapi.DecisionRequest, tags []string, tr policy.DecisionTrace, recordJSON []byte) audit.Event {
	ev := audit.Event{
		SchemaVersion: audit.SchemaVersion, EventID: in.EventID, EventType: audit.TypePolicyDecision,
		TraceID: in.TraceID, SessionID: in.SessionID, Agent: in.Agent,
		ActionClass:    in.Action,
		Resource:       &audit.Resource{Type: in.Resource.Type, Name: in.Resource.Name, Tags: tags},
		Outcome:        &audit.Outcome{Status: string(tr.Decision.EnforcedEffect)},
		PolicyDecision: recordJSON,
	}
	if in.Principal.UserID != "" || len(in.Principal.Roles) > 0 {
		ev.Principal = &audit.Principal{UserID: in.Principal.UserID, Roles: in.Principal.Roles}
	}
	if in.Tool != nil && (in.Tool.Name != "" || in.Tool.RawCommand != "" || len(in.Tool.Parameters) > 0) {
		ev.Tool = &audit.Tool{Name: in.Tool.Name, RawCommand: in.Tool.RawCommand, Parameters: in.Tool.Parameters}
	}
	return ev
}

// requestFingerprint is the hex SHA-256 of the request's canonical JSON
// without its event_id, after redaction: the fingerprint is stored in the
// event beside everything else the request holds, so a hash of the
// unredacted command would let a weak password be guessed offline.
func requestFingerprint(in govapi.DecisionRequest, r *redact.Redactor) (string, error) {
	in.EventID = ""
	if in.Tool != nil {
		tool := *in.Tool
		tool.RawCommand, _ = r.Redact(tool.RawCommand)
		if len(tool.Parameters) > 0 {
			tool.Parameters, _ = r.RedactJSON(tool.Parameters)
		}
		in.Tool = &tool
	}
	b, err := audit.Canonical(in)
	if err != nil {
		return "", fmt.Errorf("fingerprinting the request: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// explanationOf reads the stored trace of a policy_decision event's JSON,
// as it was recorded: the retrospective answer (H-58) never re-evaluates.
func explanationOf(body []byte) (ex govapi.Explanation, approvalID string, err error) {
	var stored struct {
		EventID        string          `json:"event_id"`
		Seq            int64           `json:"seq"`
		Timestamp      time.Time       `json:"timestamp"`
		EventType      string          `json:"event_type"`
		ApprovalID     string          `json:"approval_id"`
		PolicyDecision json.RawMessage `json:"policy_decision"`
	}
	if err := json.Unmarshal(body, &stored); err != nil {
		return ex, "", fmt.Errorf("reading the stored event: %w", err)
	}
	if stored.EventType != audit.TypePolicyDecision {
		return ex, "", &notDecisionError{stored.EventID, stored.EventType}
	}
	var rec struct {
		Trace       *policy.DecisionTrace `json:"trace"`
		Note        string                `json:"note"`
		Explanation string                `json:"explanation"`
	}
	if len(stored.PolicyDecision) == 0 || json.Unmarshal(stored.PolicyDecision, &rec) != nil || rec.Trace == nil {
		return ex, "", &notDecisionError{stored.EventID, stored.EventType}
	}
	if rec.Trace.Explanation == "" {
		rec.Trace.Explanation = rec.Explanation
	}
	ex = govapi.Explanation{
		SchemaVersion: audit.SchemaVersion, DecisionTrace: *rec.Trace, Note: rec.Note,
		Event: &govapi.EventRef{EventID: stored.EventID, Seq: stored.Seq, Timestamp: stored.Timestamp},
	}
	return ex, stored.ApprovalID, nil
}

// notDecisionError is an event without a decision trace (422).
type notDecisionError struct{ id, typ string }

func (e *notDecisionError) Error() string {
	if e.typ == audit.TypePolicyDecision {
		return fmt.Sprintf("event %s is a policy_decision event without a decision trace (it was not recorded by POST /api/v1/decisions), so there is nothing to explain", e.id)
	}
	return fmt.Sprintf("event %s is a %s event, not a policy_decision: only policy decisions carry a trace to explain (list them with GET %s?event_type=policy_decision)", e.id, e.typ, govapi.PathGovernanceEvents)
}

func (s *Server) authMode() string {
	if s.cfg.Tokens != nil {
		return "tokens"
	}
	return "local"
}

func roleNames(roles []token.Role) []string {
	if len(roles) == 0 {
		return nil
	}
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = string(r)
	}
	return out
}
