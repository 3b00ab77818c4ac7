package govreport

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
)

// withID, withTrace and withDecisionID set one link of an event.
func withID(ev audit.Event, id string) audit.Event    { ev.EventID = id; return ev }
func withTrace(ev audit.Event, tr string) audit.Event { ev.TraceID = tr; return ev }
func withDecisionID(ev audit.Event, id string) audit.Event {
	ev.Data, _ = json.Marshal(map[string]any{"gate": "v1", "decision_event_id": id})
	return ev
}

// requestedByDecision is the approval_requested event of an approval a
// policy decision opened.
func requestedByDecision(seq int64, id string) audit.Event {
	r := approvalFor(id, "db-agent", "DROP TABLE t", approval.Pending)
	r.PolicyDecision = json.RawMessage(`{"effect":"require_approval"}`)
	return approvalChange(seq, r)
}

// Issue 20 "policy coverage": every write and destructive tool_execution
// is linked to a policy decision, by gate run's decision_event_id, by
// trace_id (pkg/toolgov), or by an approval a decision opened.
func TestCoverage(t *testing.T) {
	dec := decisionEvent(1, "database:prod-db", decided("allow", "p"))
	tests := []struct {
		name      string
		events    []audit.Event
		decided   map[Link]bool
		questions []Link
		want      Coverage // Uncovered compared by seq only
		seqs      []int64
	}{
		{
			name:   "reads need no decision",
			events: []audit.Event{toolEvent(1, "a", "read", "SELECT 1"), toolEvent(2, "a", "", "uptime")},
			want:   Coverage{},
		},
		{
			name:   "a write without any link is uncovered",
			events: []audit.Event{toolEvent(1, "a", "write", "UPDATE t")},
			want:   Coverage{Executions: 1, UncoveredTotal: 1},
			seqs:   []int64{1},
		},
		{
			name:   "gate run: decision_event_id of a decision in the window",
			events: []audit.Event{withID(dec, "evt_dec"), withDecisionID(toolEvent(2, "a", "write", "UPDATE t"), "evt_dec")},
			want:   Coverage{Executions: 1, Covered: 1},
		},
		{
			name:   "toolgov: the same trace_id, case-insensitive action class",
			events: []audit.Event{withTrace(dec, "call-1"), withTrace(toolEvent(2, "a", "DESTRUCTIVE", "rm -rf x"), "call-1")},
			want:   Coverage{Executions: 1, Covered: 1},
		},
		{
			name:   "a decision recorded after the execution still covers it",
			events: []audit.Event{withTrace(toolEvent(1, "a", "write", "UPDATE t"), "call-2"), withTrace(decisionEvent(2, "database:prod-db", decided("allow", "p")), "call-2")},
			want:   Coverage{Executions: 1, Covered: 1},
		},
		{
			name:   "an approval a decision opened",
			events: []audit.Event{requestedByDecision(1, "ap1"), citing(toolEvent(2, "db-agent", "destructive", "DROP TABLE t"), "ap1")},
			want:   Coverage{Executions: 1, Covered: 1},
		},
		{
			name:      "an approval opened by hand is no decision",
			events:    []audit.Event{approvalEvent(1, "ap2", approval.Pending), citing(toolEvent(2, "db-agent", "destructive", "DROP TABLE t"), "ap2")},
			questions: []Link{{LinkApproval, "ap2"}},
			want:      Coverage{Executions: 1, UncoveredTotal: 1},
			seqs:      []int64{2},
		},
		{
			name:      "a link the window cannot answer is asked, and the answer covers it",
			events:    []audit.Event{withTrace(withDecisionID(toolEvent(5, "a", "write", "UPDATE t"), "evt_old"), "call-3")},
			questions: []Link{{LinkDecision, "evt_old"}, {LinkTrace, "call-3"}},
			decided:   map[Link]bool{{LinkTrace, "call-3"}: true},
			want:      Coverage{Executions: 1, Covered: 1},
		},
		{
			name:      "a link that leads nowhere is uncovered",
			events:    []audit.Event{withDecisionID(toolEvent(5, "a", "write", "UPDATE t"), "evt_forged"), toolEvent(6, "a", "write", "UPDATE u")},
			questions: []Link{{LinkDecision, "evt_forged"}},
			decided:   map[Link]bool{{LinkDecision, "evt_forged"}: false},
			want:      Coverage{Executions: 2, UncoveredTotal: 2},
			seqs:      []int64{5, 6},
		},
		{
			name:   "a decision's own tool or approval events are not executions",
			events: []audit.Event{dec, requestedByDecision(2, "ap3"), incidentEvent(3, "x", "secbot", "m")},
			want:   Coverage{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAnalyzer(t0, DefaultMaxEvents)
			for _, ev := range tt.events {
				a.Add(ev)
			}
			if q := a.CoverageQuestions(); !slices.Equal(q, tt.questions) {
				t.Errorf("questions = %v, want %v", q, tt.questions)
			}
			_, d := a.Finish(Lookups{Decided: tt.decided})
			got := d.Coverage
			var seqs []int64
			for _, u := range got.Uncovered {
				seqs = append(seqs, u.Seq)
			}
			got.Uncovered = nil
			if !reflect.DeepEqual(got, tt.want) || !slices.Equal(seqs, tt.seqs) {
				t.Errorf("coverage = %+v, uncovered %v\nwant %+v, uncovered %v", got, seqs, tt.want, tt.seqs)
			}
		})
	}
}

