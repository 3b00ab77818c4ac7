// Package toolgov puts one agent tool call before auditd: policy for writes,
// approvals consumed for exactly that call, and every decision and outcome
// recorded with the session id (DESIGN §11, §14).
package toolgov

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/session/response"
	"github.com/govkit/govkit/pkg/termtext"
)

// Auditd is what toolgov asks of auditd; *client.Client satisfies it.
type Auditd interface {
	Decide(ctx context.Context, req govapi.DecisionRequest) (govapi.DecisionResult, error)
	Approval(ctx context.Context, id string) (approval.Request, error)
	ConsumeApproval(ctx context.Context, id, actionHash string) (approval.Request, error)
	Append(ctx context.Context, ev audit.Event) (audit.Event, error)
}

var _ Auditd = (*client.Client)(nil)

// Bounds of a Call, auditd's own (a longer field is refused there with a
// 400; here the error says which field before anything is sent).
const (
	// MaxName bounds the session id, call id, tool name and resource
	// type and name (auditd's names and ids).
	MaxName = 256
	// MaxRawCommand bounds Call.RawCommand, as auditd bounds an approval
	// request's raw_command. A longer call is refused, never cut: an
	// approval for a cut command would release every command sharing the
	// cut's prefix.
	MaxRawCommand = 64 << 10
	// MaxExcerpt bounds Record's result and error excerpts (bytes). auditd
	// keeps audit.MaxResult characters of a result, after redacting more
	// than that, so that a secret straddling the cut is still whole when
	// its pattern runs (DESIGN §11 "Secrets never enter the chain").
	MaxExcerpt = 2 << 10
	// maxReason bounds Record's reason and the agent label.
	maxReason = 1 << 10
)

// ResourceTypeTool is the resource type of a call that names no resource:
// the policy decides it as the tool itself ({tool, Edit}), so a policy
// file can govern a tool (resources: [{type: tool, name: Bash}]) even when
// no resource can be named for its call.
const ResourceTypeTool = "tool"

// Event types Record appends. auditd lets agents post both (DESIGN §11:
// only its own decisions, approvals and incidents are reserved).
const (
	TypeToolExecution = audit.TypeToolExecution // what became of a call
	TypeHookDecision  = "hook_decision"         // a decision that never reached policy
)

// ErrInvalidCall wraps what is wrong with a Call or Record: the caller's
// bug, or an agent's input beyond auditd's bounds. Nothing was sent.
var ErrInvalidCall = errors.New("invalid call")

// Call is one agent tool call.
type Call struct {
	SessionID string
	// CallID is the agent's id of the call ("" when it gives none): the
	// trace_id of the decision and of the call's Record, so that a
	// call's decision and outcome are found together.
	CallID string
	// Agent labels the caller ("claude", "mcp:<server>", …) in recorded
	// data and in the approval's reason; identity is the token's.
	Agent string
	// Tool is the agent's tool name.
	Tool string
	// Action is read, write or destructive.
	Action string
	// Resource is what the call acts on, e.g. {file, /abs/path}; zero
	// when none (then ResourceTypeTool). Tags are auditd's to add from
	// its infra file (DESIGN §11): leave them nil.
	Resource govapi.Resource
	// RawCommand is the shell command, else the tool input as compact
	// JSON (at most MaxRawCommand bytes). An approval releases exactly
	// this text (approval.ActionHash).
	RawCommand string
	// ApprovalID is an approval this session holds for exactly this call,
	// "" if none.
	ApprovalID string
}

// Verdict is auditd's answer to a Call.
type Verdict struct {
	// Effect is the enforced effect: allow, deny or require_approval.
	Effect policy.Effect
	// ApprovalID is the approval to wait for (require_approval: a new
	// request, or the held one still pending), the one consumed
	// (Consumed), or the one that was denied.
	ApprovalID string
	// Consumed: an approved request was consumed for this call.
	Consumed bool
	// Code is the reason code of a refusal: POLICY_BLOCKED,
	// APPROVAL_REQUIRED, or a guardrail's (RATE_LIMITED, CIRCUIT_OPEN);
	// "" when allowed.
	Code string
	// Reason is for the agent and its user: what was decided and what to
	// do next ("approve it with 'approvals approve ID', then retry").
	Reason string
	// EventID is the policy_decision event; "" when no decision was
	// asked (the held approval is still pending, or was denied).
	EventID string
}

