package govreport

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
)

var t0 = time.Date(2026, 3, 9, 8, 0, 0, 0, time.UTC)

// decisionEvent is a policy_decision event as auditd records it.
func decisionEvent(seq int64, res string, rec govapi.DecisionRecord) audit.Event {
	typ, name, _ := strings.Cut(res, ":")
	rec.ResourceType, rec.ResourceName = typ, name
	b, err := json.Marshal(rec)
	if err != nil {
		panic(err)
	}
	return audit.Event{Seq: seq, EventID: "evt_" + res, EventType: audit.TypePolicyDecision, Agent: "db-agent",
		ActionClass: rec.Action, Resource: &audit.Resource{Type: typ, Name: name}, PolicyDecision: b,
		Timestamp: t0.Add(time.Duration(seq) * time.Second)}
}

func decided(effect string, policyName string) govapi.DecisionRecord {
	r := govapi.DecisionRecord{Action: "write", Effect: effect, EnforcedEffect: effect}
	if policyName != "" {
		r.PolicyName = &policyName
	} else {
		r.DefaultApplied = true
	}
	return r
}

func incidentEvent(seq int64, typ, source, msg string) audit.Event {
	data, _ := json.Marshal(govapi.IncidentInput{Type: typ, Severity: govapi.SeverityCritical, Source: source, Message: msg})
	return audit.Event{Seq: seq, EventID: "inc", EventType: audit.TypeIncident, Agent: source, Data: data,
		Timestamp: t0.Add(time.Duration(seq) * time.Second)}
}

func toolEvent(seq int64, agent, class, command string) audit.Event {
	return audit.Event{Seq: seq, EventID: fmt.Sprintf("evt_%d", seq), EventType: audit.TypeToolExecution, Agent: agent, ActionClass: class,
		Tool: &audit.Tool{Name: "bash", RawCommand: command}, Resource: &audit.Resource{Type: "database", Name: "prod-db"},
		Timestamp: t0.Add(time.Duration(seq) * time.Second)}
}

// approvalFor is approval request id by agent for the destructive run of
// command on database:prod-db (as toolEvent records it), in state st;
// consumed by agent at t0 when st is consumed.
func approvalFor(id, agent, command string, st approval.Status) approval.Request {
	res := audit.Resource{Type: "database", Name: "prod-db"}
	r := approval.Request{SchemaVersion: 1, ID: id, Status: st, Action: "destructive", Tool: "bash", RawCommand: command, Quorum: 1,
		Resource: res, RequestedBy: agent, Votes: []approval.Vote{}, ActionHash: approval.ActionHash(res, "destructive", "bash", command)}
	if st == approval.Consumed {
		at := t0
		r.ConsumedAt, r.ConsumedBy = &at, agent
	}
	return r
}

// approvalEvent is the approval change auditd records for request id.
func approvalEvent(seq int64, id string, st approval.Status) audit.Event {
	return approvalChange(seq, approvalFor(id, "agent", "", st))
}

// approvalChange is the event auditd records for r's latest change.
func approvalChange(seq int64, r approval.Request) audit.Event {
	ev, err := approval.Event(&r, "bob")
	if err != nil {
		panic(err)
	}
	ev.Seq = seq
	return ev
}

// citing is ev citing approval id, as auditd stores it: with its caller
// (the agent itself) and the action_hash auditd computes for an event that
// cites an approval (DESIGN §11).
func citing(ev audit.Event, id string) audit.Event {
	ev.ApprovalID = id
	ev.Caller = &audit.Caller{Name: ev.Agent, Roles: []string{"agent"}}
	ev.ActionHash = approval.ActionHash(*ev.Resource, ev.ActionClass, ev.Tool.Name, ev.Tool.RawCommand)
	return ev
}

