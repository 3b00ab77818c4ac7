package session

import (
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
)

// Counter names: seed 000 §9's, under govkit's prefix, and seed 002's and
// 004's rejections and reason codes (DESIGN §13: metric effects; gate
// session --metrics-addr serves them).
const (
	mToolBlock       = "govkit_session_fsm_tool_block_total"
	mFinalBlock      = "govkit_session_fsm_final_block_total"
	mStrictBlock     = "govkit_session_strict_resolution_block_total"
	mPhantom         = "govkit_session_phantom_detected_total"
	mRecoveryAttempt = "govkit_session_auto_recovery_attempt_total"
	mRecoverySuccess = "govkit_session_auto_recovery_success_total"
	mIterations      = "govkit_session_agentic_iterations_total"
	mRoutingBlock    = "govkit_session_routing_mismatch_block_total"
	mRejections      = "govkit_session_rejections_total"
	mStabilization   = "govkit_session_stabilization_reason_total"
)

// maxLabel bounds a label value (seed 000 §9 Label Sanitization).
const maxLabel = 64

// metric emits a counter increment at the point of the decision, never
// later (seed 000 §9: no silent block). kv alternates label names and
// values; values are sanitized here, once.
func (st *State) metric(name string, kv ...string) {
	labels := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		labels[kv[i]] = sanitizeLabel(kv[i+1])
	}
	st.emit(Effect{Type: EfMetric, Name: name, Labels: labels})
}

// sanitizeLabel is seed 000's rule: empty → "unknown", spaces → "_",
// truncated to a fixed length (at a rune boundary).
func sanitizeLabel(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return "unknown"
	}
	v = strings.ReplaceAll(v, " ", "_")
	return termtext.Cut(v, maxLabel)
}