// Governance is what a gate asks of auditd about tool calls (gate hook's
// and gate mcp's --url); *Gov is it, tests give a fake.
type Governance interface {
	Decide(ctx context.Context, c Call) (Verdict, error)
	Record(ctx context.Context, r Record) error
}

var _ Governance = (*Gov)(nil)

// Gov governs tool calls through one auditd.
type Gov struct {
	a    Auditd
	now  func() time.Time
	rand io.Reader
}

// New returns a Gov asking a. now and random make event ids (nil: the
// system clock and crypto/rand); now also judges a held approval's expiry
// before asking auditd to consume it.
func New(a Auditd, now func() time.Time, random io.Reader) *Gov {
	if now == nil {
		now = time.Now
	}
	if random == nil {
		random = rand.Reader
	}
	return &Gov{a: a, now: now, rand: random}
}

// Decide asks auditd's policy about c and settles the approval c holds:
//
//   - approved for exactly this call → the decision is asked with it, and
//     when the policy still requires approval it is consumed → allow
//     (Consumed); when the policy now allows, it is left unconsumed;
//   - pending → require_approval with the same id (nothing recorded);
//   - denied → deny (nothing recorded);
//   - consumed, expired, cancelled, stale, unknown, or given for another
//     call → a new decision, as without one.
//
// Without an approval: the decision, and for require_approval the new
// request's id. An error means governance could not decide (auditd down
// or refusing the caller, or an invalid call: ErrInvalidCall): the caller
// fails closed.
func (g *Gov) Decide(ctx context.Context, c Call) (Verdict, error) {
	if err := c.check(true); err != nil {
		return Verdict{}, err
	}
	c.Resource = c.resource()
	note := ""
	if c.ApprovalID != "" {
		v, done, why, err := g.held(ctx, c)
		if err != nil || done {
			return v, err
		}
		note = why
	}
	v, err := g.decide(ctx, c, "")
	if note != "" {
		v.Reason = note + "; " + v.Reason
	}
	return v, err
}

// held settles the approval c holds: a verdict (done), or why it cannot
// release this call, and a new decision is needed.
func (g *Gov) held(ctx context.Context, c Call) (v Verdict, done bool, why string, err error) {
	id := c.ApprovalID
	ap, err := g.a.Approval(ctx, id)
	if refused(err) {
		// Unknown, or not this caller's (403): it releases nothing here.
		return Verdict{}, false, fmt.Sprintf("approval %s cannot be used (%s)", id, client.Reason(err)), nil
	}
	if err != nil {
		return Verdict{}, false, "", fmt.Errorf("toolgov: reading approval %s: %w", id, err)
	}
	now := g.now()
	ap.Expire(now)
	hash := c.actionHash()
	switch {
	case ap.ActionHash != hash:
		return Verdict{}, false, fmt.Sprintf("approval %s was given for another call (%s, with another command or input), not this one: an approval releases exactly the call that was approved", id, approvedCall(ap)), nil
	case ap.Status == approval.Pending:
		return Verdict{
			Effect: policy.EffectRequireApproval, ApprovalID: id, Code: response.ApprovalRequired,
			Reason: fmt.Sprintf("approval %s for this call is still pending (%s): approve it with 'approvals approve %s', then retry the same call", id, quorumLeft(ap), id),
		}, true, "", nil
	case ap.Status == approval.Denied:
		return Verdict{
			Effect: policy.EffectDeny, ApprovalID: id, Code: response.PolicyBlocked,
			Reason: fmt.Sprintf("approval %s for this call was denied%s: do not retry it unchanged", id, deniedBy(ap)),
		}, true, "", nil
	case ap.Status == approval.Approved && ap.ValidUntil != nil && now.After(*ap.ValidUntil):
		return Verdict{}, false, fmt.Sprintf("approval %s was valid until %s", id, ap.ValidUntil.UTC().Format(time.RFC3339)), nil
	case ap.Status != approval.Approved:
		return Verdict{}, false, spent(id, string(ap.Status)), nil
	}

	v, err = g.decide(ctx, c, id)
	if err != nil || v.Effect != policy.EffectRequireApproval {
		return v, true, "", err // allowed without it, or denied whatever it says
	}
	if _, err := g.a.ConsumeApproval(ctx, id, hash); err != nil {
		if !refused(err) {
			return Verdict{}, true, "", fmt.Errorf("toolgov: consuming approval %s: %w", id, err)
		}
		// Used, stale or withdrawn since we read it (approval_consumed,
		// approval_stale, not_approved): a new request.
		return Verdict{}, false, fmt.Sprintf("approval %s cannot be consumed (%s)", id, client.Reason(err)), nil
	}
	return Verdict{
		Effect: policy.EffectAllow, ApprovalID: id, Consumed: true, EventID: v.EventID,
		Reason: fmt.Sprintf("approval %s was consumed for this call: it released this one execution", id),
	}, true, "", nil
}

