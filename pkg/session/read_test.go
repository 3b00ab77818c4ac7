package session

import (
	"fmt"
	"strings"
	"testing"
)

const searchStart = `{"type":"session_start","schema_version":1,"session_id":"s4","tools":[
 {"name":"search","kind":"search"},{"name":"read_file","kind":"read"}],
 "config":{"read":{"max_reads":4}}}`

// Seed 004's pipeline through the reducer: search first, then a ref or a
// short precision range; refs come back in the search's stabilization
// effect with ready-to-run next_calls; the hard budget ends reading.
func TestSearchRefRead(t *testing.T) {
	st := New(Options{ReceiptKey: testKey})
	send := func(ev, want string) []Effect {
		t.Helper()
		_, effs := Transition(st, Decode([]byte(ev)))
		if got := summary(effs); got != want {
			t.Fatalf("%s\n got: %s\nwant: %s", ev, got, want)
		}
		return effs
	}
	stabilization := func(effs []Effect) *StabilizationMeta {
		t.Helper()
		for _, e := range effs {
			if e.Type == EfStabilization {
				return e.Meta
			}
		}
		t.Fatalf("no stabilization effect in %+v", effs)
		return nil
	}
	send(line(searchStart), "")
	send(callEv("r0", "read_file", `{"candidate_id":"cand_000000000000"}`), "block r0 SEARCH_FIRST_REQUIRED")
	send(callEv("r1", "read_file", `{"path":"pkg/a.go","start_line":1,"end_line":50}`), "allow r1")
	send(`{"type":"tool_result","call_id":"r1","ok":true,"data":"package a\n"}`, "")
	send(callEv("s1", "search", `{"query":"parser"}`), "allow s1")
	meta := stabilization(send(`{"type":"tool_result","call_id":"s1","ok":true,"data":{"paths":["pkg/a.go","vendor/x/y.go","pkg/b.go"]}}`, ""))
	if meta.CandidateID == "" && len(meta.NextCalls) == 0 {
		t.Fatalf("search issued no refs: %+v", meta)
	}
	for _, nc := range meta.NextCalls {
		if nc.Tool != "read_file" || strings.Contains(fmt.Sprint(nc.Args), "vendor/") {
			t.Errorf("next call %+v", nc)
		}
	}
	ref := meta.NextCalls[0].Args["candidate_id"].(string)
	send(callEv("r2", "read_file", `{"path":"pkg/b.go"}`), "block r2 SEARCH_REF_REQUIRED")
	send(callEv("r3", "read_file", `{"candidate_id":"cand_ffffffffffff"}`), "block r3 CANDIDATE_REF_REQUIRED")
	send(callEv("r4", "read_file", `{"path":"pkg/a.go","start_line":300,"end_line":500}`), "block r4 SEARCH_REF_REQUIRED")
	send(callEv("r5", "read_file", fmt.Sprintf(`{"candidate_id":%q}`, ref)), "allow r5")
	m := stabilization(send(`{"type":"tool_result","call_id":"r5","ok":true,"data":"package a\n\nfunc A() {}\n"}`, ""))
	if m.Aggregated == nil || !strings.Contains(m.Aggregated.Text, "func A") {
		t.Errorf("aggregated output %+v", m.Aggregated)
	}
	for i := 6; i <= 7; i++ {
		id := fmt.Sprintf("r%d", i)
		send(callEv(id, "read_file", fmt.Sprintf(`{"candidate_id":%q}`, ref)), "allow "+id)
		send(fmt.Sprintf(`{"type":"tool_result","call_id":%q,"ok":true,"data":"x\n"}`, id), "")
	}
	effs := send(callEv("r8", "read_file", fmt.Sprintf(`{"candidate_id":%q}`, ref)), "block r8 BUDGET_EXCEEDED")
	codes := effs[len(effs)-1].Response.Error.Details["reason_codes"]
	if !strings.Contains(fmt.Sprint(codes), "BUDGET_HARD_LIMIT") {
		t.Errorf("reason codes %v", codes)
	}
}
