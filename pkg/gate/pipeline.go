package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/gitconfig"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/intent"
	"github.com/govkit/govkit/pkg/policy"
)

// classify judges the command (pkg/intent, in-process). An unbounded
// command is refused, or with AutoRewrite replaced once by its bounded
// rewrite (seed 000 auto-recovery, bounded to one attempt: P-50).
func (r *run) classify(context.Context) bool {
	c := r.req.Classifier
	if c == nil {
		c = intent.New(intent.Options{Dir: r.req.Dir, RepoConfig: gitconfig.IntentRisks})
	}
	cl := c.Classify(r.command)
	r.res.Classification = &cl
	if cl.Bounded {
		return true
	}
	if !r.req.AutoRewrite || cl.SuggestedRewrite == "" {
		hint := "bound it (a count, a timeout, a limit)"
		if cl.SuggestedRewrite != "" {
			hint = fmt.Sprintf("run the bounded form instead: %s (or pass --auto-rewrite to let gate run it once)", cl.SuggestedRewrite)
		}
		r.res.refuse(ExitRefused, CodeUnbounded, "the command may never end: "+reasonText(cl), hint)
		r.res.AutoRecoverable = cl.AutoRecoverable && cl.SuggestedRewrite != ""
		return false
	}
	rw := c.Classify(cl.SuggestedRewrite)
	r.res.Rewrite = &Rewrite{From: r.command, To: cl.SuggestedRewrite, Attempts: 1}
	if !rw.Bounded {
		r.res.refuse(ExitRefused, CodeUnbounded, "the command may never end, and its rewrite neither (auto-recovery stops after one attempt): "+reasonText(rw), "bound the command yourself")
		return false
	}
	r.notef("auto-rewrite (one attempt): running %s", cl.SuggestedRewrite)
	r.command, r.argv, r.tool = cl.SuggestedRewrite, []string{"bash", "-c", cl.SuggestedRewrite}, "bash"
	r.res.Command, r.res.Classification = r.command, &rw
	return true
}

func reasonText(cl intent.Result) string {
	var parts []string
	for _, rs := range cl.Reasons {
		parts = append(parts, rs.Detail)
	}
	if len(parts) == 0 {
		return string(cl.Intent)
	}
	return strings.Join(parts, "; ")
}

// checkMode is seed 003's operating mode, checked centrally before any
// policy: readonly refuses every command that may write (H-23, B-17c).
func (r *run) checkMode(context.Context) bool {
	if r.req.Mode == ReadOnly && !r.res.Classification.ReadOnly() {
		r.res.refuse(ExitRefused, CodeReadOnlyMode,
			"agent is in read-only mode: the command may write ("+reasonText(*r.res.Classification)+")",
			"run it with --mode fix under governance (auditd with a policy), or ask the operator for a mode upgrade")
		return false
	}
	return true
}

// startGovernance is seed 003's start-up validation for fix mode (H-24):
// auditd answers, a policy is loaded and it is not in dry-run; otherwise
// nothing runs (127) and, when auditd is reachable, a governance_violation
// event says why. It also flushes the incident spool at this first
// successful contact. In readonly mode with auditd it only flushes.
func (r *run) startGovernance(ctx context.Context) bool {
	c := r.req.Client
	if c == nil {
		return true
	}
	if r.req.Mode == ReadOnly {
		if _, err := c.Health(ctx); err == nil {
			r.flush(ctx)
		} else {
			r.warn("auditd at %s did not answer (%s): this run is not recorded", c.BaseURL(), client.Reason(err))
			r.req.Client = nil
		}
		return true
	}
	if _, err := c.Health(ctx); err != nil {
		r.res.refuse(ExitCannotRun, CodeGovernanceRequired,
			"fix mode requires audit: auditd did not answer ("+client.Reason(err)+")",
			"start auditd, or pass --url (GOVKIT_URL) naming a running one")
		return false
	}
	st, err := c.Governance(ctx)
	if err != nil {
		r.res.refuse(ExitCannotRun, CodeGovernanceRequired,
			"fix mode requires governance: auditd's governance status failed ("+client.Reason(err)+")",
			"check --token (GOVKIT_TOKEN): it needs the agent or gateway role")
		return false
	}
	// The seed's own words lead (H-24): "fix mode requires audit" above,
	// "fix mode requires policy" here.
	var needs, why, hint string
	switch {
	case !st.Policy.Loaded:
		needs, why, hint = "policy", "no policy is loaded", "start auditd with --policy FILE"
	case st.Policy.DryRun:
		needs, why, hint = "governance", "the policy is in dry-run, which decides nothing", "restart auditd without --dry-run (GOVKIT_POLICY_DRY_RUN)"
	}
	if why != "" {
		r.res.refuse(ExitCannotRun, CodeGovernanceRequired, "fix mode requires "+needs+": "+why, hint)
		r.violation(ctx, why, govapi.SeverityCritical, "refused")
		return false
	}
	r.flush(ctx)
	return true
}

