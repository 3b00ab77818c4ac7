// Package approval is seed 003's approval workflow (DESIGN §7): a request
// for one action, the votes of distinct approvers, quorum, expiry, and the
// action hash that binds an approval to exactly that action. It does no I/O;
// every function that needs the time takes it.
package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/audit"
)

// SchemaVersion is the version of the request object.
const SchemaVersion = 1

// Status is where a request is in its life: pending, then one of
// approved, denied, expired or cancelled; an approved request is consumed
// by the one execution it releases, or cancelled before. Denied, expired,
// cancelled and consumed never change again.
type Status string

// The states of DESIGN §7 and §11.
const (
	Pending   Status = "pending"
	Approved  Status = "approved"
	Denied    Status = "denied"
	Expired   Status = "expired"
	Cancelled Status = "cancelled"
	Consumed  Status = "consumed"
)

// Statuses lists every state, in the order of a request's life.
var Statuses = []Status{Pending, Approved, Denied, Expired, Cancelled, Consumed}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	switch s {
	case Pending, Approved, Denied, Expired, Cancelled, Consumed:
		return true
	}
	return false
}

// Decision is one approver's vote.
type Decision string

// The two votes.
const (
	Approve Decision = "approve"
	Deny    Decision = "deny"
)

// Actions are the policy actions (DESIGN §5, seed 003 "Policy Structure"):
// what a request asks to do to its resource.
var Actions = []string{"read", "write", "destructive"}

// Limits on what a request may carry: the API bounds untrusted input.
const (
	DefaultTTL = 5 * time.Minute // GOVKIT_APPROVAL_TIMEOUT's default (seed 003)
	// DefaultValidFor is how long an approval may be consumed after it
	// was approved (DESIGN §11): long enough for a CI job to resume, short
	// enough that a forgotten approval does not release an action hours
	// later, when the world it was judged in has changed.
	DefaultValidFor = 15 * time.Minute
	MaxValidFor     = 24 * time.Hour
	MaxTTL          = 7 * 24 * time.Hour
	MinTTL          = time.Second
	MaxQuorum       = 10
	maxName         = 256
	maxReason       = 4 << 10
	maxRawCommand   = 64 << 10
	maxPolicyBytes  = 256 << 10
)

// Vote is one approver's decision, in the order it was cast.
type Vote struct {
	By       string    `json:"by"`
	Decision Decision  `json:"decision"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// Request is an approval request (DESIGN §7 request fields).
type Request struct {
	SchemaVersion int       `json:"schema_version"`
	ID            string    `json:"id"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	Status        Status    `json:"status"`
	RequestedBy   string    `json:"requested_by"`
	// RequestedFor is the policy principal the request was decided for
	// (its user id), when it is not the requester itself: neither may
	// approve it.
	RequestedFor   string          `json:"requested_for,omitempty"`
	Resource       audit.Resource  `json:"resource"`
	Action         string          `json:"action"`
	Tool           string          `json:"tool,omitempty"`
	RawCommand     string          `json:"raw_command,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	Quorum         int             `json:"quorum"`
	ActionHash     string          `json:"action_hash"`
	Votes          []Vote          `json:"votes"`
	DecidedAt      *time.Time      `json:"decided_at"`
	PolicyDecision json.RawMessage `json:"policy_decision,omitempty"`
	// ValidFor is how long after approval the request may be consumed
	// (a Go duration; "" is DefaultValidFor); ValidUntil is set when it is
	// approved.
	ValidFor   string     `json:"valid_for,omitempty"`
	ValidUntil *time.Time `json:"valid_until,omitempty"`
	// ConsumedAt and ConsumedBy record the one execution an approval
	// released (DESIGN §11); CancelledBy who withdrew it.
	ConsumedAt  *time.Time `json:"consumed_at,omitempty"`
	ConsumedBy  string     `json:"consumed_by,omitempty"`
	CancelledBy string     `json:"cancelled_by,omitempty"`
}

// Input is what a requester supplies (the body of POST /v1/approvals).
// The requester's name is not part of it: it is who authenticated.
type Input struct {
	Resource       audit.Resource  `json:"resource"`
	Action         string          `json:"action"`
	Tool           string          `json:"tool,omitempty"`
	RawCommand     string          `json:"raw_command,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	Quorum         int             `json:"quorum,omitempty"`          // 0: 1
	TTL            string          `json:"ttl,omitempty"`             // a Go duration; "": the server's default
	PolicyDecision json.RawMessage `json:"policy_decision,omitempty"` // the decision that required the approval
}

