package policy

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"
)

// benchConfig is seed 003's three policies followed by n-3 generated ones
// in four shapes (tagged databases with limits, role-scoped namespaces,
// scheduled freezes, disabled or audit policies), so that a request for
// prod-db applies to the seed's three and is rejected by the rest on
// type, name, tag, principal or the enabled flag.
func benchConfig(n int) *Config {
	limit := 1000
	off := false
	cfg := &Config{Version: "1", Policies: []Policy{
		{Name: "production-database-protection",
			Resources: []ResourceSelector{{Type: "database", Match: &TagMatch{Tags: []string{"production"}}}},
			Rules: []Rule{
				{Actions: []Action{ActionRead}, Effect: EffectAllow},
				{Actions: []Action{ActionWrite}, Effect: EffectAllow, Conditions: &Conditions{RequireApproval: true, MaxRowsAffected: &limit}},
				{Actions: []Action{ActionDestructive}, Effect: EffectDeny, Message: "Destructive operations on production databases are prohibited"},
			}},
		{Name: "change-freeze",
			Resources: []ResourceSelector{{Type: "database", Match: &TagMatch{Tags: []string{"production"}}}},
			Rules: []Rule{{Actions: []Action{ActionWrite, ActionDestructive}, Effect: EffectDeny, Message: "Changes not allowed during business hours",
				Conditions: &Conditions{Schedule: &Schedule{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Hours: []int{9, 10, 11, 12, 13, 14, 15, 16}, Timezone: "America/New_York"}}}}},
		{Name: "dba-privileges", Principals: []Principal{{Role: "dba"}},
			Resources: []ResourceSelector{{Type: "database"}},
			Rules: []Rule{
				{Actions: []Action{ActionRead, ActionWrite}, Effect: EffectAllow},
				{Actions: []Action{ActionDestructive}, Effect: EffectAllow, Conditions: &Conditions{RequireApproval: true, ApprovalQuorum: 2}},
			}},
	}}
	for i := 3; i < n; i++ {
		id := strconv.Itoa(i)
		p := Policy{Name: "generated-" + id}
		switch i % 4 {
		case 0:
			p.Resources = []ResourceSelector{{Type: "database", Name: "svc-" + id + "-*", Match: &TagMatch{Tags: []string{"production"}}}}
			p.Rules = []Rule{
				{Actions: []Action{ActionRead}, Effect: EffectAllow},
				{Actions: []Action{ActionWrite}, Effect: EffectAllow, Conditions: &Conditions{RequireApproval: true, MaxRowsAffected: &limit}},
			}
		case 1:
			p.Principals = []Principal{{Role: "team-" + id}, {User: "owner-" + id + "@example.com"}}
			p.Resources = []ResourceSelector{{Type: "kubernetes", Name: "ns-" + id}}
			p.Rules = []Rule{{Actions: []Action{ActionRead, ActionWrite}, Effect: EffectAllow}}
		case 2:
			p.Resources = []ResourceSelector{{Type: "database", Match: &TagMatch{Tags: []string{"production", "team-" + id}}}}
			p.Rules = []Rule{{Actions: []Action{ActionWrite}, Effect: EffectDeny,
				Conditions: &Conditions{Schedule: &Schedule{Days: []string{"sat", "sun"}, Timezone: "Europe/Berlin"}}}}
		case 3:
			p.Enabled = &off
			p.Enforcement = "audit"
			p.Resources = []ResourceSelector{{Type: "database"}}
			p.Rules = []Rule{{Actions: []Action{ActionDestructive}, Effect: EffectDeny}}
		}
		cfg.Policies = append(cfg.Policies, p)
	}
	return cfg
}

// benchRequest is seed 003's example request on a Saturday: three
// policies apply and the change-freeze schedule is checked (and skipped).
var benchRequest = Request{
	Principal: RequestPrincipal{UserID: "alice@example.com", Roles: []string{"dba"}},
	Resource:  RequestResource{Type: "database", Name: "prod-db", Tags: []string{"production", "critical"}},
	Action:    ActionWrite,
	Context:   RequestContext{RowsAffected: 50, Time: time.Date(2026, 11, 21, 17, 0, 0, 0, time.UTC)},
}

func benchEvaluate(b *testing.B, n int) {
	e := NewEngine(EngineConfig{PolicyConfig: benchConfig(n)})
	if e.Err() != nil {
		b.Fatal(e.Err())
	}
	if d := e.Evaluate(benchRequest); d.Effect != EffectRequireApproval || len(d.eval.trace.PoliciesEvaluated) != n {
		b.Fatalf("unexpected decision %+v", d)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Evaluate(benchRequest)
	}
}

// BenchmarkEvaluate10 and BenchmarkEvaluate1000 evaluate with the trace on
// (no text). Targets (DESIGN §10, issue): ≤ 2 µs/op at 10 policies,
// ≤ 100 µs/op at 1,000.
func BenchmarkEvaluate10(b *testing.B)   { benchEvaluate(b, 10) }
func BenchmarkEvaluate1000(b *testing.B) { benchEvaluate(b, 1000) }

// BenchmarkExplainText is Explain at 10 policies: the trace plus the text.
func BenchmarkExplainText(b *testing.B) {
	e := NewEngine(EngineConfig{PolicyConfig: benchConfig(10)})
	b.ReportAllocs()
	for b.Loop() {
		e.Explain(benchRequest)
	}
}

// BenchmarkLoadSeed loads seed 003's policy file from memory.
func BenchmarkLoadSeed(b *testing.B) {
	data, err := os.ReadFile("testdata/seed003.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadNamed("seed003.yaml", bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
