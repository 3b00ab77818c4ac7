package govapi

// ErrorBody is every error answer of auditd's API. Code names the rule
// that refused the request (stable: clients branch on it, never on Error);
// Detail carries what a refused caller needs to see why, such as the
// decision behind 409 approval_not_required or the trace behind 403
// policy_denied.
type ErrorBody struct {
	SchemaVersion int    `json:"schema_version"`
	Error         string `json:"error"`
	Code          string `json:"code,omitempty"`
	Detail        any    `json:"detail,omitempty"`
}

// Codes of refusals (ErrorBody.Code). Refused approval steps carry
// pkg/approval's codes (approval.RefusedSelfApproval, …); a degraded
// auditd answers writes 503 with the Health reason as the code.
const (
	// The trust boundary: what a caller may claim comes from its token.
	CodePrincipalNotAllowed = "principal_not_allowed" // 403: a principal, roles or agent in the body
	CodeTagsNotAllowed      = "tags_not_allowed"      // 403: tags for a resource the infra file lists
	CodeEventIDReused       = "event_id_reused"       // 409: another caller or another event took the id
	CodeReservedEventType   = "event_type_reserved"   // 400: a type only auditd's own endpoints record

	// Approvals come from policy.
	CodeApprovalNotRequired = "approval_not_required" // 409: the policy allows the action; detail is the decision
	CodePolicyDenied        = "policy_denied"         // 403: the policy denies it; detail is the trace
	CodeNoPolicy            = "no_policy"             // 503: auditd runs without --policy

	CodeUnsupportedMediaType = "unsupported_media_type" // 415: a body that is not JSON
	CodeNotADecision         = "not_a_decision"         // 422: explain for an event that records no decision

	// A body that is not what the endpoint takes: malformed JSON (the error
	// names the line and column), a member of the wrong type or unknown (it
	// names the member by its JSON path and what it takes), an empty body,
	// data after the value; in a batch, the error names the line at fault
	// (issue 20).
	CodeInvalidBody  = "invalid_body"   // 400
	CodeBodyTooLarge = "body_too_large" // 413: a body over MaxBody
)
