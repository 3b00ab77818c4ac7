package govbot

import (
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// Report is govbot's compliance snapshot: one member per phase of seed 003
// "Compliance Reporting › Compliance Phases", printed as one JSON object
// with -o json (DESIGN §3: schema_version, snake_case, UTC RFC 3339 times).
type Report struct {
	SchemaVersion int       `json:"schema_version"`
	GeneratedAt   time.Time `json:"generated_at"`
	Gateway       string    `json:"gateway"`
	Window        Window    `json:"window"`

	Governance GovernancePhase `json:"governance"` // phase 1
	Policy     PolicyPhase     `json:"policy"`     // phase 2
	Activity   ActivityPhase   `json:"activity"`   // phase 3
	Decisions  DecisionPhase   `json:"decisions"`  // phase 4
	Approvals  ApprovalPhase   `json:"approvals"`  // phase 5
	Chain      ChainPhase      `json:"chain"`      // phase 6
	Summary    Summary         `json:"summary"`    // phase 7
}

// Window is the look-back window of --since: events with From <= timestamp,
// up to the chain head auditd reported when the report started.
type Window struct {
	Since string    `json:"since"` // --since as given: "24h"
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
}

// GovernancePhase is phase 1, GET /api/v1/governance: what governs now.
type GovernancePhase struct {
	AuditdVersion    string     `json:"auditd_version"`
	StartedAt        time.Time  `json:"started_at"`
	Auth             string     `json:"auth"` // tokens | local
	PolicyLoaded     bool       `json:"policy_loaded"`
	InfraLoaded      bool       `json:"infra_loaded"`
	InfraFile        string     `json:"infra_file,omitempty"`
	InfraResources   int        `json:"infra_resources"`
	InfraLoadedAt    *time.Time `json:"infra_loaded_at,omitempty"`
	ChainHeadSeq     int64      `json:"chain_head_seq"`
	ChainHeadHash    string     `json:"chain_head_hash"`
	ChainState       string     `json:"chain_state"` // auditd's last verification: unverified | verified | broken
	PendingApprovals int        `json:"pending_approvals"`
}

// PolicyPhase is phase 2: the loaded policy file, policy by policy.
type PolicyPhase struct {
	Loaded        bool             `json:"loaded"`
	File          string           `json:"file,omitempty"`
	SHA256        string           `json:"sha256,omitempty"`
	LoadedAt      *time.Time       `json:"loaded_at,omitempty"`
	DefaultEffect string           `json:"default_effect,omitempty"`
	DryRun        bool             `json:"dry_run"`
	Enabled       int              `json:"enabled"`
	Disabled      int              `json:"disabled"`
	AuditOnly     int              `json:"audit_only"` // enforcement: audit
	Rules         int              `json:"rules"`
	Policies      []PolicyOverview `json:"policies"`
	ReloadError   string           `json:"reload_error,omitempty"`
	ReloadErrorAt *time.Time       `json:"reload_error_at,omitempty"`
}

// PolicyOverview is one policy of the loaded file.
type PolicyOverview struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Enabled     bool     `json:"enabled"`
	Enforcement string   `json:"enforcement"`
	Resources   []string `json:"resources"`
	Rules       int      `json:"rules"`
	// Decisions counts the decisions in the window this policy decided
	// (phase 4): a policy that never decides may be shadowed or stale.
	Decisions int64 `json:"decisions"`
}

// ActivityPhase is phase 3, GET /api/v1/governance/events?since=: what
// happened in the window.
type ActivityPhase struct {
	Events    int64 `json:"events"` // events analysed
	FirstSeq  int64 `json:"first_seq,omitempty"`
	LastSeq   int64 `json:"last_seq,omitempty"`
	MaxEvents int   `json:"max_events"`
	// Capped is true when the window held more than MaxEvents events:
	// only the latest MaxEvents (FirstSeq to LastSeq) were analysed.
	Capped      bool             `json:"capped"`
	ByEventType map[string]int64 `json:"by_event_type"`
	ByAgent     map[string]int64 `json:"by_agent"`
	// ByActionClass counts actions only: not the decisions, approval
	// changes and incidents that mention an action class.
	ByActionClass map[string]int64 `json:"by_action_class"`
	// Incidents are the incident events of the window (at most
	// maxListed, the latest); IncidentsTotal counts them all, and
	// IncidentTypes counts them by type.
	Incidents      []IncidentSummary `json:"incidents"`
	IncidentsTotal int64             `json:"incidents_total"`
	IncidentTypes  map[string]int64  `json:"incident_types"`
	// Unapproved are destructive actions without a consumed approval
	// (pkg/detect's unauthorized_destructive, seed 003 "Security
	// Detection"), at most maxListed; UnapprovedTotal counts them all.
	Unapproved      []UnapprovedAction `json:"unapproved_destructive"`
	UnapprovedTotal int64              `json:"unapproved_destructive_total"`
}

