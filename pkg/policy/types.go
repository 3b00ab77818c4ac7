// Package policy decides what an agent may do to which resource, and always
// explains why (seed 003 "Policy Engine", "Explainability"; DESIGN §5).
package policy

import "time"

// Effect is a policy outcome.
type Effect string

const (
	EffectAllow           Effect = "allow"
	EffectDeny            Effect = "deny"
	EffectRequireApproval Effect = "require_approval"
)

// Action is seed 003's action class.
type Action string

const (
	ActionRead        Action = "read"
	ActionWrite       Action = "write"
	ActionDestructive Action = "destructive"
)

// Config is a loaded policy file (DESIGN §5 file format).
type Config struct {
	Version       string   `yaml:"version" json:"version"`
	DefaultEffect Effect   `yaml:"default_effect" json:"default_effect,omitempty"` // "" means deny
	Policies      []Policy `yaml:"policies" json:"policies"`
	// Guardrails are the file's rate limit and circuit breaker (DESIGN
	// §12; seed 003 "Planned Guardrails"); nil when the file has none.
	Guardrails *Guardrails `yaml:"guardrails" json:"guardrails,omitempty"`
	// Source names where the config came from (a file name), for messages.
	Source string `yaml:"-" json:"-"`
	// DefaultEffectLine is the line of default_effect in its file
	// (1-based; 0 if absent or unknown), for Lint's default_allow finding.
	DefaultEffectLine int `yaml:"-" json:"-"`
}

// Policy is one named policy.
type Policy struct {
	Name        string             `yaml:"name" json:"name"`
	Description string             `yaml:"description" json:"description,omitempty"`
	Enabled     *bool              `yaml:"enabled" json:"enabled,omitempty"`         // nil means true
	Enforcement string             `yaml:"enforcement" json:"enforcement,omitempty"` // "enforce" (default) or "audit"
	Principals  []Principal        `yaml:"principals" json:"principals,omitempty"`   // empty means anyone
	Resources   []ResourceSelector `yaml:"resources" json:"resources"`
	Rules       []Rule             `yaml:"rules" json:"rules"`
	// Line is where the policy starts in its file (1-based; 0 if unknown).
	Line int `yaml:"-" json:"-"`
}

// Principal selects who a policy applies to: exactly one field is set.
type Principal struct {
	Role    string `yaml:"role" json:"role,omitempty"`
	User    string `yaml:"user" json:"user,omitempty"`
	Service string `yaml:"service" json:"service,omitempty"`
}

// ResourceSelector selects resources: type is required, name is a glob
// (path.Match syntax), and every listed tag must be present.
type ResourceSelector struct {
	Type  string    `yaml:"type" json:"type"`
	Name  string    `yaml:"name" json:"name,omitempty"`
	Match *TagMatch `yaml:"match" json:"match,omitempty"`
}

// TagMatch lists tags that must all be present.
type TagMatch struct {
	Tags []string `yaml:"tags" json:"tags"`
}

// Rule is one rule of a policy; the first rule that applies decides.
type Rule struct {
	// Actions is one action or a list ("action: write" or
	// "action: [write, destructive]" in YAML).
	Actions    []Action    `yaml:"action" json:"action"`
	Effect     Effect      `yaml:"effect" json:"effect"`
	Message    string      `yaml:"message" json:"message,omitempty"`
	Conditions *Conditions `yaml:"conditions" json:"conditions,omitempty"`
	Line       int         `yaml:"-" json:"-"`
}

// Conditions refine a rule.
type Conditions struct {
	// RequireApproval turns an allow into require_approval.
	RequireApproval bool `yaml:"require_approval" json:"require_approval,omitempty"`
	// ApprovalQuorum is how many approvals are needed (default 1).
	ApprovalQuorum int `yaml:"approval_quorum" json:"approval_quorum,omitempty"`
	// MaxRowsAffected and MaxPodsAffected are the blast radius (seed 003
	// "Guardrails"): exceeded → deny; not evaluated while counts are unknown
	// (before execution).
	MaxRowsAffected *int `yaml:"max_rows_affected" json:"max_rows_affected,omitempty"`
	MaxPodsAffected *int `yaml:"max_pods_affected" json:"max_pods_affected,omitempty"`
	// Schedule limits the rule to a weekly window; outside it the rule is
	// skipped ("schedule_inactive").
	Schedule *Schedule `yaml:"schedule" json:"schedule,omitempty"`
}

// Schedule is a weekly window in an IANA time zone.
type Schedule struct {
	Days     []string `yaml:"days" json:"days,omitempty"`   // mon … sun; empty means every day
	Hours    []int    `yaml:"hours" json:"hours,omitempty"` // 0–23; empty means all day
	Timezone string   `yaml:"timezone" json:"timezone,omitempty"`
}