// violation records a governance_violation event (agents may post it;
// DESIGN §11).
// Severity and outcome follow seed 003's violation types (H-26): critical
// and refused when governance is missing, warning and allowed for a
// destructive command that no approval released.
func (r *run) violation(ctx context.Context, why, severity, outcome string) {
	data, _ := json.Marshal(map[string]string{"reason": why, "mode": string(r.req.Mode), "severity": severity})
	ev := audit.Event{
		SchemaVersion: audit.SchemaVersion, EventID: r.newID(), EventType: "governance_violation",
		SessionID: r.req.Session, ActionClass: r.action(), Tool: &audit.Tool{Name: r.tool, RawCommand: r.command},
		Outcome: &audit.Outcome{Status: outcome}, Data: data,
	}
	r.setResource(&ev)
	if _, err := r.req.Client.Append(ctx, ev); err != nil {
		r.warn("recording the governance violation failed: %s", client.Reason(err))
	}
}

// flush sends the spooled incidents, once auditd answers.
func (r *run) flush(ctx context.Context) {
	fr, err := r.spool.Flush(ctx, r.req.Client)
	r.res.Flushed = append(r.res.Flushed, fr.Sent...)
	if len(fr.Sent) > 0 {
		r.notef("sent %d spooled incident(s) to auditd", len(fr.Sent))
	}
	if err != nil {
		r.warn("%d spooled incident(s) not sent yet: %s", fr.Left, client.Reason(err))
	}
}

func (r *run) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.res.Warnings = append(r.res.Warnings, msg)
	r.notef("warning: %s", msg)
}

func (r *run) newID() string { return audit.NewEventID(r.now(), r.rand) }

func (r *run) setResource(ev *audit.Event) {
	if r.resType != "" {
		ev.Resource = &audit.Resource{Type: r.resType, Name: r.resName}
	}
}

func (r *run) action() string {
	if a := r.res.Classification.ActionClass; a != "" {
		return string(a)
	}
	return string(intent.ActionWrite)
}

