package gate

import "github.com/govkit/govkit/pkg/intent"

// SchemaVersion is the version of the report's JSON.
const SchemaVersion = 1

// Statuses of a Result.
const (
	StatusRan              = "ran"               // the command ran; exit_code is its own
	StatusTimedOut         = "timed_out"         // killed at --timeout (124)
	StatusRefused          = "refused"           // 125
	StatusApprovalRequired = "approval_required" // 126
	StatusFailed           = "failed"            // gate could not run (127)
	StatusWouldRun         = "would_run"         // gate check: everything allows it
)

// Reason codes of a Result (DESIGN §3: stable, UPPER_SNAKE), with the
// seed's names where it has one (seed 000 §3: POLICY_BLOCKED,
// APPROVAL_REQUIRED, EXECUTION_FAILED).
const (
	CodeUsage                 = "INVALID_INPUT"
	CodeUnbounded             = "UNBOUNDED"
	CodeReadOnlyMode          = "READONLY_MODE"
	CodeGovernanceRequired    = "GOVERNANCE_REQUIRED"    // fix mode at start: no auditd, no policy, dry-run
	CodeGovernanceUnavailable = "GOVERNANCE_UNAVAILABLE" // auditd stopped answering mid-way
	CodePolicyBlocked         = "POLICY_BLOCKED"
	CodeApprovalRequired      = "APPROVAL_REQUIRED"
	CodeApprovalPending       = "APPROVAL_PENDING"
	CodeApprovalDenied        = "APPROVAL_DENIED"
	CodeApprovalExpired       = "APPROVAL_EXPIRED"
	CodeApprovalConsumed      = "APPROVAL_CONSUMED"
	CodeActionMismatch        = "ACTION_MISMATCH"
	CodeApprovalStale         = "APPROVAL_STALE"
	CodeSandboxUnavailable    = "SANDBOX_UNAVAILABLE"
	CodeTransactionGuard      = "TRANSACTION_GUARD" // the psql guard cannot wrap the command
	CodeBlastRadius           = "BLAST_RADIUS"
	CodeTimedOut              = "TIMED_OUT"
	CodeExecutionFailed       = "EXECUTION_FAILED"
)

// Result is what gate did, as the --report JSON gives it.
type Result struct {
	SchemaVersion int       `json:"schema_version"`
	Command       string    `json:"command"`
	Argv          []string  `json:"argv,omitempty"`
	Mode          Mode      `json:"mode"`
	Session       string    `json:"session_id,omitempty"`
	Resource      *Resource `json:"resource,omitempty"`
	Status        string    `json:"status"`
	// ExitCode is gate's exit code: the command's own when it ran.
	ExitCode int `json:"exit_code"`
	// CommandExitCode is the command's own exit code when it ran, also
	// when gate exits otherwise (timeout, blast radius).
	CommandExitCode *int `json:"command_exit_code,omitempty"`
	// Code, Message and Hint say why gate refused or failed; Blocked,
	// Failed, Retryable and AutoRecoverable are seed 000's structured
	// error flags (P-05, P-06): a block is policy or validation, a
	// failure is at run time.
	Code            string `json:"code,omitempty"`
	Message         string `json:"message,omitempty"`
	Hint            string `json:"hint,omitempty"`
	Blocked         bool   `json:"blocked,omitempty"`
	Failed          bool   `json:"failed,omitempty"`
	Retryable       bool   `json:"retryable,omitempty"`
	AutoRecoverable bool   `json:"auto_recoverable,omitempty"`

	Classification *intent.Result `json:"classification,omitempty"`
	Rewrite        *Rewrite       `json:"rewrite,omitempty"`
	Decision       *Decision      `json:"decision,omitempty"`
	Approval       *Approval      `json:"approval,omitempty"`
	// Sandbox is what was enforced, e.g. "landlock abi 7: fs read-only".
	Sandbox     string       `json:"sandbox"`
	DurationMS  int64        `json:"duration_ms,omitempty"`
	Stdout      *Output      `json:"stdout,omitempty"`
	Stderr      *Output      `json:"stderr,omitempty"`
	BlastRadius *BlastRadius `json:"blast_radius,omitempty"`
	// Receipt names the tool_execution event that records the run.
	Receipt *Receipt `json:"receipt,omitempty"`
	// Incidents are the governance incidents of this run, and Flushed the
	// spooled ones auditd received at this contact.
	Incidents []Incident `json:"incidents,omitempty"`
	Flushed   []string   `json:"flushed_incidents,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"`
}

// Resource is the resource the command acts on.
type Resource struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// Rewrite is seed 000's auto-recovery: the unbounded command was replaced
// by classify's bounded rewrite, once.
type Rewrite struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Attempts int    `json:"attempts"` // always 1: auto-recovery is bounded to one attempt
}

// Decision is auditd's policy decision on the command.
type Decision struct {
	EventID        string `json:"event_id,omitempty"` // the recorded policy_decision
	Effect         string `json:"effect"`
	EnforcedEffect string `json:"enforced_effect"`
	Code           string `json:"code,omitempty"` // RATE_LIMITED, CIRCUIT_OPEN, …
	Explanation    string `json:"explanation"`
	Hypothetical   bool   `json:"hypothetical,omitempty"` // gate check: nothing recorded
}

// Approval is the approval this run needed.
type Approval struct {
	ID       string `json:"id"`
	Status   string `json:"status,omitempty"`
	Consumed bool   `json:"consumed"`
}

// BlastRadius is the check after execution (seed 003 "Blast Radius").
type BlastRadius struct {
	Rows        *int   `json:"rows_affected,omitempty"`
	Pods        *int   `json:"pods_affected,omitempty"`
	MaxRows     int    `json:"max_rows_affected,omitempty"`
	MaxPods     int    `json:"max_pods_affected,omitempty"`
	Exceeded    bool   `json:"exceeded"`
	Transaction string `json:"transaction,omitempty"` // committed | rolled_back (the psql guard)
	DecisionID  string `json:"decision_event_id,omitempty"`
	Note        string `json:"note,omitempty"`
}

// Receipt names the recorded tool_execution event.
type Receipt struct {
	EventID   string `json:"event_id"`
	EventHash string `json:"event_hash"`
	Seq       int64  `json:"seq"`
}

// Incident is a governance incident of this run.
type Incident struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Spooled string `json:"spooled,omitempty"` // the spool file, when auditd could not take it
}

// refuse settles the result as not run.
func (res *Result) refuse(exit int, code, msg, hint string) {
	res.ExitCode, res.Code, res.Message, res.Hint = exit, code, msg, hint
	switch exit {
	case ExitRefused:
		res.Status, res.Blocked = StatusRefused, true
	case ExitApproval:
		res.Status, res.Blocked, res.AutoRecoverable = StatusApprovalRequired, true, true
	default:
		res.Status, res.Failed = StatusFailed, true
	}
}
