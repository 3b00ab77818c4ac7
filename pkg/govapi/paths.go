package govapi

import (
	"net/url"
	"strings"
)

// Routes of auditd's API. A {id} segment is an event_id or an approval id;
// WithID fills it in.
const (
	PathEvents  = "/api/events"      // POST: append one event, or a batch (JSON Lines); GET: query
	PathEvent   = "/api/events/{id}" // GET: one event
	PathVerify  = "/api/verify"      // GET: the chain's VerifyReport
	PathHealth  = "/health"          // GET: Health; the one route without authentication
	PathMetrics = "/metrics"         // GET: Prometheus metrics

	// Signed checkpoints and Merkle proofs (issue 19, pkg/checkpoint).
	PathCheckpoint       = "/api/checkpoint"        // GET: the latest signed checkpoint, as the note's text (text/plain)
	PathProofInclusion   = "/api/proof/inclusion"   // GET ?seq=N[&size=S]: checkpoint.InclusionProof
	PathProofConsistency = "/api/proof/consistency" // GET ?from=A&to=B: checkpoint.ConsistencyProof

	PathApprovals        = "/v1/approvals"              // POST: ApprovalInput; GET: ApprovalList
	PathApprovalsPending = "/v1/approvals/pending"      // GET: ApprovalList of pending requests
	PathApproval         = "/v1/approvals/{id}"         // GET: one request (?wait= long-polls)
	PathApprove          = "/v1/approvals/{id}/approve" // POST: VoteInput
	PathDeny             = "/v1/approvals/{id}/deny"    // POST: VoteInput (a reason is required)
	PathConsume          = "/v1/approvals/{id}/consume" // POST: ConsumeInput
	PathCancel           = "/v1/approvals/{id}/cancel"  // POST: no body

	// The governance API (seed 003 "Gateway API Endpoints"). Its events,
	// pending approvals and verification answer exactly like PathEvents,
	// PathApprovalsPending and PathVerify.
	PathGovernance        = "/api/v1/governance"
	PathGovernanceEvents  = "/api/v1/governance/events"
	PathGovernancePending = "/api/v1/governance/approvals/pending"
	PathGovernanceVerify  = "/api/v1/governance/verify"
	PathExplain           = "/api/v1/governance/explain"
	PathEventExplain      = "/api/v1/governance/events/{id}/explain"
	PathDecisions         = "/api/v1/decisions"
	PathIncidents         = "/api/v1/incidents"
)

// WithID is route with its {id} segment set to id, path-escaped.
func WithID(route, id string) string {
	return strings.Replace(route, "{id}", url.PathEscape(id), 1)
}

// Headers and media types.
const (
	// UserHeader names the acting user in local mode (auditd without a
	// tokens file); the CLIs fill it from $USER. With tokens auditd ignores
	// it: the identity is the token's.
	UserHeader = "X-Govkit-User"
	// ContentTypeJSON is every request body's type but a batch's.
	ContentTypeJSON = "application/json"
	// ContentTypeJSONLines makes POST PathEvents a batch append, one event
	// per line; application/jsonl is taken too.
	ContentTypeJSONLines = "application/x-ndjson"
)

// Bounds of what auditd takes.
const (
	// MaxBody bounds a request body (413 beyond it).
	MaxBody = 1 << 20
	// MaxBatchEvents bounds the events of one batch append.
	MaxBatchEvents = 1000
	// DefaultLimit and MaxLimit bound a page of events or approvals.
	DefaultLimit = 100
	MaxLimit     = 1000
)
