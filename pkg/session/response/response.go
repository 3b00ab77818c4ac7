// Package response is seed 000's ToolResponse envelope: the one shape of
// every tool outcome a session reports, with the codes that drive an agent's
// recovery (structured fields, never narrative prompt text: seed 000 §10).
package response

// Codes are the seeds' own, kept as they spell them (DESIGN §13).
const (
	StrictResolution = "STRICT_RESOLUTION"
	FSMBlocked       = "FSM_BLOCKED"
	RoutingMismatch  = "ROUTING_MISMATCH"
	NotFound         = "NOT_FOUND"
	ActionNotAllowed = "ACTION_NOT_ALLOWED"
	PolicyBlocked    = "POLICY_BLOCKED"
	ApprovalRequired = "APPROVAL_REQUIRED"
	InvalidInput     = "INVALID_INPUT"
	ExecutionFailed  = "EXECUTION_FAILED"
	PhantomExecution = "PHANTOM_EXECUTION"
	BudgetExceeded   = "BUDGET_EXCEEDED"
	AgentBusy        = "AGENT_BUSY"

	// Seed 004's stabilization codes.
	SearchFirstRequired    = "SEARCH_FIRST_REQUIRED"
	SearchRefRequired      = "SEARCH_REF_REQUIRED"
	CandidateRefRequired   = "CANDIDATE_REF_REQUIRED"
	BudgetSoftLimit        = "BUDGET_SOFT_LIMIT"
	BudgetHardLimit        = "BUDGET_HARD_LIMIT"
	LowRelevanceOutsideTop = "LOW_RELEVANCE_OUTSIDE_TOPK"
	PreviewDegraded        = "PREVIEW_DEGRADED"
)

// ToolResponse is the envelope: Data only when OK, Error only when not
// (seed 000 §3).
type ToolResponse struct {
	OK    bool           `json:"ok"`
	Data  any            `json:"data,omitempty"`
	Error *ToolError     `json:"error,omitempty"`
	Meta  map[string]any `json:"meta,omitempty"`
}

// ToolError says why a call did not succeed. Blocked marks a policy or
// validation refusal (nothing ran); Failed marks a runtime failure, with
// Retryable saying whether trying again might help.
type ToolError struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Blocked   bool           `json:"blocked,omitempty"`
	Failed    bool           `json:"failed,omitempty"`
	Retryable bool           `json:"retryable,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
}

// autoRecoverable is seed 000's table (§3 Error Codes) plus ROUTING_MISMATCH
// (§2 Invariant 7) and seed 004's ref and budget codes: may an agent recover
// by itself, by doing what the hint says, and retrying?
var autoRecoverable = map[string]bool{
	StrictResolution:     true,
	FSMBlocked:           true,
	RoutingMismatch:      true,
	ApprovalRequired:     true,
	SearchFirstRequired:  true,
	SearchRefRequired:    true,
	CandidateRefRequired: true,
	BudgetExceeded:       false,
	NotFound:             false,
	ActionNotAllowed:     false,
	PolicyBlocked:        false,
	InvalidInput:         false,
	ExecutionFailed:      false,
}

// AutoRecoverable reports whether an agent can recover from code by itself
// (seed 000 §3). EXECUTION_FAILED "depends on cause": Failed takes the
// caller's retryable flag instead.
func AutoRecoverable(code string) bool { return autoRecoverable[code] }

// Success wraps a tool's data.
func Success(data any) ToolResponse { return ToolResponse{OK: true, Data: data} }

// Blocked is a refusal before anything ran (seed 000's
// NewToolBlockedError). details must carry a recovery_hint; auto_recoverable
// is filled in from the code's table entry unless the caller set it.
func Blocked(code, message string, details map[string]any) ToolResponse {
	if details == nil {
		details = map[string]any{}
	}
	if _, ok := details["auto_recoverable"]; !ok {
		details["auto_recoverable"] = AutoRecoverable(code)
	}
	return ToolResponse{Error: &ToolError{Code: code, Message: message, Blocked: true, Details: details}}
}

// Failed is a runtime failure of a call that ran (seed 000's
// NewToolFailedError).
func Failed(code, message string, retryable bool, details map[string]any) ToolResponse {
	if details == nil {
		details = map[string]any{}
	}
	if _, ok := details["auto_recoverable"]; !ok {
		details["auto_recoverable"] = retryable
	}
	return ToolResponse{Error: &ToolError{Code: code, Message: message, Failed: true, Retryable: retryable, Details: details}}
}
