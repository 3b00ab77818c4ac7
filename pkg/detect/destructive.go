package detect

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
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

// Grant is what a watcher knows of the approval a destructive event cites
// (DESIGN §11): the request as last seen (nil when the event cites none,
// or the approval is unknown), and the event that first used its
// consumption ("" when none yet).
type Grant struct {
	Request *approval.Request
	UsedBy  string
}

// CheckDestructive returns the unauthorized_destructive alert for ev when
// it is a destructive action that no approval released (seed 003
// "Security Detection"; DESIGN §11 "An approval releases one execution of
// exactly its action"). ev is authorized only when it cites an approval
// that was consumed, before ev, by ev's caller, for a request made by ev's
// agent, whose action_hash is the one auditd computed for ev, and whose
// consumption no earlier event used. Before issue 13 any approved approval
// silenced the alert: an approval for DROP TABLE orders covered DROP TABLE
// users, other agents, and any number of runs.
func CheckDestructive(ev audit.Event, g Grant, now time.Time) (Alert, bool) {
	if !IsDestructiveAction(ev) {
		return Alert{}, false
	}
	why := unauthorized(ev, g)
	if why == "" {
		return Alert{}, false
	}
	target := ""
	if ev.Resource != nil && ev.Resource.Name != "" {
		target = " on " + ev.Resource.Type + ":" + ev.Resource.Name
	}
	msg := fmt.Sprintf("Destructive action%s without an approval that released it (%s)", target, why)
	return eventAlert(UnauthorizedDestructive, Critical, ev, now, msg, nil), true
}

// unauthorized says why g does not release ev, or "" when it does.
func unauthorized(ev audit.Event, g Grant) string {
	r := g.Request
	caller := ""
	if ev.Caller != nil {
		caller = ev.Caller.Name
	}
	switch {
	case ev.ApprovalID == "":
		return "no approval"
	case r == nil:
		return fmt.Sprintf("approval %s is unknown", ev.ApprovalID)
	case r.Status != approval.Consumed:
		return fmt.Sprintf("approval %s is %s, not consumed: an approval releases an action only when it is consumed for it", ev.ApprovalID, r.Status)
	case ev.ActionHash == "" || ev.ActionHash != r.ActionHash:
		return fmt.Sprintf("approval %s was given for another action", ev.ApprovalID)
	case !strings.EqualFold(ev.Agent, r.RequestedBy):
		return fmt.Sprintf("approval %s was requested by %s, not by %s", ev.ApprovalID, r.RequestedBy, cmpOr(ev.Agent, "this event's agent"))
	case caller == "" || !strings.EqualFold(caller, r.ConsumedBy):
		return fmt.Sprintf("approval %s was consumed by %s, not by this event's caller %s", ev.ApprovalID, r.ConsumedBy, cmpOr(caller, "(none recorded)"))
	case r.ConsumedAt != nil && !ev.Timestamp.IsZero() && r.ConsumedAt.After(ev.Timestamp):
		return fmt.Sprintf("approval %s was consumed after the action", ev.ApprovalID)
	case g.UsedBy != "" && g.UsedBy != ev.EventID:
		return fmt.Sprintf("approval %s released one execution, used already by event %s", ev.ApprovalID, g.UsedBy)
	}
	return ""
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// ApprovalBook remembers the approval requests whose changes it has seen on
// the stream (the last state of each) and which event used each consumed
// approval, so that a watcher can judge a destructive action without asking
// auditd; it forgets the oldest beyond its capacity (a watcher asks auditd
// about an approval it does not know).
type ApprovalBook struct {
	max   int
	known map[string]*bookEntry
	order []string
}

type bookEntry struct {
	req    approval.Request
	usedBy string
}

// NewApprovalBook remembers up to capacity approvals (at least 1).
func NewApprovalBook(capacity int) *ApprovalBook {
	return &ApprovalBook{max: max(capacity, 1), known: map[string]*bookEntry{}}
}

// Observe records the approval change ev carries (its data holds the whole
// request); other events are ignored.
func (b *ApprovalBook) Observe(ev audit.Event) {
	if !approval.IsEventType(ev.EventType) || ev.ApprovalID == "" {
		return
	}
	r, err := approval.FromEvent(ev)
	if err != nil {
		return
	}
	b.Remember(r)
}

// Remember records request r as a watcher learnt it, from the stream or by
// asking auditd (then Learn, which also replays the earlier citations). A
// later change seen by Observe replaces it; what b knows
// of its use stays.
func (b *ApprovalBook) Remember(r approval.Request) {
	e, ok := b.known[r.ID]
	if !ok {
		e = &bookEntry{}
		b.known[r.ID] = e
		b.order = append(b.order, r.ID)
		if len(b.order) > b.max {
			delete(b.known, b.order[0])
			b.order = b.order[1:]
		}
	}
	e.req = r
}

// Learn records request r as a watcher learnt it by asking auditd rather
// than from the stream, with earlier: the events that cited r before the
// event about to be judged (GET /api/events?approval_id=, seq below that
// event's), in any order. The book saw none of them (the watcher resumed
// from a cursor, or analyses a window), so it replays them in seq order:
// the first that r released used its consumption, and any later citation
// alerts (DESIGN §11 "one use per approval", issue 13). Without them a
// watcher restarted after the first use would let a second one pass.
// Events that cite another approval are ignored.
func (b *ApprovalBook) Learn(r approval.Request, earlier []audit.Event) {
	b.Remember(r)
	earlier = slices.Clone(earlier)
	slices.SortStableFunc(earlier, func(x, y audit.Event) int { return cmp.Compare(x.Seq, y.Seq) })
	for _, ev := range earlier {
		if ev.ApprovalID != r.ID {
			continue
		}
		g, _ := b.Grant(ev)
		b.Use(ev, g)
	}
}

// Status returns the status of approval id as b knows it.
func (b *ApprovalBook) Status(id string) (approval.Status, bool) {
	e, ok := b.known[id]
	if !ok {
		return "", false
	}
	return e.req.Status, true
}

// Grant returns what b knows of the approval ev cites (see Grant). known is
// false when ev cites an approval b has not seen: the caller may ask auditd
// and Remember the answer.
func (b *ApprovalBook) Grant(ev audit.Event) (g Grant, known bool) {
	if ev.ApprovalID == "" {
		return Grant{}, true
	}
	e, ok := b.known[ev.ApprovalID]
	if !ok {
		return Grant{}, false
	}
	r := e.req
	return Grant{Request: &r, UsedBy: e.usedBy}, true
}

// Judge is CheckDestructive with g, then Use: what a watcher runs on each
// destructive event.
func (b *ApprovalBook) Judge(ev audit.Event, g Grant, now time.Time) (Alert, bool) {
	a, bad := CheckDestructive(ev, g, now)
	b.Use(ev, g)
	return a, bad
}

// Use records that ev used the consumption of the approval it cites when g
// released it: one consumption covers one event, so the next event citing
// the same approval alerts.
func (b *ApprovalBook) Use(ev audit.Event, g Grant) {
	if !IsDestructiveAction(ev) || ev.ApprovalID == "" || unauthorized(ev, g) != "" {
		return
	}
	if e, ok := b.known[ev.ApprovalID]; ok && e.usedBy == "" {
		e.usedBy = ev.EventID
	}
}