// decide asks auditd's policy (fix mode): deny refuses, require_approval
// waits for and consumes an approval. gate check asks the hypothetical
// explain instead, which records nothing and requests no approval.
func (r *run) decide(ctx context.Context) bool {
	if r.req.Mode != Fix {
		return true
	}
	c := r.req.Client
	var trace policy.DecisionTrace
	var approvalID string
	if r.req.CheckOnly {
		// As the caller: the principal gate run's decision would have.
		ex, err := c.Explain(ctx, govapi.ExplainQuery{ResourceType: r.resType, ResourceName: r.resName, Action: r.action(), SessionID: r.req.Session, AsCaller: true})
		if err != nil {
			return r.governanceLost(ctx, "asking for the policy decision", err)
		}
		trace = ex.DecisionTrace
		r.res.Decision = decisionOf(trace, "", true)
	} else {
		dr, err := c.Decide(ctx, govapi.DecisionRequest{
			EventID: r.newID(), SessionID: r.req.Session,
			Resource: govapi.Resource{Type: r.resType, Name: r.resName},
			Action:   r.action(),
			Tool:     &govapi.Tool{Name: r.tool, RawCommand: r.command},
			Reason:   "gate run: " + r.command, ApprovalID: r.req.ApprovalID,
		})
		if err != nil {
			return r.governanceLost(ctx, "asking for the policy decision", err)
		}
		trace, approvalID = dr.DecisionTrace, dr.ApprovalID
		id := ""
		if dr.Event != nil {
			id = dr.Event.EventID
		}
		r.res.Decision = decisionOf(trace, id, false)
	}
	r.limits = limitsOf(trace)

	switch trace.Decision.EnforcedEffect {
	case policy.EffectAllow:
		if r.action() == string(intent.ActionDestructive) && !r.req.CheckOnly {
			// Seed 003's third violation type: allowed, but logged.
			r.warn("the policy allows this destructive command without an approval")
			r.violation(ctx, "destructive command allowed without an approval", govapi.SeverityWarning, "allowed")
		}
		return true
	case policy.EffectDeny:
		if dc := r.res.Decision.Code; dc != "" {
			// A guardrail (RATE_LIMITED, CIRCUIT_OPEN): the explanation
			// says until when.
			r.res.refuse(ExitRefused, dc, trace.Explanation, "wait until it lifts, then retry; an approval cannot override it")
			r.res.Retryable = true
			return false
		}
		r.res.refuse(ExitRefused, CodePolicyBlocked, "policy denied: "+trace.Explanation,
			"the policy does not allow this; an approval cannot override a deny")
		return false
	case policy.EffectRequireApproval:
		if r.req.CheckOnly {
			r.res.refuse(ExitApproval, CodeApprovalRequired, "approval required: "+trace.Explanation,
				"gate run asks for it; with --wait DURATION it waits for the decision")
			return false
		}
		return r.approve(ctx, approvalID)
	}
	r.res.refuse(ExitCannotRun, CodeGovernanceUnavailable, fmt.Sprintf("auditd answered an unknown effect %q", trace.Decision.EnforcedEffect), "upgrade gate to auditd's version")
	return false
}

func decisionOf(tr policy.DecisionTrace, eventID string, hypothetical bool) *Decision {
	return &Decision{
		EventID: eventID, Effect: string(tr.Decision.Effect), EnforcedEffect: string(tr.Decision.EnforcedEffect),
		Code: tr.Decision.Code, Explanation: tr.Explanation, Hypothetical: hypothetical,
	}
}

// approve waits (with --wait) for the approval the decision asked for, or
// takes the one the caller holds, and consumes it with this command's
// action hash: an approval releases exactly one run of exactly the command
// that was approved (DESIGN §11).
func (r *run) approve(ctx context.Context, requested string) bool {
	c := r.req.Client
	id := r.req.ApprovalID
	if id == "" {
		id = requested
	}
	if id == "" {
		r.res.refuse(ExitCannotRun, CodeGovernanceUnavailable, "the policy requires approval but auditd opened no approval request", "check auditd's log")
		return false
	}
	r.res.Approval = &Approval{ID: id}
	if r.req.ApprovalID == "" {
		if r.req.Wait == 0 {
			r.res.refuse(ExitApproval, CodeApprovalRequired, "approval required: "+id,
				fmt.Sprintf("approve it with 'approvals approve %s', then run again with --approval %s (or pass --wait DURATION to wait)", id, id))
			return false
		}
		r.notef("waiting up to %s for approval %s ('approvals approve %s')", r.req.Wait, id, id)
		ap, err := r.waitApproval(ctx, id)
		if err != nil {
			return r.governanceLost(ctx, "waiting for approval "+id, err)
		}
		r.res.Approval.Status = string(ap.Status)
		switch ap.Status {
		case approval.Approved:
		case approval.Pending:
			r.res.refuse(ExitApproval, CodeApprovalPending, "approval "+id+" is still pending after --wait "+r.req.Wait.String(),
				fmt.Sprintf("run again with --approval %s once it is approved", id))
			return false
		case approval.Denied:
			r.res.refuse(ExitRefused, CodeApprovalDenied, "approval "+id+" was denied", "")
			return false
		default:
			r.res.refuse(ExitApproval, CodeApprovalExpired, fmt.Sprintf("approval %s is %s", id, ap.Status), "run again to request a new approval")
			return false
		}
	}
	hash := approval.ActionHash(audit.Resource{Type: r.resType, Name: r.resName}, r.action(), r.tool, r.command)
	ap, err := c.ConsumeApproval(ctx, id, hash)
	if err != nil {
		var ae *client.Error
		if !errors.As(err, &ae) {
			return r.governanceLost(ctx, "consuming approval "+id, err)
		}
		r.res.Approval.Status = ""
		switch {
		case ae.Code == approval.RefusedConsumed:
			r.res.refuse(ExitRefused, CodeApprovalConsumed, "approval "+id+" was used already: an approval releases one run", "run again without --approval to request a new one")
		case ae.Code == approval.RefusedMismatch:
			r.res.refuse(ExitRefused, CodeActionMismatch, "approval "+id+" was given for another command: "+ae.Message, "an approval releases exactly the command that was approved")
		case ae.StatusCode == http.StatusGone:
			r.res.refuse(ExitApproval, CodeApprovalStale, "approval "+id+" is past its validity window: "+ae.Message, "run again without --approval to request a new one")
		case ae.StatusCode == http.StatusConflict:
			r.res.refuse(ExitApproval, CodeApprovalPending, "approval "+id+" cannot be used: "+ae.Message, "wait for its decision, then run again")
		default:
			r.res.refuse(ExitRefused, CodeApprovalDenied, "approval "+id+" cannot be used: "+client.Reason(err), "")
		}
		return false
	}
	r.approval = id
	r.res.Approval.Status, r.res.Approval.Consumed = string(ap.Status), true
	return true
}