// The uncovered list says what ran, where and by whom, and keeps its
// links for the auditor to follow.
func TestUncoveredExecutionDetails(t *testing.T) {
	a := NewAnalyzer(t0, DefaultMaxEvents)
	a.Add(withTrace(withDecisionID(citing(toolEvent(3, "db-agent", "destructive", "DROP TABLE t"), "ap9"), "evt_x"), "call-9"))
	_, d := a.Finish(Lookups{})
	want := []UncoveredExecution{{Seq: 3, EventID: "evt_3", Timestamp: t0.Add(3e9), Agent: "db-agent", ActionClass: "destructive",
		Resource: "database:prod-db", Command: "DROP TABLE t", TraceID: "call-9", ApprovalID: "ap9", DecisionEventID: "evt_x"}}
	if !reflect.DeepEqual(d.Coverage.Uncovered, want) {
		t.Errorf("uncovered = %+v\nwant %+v", d.Coverage.Uncovered, want)
	}
}

// Dead rules: counted per rule of the policy file in force, for enabled
// policies, only when the window holds decisions.
func TestDeadRules(t *testing.T) {
	rule := func(effect, name string, idx int, sha string) govapi.DecisionRecord {
		r := decided(effect, name)
		r.RuleIndex, r.PolicySHA256 = &idx, sha
		return r
	}
	st := govapi.PolicyStatus{Loaded: true, SHA256: "new", Policies: []govapi.PolicySummary{
		{Name: "prod", Enabled: true, Rules: 3},
		{Name: "k8s", Enabled: true, Rules: 2},
		{Name: "off", Enabled: false, Rules: 1},
		{Name: "renamed", Enabled: true, Rules: 1},
	}}
	tests := []struct {
		name       string
		events     []audit.Event
		dead       []string // policies
		deadRules  map[string][]int
		policies   int
		rules      int
		ruleCounts map[string][]int64
	}{
		{
			name:       "no decision: nothing is dead",
			ruleCounts: map[string][]int64{"prod": {0, 0, 0}, "k8s": {0, 0}, "off": {0}, "renamed": {0}},
		},
		{
			name: "rules that never decided, and policies",
			events: []audit.Event{
				decisionEvent(1, "database:a", rule("allow", "prod", 0, "new")),
				decisionEvent(2, "database:a", rule("deny", "prod", 2, "new")),
				decisionEvent(3, "database:a", rule("deny", "prod", 2, "")),    // before policy_sha256 was recorded
				decisionEvent(4, "database:a", rule("allow", "k8s", 1, "old")), // an earlier file: its index means nothing now
			},
			dead:       []string{"renamed"},
			deadRules:  map[string][]int{"prod": {1}},
			policies:   1,
			rules:      1,
			ruleCounts: map[string][]int64{"prod": {1, 0, 2}, "k8s": {0, 0}, "off": {0}, "renamed": {0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAnalyzer(t0, DefaultMaxEvents)
			for _, ev := range tt.events {
				a.Add(ev)
			}
			_, d := a.Finish(Lookups{})
			p := policyPhase(st, d.ByPolicy, a.RuleDecisions(st.SHA256), a.RuleLabels(st.SHA256), d.Total)
			var dead []string
			deadRules, counts := map[string][]int{}, map[string][]int64{}
			for _, po := range p.Policies {
				if po.Dead {
					dead = append(dead, po.Name)
				}
				if len(po.DeadRules) > 0 {
					deadRules[po.Name] = po.DeadRules
				}
				counts[po.Name] = po.RuleDecisions
			}
			if !slices.Equal(dead, tt.dead) || p.DeadPolicies != tt.policies || p.DeadRules != tt.rules ||
				!reflect.DeepEqual(deadRules, orEmpty(tt.deadRules)) || !reflect.DeepEqual(counts, tt.ruleCounts) {
				t.Errorf("dead %v %v (%d, %d), counts %v\nwant %v %v (%d, %d), counts %v", dead, deadRules, p.DeadPolicies, p.DeadRules, counts,
					tt.dead, tt.deadRules, tt.policies, tt.rules, tt.ruleCounts)
			}
		})
	}
}

func orEmpty(m map[string][]int) map[string][]int {
	if m == nil {
		return map[string][]int{}
	}
	return m
}

// A dead rule is named by what it does, as the window's traces show it.
func TestDeadRuleLabels(t *testing.T) {
	idx := 0
	rec := decided("allow", "prod")
	rec.RuleIndex, rec.PolicySHA256 = &idx, "new"
	rec.Trace = policy.DecisionTrace{PoliciesEvaluated: []policy.PolicyTrace{
		{PolicyName: "other", SkipReason: "resource_mismatch"},
		{PolicyName: "prod", Matched: true, Rules: []policy.RuleTrace{
			{Index: 0, Actions: []string{"read"}, Effect: "allow", Matched: true},
			{Index: 1, Actions: []string{"write", "destructive"}, Effect: "require_approval"},
		}},
	}}
	a := NewAnalyzer(t0, DefaultMaxEvents)
	a.Add(decisionEvent(1, "database:a", rec))
	a.Add(decisionEvent(2, "database:a", rec))
	_, d := a.Finish(Lookups{})
	st := govapi.PolicyStatus{Loaded: true, SHA256: "new", Policies: []govapi.PolicySummary{{Name: "prod", Enabled: true, Rules: 3}}}
	p := policyPhase(st, d.ByPolicy, a.RuleDecisions("new"), a.RuleLabels("new"), d.Total)
	po := p.Policies[0]
	if !slices.Equal(po.DeadRules, []int{1, 2}) || !slices.Equal(po.RuleLabels, []string{"read: allow", "write, destructive: require_approval", ""}) {
		t.Errorf("policy = %+v", po)
	}
	r := healthy()
	r.Policy = p
	s := summarize(r)
	if len(s.Notices) != 1 || !strings.Contains(s.Notices[0].Message, "prod rules 1 (write, destructive: require_approval), 2;") {
		t.Errorf("notices = %+v", s.Notices)
	}
}
