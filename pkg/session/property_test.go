package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/session/readguard"
	"github.com/govkit/govkit/pkg/session/workflow"
)

// randomLog draws an event log over the test session's tools: calls of
// every kind (known and unknown tools, with and without targets, envelope
// texts valid and not), results good and bad, finals, clears and ticks.
func randomLog(r *rand.Rand, n int) []string {
	log := []string{line(start)}
	names := []string{"query", "run_read", "run_command", "file_edit", "file_read", "alerts", "mystery"}
	targets := []string{"", "delly", "pve2", "lxc:delly:141", "homepage-docker"}
	var open []string
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		at = at.Add(time.Duration(r.IntN(120)) * time.Second)
		stamp := fmt.Sprintf(`,"at":%q}`, at.Format(time.RFC3339Nano))
		var ev string
		switch k := r.IntN(10); {
		case k < 4:
			id := fmt.Sprintf("c%d", i)
			args := map[string]any{}
			if t := targets[r.IntN(len(targets))]; t != "" {
				args["target_host"] = t
			}
			if r.IntN(3) == 0 {
				args["command"] = []string{"ls /", "rm -rf /tmp/x", "tail -f /var/log/syslog"}[r.IntN(3)]
			}
			if r.IntN(4) == 0 {
				args["action"] = []string{"get", "resolve", "list"}[r.IntN(3)]
			}
			b, _ := json.Marshal(args)
			ev = callEv(id, names[r.IntN(len(names))], string(b))
			open = append(open, id)
		case k < 7 && len(open) > 0:
			j := r.IntN(len(open))
			id := open[j]
			open = append(open[:j], open[j+1:]...)
			if r.IntN(4) == 0 {
				ev = fmt.Sprintf(`{"type":"tool_result","call_id":%q,"ok":false,"error":"boom"}`, id)
			} else {
				ev = fmt.Sprintf(`{"type":"tool_result","call_id":%q,"ok":true,"data":"line one\nline two\n","resources":[{"kind":"lxc","provider_uid":"%d","name":"c%d","host_name":"delly"}]}`, id, r.IntN(3), r.IntN(3))
			}
		case k < 8:
			ev = `{"type":"final","text":"` + []string{"done", "the logs show nothing", "CPU usage is 5%"}[r.IntN(3)] + `"}`
		case k < 9:
			ev = `{"type":"llm_text","raw":` + []string{`"{\"tool\":\"query\",\"args\":{},\"nonce\":\"bad\"}"`, `"just prose"`, `"query({})"`}[r.IntN(3)] + `}`
		default:
			ev = []string{`{"type":"clear","keep_pinned":false}`, `{"type":"clear","keep_pinned":true}`,
				`{"type":"resolve","resource":{"kind":"lxc","provider_uid":"141","name":"homepage-docker","host_name":"delly"}}`}[r.IntN(3)]
		}
		log = append(log, ev[:len(ev)-1]+stamp)
	}
	return log
}

// replay runs a log and returns every effect as JSON, checking the
// invariants of issue 16 at every step.
func replay(t *testing.T, log []string) []byte {
	t.Helper()
	st := New(Options{ReceiptKey: testKey})
	var out bytes.Buffer
	for i, l := range log {
		before := st.fsm.State
		hardBefore := st.guard != nil && st.guard.BudgetState() == readguard.BudgetHard
		_, effs := Transition(st, Decode([]byte(l)))
		rejected := false
		for _, e := range effs {
			switch e.Type {
			case EfAllow:
				if rejected {
					t.Fatalf("event %d: a tool was allowed after a rejected envelope: %s", i, l)
				}
				if before == workflow.Verifying && e.Kind == "write" {
					t.Fatalf("event %d: a write was allowed in VERIFYING: %s", i, l)
				}
				if e.Kind == "read" && hardBefore {
					t.Fatalf("event %d: a read was allowed past the hard budget", i)
				}
			case EfAllowFinal:
				if before == workflow.Verifying {
					t.Fatalf("event %d: a final answer was allowed in VERIFYING: %s", i, l)
				}
			case EfReject:
				rejected = true
			}
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(b)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// Properties over random event logs: replaying a log twice gives identical
// effects; no write and no final answer is allowed in VERIFYING; no read
// past the hard budget; nothing runs after a rejected envelope.
func TestProperties(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 16))
		log := randomLog(r, 200)
		a, b := replay(t, log), replay(t, log)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two replays of one log differ", seed)
		}
	}
}
