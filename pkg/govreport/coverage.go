package govreport

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/govkit/govkit/pkg/audit"
)

// Policy coverage (issue 20: "every write/destructive tool_execution in the
// window has a matching policy_decision, else an alert"). An execution
// names the decision behind it in one of three ways, one per enforcement
// point:
//
//   - gate run: its data.decision_event_id is the policy_decision event's id;
//   - pkg/toolgov (gate hook, gate mcp, gate serve): the decision and the
//     execution share a trace_id;
//   - an approval: the execution cites approval_id, and the approval was
//     requested by a policy decision (its approval_requested event carries
//     the decision in policy_decision). An approval opened by hand
//     (approvals request) stands behind no decision.
//
// An execution that names nothing, or whose link leads to no decision
// either in the window or (asked after the scan) before it, is uncovered.

// Link kinds: the ways an execution names its decision.
const (
	LinkDecision = "decision_event_id"
	LinkTrace    = "trace_id"
	LinkApproval = "approval_id"
)

// Link is one way an execution names the decision behind it: Kind is
// LinkDecision, LinkTrace or LinkApproval, ID the id it names.
type Link struct {
	Kind string
	ID   string
}

// Bounds of the coverage check: govbot's memory does not grow with the
// audit log. Past maxLinks, decisions are no longer remembered and
// executions that would need them are counted unchecked; past maxDeferred,
// executions awaiting a look-up are counted unchecked too.
const maxLinks = 200_000

// coverage tracks the window's write and destructive executions against
// the decisions it saw.
type coverage struct {
	seen    map[Link]struct{} // decisions in the window, by every link
	full    bool              // seen stopped growing at maxLinks
	waiting []execution       // not covered yet: a later event or a look-up may
	out     Coverage
}

// execution is a write or destructive tool_execution and its links.
type execution struct {
	ev    UncoveredExecution
	links []Link
}

func newCoverage() coverage {
	return coverage{seen: map[Link]struct{}{}, out: Coverage{Uncovered: []UncoveredExecution{}}}
}

// decided records that a decision stands behind id.
func (c *coverage) decided(kind, id string) {
	if id == "" {
		return
	}
	if len(c.seen) >= maxLinks {
		c.full = true
		return
	}
	c.seen[Link{kind, id}] = struct{}{}
}

// executionData is the part of a tool_execution's data member coverage
// reads: gate run's link to its decision.
type executionData struct {
	DecisionEventID string `json:"decision_event_id"`
}

// needsDecision reports whether ev is an action policy must have decided:
// a tool execution that writes or destroys.
func needsDecision(ev audit.Event) bool {
	if ev.EventType != audit.TypeToolExecution {
		return false
	}
	return strings.EqualFold(ev.ActionClass, "write") || strings.EqualFold(ev.ActionClass, "destructive")
}

// execution checks one tool_execution event.
func (c *coverage) execution(ev audit.Event) {
	if !needsDecision(ev) {
		return
	}
	c.out.Executions++
	x := execution{ev: UncoveredExecution{
		Seq: ev.Seq, EventID: ev.EventID, Timestamp: ev.Timestamp, Agent: ev.Agent,
		ActionClass: strings.ToLower(ev.ActionClass), TraceID: ev.TraceID, ApprovalID: ev.ApprovalID,
	}}
	if ev.Resource != nil && (ev.Resource.Type != "" || ev.Resource.Name != "") {
		x.ev.Resource = ev.Resource.Type + ":" + ev.Resource.Name
	}
	if ev.Tool != nil {
		x.ev.Command = cmp.Or(ev.Tool.RawCommand, ev.Tool.Name)
	}
	var d executionData
	if len(ev.Data) > 0 && json.Unmarshal(ev.Data, &d) == nil {
		x.ev.DecisionEventID = d.DecisionEventID
	}
	for _, l := range []Link{{LinkDecision, x.ev.DecisionEventID}, {LinkTrace, ev.TraceID}, {LinkApproval, ev.ApprovalID}} {
		if l.ID != "" {
			x.links = append(x.links, l)
		}
	}
	if c.covered(x) {
		c.out.Covered++
		return
	}
	if len(x.links) == 0 {
		c.uncovered(x.ev)
		return
	}
	if len(c.waiting) >= maxDeferred {
		c.out.Unchecked++
		return
	}
	c.waiting = append(c.waiting, x)
}

func (c *coverage) covered(x execution) bool {
	for _, l := range x.links {
		if _, ok := c.seen[l]; ok {
			return true
		}
	}
	return false
}

func (c *coverage) uncovered(u UncoveredExecution) {
	c.out.UncoveredTotal++
	c.out.Uncovered = appendLatest(c.out.Uncovered, u)
}

// settle covers the waiting executions whose decision came later in the
// window; the rest wait for a look-up.
func (c *coverage) settle() {
	c.waiting = slices.DeleteFunc(c.waiting, func(x execution) bool {
		if c.covered(x) {
			c.out.Covered++
			return true
		}
		return false
	})
}

// CoverageQuestions returns the links of the executions the window showed
// no decision for, distinct and in the order met: the caller asks auditd
// whether a decision before the window stands behind each, and passes the
// answers to Finish as Lookups.Decided.
func (a *Analyzer) CoverageQuestions() []Link {
	a.cov.settle()
	var out []Link
	seen := map[Link]bool{}
	for _, x := range a.cov.waiting {
		for _, l := range x.links {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out
}

// finish judges the waiting executions with the answers and returns the
// coverage, the uncovered listed by seq.
func (c *coverage) finish(answers map[Link]bool) Coverage {
	c.settle()
	for _, x := range c.waiting {
		ok := slices.ContainsFunc(x.links, func(l Link) bool { return answers[l] })
		switch {
		case ok:
			c.out.Covered++
		case c.full:
			// The window's decisions outgrew what govbot remembers: the
			// decision may have been forgotten, so it is not an alert.
			c.out.Unchecked++
		default:
			c.uncovered(x.ev)
		}
	}
	c.waiting = nil
	slices.SortFunc(c.out.Uncovered, func(x, y UncoveredExecution) int { return cmp.Compare(x.Seq, y.Seq) })
	return c.out
}