func TestDecisionOutcome(t *testing.T) {
	tests := []struct {
		name string
		rec  decisionRecord
		want string
		ok   bool
	}{
		{"allow", decisionRecord{Effect: "allow", EnforcedEffect: "allow"}, outcomeAllow, true},
		{"deny", decisionRecord{Effect: "deny", EnforcedEffect: "deny"}, outcomeDeny, true},
		{"approval", decisionRecord{Effect: "require_approval", EnforcedEffect: "require_approval"}, outcomeApproval, true},
		// An audit-mode policy's deny is enforced as what the enforce
		// policies decided: phase 4 counts what enforcement acted on.
		{"audit-mode deny counts as enforced", decisionRecord{Effect: "deny", EnforcedEffect: "require_approval"}, outcomeApproval, true},
		{"dry run", decisionRecord{Effect: "deny", EnforcedEffect: "allow"}, outcomeAllow, true},
		{"no enforced effect falls back to effect", decisionRecord{Effect: "deny"}, outcomeDeny, true},
		// Seed 003 "Phase 4 — no_match": the default applied.
		{"default deny is no_match", decisionRecord{Effect: "deny", EnforcedEffect: "deny", DefaultApplied: true}, outcomeNoMatch, true},
		{"default allow is no_match too", decisionRecord{Effect: "allow", EnforcedEffect: "allow", DefaultApplied: true}, outcomeNoMatch, true},
		{"unknown effect", decisionRecord{Effect: "maybe"}, "", false},
		{"empty", decisionRecord{}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decisionOutcome(tt.rec)
			if got != tt.want || ok != tt.ok {
				t.Errorf("decisionOutcome = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// analyse runs the analyzer over events with the given approval look-ups.
func analyse(events []audit.Event, lookups map[string]approval.Request) (ActivityPhase, DecisionPhase) {
	return analyseCited(events, lookups, nil)
}

// analyseCited is analyse with the events before the window that cited
// the approvals looked up.
func analyseCited(events []audit.Event, lookups map[string]approval.Request, cited map[string][]audit.Event) (ActivityPhase, DecisionPhase) {
	a := NewAnalyzer(t0, DefaultMaxEvents)
	for _, ev := range events {
		a.Add(ev)
	}
	return a.Finish(Lookups{Approvals: lookups, Cited: cited})
}

func TestActivityCounts(t *testing.T) {
	events := []audit.Event{
		toolEvent(1, "agent-a", "read", "ls"),
		toolEvent(2, "agent-a", "write", "touch x"),
		toolEvent(3, "agent-b", "read", "cat x"),
		{Seq: 4, EventType: "custom"},
		{Seq: 5},
		// Bookkeeping mentions an action class without being an action.
		approvalEvent(6, "ap1", approval.Pending),
	}
	act, _ := analyse(events, nil)
	if act.Events != 6 || act.FirstSeq != 1 || act.LastSeq != 6 {
		t.Errorf("events %d seq %d-%d, want 6 seq 1-6", act.Events, act.FirstSeq, act.LastSeq)
	}
	want := map[string]int64{"tool_execution": 3, "custom": 1, "(none)": 1, "approval_requested": 1}
	if !reflect.DeepEqual(act.ByEventType, want) {
		t.Errorf("by_event_type = %v, want %v", act.ByEventType, want)
	}
	if want := map[string]int64{"agent-a": 2, "agent-b": 1, "agent": 1}; !reflect.DeepEqual(act.ByAgent, want) {
		t.Errorf("by_agent = %v, want %v", act.ByAgent, want)
	}
	if want := map[string]int64{"read": 2, "write": 1}; !reflect.DeepEqual(act.ByActionClass, want) {
		t.Errorf("by_action_class = %v, want %v", act.ByActionClass, want)
	}
}

func TestBreakdownIsBounded(t *testing.T) {
	a := NewAnalyzer(t0, DefaultMaxEvents)
	for i := range maxKeys + 50 {
		a.Add(audit.Event{Seq: int64(i + 1), EventType: "x", Agent: "agent-" + itoa(int64(i))})
	}
	act, _ := a.Finish(Lookups{})
	if len(act.ByAgent) != maxKeys+1 || act.ByAgent[otherKey] != 50 {
		t.Errorf("%d agents, %d under %s; want %d and 50", len(act.ByAgent), act.ByAgent[otherKey], otherKey, maxKeys+1)
	}
}

func TestDecisionsPerResource(t *testing.T) {
	noMatch := decided("deny", "")
	noMatch.Note = "resource not in the infra file, so it has no tags"
	events := []audit.Event{
		decisionEvent(1, "database:prod-db", decided("allow", "production-database-protection")),
		decisionEvent(2, "database:prod-db", decided("deny", "production-database-protection")),
		decisionEvent(3, "database:prod-db", decided("require_approval", "production-database-protection")),
		decisionEvent(4, "database:legacy-db", noMatch),
		decisionEvent(5, "database:legacy-db", noMatch),
		decisionEvent(6, "kubernetes:payments", decided("allow", "production-kubernetes")),
		{Seq: 7, EventType: audit.TypePolicyDecision, PolicyDecision: json.RawMessage(`"not a record"`)},
		{Seq: 8, EventType: audit.TypePolicyDecision, PolicyDecision: json.RawMessage(`{"effect":"perhaps"}`)},
	}
	_, dec := analyse(events, nil)
	want := DecisionPhase{
		Total: 6, Allow: 2, Deny: 1, RequireApproval: 1, NoMatch: 2, NoMatchUnknown: 2, Unreadable: 2,
		Resources: []ResourceDecisions{
			{Resource: "database:legacy-db", NoMatch: 2, NoMatchUnknown: 2, Total: 2, Note: noMatch.Note},
			{Resource: "database:prod-db", Allow: 1, Deny: 1, RequireApproval: 1, Total: 3},
			{Resource: "kubernetes:payments", Allow: 1, Total: 1},
		},
		ByPolicy: map[string]int64{"production-database-protection": 3, "production-kubernetes": 1},
		Coverage: Coverage{Uncovered: []UncoveredExecution{}},
	}
	if !reflect.DeepEqual(dec, want) {
		t.Errorf("decisions =\n%+v\nwant\n%+v", dec, want)
	}
}

func TestIncidentAnalysis(t *testing.T) {
	events := []audit.Event{
		incidentEvent(1, "potential_sql_injection", "secbot", "SQL syntax error in tool output"),
		incidentEvent(2, "hash_mismatch", "secbot", "event 7 does not hash to its event_hash"),
		// Early secbot drafts named the type "pattern".
		{Seq: 3, EventType: audit.TypeIncident, Data: json.RawMessage(`{"pattern":"chain_tampering"}`)},
		{Seq: 4, EventType: audit.TypeIncident, Data: json.RawMessage(`[]`)},
	}
	act, _ := analyse(events, nil)
	if act.IncidentsTotal != 4 || len(act.Incidents) != 4 {
		t.Fatalf("incidents %d (%d listed), want 4", act.IncidentsTotal, len(act.Incidents))
	}
	want := map[string]int64{"potential_sql_injection": 1, "hash_mismatch": 1, "chain_tampering": 1, "(unknown)": 1}
	if !reflect.DeepEqual(act.IncidentTypes, want) {
		t.Errorf("incident_types = %v, want %v", act.IncidentTypes, want)
	}
	var tampering []bool
	for _, in := range act.Incidents {
		tampering = append(tampering, in.Tampering)
	}
	if want := []bool{false, true, true, false}; !slices.Equal(tampering, want) {
		t.Errorf("tampering = %v, want %v", tampering, want)
	}
}

func TestIncidentListKeepsTheLatest(t *testing.T) {
	var events []audit.Event
	for i := range maxListed + 10 {
		events = append(events, incidentEvent(int64(i+1), "potential_command_injection", "secbot", "x"))
	}
	act, _ := analyse(events, nil)
	if act.IncidentsTotal != maxListed+10 || len(act.Incidents) != maxListed || act.Incidents[0].Seq != 11 {
		t.Errorf("total %d, listed %d from seq %d; want %d, %d from 11", act.IncidentsTotal, len(act.Incidents), act.Incidents[0].Seq, maxListed+10, maxListed)
	}
}

// An approval releases one execution of exactly its action (DESIGN §11):
// only an approval consumed for the event's action, by its agent, before
// it, and not used by an earlier event, keeps it out of the unapproved list.
func TestUnapprovedDestructive(t *testing.T) {
	tests := []struct {
		name    string
		events  []audit.Event
		lookups map[string]approval.Request
		want    []int64 // seqs flagged
	}{
		{"no approval", []audit.Event{toolEvent(1, "a", "destructive", "DROP TABLE users")}, nil, []int64{1}},
		{"reads and writes are not judged", []audit.Event{toolEvent(1, "a", "write", "x"), toolEvent(2, "a", "read", "y")}, nil, nil},
		{"consumed for it in the window", []audit.Event{
			approvalChange(1, approvalFor("ap1", "a", "DROP TABLE t", approval.Consumed)),
			citing(toolEvent(2, "a", "destructive", "DROP TABLE t"), "ap1"),
		}, nil, nil},
		{"approved in the window, not consumed", []audit.Event{
			approvalChange(1, approvalFor("ap1", "a", "DROP TABLE t", approval.Approved)),
			citing(toolEvent(2, "a", "destructive", "DROP TABLE t"), "ap1"),
		}, nil, []int64{2}},
		{"consumed, cited twice: one execution", []audit.Event{
			approvalChange(1, approvalFor("ap1", "a", "DROP TABLE t", approval.Consumed)),
			citing(toolEvent(2, "a", "destructive", "DROP TABLE t"), "ap1"),
			citing(toolEvent(3, "a", "destructive", "DROP TABLE t"), "ap1"),
		}, nil, []int64{3}},
		{"consumed for another command", []audit.Event{
			approvalChange(1, approvalFor("ap1", "a", "DROP TABLE orders", approval.Consumed)),
			citing(toolEvent(2, "a", "destructive", "DROP TABLE users"), "ap1"),
		}, nil, []int64{2}},
		{"consumed by another agent", []audit.Event{
			approvalChange(1, approvalFor("ap1", "b", "DROP TABLE t", approval.Consumed)),
			citing(toolEvent(2, "a", "destructive", "DROP TABLE t"), "ap1"),
		}, nil, []int64{2}},
		{"denied in the window", []audit.Event{
			approvalChange(1, approvalFor("ap1", "a", "DROP TABLE t", approval.Denied)),
			citing(toolEvent(2, "a", "destructive", "DROP TABLE t"), "ap1"),
		}, nil, []int64{2}},
		{"consumed before the window, looked up", []audit.Event{
			citing(toolEvent(2, "a", "destructive", "DROP TABLE t"), "old"),
		}, map[string]approval.Request{"old": approvalFor("old", "a", "DROP TABLE t", approval.Consumed)}, nil},
		{"approved before the window, looked up, not consumed", []audit.Event{
			citing(toolEvent(2, "a", "destructive", "DROP TABLE t"), "old"),
		}, map[string]approval.Request{"old": approvalFor("old", "a", "DROP TABLE t", approval.Approved)}, []int64{2}},
		{"looked up once, cited twice", []audit.Event{
			citing(toolEvent(2, "a", "destructive", "DROP TABLE t"), "old"),
			citing(toolEvent(3, "a", "destructive", "DROP TABLE t"), "old"),
		}, map[string]approval.Request{"old": approvalFor("old", "a", "DROP TABLE t", approval.Consumed)}, []int64{3}},
		{"unknown approval", []audit.Event{
			citing(toolEvent(2, "a", "destructive", "DROP TABLE t"), "nope"),
		}, nil, []int64{2}},
		{"policy decisions about destructive actions are not actions", []audit.Event{
			decisionEvent(1, "database:prod-db", govapi.DecisionRecord{Action: "destructive", Effect: "deny", EnforcedEffect: "deny"}),
		}, nil, nil},
		{"listed in seq order after look-ups", []audit.Event{
			citing(toolEvent(1, "a", "destructive", "x"), "nope"),
			toolEvent(2, "a", "destructive", "y"),
		}, nil, []int64{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.events {
				if tt.events[i].EventType == audit.TypePolicyDecision {
					tt.events[i].ActionClass = "destructive"
				}
			}
			act, _ := analyse(tt.events, tt.lookups)
			var got []int64
			for _, u := range act.Unapproved {
				got = append(got, u.Seq)
			}
			if !slices.Equal(got, tt.want) || act.UnapprovedTotal != int64(len(tt.want)) {
				t.Errorf("flagged %v (total %d), want %v", got, act.UnapprovedTotal, tt.want)
			}
		})
	}
}

// A window that starts after an approval's first use (issue 13): govbot
// looks the approval up, with the events before the window that cited
// it, and a citation in the window after a use is a second use.
func TestUnapprovedAfterAnEarlierUse(t *testing.T) {
	old := map[string]approval.Request{"old": approvalFor("old", "a", "DROP TABLE t", approval.Consumed)}
	window := []audit.Event{citing(toolEvent(5, "a", "destructive", "DROP TABLE t"), "old")}
	for _, tt := range []struct {
		name  string
		cited []audit.Event // before the window
		want  []int64
	}{
		{"not cited before", nil, nil},
		{"used before the window", []audit.Event{citing(toolEvent(1, "a", "destructive", "DROP TABLE t"), "old")}, []int64{5}},
		{"cited before for another command", []audit.Event{citing(toolEvent(1, "a", "destructive", "DROP TABLE x"), "old")}, nil},
		{"cited before by another agent", []audit.Event{citing(toolEvent(1, "b", "destructive", "DROP TABLE t"), "old")}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			act, _ := analyseCited(window, old, map[string][]audit.Event{"old": tt.cited})
			var got []int64
			for _, u := range act.Unapproved {
				got = append(got, u.Seq)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("flagged %v, want %v", got, tt.want)
			}
			if len(tt.want) > 0 && !strings.Contains(act.Unapproved[0].Message, "used already by event") {
				t.Errorf("message %q", act.Unapproved[0].Message)
			}
		})
	}
}

func TestApprovalPhase(t *testing.T) {
	req := func(id string, age time.Duration) approval.Request {
		return approval.Request{ID: id, Status: approval.Pending, CreatedAt: t0.Add(-age), ExpiresAt: t0.Add(time.Hour),
			Resource: audit.Resource{Type: "database", Name: "prod-db"}, Action: "write", RequestedBy: "alice", Quorum: 2,
			Votes: []approval.Vote{{By: "bob", Decision: approval.Approve}}}
	}
	got := approvalPhase([]approval.Request{req("new", 5*time.Minute), req("old", 45*time.Minute), req("edge", 30*time.Minute),
		{ID: "done", Status: approval.Approved}}, t0, 30*time.Minute)
	if got.Pending != 3 || got.Stale != 1 || got.StaleAfter != "30m" {
		t.Errorf("pending %d stale %d after %s; want 3, 1, 30m", got.Pending, got.Stale, got.StaleAfter)
	}
	var order []string
	for _, r := range got.Requests {
		order = append(order, r.ID)
		if r.Stale != (r.ID == "old") {
			t.Errorf("%s: stale = %v", r.ID, r.Stale)
		}
	}
	if want := []string{"old", "edge", "new"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want oldest first %v", order, want)
	}
	if r := got.Requests[0]; r.PendingForMS != (45*time.Minute).Milliseconds() || r.Approvals != 1 || r.Quorum != 2 || r.Resource != "database:prod-db" {
		t.Errorf("request = %+v", r)
	}
}

func TestChainPhaseBoundsLinks(t *testing.T) {
	links := make([]audit.BrokenLink, maxListed+5)
	got := chainPhase(audit.Report{Verified: false, TotalEvents: 10, BrokenLinks: links})
	if len(got.BrokenLinks) != maxListed || got.BrokenLinksTotal != maxListed+5 {
		t.Errorf("listed %d of %d", len(got.BrokenLinks), got.BrokenLinksTotal)
	}
	if got := chainPhase(audit.Report{Verified: true}); got.BrokenLinks == nil {
		t.Error("broken_links is null, want []")
	}
	// Approval mismatches after the chain's links, bounded on their own.
	for range maxListed + 3 {
		links = append(links, audit.BrokenLink{Kind: audit.KindApprovalMismatch})
	}
	got = chainPhase(audit.Report{TotalEvents: 10, BrokenLinks: links})
	if len(got.BrokenLinks) != 2*maxListed || got.BrokenLinks[maxListed].Kind != audit.KindApprovalMismatch ||
		got.BrokenLinksTotal != 2*maxListed+8 || got.ApprovalMismatches != maxListed+3 {
		t.Errorf("listed %d of %d, %d approval mismatches", len(got.BrokenLinks), got.BrokenLinksTotal, got.ApprovalMismatches)
	}
}

func TestPolicyPhase(t *testing.T) {
	st := govapi.PolicyStatus{Loaded: true, File: "p.yaml", DefaultEffect: "deny", Policies: []govapi.PolicySummary{
		{Name: "a", Enabled: true, Enforcement: "enforce", Resources: []string{"database[production]"}, Rules: 3},
		{Name: "b", Enabled: false, Enforcement: "enforce", Rules: 1},
		{Name: "c", Enabled: true, Enforcement: "audit", Rules: 2},
	}}
	got := policyPhase(st, map[string]int64{"a": 7}, nil, nil, 0)
	if got.Enabled != 2 || got.Disabled != 1 || got.AuditOnly != 1 || got.Rules != 6 {
		t.Errorf("enabled %d disabled %d audit %d rules %d", got.Enabled, got.Disabled, got.AuditOnly, got.Rules)
	}
	if got.Policies[0].Decisions != 7 || got.Policies[1].Resources == nil {
		t.Errorf("policies = %+v", got.Policies)
	}
}

// healthy is a report with nothing to say.
func healthy() *Report {
	return &Report{
		Policy:    PolicyPhase{Loaded: true, DefaultEffect: "deny", SHA256: strings.Repeat("ab", 32)},
		Activity:  ActivityPhase{MaxEvents: DefaultMaxEvents, IncidentTypes: map[string]int64{}},
		Approvals: ApprovalPhase{StaleAfter: "30m"},
		Chain:     ChainPhase{Report: audit.Report{Verified: true}},
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(*Report)
		status   string
		code     int
		alerts   []string
		warnings []string
		notices  []string
		text     string // in some finding's message
	}{
		{name: "healthy", edit: func(*Report) {}, status: StatusHealthy},
		{
			name: "broken chain is an alert",
			edit: func(r *Report) {
				r.Chain = chainPhase(audit.Report{TotalEvents: 9, BrokenLinks: []audit.BrokenLink{{Seq: 5, Kind: "hash_mismatch"}}})
			},
			status: StatusAlerts, code: 2, alerts: []string{CodeChainBroken},
			text: "1 broken link in 9 events, first at seq 5 (hash_mismatch)",
		},
		{
			name: "an approvals table edit is an alert naming the approval",
			edit: func(r *Report) {
				r.Chain = chainPhase(audit.Report{TotalEvents: 9, BrokenLinks: []audit.BrokenLink{
					{Seq: 7, EventID: "evt_7", Kind: audit.KindApprovalMismatch, ApprovalID: "apr_1", Detail: "status differs from the chain at seq 7 (approval_voted): status \"approved\" in the table, \"pending\" in the chain"},
				}})
			},
			status: StatusAlerts, code: 2, alerts: []string{CodeApprovalMismatch},
			text: `the approvals table disagrees with the audit chain for 1 approval: apr_1 (status differs from the chain at seq 7 (approval_voted): status "approved" in the table, "pending" in the chain); `,
		},
		{
			name: "a broken chain and approval mismatches: both alerts, counted apart",
			edit: func(r *Report) {
				links := []audit.BrokenLink{{Seq: 5, Kind: "hash_mismatch"}}
				for i := range maxNamedMismatches + 2 {
					links = append(links, audit.BrokenLink{Seq: int64(10 + i), Kind: audit.KindApprovalMismatch, ApprovalID: fmt.Sprintf("apr_%d", i), Detail: "not in the chain"})
				}
				r.Chain = chainPhase(audit.Report{TotalEvents: 20, BrokenLinks: links})
			},
			status: StatusAlerts, code: 2, alerts: []string{CodeChainBroken, CodeApprovalMismatch},
			text: "for 7 approvals: apr_0 (not in the chain); apr_1 (not in the chain); apr_2 (not in the chain); apr_3 (not in the chain); apr_4 (not in the chain); and 2 more; ",
		},
		{
			name: "approval mismatches do not count as the chain's broken links",
			edit: func(r *Report) {
				r.Chain = chainPhase(audit.Report{TotalEvents: 9, BrokenLinks: []audit.BrokenLink{
					{Seq: 5, Kind: "hash_mismatch"}, {Seq: 7, Kind: audit.KindApprovalMismatch, ApprovalID: "apr_1"},
				}})
			},
			status: StatusAlerts, code: 2, alerts: []string{CodeChainBroken, CodeApprovalMismatch},
			text: "the audit chain does not verify: 1 broken link in 9 events, first at seq 5 (hash_mismatch)",
		},
		{
			name:   "an approval_mismatch incident is a tampering alert",
			edit:   func(r *Report) { r.Activity.IncidentTypes = map[string]int64{"approval_mismatch": 1} },
			status: StatusAlerts, code: 2, alerts: []string{CodeTamperingIncident},
		},
		{
			name:   "a checkpoint_inconsistent incident is a tampering alert",
			edit:   func(r *Report) { r.Activity.IncidentTypes = map[string]int64{"checkpoint_inconsistent": 1} },
			status: StatusAlerts, code: 2, alerts: []string{CodeTamperingIncident},
		},
		{
			name: "tampering incidents are alerts, one per type",
			edit: func(r *Report) {
				r.Activity.IncidentTypes = map[string]int64{"hash_mismatch": 2, "head_regressed": 1}
				r.Activity.Incidents = []IncidentSummary{{Seq: 40, Type: "hash_mismatch", Source: "secbot", Message: "seq 5 altered", Timestamp: t0}}
			},
			status: StatusAlerts, code: 2, alerts: []string{CodeTamperingIncident, CodeTamperingIncident},
			text: "2 hash_mismatch incidents in the window: the audit chain was altered (latest: seq 40 at 2026-03-09T08:00:00Z from secbot: seq 5 altered)",
		},
		{
			name: "other incidents are a warning",
			edit: func(r *Report) {
				r.Activity.IncidentTypes = map[string]int64{"potential_sql_injection": 1, "unauthorized_destructive": 2}
			},
			status: StatusWarnings, warnings: []string{CodeIncidents},
			text: "incidents in the window: unauthorized_destructive 2, potential_sql_injection 1",
		},
		{
			name:   "no policy",
			edit:   func(r *Report) { r.Policy = PolicyPhase{} },
			status: StatusWarnings, warnings: []string{CodeNoPolicy}, text: "start auditd with --policy FILE",
		},
		{
			name: "reload error",
			edit: func(r *Report) {
				at := t0
				r.Policy.ReloadError, r.Policy.ReloadErrorAt = "policies[0].rules: unknown key", &at
			},
			status: StatusWarnings, warnings: []string{CodePolicyReloadError},
			text: "the last policy reload failed at 2026-03-09T08:00:00Z: policies[0].rules: unknown key; the policy with sha256 abababababab… is still in force",
		},
		{
			name:   "dry run",
			edit:   func(r *Report) { r.Policy.DryRun = true },
			status: StatusWarnings, warnings: []string{CodePolicyDryRun},
		},
		{
			name: "no_match tells the operator to add the resource to the infra file",
			edit: func(r *Report) {
				r.Decisions.Resources = []ResourceDecisions{{Resource: "database:legacy-db", NoMatch: 2, NoMatchUnknown: 2, Total: 2, Note: "not in the infra file"},
					{Resource: "database:prod-db", Allow: 1, Total: 1}}
			},
			status: StatusWarnings, warnings: []string{CodeNoMatchDecisions},
			text: "database:legacy-db: 2 decisions matched no policy, so the default effect (deny) applied (not in the infra file); add the resource to the infra file (auditd --infra) with the tags your policies match",
		},
		{
			// Issue 20: a resource in the infra file that no policy covers
			// must not be told to go into the infra file.
			name: "no_match on a known resource asks for a policy",
			edit: func(r *Report) {
				r.Decisions.Resources = []ResourceDecisions{{Resource: "database:analytics", NoMatch: 1, Total: 1, Tags: []string{"staging", "pii"}}}
			},
			status: StatusWarnings, warnings: []string{CodeNoMatchUncovered},
			text: "database:analytics: 1 decision matched no policy, so the default effect (deny) applied; auditd knows the resource (tags staging, pii) but no policy rule decides these actions on it: add or widen a policy (its resources or its rules' actions), or see why each policy skipped it with govexplain --resource database:analytics",
		},
		{
			name: "no_match on a resource first unknown, then known: both warnings",
			edit: func(r *Report) {
				r.Decisions.Resources = []ResourceDecisions{{Resource: "database:new-db", NoMatch: 3, NoMatchUnknown: 1, Total: 3, Note: "not in the infra file"}}
			},
			status: StatusWarnings, warnings: []string{CodeNoMatchDecisions, CodeNoMatchUncovered},
			text: "database:new-db: 2 decisions matched no policy, so the default effect (deny) applied; auditd knows the resource (no tags) but no policy rule decides these actions on it",
		},
		{
			name: "uncovered executions are an alert",
			edit: func(r *Report) {
				r.Decisions.Coverage = Coverage{Executions: 3, Covered: 1, UncoveredTotal: 2, Uncovered: []UncoveredExecution{
					{Seq: 4, Agent: "ops", ActionClass: "write", Command: "kubectl apply -f x.yaml"},
					{Seq: 9, Agent: "db-agent", ActionClass: "destructive", Resource: "database:prod-db", Command: "DROP TABLE t"}}}
			},
			status: StatusAlerts, code: 2, alerts: []string{CodeUncoveredExecutions},
			text: "2 write or destructive tool executions of 3 in the window have no policy decision (latest: seq 4 by ops: kubectl apply -f x.yaml; seq 9 by db-agent on database:prod-db: DROP TABLE t); an enforcement point ran them without asking auditd (POST /api/v1/decisions): check that every agent runs behind gate",
		},
		{
			name: "uncovered executions without a policy: NO_POLICY says it",
			edit: func(r *Report) {
				r.Policy = PolicyPhase{}
				r.Decisions.Coverage = Coverage{Executions: 1, UncoveredTotal: 1, Uncovered: []UncoveredExecution{{Seq: 4, ActionClass: "write"}}}
			},
			status: StatusWarnings, warnings: []string{CodeNoPolicy},
		},
		{
			name: "dead policies and rules",
			edit: func(r *Report) {
				r.Policy.DeadPolicies, r.Policy.DeadRules = 1, 3
				r.Policy.Policies = []PolicyOverview{
					{Name: "prod", Enabled: true, Rules: 3, Decisions: 4, RuleDecisions: []int64{4, 0, 0}, DeadRules: []int{1, 2}},
					{Name: "k8s", Enabled: true, Rules: 2, Decisions: 1, RuleDecisions: []int64{0, 1}, DeadRules: []int{0}},
					{Name: "legacy", Enabled: true, Rules: 1, Dead: true, DeadRules: []int{}},
					{Name: "off", Enabled: false, Rules: 1, DeadRules: []int{}},
				}
			},
			// A notice: the status stays healthy.
			status: StatusHealthy, notices: []string{CodeDeadRules},
			text: "1 enabled policy and 3 rules decided nothing in the window: prod rules 1, 2; k8s rule 0; legacy (no decision); they may be shadowed by other policies or match nothing agents do: review them with govexplain (rules are counted from 0, as rule_index)",
		},
		{
			name: "stale approval",
			edit: func(r *Report) {
				r.Approvals.Requests = []PendingApproval{{ID: "ap1", Action: "write", Resource: "database:prod-db", RequestedBy: "alice",
					PendingForMS: (45 * time.Minute).Milliseconds(), Stale: true}, {ID: "ap2"}}
			},
			status: StatusWarnings, warnings: []string{CodeStaleApproval},
			text: "approval ap1 (write database:prod-db, requested by alice) has been pending for 45m, over 30m: check that approval notifications reach the approvers",
		},
		{
			name: "unapproved destructive",
			edit: func(r *Report) {
				r.Activity.UnapprovedTotal = 1
				r.Activity.Unapproved = []UnapprovedAction{{Seq: 9, Agent: "db-agent", Resource: "database:prod-db", Command: "DROP TABLE users"}}
			},
			status: StatusWarnings, warnings: []string{CodeUnapprovedDestructive},
			text: "1 destructive action without a consumed approval (latest: seq 9 by db-agent on database:prod-db: DROP TABLE users)",
		},
		{
			name: "capped",
			edit: func(r *Report) {
				r.Activity.Capped, r.Activity.MaxEvents, r.Activity.FirstSeq, r.Activity.LastSeq = true, 10, 91, 100
			},
			status: StatusWarnings, warnings: []string{CodeEventsCapped},
			text: "the window holds more than 10 events: only seq 91-100 were analysed",
		},
		{
			name: "alerts win over warnings",
			edit: func(r *Report) {
				r.Policy = PolicyPhase{}
				r.Chain.Verified = false
			},
			status: StatusAlerts, code: 2, alerts: []string{CodeChainBroken}, warnings: []string{CodeNoPolicy},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := healthy()
			tt.edit(r)
			s := summarize(r)
			codes := func(fs []Finding) []string {
				var out []string
				for _, f := range fs {
					out = append(out, f.Code)
				}
				return out
			}
			if s.Status != tt.status || s.ExitCode != tt.code {
				t.Errorf("status %s exit %d, want %s %d", s.Status, s.ExitCode, tt.status, tt.code)
			}
			if got := codes(s.Alerts); !slices.Equal(got, tt.alerts) {
				t.Errorf("alerts %v, want %v", got, tt.alerts)
			}
			if got := codes(s.Warnings); !slices.Equal(got, tt.warnings) {
				t.Errorf("warnings %v, want %v", got, tt.warnings)
			}
			if got := codes(s.Notices); !slices.Equal(got, tt.notices) {
				t.Errorf("notices %v, want %v", got, tt.notices)
			}
			if tt.text != "" {
				found := false
				for _, f := range append(append(s.Alerts, s.Warnings...), s.Notices...) {
					found = found || strings.Contains(f.Message, tt.text)
				}
				if !found {
					t.Errorf("no finding says %q:\n%+v", tt.text, s)
				}
			}
		})
	}
}

func TestNoMatchFindingsAreBounded(t *testing.T) {
	r := healthy()
	for i := range maxNoMatchFindings + 3 {
		r.Decisions.Resources = append(r.Decisions.Resources, ResourceDecisions{Resource: "db:" + itoa(int64(i)), NoMatch: 2, NoMatchUnknown: 2, Total: 2})
	}
	s := summarize(r)
	if len(s.Warnings) != maxNoMatchFindings+1 {
		t.Fatalf("%d warnings, want %d", len(s.Warnings), maxNoMatchFindings+1)
	}
	if last := s.Warnings[maxNoMatchFindings].Message; last != "6 decisions on 3 more resources missing from the infra file matched no policy; see phase 4" {
		t.Errorf("last warning = %q", last)
	}
}

func TestUntrustedTextIsOneLine(t *testing.T) {
	r := healthy()
	r.Decisions.Resources = []ResourceDecisions{{Resource: "db:\x1b[31mred", NoMatch: 2, NoMatchUnknown: 1, Total: 2, Note: "line1\nline2", Tags: []string{"a\nb"}}}
	s := summarize(r)
	for _, f := range s.Warnings {
		if strings.ContainsAny(f.Message, "\x1b\n") {
			t.Errorf("finding carries control characters: %q", f.Message)
		}
	}
}