// IncidentSummary is one incident event (POST /api/v1/incidents).
type IncidentSummary struct {
	Seq       int64     `json:"seq"`
	EventID   string    `json:"event_id"`
	Timestamp time.Time `json:"timestamp"`
	Type      string    `json:"type"`
	Severity  string    `json:"severity,omitempty"`
	Source    string    `json:"source,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Message   string    `json:"message,omitempty"`
	Tampering bool      `json:"tampering"`
}

// UnapprovedAction is a destructive action that no consumed approval
// covers.
type UnapprovedAction struct {
	Seq       int64     `json:"seq"`
	EventID   string    `json:"event_id"`
	Timestamp time.Time `json:"timestamp"`
	Agent     string    `json:"agent,omitempty"`
	Resource  string    `json:"resource,omitempty"`
	Command   string    `json:"command,omitempty"`
	Message   string    `json:"message"`
}

// DecisionPhase is phase 4: policy_decision events per resource, split
// by enforced effect; no_match is a decision no policy had an outcome for
// (default_applied), seed 003 "Detection Logic › Phase 4".
type DecisionPhase struct {
	Total           int64               `json:"total"`
	Allow           int64               `json:"allow"`
	Deny            int64               `json:"deny"`
	RequireApproval int64               `json:"require_approval"`
	NoMatch         int64               `json:"no_match"`
	Unreadable      int64               `json:"unreadable"` // a policy_decision member that is not a decision record
	Resources       []ResourceDecisions `json:"resources"`
	ByPolicy        map[string]int64    `json:"by_policy"`
}

// ResourceDecisions counts one resource's decisions.
type ResourceDecisions struct {
	Resource        string `json:"resource"` // TYPE:NAME
	Allow           int64  `json:"allow"`
	Deny            int64  `json:"deny"`
	RequireApproval int64  `json:"require_approval"`
	NoMatch         int64  `json:"no_match"`
	Total           int64  `json:"total"`
	// Note is auditd's note on the latest no_match decision ("resource not
	// in the infra file, so it has no tags").
	Note string `json:"note,omitempty"`
}

// ApprovalPhase is phase 5, GET /api/v1/governance/approvals/pending.
type ApprovalPhase struct {
	Pending    int               `json:"pending"`
	Stale      int               `json:"stale"`
	StaleAfter string            `json:"stale_after"`
	Requests   []PendingApproval `json:"requests"`
}

// PendingApproval is one pending request.
type PendingApproval struct {
	ID           string    `json:"id"`
	Resource     string    `json:"resource"`
	Action       string    `json:"action"`
	RequestedBy  string    `json:"requested_by"`
	CreatedAt    time.Time `json:"created_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	PendingForMS int64     `json:"pending_for_ms"`
	Approvals    int       `json:"approvals"`
	Quorum       int       `json:"quorum"`
	Stale        bool      `json:"stale"`
}

// ChainPhase is phase 6, GET /api/v1/governance/verify: verify-chain's
// report, with at most maxListed of the chain's broken links and at most
// maxListed approval mismatches (BrokenLinksTotal counts them all,
// ApprovalMismatches the approval mismatches among them).
type ChainPhase struct {
	audit.Report
	BrokenLinksTotal   int `json:"broken_links_total"`
	ApprovalMismatches int `json:"approval_mismatches"`
}

// Summary is phase 7: alerts (exit 2) and warnings (exit code unchanged).
type Summary struct {
	Status   string    `json:"status"` // healthy | warnings | alerts
	ExitCode int       `json:"exit_code"`
	Alerts   []Finding `json:"alerts"`
	Warnings []Finding `json:"warnings"`
}

// Finding is one alert or warning: a stable UPPER_SNAKE code (DESIGN §3
// "Reason codes"), the phase that found it, and a message for people.
type Finding struct {
	Code    string `json:"code"`
	Phase   int    `json:"phase"`
	Message string `json:"message"`
}

// Overall statuses.
const (
	StatusHealthy  = "healthy"
	StatusWarnings = "warnings"
	StatusAlerts   = "alerts"
)

// Finding codes.
const (
	CodeChainBroken           = "CHAIN_BROKEN"
	CodeApprovalMismatch      = "APPROVAL_MISMATCH"
	CodeTamperingIncident     = "TAMPERING_INCIDENT"
	CodeNoPolicy              = "NO_POLICY"
	CodePolicyReloadError     = "POLICY_RELOAD_ERROR"
	CodePolicyDryRun          = "POLICY_DRY_RUN"
	CodeNoMatchDecisions      = "NO_MATCH_DECISIONS"
	CodeStaleApproval         = "STALE_APPROVAL"
	CodeIncidents             = "INCIDENTS"
	CodeUnapprovedDestructive = "UNAPPROVED_DESTRUCTIVE"
	CodeEventsCapped          = "EVENTS_CAPPED"
)