// decide posts the decision; approvalID is the approval held for c, which
// keeps auditd from opening another request.
func (g *Gov) decide(ctx context.Context, c Call, approvalID string) (Verdict, error) {
	label := c.Agent
	if label == "" {
		label = "agent"
	}
	res, err := g.a.Decide(ctx, govapi.DecisionRequest{
		EventID: audit.NewEventID(g.now(), g.rand), SessionID: c.SessionID, TraceID: c.CallID,
		Resource: c.Resource, Action: c.Action,
		Tool:       &govapi.Tool{Name: c.Tool, RawCommand: c.RawCommand},
		Reason:     fmt.Sprintf("%s tool call %s in session %s", label, c.Tool, c.SessionID),
		ApprovalID: approvalID,
	})
	if err != nil {
		return Verdict{}, fmt.Errorf("toolgov: asking auditd's policy: %w", err)
	}
	v := Verdict{Effect: res.Decision.EnforcedEffect}
	if res.Event != nil {
		v.EventID = res.Event.EventID
	}
	what := fmt.Sprintf("%s on %s:%s", c.Action, c.Resource.Type, c.Resource.Name)
	switch v.Effect {
	case policy.EffectAllow:
		v.Reason = what + " allowed (" + decidedBy(res.DecisionTrace) + ")"
	case policy.EffectDeny:
		if code := res.Decision.Code; code != "" {
			// A guardrail (RATE_LIMITED, CIRCUIT_OPEN): its explanation
			// says until when.
			v.Code = code
			v.Reason = fmt.Sprintf("%s refused: %s; wait until it lifts, then retry (an approval cannot override it)", what, firstLine(res.DecisionTrace.Explanation))
			break
		}
		v.Code = response.PolicyBlocked
		v.Reason = fmt.Sprintf("%s denied (%s); an approval cannot override a deny: do not retry this call", what, decidedBy(res.DecisionTrace))
	case policy.EffectRequireApproval:
		if approvalID != "" {
			return v, nil // the held approval: the caller consumes it
		}
		if res.ApprovalID == "" {
			return Verdict{}, errors.New("toolgov: the policy requires approval but auditd opened no approval request")
		}
		v.ApprovalID, v.Code = res.ApprovalID, response.ApprovalRequired
		v.Reason = fmt.Sprintf("%s requires approval (%s): approval %s is pending; approve it with 'approvals approve %s', then retry the same call",
			what, decidedBy(res.DecisionTrace), res.ApprovalID, res.ApprovalID)
	default:
		return Verdict{}, fmt.Errorf("toolgov: auditd answered an unknown effect %q", v.Effect)
	}
	return v, nil
}