// FieldError is an invalid field of an Input or a Vote; the API answers it
// with 400.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// New validates in and returns a pending request by requester, created at
// now and expiring after in.TTL (defaultTTL when empty).
func New(in Input, id, requester string, now time.Time, defaultTTL time.Duration) (Request, error) {
	if err := checkName("requested_by", requester); err != nil {
		return Request{}, err
	}
	if err := checkName("resource.type", in.Resource.Type); err != nil {
		return Request{}, err
	}
	if err := checkName("resource.name", in.Resource.Name); err != nil {
		return Request{}, err
	}
	for _, tag := range in.Resource.Tags {
		if err := checkName("resource.tags", tag); err != nil {
			return Request{}, err
		}
	}
	if !ValidAction(in.Action) {
		return Request{}, &FieldError{"action", fmt.Sprintf("%q is not one of %s", in.Action, strings.Join(Actions, ", "))}
	}
	if in.Tool != "" {
		if err := checkName("tool", in.Tool); err != nil {
			return Request{}, err
		}
	}
	if err := checkText("raw_command", in.RawCommand, maxRawCommand); err != nil {
		return Request{}, err
	}
	if err := checkText("reason", in.Reason, maxReason); err != nil {
		return Request{}, err
	}
	quorum := in.Quorum
	if quorum == 0 {
		quorum = 1
	}
	if quorum < 1 || quorum > MaxQuorum {
		return Request{}, &FieldError{"quorum", fmt.Sprintf("%d is not between 1 and %d", in.Quorum, MaxQuorum)}
	}
	ttl := defaultTTL
	if in.TTL != "" {
		d, err := time.ParseDuration(in.TTL)
		if err != nil {
			return Request{}, &FieldError{"ttl", fmt.Sprintf("%q is not a duration such as 15m", in.TTL)}
		}
		ttl = d
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return Request{}, &FieldError{"ttl", fmt.Sprintf("%s is not between %s and %s", ttl, MinTTL, MaxTTL)}
	}
	if len(in.PolicyDecision) > maxPolicyBytes {
		return Request{}, &FieldError{"policy_decision", fmt.Sprintf("%d bytes; the limit is %d", len(in.PolicyDecision), maxPolicyBytes)}
	}
	if len(in.PolicyDecision) > 0 && (in.PolicyDecision[0] != '{' || !json.Valid(in.PolicyDecision)) {
		return Request{}, &FieldError{"policy_decision", "must be a JSON object"}
	}
	now = now.UTC()
	return Request{
		SchemaVersion:  SchemaVersion,
		ID:             id,
		CreatedAt:      now,
		ExpiresAt:      now.Add(ttl),
		Status:         Pending,
		RequestedBy:    requester,
		Resource:       in.Resource,
		Action:         in.Action,
		Tool:           in.Tool,
		RawCommand:     in.RawCommand,
		Reason:         in.Reason,
		Quorum:         quorum,
		ActionHash:     ActionHash(in.Resource, in.Action, in.Tool, in.RawCommand),
		Votes:          []Vote{},
		PolicyDecision: in.PolicyDecision,
	}, nil
}

