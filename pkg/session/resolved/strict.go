package resolved

import (
	"github.com/govkit/govkit/pkg/session/response"
	"github.com/govkit/govkit/pkg/termtext"
)

// maxEcho bounds the untrusted id and action a block echoes back (DESIGN
// §3): longer than any canonical id a valid registration can make.
const maxEcho = 3*MaxFieldBytes + 2

// StrictResolution is the block for an action on a resource the session
// never discovered (seed 000 §2 Invariant 1, §4 Error Type; P-02, P-21):
// blocked, auto-recoverable, with a hint to discover it first. resourceID
// is the target as the call named it ("" when it named none).
func StrictResolution(resourceID, action string) response.ToolResponse {
	resourceID, action = clip(resourceID), clip(action)
	var msg string
	switch {
	case resourceID == "" && action == "":
		msg = "the call names no resource discovered in this session"
	case resourceID == "":
		msg = "action '" + action + "' names no resource discovered in this session"
	case action == "":
		msg = "resource '" + resourceID + "' was not discovered in this session"
	default:
		msg = "action '" + action + "' on resource '" + resourceID + "' is blocked: the resource was not discovered in this session"
	}
	return response.Blocked(response.StrictResolution, msg, map[string]any{
		"resource_id":      resourceID,
		"action":           action,
		"recovery_hint":    "Discover it first with a resolve tool (a search or get that returns it), then retry",
		"auto_recoverable": true,
	})
}

// clip cuts s to maxEcho bytes at a UTF-8 boundary.
func clip(s string) string { return termtext.Truncate(s, maxEcho) }
