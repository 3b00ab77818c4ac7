// Package govreport is govbot's compliance report: the analysis of what
// auditd's governance API answered, phase by phase, its findings, its
// trend over earlier runs, and its text, JSON and Slack forms (DESIGN §8;
// seed 003 "Compliance Reporting").
package govreport

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

	// Trend compares this run with the earlier ones kept in govbot's
	// --history file; absent without --history.
	Trend *Trend `json:"trend,omitempty"`
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
	// DeadPolicies and DeadRules count the enabled policies that decided
	// nothing in the window, and the rules of the others that decided
	// nothing (issue 20 "dead rules"). They are 0 when the window holds no
	// decision: nothing was asked, so nothing is dead.
	DeadPolicies  int        `json:"dead_policies"`
	DeadRules     int        `json:"dead_rules"`
	ReloadError   string     `json:"reload_error,omitempty"`
	ReloadErrorAt *time.Time `json:"reload_error_at,omitempty"`
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
	// RuleDecisions counts the decisions of each rule, by rule_index (from
	// 0), made with the policy file in force (its sha256): a rule index
	// means nothing across versions of the file.
	RuleDecisions []int64 `json:"rule_decisions"`
	// Dead is an enabled policy that decided nothing in a window with
	// decisions; DeadRules are the rule indexes of a policy that decided
	// but not with these rules.
	Dead      bool  `json:"dead"`
	DeadRules []int `json:"dead_rules"`
	// RuleLabels name the rules of a policy with dead rules, by index, as
	// the window's decision traces showed them ("write, destructive:
	// require_approval"; "" for a rule no trace showed).
	RuleLabels []string `json:"rule_labels,omitempty"`
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
	Total           int64 `json:"total"`
	Allow           int64 `json:"allow"`
	Deny            int64 `json:"deny"`
	RequireApproval int64 `json:"require_approval"`
	NoMatch         int64 `json:"no_match"`
	// NoMatchUnknown counts the no_match decisions on resources auditd
	// did not know (not in the infra file, no tags in the request); the
	// rest of NoMatch were on known resources that no policy covers.
	NoMatchUnknown int64               `json:"no_match_unknown"`
	Unreadable     int64               `json:"unreadable"` // a policy_decision member that is not a decision record
	Resources      []ResourceDecisions `json:"resources"`
	ByPolicy       map[string]int64    `json:"by_policy"`
	// Coverage checks that policy decided every write and destructive
	// tool execution of the window (issue 20 "policy coverage").
	Coverage Coverage `json:"coverage"`
}

// Coverage is the policy-coverage check: the window's write and
// destructive tool_execution events, and those no policy_decision stands
// behind (linked by decision_event_id, trace_id or a decided approval).
type Coverage struct {
	Executions int64 `json:"executions"`
	Covered    int64 `json:"covered"`
	// Uncovered are at most maxListed of them, by seq; UncoveredTotal
	// counts them all.
	Uncovered      []UncoveredExecution `json:"uncovered"`
	UncoveredTotal int64                `json:"uncovered_total"`
	// Unchecked counts executions beyond govbot's bounds (more decisions
	// or waiting executions than it remembers): neither covered nor
	// alerted on.
	Unchecked int64 `json:"unchecked"`
}

// UncoveredExecution is a write or destructive tool execution without a
// policy decision, with the links it named (none, or links that lead to no
// decision).
type UncoveredExecution struct {
	Seq             int64     `json:"seq"`
	EventID         string    `json:"event_id"`
	Timestamp       time.Time `json:"timestamp"`
	Agent           string    `json:"agent,omitempty"`
	ActionClass     string    `json:"action_class"`
	Resource        string    `json:"resource,omitempty"`
	Command         string    `json:"command,omitempty"`
	TraceID         string    `json:"trace_id,omitempty"`
	ApprovalID      string    `json:"approval_id,omitempty"`
	DecisionEventID string    `json:"decision_event_id,omitempty"`
}

// ResourceDecisions counts one resource's decisions.
type ResourceDecisions struct {
	Resource        string `json:"resource"` // TYPE:NAME
	Allow           int64  `json:"allow"`
	Deny            int64  `json:"deny"`
	RequireApproval int64  `json:"require_approval"`
	NoMatch         int64  `json:"no_match"`
	Total           int64  `json:"total"`
	// NoMatchUnknown counts the no_match decisions made while auditd did
	// not know the resource; NoMatch minus it, those on the resource known
	// (with Tags) that no policy covers.
	NoMatchUnknown int64 `json:"no_match_unknown"`
	// Note is auditd's note on the latest no_match decision of an unknown
	// resource ("resource not in the infra file, so it has no tags").
	Note string `json:"note,omitempty"`
	// Tags are the tags of the latest no_match decision of the resource
	// known.
	Tags []string `json:"tags,omitempty"`
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

// Summary is phase 7: alerts (exit 2), warnings (exit code unchanged),
// and notices, which change neither the exit code nor the status.
type Summary struct {
	Status   string    `json:"status"` // healthy | warnings | alerts
	ExitCode int       `json:"exit_code"`
	Alerts   []Finding `json:"alerts"`
	Warnings []Finding `json:"warnings"`
	// Notices are what an auditor reviews without anything being wrong:
	// DEAD_RULES (a break-glass policy or a change-freeze schedule may
	// rightly decide nothing for days, so a quiet window must not turn a
	// healthy report into warnings).
	Notices []Finding `json:"notices"`
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
	// StatusUnreachable is a run that could not make a report (exit 1):
	// it is kept in the history, never a report's status.
	StatusUnreachable = "unreachable"
)

// ExitAlerts is the exit status of a report with alerts (DESIGN §8).
const ExitAlerts = 2

// Finding codes.
const (
	CodeChainBroken       = "CHAIN_BROKEN"
	CodeApprovalMismatch  = "APPROVAL_MISMATCH"
	CodeTamperingIncident = "TAMPERING_INCIDENT"
	CodeNoPolicy          = "NO_POLICY"
	CodePolicyReloadError = "POLICY_RELOAD_ERROR"
	CodePolicyDryRun      = "POLICY_DRY_RUN"
	// CodeNoMatchDecisions: no_match decisions on a resource auditd did
	// not know (missing from the infra file): add it there. Before issue
	// 20 it named every no_match decision.
	CodeNoMatchDecisions = "NO_MATCH_DECISIONS"
	// CodeNoMatchUncovered: no_match decisions on a resource auditd knew,
	// with its tags, that no policy covers: write or widen a policy.
	CodeNoMatchUncovered = "NO_MATCH_UNCOVERED"
	// CodeUncoveredExecutions: write or destructive tool executions
	// without a policy decision (an alert).
	CodeUncoveredExecutions = "UNCOVERED_EXECUTIONS"
	// CodeDeadRules: enabled policies or rules that decided nothing in
	// the window (a notice).
	CodeDeadRules             = "DEAD_RULES"
	CodeStaleApproval         = "STALE_APPROVAL"
	CodeIncidents             = "INCIDENTS"
	CodeUnapprovedDestructive = "UNAPPROVED_DESTRUCTIVE"
	CodeEventsCapped          = "EVENTS_CAPPED"
)
