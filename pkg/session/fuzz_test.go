package session

import (
	"encoding/json"
	"testing"
)

// FuzzDecode feeds arbitrary lines to a started session: Decode and
// Transition never panic, an undecodable line gives exactly one error
// effect, and every effect encodes as JSON.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		line(start), callEv("q", "query", `{}`), discoverHost, ok("q"),
		`{"type":"final","text":"The CPU usage is 93%"}`,
		`{"type":"llm_text","raw":"{\"tool\":\"query\",\"args\":{},\"nonce\":\"x\"}"}`,
		`{"type":"resolve","resource":"delly"}`,
		`{"type":"resolve","resource":{"kind":"lxc","provider_uid":"1","name":"a","host_name":"h"}}`,
		`{"type":"clear","keep_pinned":true}`, `{"type":"tick","now":"2026-11-25T10:00:00Z"}`,
		`{"type":"tool_call","call_id":"a","name":"query","text":"x"}`, `{"type":"user_message"}`,
		`{"type":"tool_result","call_id":"q","ok":true,"lines":-1,"chars":1e99}`, `{}`, `[]`, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st := New(Options{ReceiptKey: testKey})
		Transition(st, Decode([]byte(line(start))))
		Transition(st, Decode([]byte(callEv("q", "query", `{}`))))
		ev := Decode(data)
		before := st.fsm.State
		_, effs := Transition(st, ev)
		if ev.Err() != nil {
			if len(effs) != 1 || effs[0].Type != EfError || st.fsm.State != before {
				t.Fatalf("an invalid line gave %+v", effs)
			}
		}
		for _, e := range effs {
			if _, err := json.Marshal(e); err != nil {
				t.Fatalf("effect %+v does not encode: %v", e, err)
			}
		}
	})
}
