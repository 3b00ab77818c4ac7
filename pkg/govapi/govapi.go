// Package govapi is the contract of auditd's whole HTTP API — routes,
// request and response bodies, query strings and error codes — shared by
// auditd and pkg/client so that the two cannot drift apart.
package govapi

import (
	"encoding/json"
	"time"

	"github.com/govkit/govkit/pkg/policy"
)

// Status is GET /api/v1/governance: what governs right now.
type Status struct {
	SchemaVersion int       `json:"schema_version"`
	Version       string    `json:"version"` // auditd's build
	StartedAt     time.Time `json:"started_at"`
	// Auth is "tokens" (a tokens file) or "local" (loopback, no credentials).
	Auth      string         `json:"auth"`
	Policy    PolicyStatus   `json:"policy"`
	Infra     InfraStatus    `json:"infra"`
	Chain     ChainStatus    `json:"chain"`
	Approvals ApprovalCounts `json:"approvals"`
}

// PolicyStatus describes the loaded policy file. Loaded is false when auditd
// runs without --policy: decisions and explain then answer 503.
type PolicyStatus struct {
	Loaded        bool            `json:"loaded"`
	File          string          `json:"file,omitempty"`
	SHA256        string          `json:"sha256,omitempty"` // of the file's bytes: which version is in force
	LoadedAt      *time.Time      `json:"loaded_at,omitempty"`
	DefaultEffect string          `json:"default_effect,omitempty"`
	DryRun        bool            `json:"dry_run"`
	Policies      []PolicySummary `json:"policies"`
	// ReloadError is the last failed reload (SIGHUP) since the policy in
	// force was loaded: the old policy stays in force.
	ReloadError   string     `json:"reload_error,omitempty"`
	ReloadErrorAt *time.Time `json:"reload_error_at,omitempty"`
}

// PolicySummary is one policy of the loaded file, for overviews.
type PolicySummary struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Enabled     bool     `json:"enabled"`
	Enforcement string   `json:"enforcement"` // enforce | audit
	Resources   []string `json:"resources"`   // TYPE or TYPE:NAME-GLOB, with [tags] when matched on tags
	Rules       int      `json:"rules"`
}

// InfraStatus describes the loaded infra file (resource tags).
type InfraStatus struct {
	Loaded    bool       `json:"loaded"`
	File      string     `json:"file,omitempty"`
	Resources int        `json:"resources"`
	LoadedAt  *time.Time `json:"loaded_at,omitempty"`
}

// ChainStatus is the audit chain's head and last verification result
// (unverified, verified, broken), as GET /health reports it.
type ChainStatus struct {
	HeadSeq  int64  `json:"head_seq"`
	HeadHash string `json:"head_hash"`
	State    string `json:"state"`
}

// ApprovalCounts counts approval requests.
type ApprovalCounts struct {
	Pending int `json:"pending"`
}

// DecisionRequest is the body of POST /api/v1/decisions: a proposed action
// to evaluate against the loaded policy and record (seed 003 "Policy
// Evaluation Flow"). The evaluation time is auditd's clock, never the
// caller's. SessionID is what the policy file's guardrails count per: a
// request without one is not subject to them (DESIGN §12).
type DecisionRequest struct {
	// EventID is an optional idempotency key: a retry returns the decision
	// recorded first, and never records (or requests approval) twice.
	EventID   string                  `json:"event_id,omitempty"`
	Agent     string                  `json:"agent,omitempty"`
	SessionID string                  `json:"session_id,omitempty"`
	TraceID   string                  `json:"trace_id,omitempty"`
	Principal policy.RequestPrincipal `json:"principal"`
	Resource  Resource                `json:"resource"`
	Action    string                  `json:"action"` // read | write | destructive
	Tool      *Tool                   `json:"tool,omitempty"`
	// RowsAffected/PodsAffected with PostExecution: the blast-radius check
	// after execution (seed 003 "Guardrails"); the decision then carries
	// post_execution: true.
	RowsAffected  int  `json:"rows_affected,omitempty"`
	PodsAffected  int  `json:"pods_affected,omitempty"`
	PostExecution bool `json:"post_execution,omitempty"`
	// Reason and ApprovalTTL go into the approval request created when
	// the decision requires approval.
	Reason      string `json:"reason,omitempty"`
	ApprovalTTL string `json:"approval_ttl,omitempty"` // a Go duration; "": auditd's default
	// ApprovalID names an approval the caller already holds for this
	// action (gate run --approval): when the decision requires approval,
	// auditd opens no new request, and the caller consumes this one, which
	// checks that it releases exactly this action (DESIGN §11).
	ApprovalID string `json:"approval_id,omitempty"`
}

