package session

import (
	"fmt"
	"strings"
	"testing"
)

// warmSession is a session in READING whose context holds 500 resources
// (seed 000's default maximum), half of them children of ten hosts.
func warmSession(b *testing.B) *State {
	st := New(Options{ReceiptKey: testKey})
	Transition(st, Decode([]byte(line(start))))
	Transition(st, Decode([]byte(callEv("q", "query", `{}`))))
	var res []string
	for i := 0; i < 500; i++ {
		if i%2 == 0 {
			res = append(res, fmt.Sprintf(`{"kind":"lxc","provider_uid":"%d","name":"ct%d","aliases":["a%d"],"host_name":"host%d"}`, i, i, i, i%10))
		} else {
			res = append(res, fmt.Sprintf(`{"kind":"node","provider_uid":"n%d","name":"node%d"}`, i, i))
		}
	}
	_, effs := Transition(st, Decode([]byte(`{"type":"tool_result","call_id":"q","ok":true,"resources":[`+strings.Join(res, ",")+`]}`)))
	for _, e := range effs {
		if e.Type == EfError {
			b.Fatalf("warm-up: %s %s", e.Code, e.Detail)
		}
	}
	if n := st.ctx.Len(); n != 500 {
		b.Fatalf("context holds %d resources", n)
	}
	return st
}

// BenchmarkTransitionToolCall is issue 16's bar: a tool call against a warm
// context of 500 resources, through every guard (Gate 1, strict
// resolution, routing), to its allow effect.
func BenchmarkTransitionToolCall(b *testing.B) {
	st := warmSession(b)
	ev := Decode([]byte(callEv("w", "file_edit", `{"target_host":"node301"}`)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, effs := Transition(st, ev)
		if len(effs) != 1 || effs[0].Type != EfAllow {
			b.Fatalf("effects %+v", effs)
		}
		delete(st.pending, "w")
	}
}

// BenchmarkSnapshot500 and BenchmarkRestore500 are gate hook's per-process
// cost of keeping a session (issue 17: Restore + Snapshot of a session of
// 500 resources ≲ 1 ms together).
func BenchmarkSnapshot500(b *testing.B) {
	st := warm500(b)
	data, _ := st.Snapshot()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := st.Snapshot(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRestore500(b *testing.B) {
	data, err := warm500(b).Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{ReceiptKey: testKey}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Restore(opts, data); err != nil {
			b.Fatal(err)
		}
	}
}