// ActionHash is the hex SHA-256 of the action's canonical JSON (RFC 8785):
// resource type and name, action, tool and raw command. An enforcement point
// that holds an approval recomputes it for the action it is about to run, so
// an approval releases exactly the action that was approved (DESIGN §7).
// Tags are left out: they describe the resource, they do not change the
// action.
func ActionHash(res audit.Resource, action, tool, rawCommand string) string {
	b, err := audit.Canonical(struct {
		Resource   [2]string `json:"resource"`
		Action     string    `json:"action"`
		Tool       string    `json:"tool"`
		RawCommand string    `json:"raw_command"`
	}{[2]string{res.Type, res.Name}, action, tool, rawCommand})
	if err != nil { // strings always encode
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Due reports whether r is pending past its expiry at now.
func (r *Request) Due(now time.Time) bool {
	return r.Status == Pending && !now.Before(r.ExpiresAt)
}

// Expire moves a pending request past its expiry to expired, decided at its
// expiry time, and reports whether it did. Callers expire before they read
// or decide, so that a late request is never shown pending or approved.
func (r *Request) Expire(now time.Time) bool {
	if !r.Due(now) {
		return false
	}
	r.Status = Expired
	at := r.ExpiresAt
	r.DecidedAt = &at
	return true
}

// Approvals counts the distinct approvers so far.
func (r *Request) Approvals() int {
	n := 0
	for _, v := range r.Votes {
		if v.Decision == Approve {
			n++
		}
	}
	return n
}

// Denial returns the deny vote that ended the request (one deny ends it,
// so there is at most one), and false when none did.
func (r *Request) Denial() (Vote, bool) {
	for _, v := range r.Votes {
		if v.Decision == Deny {
			return v, true
		}
	}
	return Vote{}, false
}

// Refusal is a vote that the rules of DESIGN §7 refuse; Code names the rule
// (the API answers 403 for self_approval, 409 for the others).
type Refusal struct {
	Code string
	Msg  string
}

func (e *Refusal) Error() string { return e.Msg }

// Refusal codes.
const (
	RefusedSelfApproval = "self_approval"
	RefusedAlreadyVoted = "already_voted"
	RefusedNotPending   = "not_pending"
	RefusedExpired      = "expired"
	// Consumption and cancellation (DESIGN §11).
	RefusedNotRequester = "not_requester"     // 403: only the requester (or a gateway, or for cancel an admin)
	RefusedConsumed     = "approval_consumed" // 409: it released its one execution already
	RefusedNotApproved  = "not_approved"      // 409: pending, denied, expired or cancelled
	RefusedMismatch     = "action_mismatch"   // 409: another action than the one approved
	RefusedStale        = "approval_stale"    // 410: past valid_until
)

// Decide records by's vote at now: one deny ends the request, Quorum
// distinct approvals approve it. The requester can never vote on their own
// request, each approver counts once (names compare case-insensitively, so
// "Alice" is alice), and nothing is recorded on a request that is decided or
// expired. On an error r is unchanged; a request past its expiry must be
// expired with Expire first (Decide refuses it either way).
func (r *Request) Decide(by string, d Decision, reason string, now time.Time) error {
	if err := checkName("by", by); err != nil {
		return err
	}
	switch d {
	case Approve:
	case Deny:
		if strings.TrimSpace(reason) == "" {
			return &FieldError{"reason", "a deny needs a reason: the requester reads it"}
		}
	default:
		return &FieldError{"decision", fmt.Sprintf("%q is not approve or deny", d)}
	}
	if err := checkText("reason", reason, maxReason); err != nil {
		return err
	}
	switch {
	case r.Status != Pending:
		return &Refusal{RefusedNotPending, fmt.Sprintf("approval %s is %s already%s; nothing changed", r.ID, r.Status, r.decidedBy())}
	case r.Due(now):
		return &Refusal{RefusedExpired, fmt.Sprintf("approval %s expired at %s; a decision after expiry is refused — ask the requester for a new request", r.ID, r.ExpiresAt.Format(time.RFC3339))}
	case strings.EqualFold(by, r.RequestedBy):
		return &Refusal{RefusedSelfApproval, fmt.Sprintf("%s requested approval %s and cannot decide it; another approver must", by, r.ID)}
	case r.RequestedFor != "" && strings.EqualFold(by, r.RequestedFor):
		return &Refusal{RefusedSelfApproval, fmt.Sprintf("approval %s was requested for %s, who cannot decide it; another approver must", r.ID, by)}
	}
	for _, v := range r.Votes {
		if strings.EqualFold(v.By, by) {
			return &Refusal{RefusedAlreadyVoted, fmt.Sprintf("%s has already voted on approval %s (%s); each approver counts once — it needs %d more approval(s) from someone else", by, r.ID, v.Decision, r.Quorum-r.Approvals())}
		}
	}
	now = now.UTC()
	r.Votes = append(r.Votes, Vote{By: by, Decision: d, Reason: reason, At: now})
	switch {
	case d == Deny:
		r.Status = Denied
	case r.Approvals() >= r.Quorum:
		r.Status = Approved
		until := now.Add(r.validFor())
		r.ValidUntil = &until
	default:
		return nil
	}
	r.DecidedAt = &now
	return nil
}

// validFor is r.ValidFor as a duration (DefaultValidFor when unset or
// unreadable: never longer than asked).
func (r *Request) validFor() time.Duration {
	d, err := time.ParseDuration(r.ValidFor)
	if err != nil || d <= 0 || d > MaxValidFor {
		return DefaultValidFor
	}
	return d
}

// Consume releases the one execution an approved request allows (DESIGN
// §11): by must be the requester unless asGateway (a gateway acting for
// it), actionHash must be the request's ActionHash, and now must be within
// its validity window. A request is consumed once: a second consumption is
// refused, so one approval can never release two executions. On an error r
// is unchanged.
func (r *Request) Consume(by string, asGateway bool, actionHash string, now time.Time) error {
	if err := checkName("by", by); err != nil {
		return err
	}
	switch {
	case !asGateway && !strings.EqualFold(by, r.RequestedBy):
		return &Refusal{RefusedNotRequester, fmt.Sprintf("%s did not request approval %s (%s did): only the requester, or a gateway acting for it, may consume it", by, r.ID, r.RequestedBy)}
	case r.Status == Consumed:
		return &Refusal{RefusedConsumed, fmt.Sprintf("approval %s was consumed already (by %s at %s): an approval releases one execution; request a new one", r.ID, r.ConsumedBy, r.ConsumedAt.Format(time.RFC3339))}
	case r.Status != Approved:
		return &Refusal{RefusedNotApproved, fmt.Sprintf("approval %s is %s, not approved: nothing to consume", r.ID, r.Status)}
	case actionHash != r.ActionHash:
		return &Refusal{RefusedMismatch, fmt.Sprintf("approval %s was given for another action (action_hash %s…, not %s…): an approval releases exactly the action that was approved", r.ID, r.ActionHash[:min(12, len(r.ActionHash))], actionHash[:min(12, len(actionHash))])}
	case r.ValidUntil != nil && now.After(*r.ValidUntil):
		return &Refusal{RefusedStale, fmt.Sprintf("approval %s was valid until %s; request a new one", r.ID, r.ValidUntil.Format(time.RFC3339))}
	}
	now = now.UTC()
	r.Status, r.ConsumedAt, r.ConsumedBy = Consumed, &now, by
	return nil
}

// Cancel withdraws a pending request, or an approved one not yet consumed:
// by must be the requester unless asAdmin. On an error r is unchanged.
func (r *Request) Cancel(by string, asAdmin bool, now time.Time) error {
	if err := checkName("by", by); err != nil {
		return err
	}
	switch {
	case !asAdmin && !strings.EqualFold(by, r.RequestedBy):
		return &Refusal{RefusedNotRequester, fmt.Sprintf("%s did not request approval %s (%s did): only the requester or an admin may cancel it", by, r.ID, r.RequestedBy)}
	case r.Status != Pending && r.Status != Approved:
		return &Refusal{RefusedNotPending, fmt.Sprintf("approval %s is %s already%s; nothing to cancel", r.ID, r.Status, r.decidedBy())}
	}
	now = now.UTC()
	if r.Status == Pending {
		r.DecidedAt = &now
	}
	r.Status, r.CancelledBy = Cancelled, by
	return nil
}

// decidedBy names who ended a request, for refusals.
func (r *Request) decidedBy() string {
	switch {
	case r.Status == Cancelled:
		return " (by " + r.CancelledBy + ")"
	case r.Status == Consumed:
		return " (by " + r.ConsumedBy + ")"
	case r.Status == Expired || len(r.Votes) == 0:
		return ""
	}
	return " (by " + r.Votes[len(r.Votes)-1].By + ")"
}

// ValidAction reports whether a is one of Actions.
func ValidAction(a string) bool {
	for _, v := range Actions {
		if a == v {
			return true
		}
	}
	return false
}

// checkName accepts a short, printable, non-empty single-line name: names
// are shown in terminals, Slack messages and logs.
func checkName(field, s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return &FieldError{field, "is empty"}
	case len(s) > maxName:
		return &FieldError{field, fmt.Sprintf("is %d bytes; the limit is %d", len(s), maxName)}
	case strings.ContainsAny(s, "\t\n"):
		return &FieldError{field, "must be one line"}
	}
	return checkText(field, s, maxName)
}

// checkText accepts valid UTF-8 up to max bytes without control characters
// other than tab and newline (which could rewrite what a terminal shows).
func checkText(field, s string, max int) error {
	if len(s) > max {
		return &FieldError{field, fmt.Sprintf("is %d bytes; the limit is %d", len(s), max)}
	}
	if !utf8.ValidString(s) {
		return &FieldError{field, "is not valid UTF-8"}
	}
	for i, c := range s {
		if unicode.IsControl(c) && c != '\t' && c != '\n' {
			return &FieldError{field, fmt.Sprintf("has a control character (%U) at byte %d", c, i)}
		}
	}
	return nil
}