// Record is what became of a call, or a decision about it that never
// reached policy (the session reducer's, or gate's own).
type Record struct {
	Call Call
	// Type is TypeToolExecution (an outcome) or TypeHookDecision.
	Type string
	// Status: an outcome's success or error; a decision's allow, deny or
	// ask.
	Status string
	// Code is the reason code (FSM_BLOCKED, STRICT_RESOLUTION, …).
	Code   string
	Reason string
	// ReceiptID is the session's receipt for the call, when it has one.
	ReceiptID string
	// ApprovalID is the approval the call consumed (an outcome) or waits
	// for (a decision).
	ApprovalID string
	// Result and Error are excerpts of the tool's output and error (cut
	// to MaxExcerpt bytes here). They go in the event's tool member, whose
	// secrets auditd redacts before sealing; data is not redacted.
	Result, Error string
}

// recordData is the data member of a Record's event: what the common
// fields do not hold.
type recordData struct {
	Agent     string `json:"agent,omitempty"` // the caller's label; the event's agent is the token's
	CallID    string `json:"call_id,omitempty"`
	Action    string `json:"action,omitempty"`
	Code      string `json:"code,omitempty"`
	Reason    string `json:"reason,omitempty"`
	ReceiptID string `json:"receipt_id,omitempty"`
}

// Record appends r: a tool_execution event for an outcome, a hook_decision
// event for a decision, with the session id, the call id as trace id, and
// the approval id.
//
// A hook_decision names its action in data only, not in action_class:
// watchers judge events with an action class as actions taken (a
// destructive one without a consumed approval is an alert: pkg/detect),
// and a refusal took none. A tool_execution carries the call's resource,
// action, tool and command as Decide sent them, so that auditd's action
// hash for it matches the approval it consumed (DESIGN §11).
func (g *Gov) Record(ctx context.Context, r Record) error {
	c := r.Call
	switch {
	case r.Type != TypeToolExecution && r.Type != TypeHookDecision:
		return fmt.Errorf("%w: record type %q is not %s or %s", ErrInvalidCall, r.Type, TypeToolExecution, TypeHookDecision)
	case r.Status == "" || len(r.Status) > 64:
		return fmt.Errorf("%w: a record needs a status", ErrInvalidCall)
	case len(r.Code) > MaxName || len(r.ReceiptID) > MaxName || len(r.ApprovalID) > MaxName:
		return fmt.Errorf("%w: code, receipt id or approval id over %d bytes", ErrInvalidCall, MaxName)
	}
	if err := c.check(r.Type == TypeToolExecution); err != nil {
		return err
	}
	data, err := json.Marshal(recordData{
		Agent: termtext.Cut(c.Agent, maxReason), CallID: c.CallID, Action: c.Action, Code: r.Code,
		Reason: termtext.Cut(r.Reason, maxReason), ReceiptID: r.ReceiptID,
	})
	if err != nil {
		return fmt.Errorf("toolgov: %w", err)
	}
	ev := audit.Event{
		SchemaVersion: audit.SchemaVersion, EventID: audit.NewEventID(g.now(), g.rand), EventType: r.Type,
		TraceID: c.CallID, SessionID: c.SessionID, Outcome: &audit.Outcome{Status: r.Status},
		ApprovalID: r.ApprovalID, Data: data,
	}
	if r.Type == TypeToolExecution {
		ev.ActionClass = c.Action
	}
	if res := c.resource(); res.Type != "" {
		ev.Resource = &audit.Resource{Type: res.Type, Name: res.Name}
	}
	if c.Tool != "" || c.RawCommand != "" || r.Result != "" || r.Error != "" {
		ev.Tool = &audit.Tool{Name: c.Tool, RawCommand: c.RawCommand, Result: termtext.Cut(r.Result, MaxExcerpt), Error: termtext.Cut(r.Error, MaxExcerpt)}
	}
	if _, err := g.a.Append(ctx, ev); err != nil {
		return fmt.Errorf("toolgov: recording the %s: %w", r.Type, err)
	}
	return nil
}