// waitApproval follows the request until it is decided or Wait passes,
// with auditd's long-poll.
func (r *run) waitApproval(ctx context.Context, id string) (approval.Request, error) {
	deadline := r.now().Add(r.req.Wait)
	for {
		left := deadline.Sub(r.now())
		ap, err := r.req.Client.WaitApproval(ctx, id, min(max(left, 0), govapi.MaxWait))
		if err != nil || ap.Status != approval.Pending || left <= 0 {
			return ap, err
		}
		if left < time.Second {
			// Too little left for a long-poll: wait it out here.
			select {
			case <-ctx.Done():
				return ap, ctx.Err()
			case <-time.After(left):
			}
		}
	}
}

// governanceLost is seed 003's "governance unavailable" at run time (H-25):
// the command is refused, the incident goes to stderr and to the spool, and
// the spool reaches auditd at the next successful contact.
func (r *run) governanceLost(ctx context.Context, doing string, err error) bool {
	var ae *client.Error
	if errors.As(err, &ae) && ae.StatusCode < 500 && ae.StatusCode != http.StatusTooManyRequests {
		// auditd answered, and refused: that is a refusal, not lost
		// governance.
		r.res.refuse(ExitCannotRun, CodeGovernanceRequired, doing+": "+client.Reason(err), "check --token (GOVKIT_TOKEN) and --resource")
		return false
	}
	msg := fmt.Sprintf("governance unavailable: auditd stopped answering while %s (%s); the command was not run", doing, client.Reason(err))
	r.res.refuse(ExitCannotRun, CodeGovernanceUnavailable, msg, "restart auditd; the incident is spooled and sent at the next contact")
	r.res.Retryable = true
	r.incident("governance_unavailable", msg, nil)
	return false
}

// incident reports a governance incident while auditd does not answer: on
// stderr, and to the spool, which the next successful contact flushes.
func (r *run) incident(typ, msg string, unrecorded *audit.Event) {
	in := govapi.IncidentInput{
		IncidentID: r.newID(), Type: typ, Severity: govapi.SeverityCritical, Source: "gate",
		SessionID: r.req.Session, Message: msg,
	}
	details, _ := json.Marshal(map[string]any{
		"command": r.command, "mode": r.req.Mode, "resource": r.res.Resource, "at": r.now().UTC(),
		"unrecorded_event": unrecorded,
	})
	in.Details = details
	r.notef("incident %s (%s, critical): %s", in.IncidentID, typ, msg)
	inc := Incident{ID: in.IncidentID, Type: typ}
	path, err := r.spool.Put(in)
	if err != nil {
		r.warn("the incident could not be spooled either: %v", err)
	}
	inc.Spooled = path
	r.res.Incidents = append(r.res.Incidents, inc)
}
