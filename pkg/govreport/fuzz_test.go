package govreport

import (
	"encoding/json"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
)

// FuzzAnalyzer feeds the analysis events whose client-supplied members
// (policy_decision, data, action class, links) are anything: it never
// panics, and every write or destructive execution ends up covered,
// uncovered or unchecked, exactly once.
func FuzzAnalyzer(f *testing.F) {
	f.Add("write", "trace-1", "ap1", []byte(`{"decision_event_id":"evt_1"}`), []byte(`{"effect":"allow","policy_name":"p","rule_index":0,"trace":{"policies_evaluated":[{"policy_name":"p","rules":[{"index":0,"actions":["read"],"effect":"allow"}]}]}}`))
	f.Add("DESTRUCTIVE", "", "", []byte(`null`), []byte(`{"default_applied":true,"note":"x","tags":["a"]}`))
	f.Add("read", "t", "", []byte(`[1,2]`), []byte(`{"policy_name":"p","rule_index":-5,"effect":"deny"}`))
	f.Add("write", "t", "a", []byte(`{"decision_event_id":7}`), []byte(`{"policy_name":"p","rule_index":99999999,"effect":"deny","trace":{"policies_evaluated":[{"policy_name":"p","rules":[{"index":-1,"effect":"x"}]}]}}`))
	f.Fuzz(func(t *testing.T, class, trace, approvalID string, data, decision []byte) {
		a := NewAnalyzer(t0, DefaultMaxEvents)
		raw := func(b []byte) json.RawMessage {
			if !json.Valid(b) {
				return nil
			}
			return b
		}
		a.Add(audit.Event{Seq: 1, EventID: "evt_1", EventType: audit.TypePolicyDecision, TraceID: trace, ActionClass: class,
			PolicyDecision: raw(decision), Resource: &audit.Resource{Type: "db", Name: "x"}})
		a.Add(audit.Event{Seq: 2, EventID: "evt_2", EventType: audit.TypeToolExecution, TraceID: trace, ActionClass: class,
			ApprovalID: approvalID, Data: raw(data), Tool: &audit.Tool{Name: "bash", RawCommand: "x"}})
		answers := map[Link]bool{}
		for i, l := range a.CoverageQuestions() {
			answers[l] = i%2 == 0
		}
		_, d := a.Finish(Lookups{Decided: answers})
		cv := d.Coverage
		if cv.Covered+cv.UncoveredTotal+cv.Unchecked != cv.Executions || cv.Executions > 1 {
			t.Errorf("coverage %+v", cv)
		}
		_ = a.RuleDecisions("")
		_ = a.RuleLabels("")
	})
}