// Request is one thing an agent wants to do.
type Request struct {
	Principal RequestPrincipal `json:"principal"`
	Resource  RequestResource  `json:"resource"`
	Action    Action           `json:"action"`
	Context   RequestContext   `json:"context"`
}

// RequestPrincipal is who asks.
type RequestPrincipal struct {
	UserID  string   `json:"user_id,omitempty"`
	Roles   []string `json:"roles,omitempty"`
	Service string   `json:"service,omitempty"`
}

// RequestResource is what the request touches.
type RequestResource struct {
	Type string   `json:"type"`
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
}

// RequestContext carries what is known about the request. RowsAffected and
// PodsAffected are plain ints (so the seed's RequestContext{RowsAffected: 50}
// compiles); zero means not known yet. A zero Time means the engine's clock.
type RequestContext struct {
	RowsAffected int       `json:"rows_affected,omitempty"`
	PodsAffected int       `json:"pods_affected,omitempty"`
	Time         time.Time `json:"time,omitempty"`
}

// EngineConfig configures an Engine.
type EngineConfig struct {
	PolicyConfig  *Config
	DefaultEffect Effect // overrides PolicyConfig.DefaultEffect when set
	DryRun        bool   // global dry-run: enforced_effect is always allow
	// Clock gives the time for schedules when a request has none. The
	// package reads no clock of its own (a pure domain package): with
	// neither, a schedule cannot be checked and Evaluate panics, a
	// programming error (auditd and govexplain pass theirs).
	Clock func() time.Time
}

// Decision is the outcome of evaluating a request. Its JSON form is the
// "decision" object of DESIGN §5.
type Decision struct {
	Effect         Effect `json:"effect"`
	EnforcedEffect Effect `json:"enforced_effect"`
	// PolicyName and RuleIndex name the deciding policy and rule; they are
	// meaningless (and absent in JSON) when DefaultApplied.
	PolicyName     string `json:"policy_name,omitempty"`
	RuleIndex      int    `json:"rule_index"`
	Message        string `json:"message,omitempty"`
	ApprovalQuorum int    `json:"approval_quorum,omitempty"` // when Effect is require_approval
	DryRun         bool   `json:"dry_run"`
	PostExecution  bool   `json:"post_execution,omitempty"` // decided by the blast-radius check after execution
	DefaultApplied bool   `json:"-"`                        // see DecisionTrace.DefaultApplied
	// Code is a machine-readable reason for a refusal that no policy
	// made: RATE_LIMITED or CIRCUIT_OPEN when a guardrail tripped
	// (guardrails.go). Empty for a policy's own decision.
	Code string `json:"code,omitempty"`

	// eval keeps the request and trace behind a Decision from Evaluate, so
	// that MustAllow can build the explanation only when it is needed.
	eval *evaluation
}

// DecisionTrace is the full evaluation record of one request (seed 003
// "Decision Trace"), always built.
type DecisionTrace struct {
	Decision          Decision      `json:"decision"`
	PoliciesEvaluated []PolicyTrace `json:"policies_evaluated"`
	DefaultApplied    bool          `json:"default_applied"`
	// Guardrails is present when the policy file has guardrails: each
	// one's check for the request's session, or why they were not
	// evaluated (guardrails.go).
	Guardrails  *GuardrailsTrace `json:"guardrails,omitempty"`
	Explanation string           `json:"explanation"`
}

// PolicyTrace records one policy's part in a decision.
type PolicyTrace struct {
	PolicyName string      `json:"policy_name"`
	Matched    bool        `json:"matched"`
	SkipReason string      `json:"skip_reason,omitempty"` // disabled | principal_mismatch | resource_mismatch
	Rules      []RuleTrace `json:"rules,omitempty"`
}

// RuleTrace records one rule of a matched policy.
type RuleTrace struct {
	Index      int              `json:"index"`
	Actions    []string         `json:"actions"`
	Effect     string           `json:"effect"`
	Matched    bool             `json:"matched"`
	SkipReason string           `json:"skip_reason,omitempty"` // action_mismatch | schedule_inactive
	Conditions []ConditionTrace `json:"conditions,omitempty"`
}

// ConditionTrace records one condition of the deciding rule.
type ConditionTrace struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
	// Limit is a blast-radius condition's limit (max_rows_affected,
	// max_pods_affected), also before execution: an enforcement point reads
	// it to hold the output back for the check after execution, and gate's
	// psql transaction guard commits only within it (issue 15).
	Limit int `json:"limit,omitempty"`
}

// Skip reasons (DESIGN §5 contract).
const (
	SkipDisabled          = "disabled"
	SkipPrincipalMismatch = "principal_mismatch"
	SkipResourceMismatch  = "resource_mismatch"
	SkipActionMismatch    = "action_mismatch"
	SkipScheduleInactive  = "schedule_inactive"
)