// Resource names what the action touches. Tags nil means "from the loaded
// infra file"; an empty list means "no tags".
type Resource struct {
	Type string   `json:"type"`
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

// Tool is the tool call the decision is about.
type Tool struct {
	Name       string          `json:"name,omitempty"`
	RawCommand string          `json:"raw_command,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Explanation is a decision trace as govexplain -o json prints it (DESIGN §5)
// and the answer of the explain endpoints. Event names the recorded event
// for retrospective answers (and for POST /api/v1/decisions).
type Explanation struct {
	SchemaVersion int `json:"schema_version"`
	policy.DecisionTrace
	Event *EventRef `json:"event,omitempty"`
	// Note says something the trace does not, such as "resource not in the
	// infra file, so it has no tags" (seed 003 "Audit Enrichment" note).
	Note string `json:"note,omitempty"`
}

// EventRef names a recorded event.
type EventRef struct {
	EventID   string    `json:"event_id"`
	Seq       int64     `json:"seq"`
	Timestamp time.Time `json:"timestamp"`
}

// DecisionResult is the answer of POST /api/v1/decisions: the trace, the
// recorded policy_decision event and, when the enforced effect is
// require_approval, the approval request created for it.
type DecisionResult struct {
	Explanation
	ApprovalID        string     `json:"approval_id,omitempty"`
	ApprovalExpiresAt *time.Time `json:"approval_expires_at,omitempty"`
}

// DecisionRecord is what a policy_decision event stores in its
// policy_decision member (seed 003 "Audit Enrichment": every decision,
// allowed ones too). PolicyName and RuleIndex are absent when the default
// effect applied.
type DecisionRecord struct {
	ResourceType   string               `json:"resource_type"`
	ResourceName   string               `json:"resource_name"`
	Action         string               `json:"action"`
	Tags           []string             `json:"tags"`
	Effect         string               `json:"effect"`
	EnforcedEffect string               `json:"enforced_effect"`
	PolicyName     *string              `json:"policy_name,omitempty"`
	RuleIndex      *int                 `json:"rule_index,omitempty"`
	Message        string               `json:"message,omitempty"`
	Note           string               `json:"note,omitempty"`
	DryRun         bool                 `json:"dry_run"`
	PostExecution  bool                 `json:"post_execution"`
	DefaultApplied bool                 `json:"default_applied"`
	Trace          policy.DecisionTrace `json:"trace"`
	Explanation    string               `json:"explanation"`
	PolicySHA256   string               `json:"policy_sha256,omitempty"` // the policy file in force
	// Code is the decision's reason code when a guardrail refused it
	// (RATE_LIMITED, CIRCUIT_OPEN; policy.Decision.Code).
	Code string `json:"code,omitempty"`
}

// DecisionEventData is the data member of a policy_decision event recorded
// by POST /api/v1/decisions: what the DecisionRecord does not hold.
//
// Caller is who called auditd, authenticated (a token's name; in local mode
// the X-Govkit-User header). The principal is the token's own unless the
// caller is a gateway, which names the principal it authenticated itself
// (DESIGN §11); the event's caller member says the same inside the hashed
// body, and these fields stay for readers of earlier events.
type DecisionEventData struct {
	Caller      string   `json:"caller,omitempty"`
	CallerRoles []string `json:"caller_roles,omitempty"`
	Auth        string   `json:"auth"` // tokens | local
	// Service is the principal's service account (the event's principal
	// holds user_id and roles only).
	Service      string `json:"service,omitempty"`
	RowsAffected int    `json:"rows_affected,omitempty"`
	PodsAffected int    `json:"pods_affected,omitempty"`
	Reason       string `json:"reason,omitempty"`
	// RequestSHA256 fingerprints the request (canonical JSON, defaults
	// applied, without event_id): a retry with the same event_id must be
	// the same request.
	RequestSHA256 string `json:"request_sha256"`
}

// Incident severities.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// IncidentInput is the body of POST /api/v1/incidents.
type IncidentInput struct {
	// IncidentID is an optional idempotency key (it becomes the event_id).
	IncidentID string `json:"incident_id,omitempty"`
	Type       string `json:"type"`     // what was detected: chain_tampering, potential_sql_injection, …
	Severity   string `json:"severity"` // info | warning | critical
	Source     string `json:"source"`   // who reports it: secbot, auditor, gate, …
	Agent      string `json:"agent,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	TraceID    string `json:"trace_id,omitempty"`
	Message    string `json:"message"`
	// EventIDs name the audit events behind the incident.
	EventIDs []string        `json:"event_ids,omitempty"`
	Details  json.RawMessage `json:"details,omitempty"`
}

// Incident is a stored incident: an event of type "incident" whose data is
// the IncidentInput (without incident_id), answered with its place in the
// chain.
type Incident struct {
	SchemaVersion int `json:"schema_version"`
	IncidentInput
	Event EventRef `json:"event"`
}