// check reports what in c auditd would refuse; a decision (or an outcome)
// needs a tool and an action.
func (c Call) check(needTool bool) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidCall, fmt.Sprintf(format, args...))
	}
	for _, f := range [...]struct{ name, v string }{
		{"session id", c.SessionID}, {"call id", c.CallID}, {"tool", c.Tool},
		{"resource type", c.Resource.Type}, {"resource name", c.Resource.Name}, {"approval id", c.ApprovalID},
	} {
		if len(f.v) > MaxName || strings.ContainsAny(f.v, "\t\n\r\x00") || !utf8.ValidString(f.v) {
			return bad("the %s is over %d bytes, not one line, or not UTF-8", f.name, MaxName)
		}
	}
	switch {
	case c.SessionID == "":
		return bad("no session id")
	case len(c.RawCommand) > MaxRawCommand:
		return bad("the command or tool input is %d bytes; auditd takes at most %d", len(c.RawCommand), MaxRawCommand)
	case (c.Resource.Type == "") != (c.Resource.Name == ""):
		return bad("resource %q:%q needs both a type and a name", c.Resource.Type, c.Resource.Name)
	case needTool && c.Tool == "":
		return bad("no tool name")
	case needTool && !approval.ValidAction(c.Action):
		return bad("action %q is not read, write or destructive", c.Action)
	case c.Action != "" && !approval.ValidAction(c.Action):
		return bad("action %q is not read, write or destructive", c.Action)
	}
	return nil
}

// resource is c's resource, or the tool itself when it names none.
func (c Call) resource() govapi.Resource {
	if c.Resource.Type == "" && c.Tool != "" {
		return govapi.Resource{Type: ResourceTypeTool, Name: c.Tool}
	}
	return govapi.Resource{Type: c.Resource.Type, Name: c.Resource.Name}
}

// actionHash is what an approval for exactly c carries.
func (c Call) actionHash() string {
	res := c.resource()
	return approval.ActionHash(audit.Resource{Type: res.Type, Name: res.Name}, c.Action, c.Tool, c.RawCommand)
}

// refused reports whether err is auditd's refusal (a 4xx but 429): the
// same request gets the same answer, so the held approval is of no use,
// where anything else means auditd could not answer.
func refused(err error) bool {
	var ae *client.Error
	return errors.As(err, &ae) && !client.IsTransient(err) && ae.StatusCode >= 400 && ae.StatusCode < 500
}

// decidedBy names what decided, in a few words.
func decidedBy(tr policy.DecisionTrace) string {
	d := tr.Decision
	who := "the policy's default effect"
	if !tr.DefaultApplied && d.PolicyName != "" {
		who = fmt.Sprintf("policy %q", d.PolicyName)
		if d.Message != "" {
			who += ": " + d.Message
		}
	}
	if d.EnforcedEffect == policy.EffectRequireApproval && d.ApprovalQuorum > 1 {
		who += fmt.Sprintf("; %d approvers", d.ApprovalQuorum)
	}
	return who
}

func approvedCall(ap approval.Request) string {
	s := fmt.Sprintf("%s %s on %s:%s", ap.Tool, ap.Action, ap.Resource.Type, ap.Resource.Name)
	return strings.TrimSpace(s)
}

func quorumLeft(ap approval.Request) string {
	q := max(ap.Quorum, 1)
	return fmt.Sprintf("%d of %d approvals", ap.Approvals(), q)
}

func deniedBy(ap approval.Request) string {
	v, ok := ap.Denial()
	switch {
	case !ok:
		return ""
	case v.Reason == "":
		return " by " + v.By
	}
	return fmt.Sprintf(" by %s (%s)", v.By, termtext.Cut(v.Reason, 200))
}

func spent(id, status string) string {
	if status == string(approval.Consumed) {
		return fmt.Sprintf("approval %s was consumed already: an approval releases one execution", id)
	}
	return fmt.Sprintf("approval %s is %s", id, status)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return termtext.Cut(s, 300)
}
