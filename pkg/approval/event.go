package approval

import (
	"encoding/json"
	"fmt"

	"github.com/govkit/govkit/pkg/audit"
)

// EventTypes are the audit event types auditd records for approvals: every
// state change is appended to the chain (DESIGN §7). Clients may not post
// them: the chain's approval history is written by auditd alone.
var EventTypes = []string{
	audit.TypeApprovalRequested,
	audit.TypeApprovalVoted,
	audit.TypeApprovalDecided,
	audit.TypeApprovalExpired,
	audit.TypeApprovalConsumed,
	audit.TypeApprovalCancelled,
}

// IsEventType reports whether t is one of EventTypes.
func IsEventType(t string) bool {
	for _, e := range EventTypes {
		if t == e {
			return true
		}
	}
	return false
}

// ChangeType is the event type that records r's latest change: requested
// (no votes), voted (still pending), decided or expired.
func ChangeType(r *Request) string {
	switch {
	case r.Status == Consumed:
		return audit.TypeApprovalConsumed
	case r.Status == Cancelled:
		return audit.TypeApprovalCancelled
	case r.Status == Expired:
		return audit.TypeApprovalExpired
	case r.Status != Pending:
		return audit.TypeApprovalDecided
	case len(r.Votes) > 0:
		return audit.TypeApprovalVoted
	}
	return audit.TypeApprovalRequested
}

// Event is the audit event recording r's latest change, made by actor (the
// requester, an approver, or "auditd" for an expiry). Data holds the whole
// request after the change, so the approval history can be rebuilt from the
// chain alone; the indexed fields (agent, action_class, resource, tool)
// make it findable with the ordinary event filters.
func Event(r *Request, actor string) (audit.Event, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return audit.Event{}, fmt.Errorf("approval %s: %w", r.ID, err)
	}
	ev := audit.Event{
		SchemaVersion: audit.SchemaVersion,
		EventType:     ChangeType(r),
		Agent:         r.RequestedBy,
		Principal:     &audit.Principal{UserID: actor},
		ActionClass:   r.Action,
		Resource:      &audit.Resource{Type: r.Resource.Type, Name: r.Resource.Name, Tags: r.Resource.Tags},
		Outcome:       &audit.Outcome{Status: string(r.Status)},
		ApprovalID:    r.ID,
		Data:          data,
	}
	if r.Tool != "" || r.RawCommand != "" {
		ev.Tool = &audit.Tool{Name: r.Tool, RawCommand: r.RawCommand}
	}
	if ev.EventType == audit.TypeApprovalRequested {
		ev.PolicyDecision = r.PolicyDecision // once, with the request; Data repeats it
	}
	return ev, nil
}

// FromEvent returns the request state an approval event recorded.
func FromEvent(ev audit.Event) (Request, error) {
	if !IsEventType(ev.EventType) {
		return Request{}, fmt.Errorf("event %s (seq %d) is a %s event, not an approval change", ev.EventID, ev.Seq, ev.EventType)
	}
	var r Request
	if err := json.Unmarshal(ev.Data, &r); err != nil {
		return Request{}, fmt.Errorf("event %s (seq %d): approval data: %w", ev.EventID, ev.Seq, err)
	}
	if r.ID == "" || r.ID != ev.ApprovalID || !r.Status.Valid() {
		return Request{}, fmt.Errorf("event %s (seq %d): approval data does not describe approval %q", ev.EventID, ev.Seq, ev.ApprovalID)
	}
	if r.Votes == nil {
		r.Votes = []Vote{}
	}
	return r, nil
}
