package detect

import (
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
)

// IsDestructiveAction reports whether ev records a destructive action being
// carried out: action_class destructive on an event that is not the
// governance system's own bookkeeping (a policy decision, an approval
// change or an incident mention the action without doing it).
func IsDestructiveAction(ev audit.Event) bool {
	if ev.ActionClass != "destructive" {
		return false
	}
	switch ev.EventType {
	case audit.TypePolicyDecision, audit.TypeIncident:
		return false
	}
	return !approval.IsEventType(ev.EventType)
}

// CheckDestructive returns the unauthorized_destructive alert for ev when
// it is a destructive action without an approved approval (seed 003
// "Security Detection"). status is the status of the approval ev names
// ("" when it names none or the approval is unknown): anything but
// approved alerts, so an approval that was denied, expired or is still
// pending does not authorize the action.
func CheckDestructive(ev audit.Event, status approval.Status, now time.Time) (Alert, bool) {
	if !IsDestructiveAction(ev) || status == approval.Approved {
		return Alert{}, false
	}
	why := "no approval"
	switch {
	case ev.ApprovalID != "" && status == "":
		why = fmt.Sprintf("approval %s is unknown", ev.ApprovalID)
	case ev.ApprovalID != "":
		why = fmt.Sprintf("approval %s is %s", ev.ApprovalID, status)
	}
	target := ""
	if ev.Resource != nil && ev.Resource.Name != "" {
		target = " on " + ev.Resource.Type + ":" + ev.Resource.Name
	}
	msg := fmt.Sprintf("Destructive action%s without an approved approval (%s)", target, why)
	return eventAlert(UnauthorizedDestructive, Critical, ev, now, msg, nil), true
}

// ApprovalBook remembers the status of the approval requests whose changes
// it has seen on the stream, so that a watcher can judge a destructive
// action without asking auditd; it forgets the oldest beyond its capacity
// (a watcher asks auditd about an approval it does not know).
type ApprovalBook struct {
	max    int
	status map[string]approval.Status
	order  []string
}

// NewApprovalBook remembers up to capacity approvals (at least 1).
func NewApprovalBook(capacity int) *ApprovalBook {
	return &ApprovalBook{max: max(capacity, 1), status: map[string]approval.Status{}}
}

// Observe records the approval change ev carries; other events are ignored.
func (b *ApprovalBook) Observe(ev audit.Event) {
	if !approval.IsEventType(ev.EventType) || ev.ApprovalID == "" {
		return
	}
	var st approval.Status
	if ev.Outcome != nil {
		st = approval.Status(ev.Outcome.Status)
	}
	if !st.Valid() {
		r, err := approval.FromEvent(ev)
		if err != nil {
			return
		}
		st = r.Status
	}
	b.Remember(ev.ApprovalID, st)
}

// Remember records that approval id has status st: what a watcher learnt
// by asking auditd about an approval it had not seen on the stream. A later
// change seen by Observe replaces it.
func (b *ApprovalBook) Remember(id string, st approval.Status) {
	if _, ok := b.status[id]; !ok {
		b.order = append(b.order, id)
		if len(b.order) > b.max {
			delete(b.status, b.order[0])
			b.order = b.order[1:]
		}
	}
	b.status[id] = st
}

// Status returns what b knows of approval id.
func (b *ApprovalBook) Status(id string) (approval.Status, bool) {
	st, ok := b.status[id]
	return st, ok
}
