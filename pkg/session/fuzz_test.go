package session

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// FuzzRestore feeds arbitrary bytes to Restore, seeded with real snapshots
// (testdata/fuzz/FuzzRestore and below): it never panics, and a state it
// accepts snapshots to bytes that restore to the same bytes again, and
// takes further events without panicking.
func FuzzRestore(f *testing.F) {
	for _, log := range [][]string{
		{line(start)},
		{line(start), callEv("q", "query", `{}`), discoverHost, `{"type":"resolve","resource":"delly","pin":true}`},
		{line(fmt.Sprintf(guardedStart, "enforce")), callEv("s", "search", `{"query":"foo"}`),
			`{"type":"tool_result","call_id":"s","ok":true,"data":["a.go","b.go"]}`, callEv("r", "read", `{"path":"a.go"}`)},
	} {
		st := New(Options{ReceiptKey: testKey})
		for _, l := range log {
			Transition(st, Decode([]byte(l)))
		}
		data, err := st.Snapshot()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":2}`))
	opts := Options{ReceiptKey: testKey}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := Restore(opts, data)
		if err != nil {
			if st != nil {
				t.Fatal("a state and an error")
			}
			return
		}
		a, err := st.Snapshot()
		if err != nil {
			t.Fatalf("a restored state does not snapshot: %v", err)
		}
		back, err := Restore(opts, a)
		if err != nil {
			t.Fatalf("a snapshot of a restored state does not restore: %v\n%s", err, a)
		}
		if b, _ := back.Snapshot(); !bytes.Equal(a, b) {
			t.Fatalf("snapshot → restore → snapshot changed the bytes:\n%s\n%s", a, b)
		}
		for _, l := range []string{
			callEv("fz1", "query", `{}`), `{"type":"tool_result","call_id":"fz1","ok":true,"resources":[{"kind":"node","provider_uid":"x","name":"delly"}]}`,
			callEv("fz2", "file_edit", `{"target_host":"delly"}`), callEv("fz3", "read", `{"path":"a.go","candidate_id":"cand_x"}`),
			`{"type":"tool_result","call_id":"fz3","ok":true,"data":"a\nb\n"}`,
			`{"type":"final","text":"done"}`, `{"type":"clear","keep_pinned":true}`, `{"type":"tick","now":"2100-01-01T00:00:00Z"}`,
			`{"type":"resolve","resource":"delly","pin":true}`, `{"type":"clear"}`,
		} {
			Transition(st, Decode([]byte(l)))
		}
	})
}
