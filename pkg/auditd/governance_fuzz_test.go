package auditd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
)

const fuzzPolicy = `version: "1"
policies:
  - name: guard
    resources: [{type: database, match: {tags: [production]}}]
    rules:
      - action: write
        effect: allow
        conditions: {require_approval: true, approval_quorum: 3, max_rows_affected: 10}
`

func fuzzEngine(t testing.TB) *policy.Engine {
	cfg, err := policy.Load(strings.NewReader(fuzzPolicy))
	if err != nil {
		t.Fatal(err)
	}
	return policy.NewEngine(policy.EngineConfig{PolicyConfig: cfg})
}

// strictDecode is decodeBody's decoding.
func strictDecode(body []byte, v any) bool {
	if audit.CheckRequestJSON(body) != nil {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v) == nil && !dec.More()
}

// Property: a decision request that validates can be recorded and can
// request its approval. Validation is the only gate before an approval is
// created, so anything it lets through must not fail later (a 400 after the
// approval exists would leave it behind).
func FuzzDecisionRequest(f *testing.F) {
	for _, s := range []string{
		`{"resource":{"type":"database","name":"prod-db","tags":["production"]},"action":"write"}`,
		`{"event_id":"d-1","agent":"a","principal":{"user_id":"u","roles":["dba"],"service":"s"},"resource":{"type":"database","name":"prod-db","tags":null},"action":"write","tool":{"name":"psql","raw_command":"UPDATE t\tSET x=1\n","parameters":{"a":[1,2.5e3,"\u00e9"]}},"rows_affected":20,"post_execution":true,"reason":"r","approval_ttl":"90s"}`,
		`{"resource":{"type":"database","name":"x"},"action":"read","tool":{"parameters":"str"}}`,
	} {
		f.Add([]byte(s))
	}
	e := fuzzEngine(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var in govapi.DecisionRequest
		if !strictDecode(body, &in) || validateDecision(&in) != nil {
			return
		}
		if in.EventID == "" {
			in.EventID = "evt_fuzz"
		}
		if _, err := requestFingerprint(in, nil); err != nil {
			t.Fatalf("fingerprint: %v", err)
		}
		tags := in.Resource.Tags
		if tags == nil {
			tags = []string{}
		}
		req := policy.Request{Principal: in.Principal, Resource: policy.RequestResource{Type: in.Resource.Type, Name: in.Resource.Name, Tags: tags},
			Action: policy.Action(in.Action), Context: policy.RequestContext{RowsAffected: in.RowsAffected, PodsAffected: in.PodsAffected}}
		tr := e.Explain(req)
		rec, err := audit.Canonical(decisionRecord(in, tags, "a note", tr, ""))
		if err != nil {
			t.Fatalf("record: %v", err)
		}
		ev := decisionEvent(in, tags, tr, rec)
		ev.Data, _ = json.Marshal(govapi.DecisionEventData{Reason: in.Reason, Service: in.Principal.Service, RequestSHA256: "x"})
		if _, err := audit.Prepare(ev); err != nil {
			t.Fatalf("the event cannot be sealed: %v", err)
		}
		ai := approval.Input{Resource: audit.Resource{Type: in.Resource.Type, Name: in.Resource.Name, Tags: tags}, Action: in.Action,
			Reason: in.Reason, Quorum: max(tr.Decision.ApprovalQuorum, 1), TTL: in.ApprovalTTL, PolicyDecision: rec}
		if in.Tool != nil {
			ai.Tool, ai.RawCommand = in.Tool.Name, in.Tool.RawCommand
		}
		if _, err := approval.New(ai, "apr_fuzz", "alice", time.Unix(0, 0), approval.DefaultTTL); err != nil {
			t.Fatalf("the approval cannot be requested: %v", err)
		}
	})
}

// Property: an incident that validates can be recorded.
func FuzzIncidentInput(f *testing.F) {
	f.Add([]byte(`{"type":"chain_tampering","severity":"critical","source":"auditor","message":"m","event_ids":["a"],"details":{"seq":3}}`))
	f.Add([]byte(`{"incident_id":"i-1","type":"x","severity":"info","source":"s","message":"m\n","details":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in govapi.IncidentInput
		if !strictDecode(body, &in) || validateIncident(&in) != nil {
			return
		}
		data := in
		data.IncidentID = ""
		raw, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		ev := audit.Event{EventID: "evt_fuzz", EventType: audit.TypeIncident, Agent: in.Agent, SessionID: in.SessionID, TraceID: in.TraceID, Data: raw}
		if _, err := audit.Prepare(ev); err != nil {
			t.Fatalf("the incident cannot be sealed: %v", err)
		}
	})
}

// Property: the hypothetical query parser never panics, and what it and
// Explain's checks accept evaluates.
func FuzzExplainQuery(f *testing.F) {
	f.Add("resource_type=database&resource_name=prod-db&action=write&tags=production,critical&role=dba&rows_affected=5")
	f.Add("resource_type=database&resource_name=prod-db&action=read&tags=")
	e := fuzzEngine(f)
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := govapi.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := govapi.ParseExplainQuery(v)
		if err != nil {
			return
		}
		req, err := explainRequest(q)
		if err != nil {
			return
		}
		e.Explain(req)
	})
}
