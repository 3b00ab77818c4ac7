package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/session/readguard"
)

// guardedStart is a session under every guard at once: seed 002's envelope
// protocol, a search tool (seed 004's ref gate, candidates, bundles), a
// small context with a short TTL (eviction and expiry, seed 000 §5) and
// small read budgets.
const guardedStart = `{"type":"session_start","schema_version":1,"session_id":"s2","workspace_root":"/w","seed":"000102030405060708090a0b0c0d0e0f",
 "tools":[
 {"name":"query","kind":"resolve"},
 {"name":"search","kind":"search"},
 {"name":"read","kind":"read"},
 {"name":"file_edit","kind":"write","target_args":["target_resource_id","target_host"],"args":{}},
 {"name":"file_read","kind":"read","target_args":["target_resource_id","target_host"]},
 {"name":"alerts","kind":"read","action_kinds":{"resolve":"write"}}],
 "config":{"protocol":"envelope","context_ttl_seconds":300,"context_max_entries":8,"max_tool_steps":4,
  "read":{"max_reads":6,"max_total_lines":40,"max_range_lines":5,"top_k":3,"mode":"%s"}}}`

// snapshotLog draws an event log over one of the test sessions: every
// event type, tool results with 0..5 resources sharing names, aliases and
// hosts, searches and reads by path, range and ref, pins, explicit
// resolves, clears and ticks that expire resources and recoveries.
func snapshotLog(r *rand.Rand, n int) []string {
	var log []string
	switch r.IntN(3) {
	case 0:
		log = append(log, line(start))
	default:
		log = append(log, line(fmt.Sprintf(guardedStart, []string{"enforce", "warn"}[r.IntN(2)])))
	}
	names := []string{"query", "search", "read", "run_read", "file_edit", "file_read", "alerts", "mystery"}
	targets := []string{"", "delly", "pve2", "lxc:delly:141", "c1", "a2", "n3"}
	paths := []string{"a.go", "b/c.go", "vendor/x.go", "d.md"}
	queries := []string{"foo", "bar"}
	hosts := []string{"", "delly", "pve2"}
	reg := func() string {
		b := fmt.Sprintf(`{"kind":%q,"provider_uid":"%d","name":"c%d"`, []string{"lxc", "node", "vm"}[r.IntN(3)], r.IntN(6), r.IntN(4))
		if r.IntN(2) == 0 {
			b += fmt.Sprintf(`,"aliases":["a%d","a%d"]`, r.IntN(3), r.IntN(3))
		}
		if h := hosts[r.IntN(len(hosts))]; h != "" {
			b += fmt.Sprintf(`,"host_name":%q`, h)
		}
		return b + "}"
	}
	var open []string
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		at = at.Add(time.Duration(r.IntN(90)) * time.Second)
		var ev string
		switch k := r.IntN(20); {
		case k < 7:
			id := fmt.Sprintf("c%d", i)
			args := map[string]any{}
			if t := targets[r.IntN(len(targets))]; t != "" {
				args["target_host"] = t
			}
			switch r.IntN(5) {
			case 0:
				args["path"] = paths[r.IntN(len(paths))]
			case 1:
				args["path"] = paths[r.IntN(len(paths))]
				s := 1 + r.IntN(8)
				args["start_line"], args["end_line"] = s, s+r.IntN(8)
			case 2:
				args["candidate_id"] = readguard.CandidateID(queries[r.IntN(2)], paths[r.IntN(len(paths))])
			}
			if r.IntN(3) == 0 {
				args["query"] = queries[r.IntN(2)]
			}
			if r.IntN(4) == 0 {
				args["command"] = []string{"ls /", "rm -rf /tmp/x"}[r.IntN(2)]
			}
			if r.IntN(5) == 0 {
				args["action"] = []string{"get", "resolve"}[r.IntN(2)]
			}
			b, _ := json.Marshal(args)
			ev = callEv(id, names[r.IntN(len(names))], string(b))
			open = append(open, id)
		case k < 12 && len(open) > 0:
			j := r.IntN(len(open))
			id := open[j]
			open = append(open[:j], open[j+1:]...)
			switch r.IntN(5) {
			case 0:
				ev = fmt.Sprintf(`{"type":"tool_result","call_id":%q,"ok":false,"error":"boom"}`, id)
			case 1:
				ev = fmt.Sprintf(`{"type":"tool_result","call_id":%q,"ok":true,"data":["%s","%s","%s"]}`, id,
					paths[r.IntN(len(paths))], paths[r.IntN(len(paths))], paths[r.IntN(len(paths))])
			default:
				regs := make([]string, r.IntN(6))
				for j := range regs {
					regs[j] = reg()
				}
				text := strings.Repeat(fmt.Sprintf("line %d\n", r.IntN(3)), r.IntN(8))
				ev = fmt.Sprintf(`{"type":"tool_result","call_id":%q,"ok":true,"data":%q,"resources":[%s]}`, id, text, strings.Join(regs, ","))
			}
		case k < 13:
			ev = `{"type":"final","text":"` + []string{"done", "I restarted the service", "CPU usage is 5%"}[r.IntN(3)] + `"}`
		case k < 14:
			ev = `{"type":"llm_text","raw":` + []string{`"{\"tool\":\"query\",\"args\":{},\"nonce\":\"bad\"}"`, `"just prose"`, `"{\"decision\":\"final\"}"`}[r.IntN(3)] + `}`
		case k < 16:
			pin := []string{"", `,"pin":true`}[r.IntN(2)]
			explicit := []string{"", `,"explicit":false`}[r.IntN(2)]
			if r.IntN(2) == 0 {
				ev = `{"type":"resolve","resource":` + reg() + explicit + pin + `}`
			} else {
				ev = fmt.Sprintf(`{"type":"resolve","resource":"%s"%s%s}`, []string{"c0", "c1", "a1", "node:3"}[r.IntN(4)], explicit, pin)
			}
		case k < 17:
			ev = []string{`{"type":"clear","keep_pinned":false}`, `{"type":"clear","keep_pinned":true}`}[r.IntN(2)]
		case k < 19:
			at = at.Add(time.Duration(r.IntN(700)) * time.Second)
			ev = fmt.Sprintf(`{"type":"tick","now":%q}`, at.Format(time.RFC3339Nano))
		default:
			ev = `{"type":"tool_call","call_id":""}`
		}
		stamp := fmt.Sprintf(`,"at":%q}`, at.Format(time.RFC3339Nano))
		log = append(log, ev[:len(ev)-1]+stamp)
	}
	return log
}

// effectsOf runs log and returns every effect as JSON. With snap, the
// state goes through Snapshot → Restore after every event, as gate hook's
// one process per event does; and the restored state must snapshot to the
// same bytes.
func effectsOf(t testing.TB, st *State, log []string, snap bool) []byte {
	t.Helper()
	var out bytes.Buffer
	for i, l := range log {
		_, effs := Transition(st, Decode([]byte(l)))
		for _, e := range effs {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(b)
			out.WriteByte('\n')
		}
		if !snap || !st.Started() {
			continue
		}
		data, err := st.Snapshot()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		st, err = Restore(Options{ReceiptKey: testKey}, data)
		if err != nil {
			t.Fatalf("event %d: %s: %v\n%s", i, l, err, data)
		}
		again, err := st.Snapshot()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("event %d: the restored state snapshots differently (%v)\n%s\n%s", i, err, data, again)
		}
	}
	return out.Bytes()
}

// The key property (issue 17): for random event logs, Snapshot → Restore
// after every event gives effects byte-identical to the uninterrupted run.
func TestSnapshotProperty(t *testing.T) {
	for seed := uint64(1); seed <= 150; seed++ {
		r := rand.New(rand.NewPCG(seed, 17))
		log := snapshotLog(r, 150)
		if seed%3 == 0 {
			log = randomLog(r, 150) // property_test.go's logs too
		}
		want := effectsOf(t, New(Options{ReceiptKey: testKey}), log, false)
		got := effectsOf(t, New(Options{ReceiptKey: testKey}), log, true)
		if !bytes.Equal(got, want) {
			wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
			for i := range min(len(wl), len(gl)) {
				if wl[i] != gl[i] {
					t.Fatalf("seed %d: effect %d differs after restores:\n got: %s\nwant: %s", seed, i, gl[i], wl[i])
				}
			}
			t.Fatalf("seed %d: %d effects after restores, %d without", seed, len(gl), len(wl))
		}
	}
}

// warm500 is bench_test.go's warm session for tests: 500 resources, ten
// hosts with children, then a few reads and an explicit mention.
func warm500(t testing.TB) *State {
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
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	for _, l := range []string{
		`{"type":"tool_result","call_id":"q","ok":true,"resources":[` + strings.Join(res, ",") + `]}`,
		callEv("r1", "file_read", `{"target_host":"node1"}`), ok("r1"),
		callEv("r2", "run_read", `{"command":"ls /"}`), ok("r2"),
		`{"type":"resolve","resource":"ct4","pin":true}`,
		`{"type":"resolve","resource":"ct8"}`,
	} {
		// Realistic clocks: every event a little later, to the nanosecond.
		at = at.Add(1234567891 * time.Nanosecond)
		l = l[:len(l)-1] + `,"at":"` + at.Format(time.RFC3339Nano) + `"}`
		_, effs := Transition(st, Decode([]byte(l)))
		for _, e := range effs {
			if e.Type == EfError {
				t.Fatalf("warm-up: %s %s", e.Code, e.Detail)
			}
		}
	}
	if n := st.ctx.Len(); n != 500 {
		t.Fatalf("context holds %d resources", n)
	}
	return st
}

// A session of 500 resources (the context's default maximum) survives
// restores after every event of a random continuation: eviction order,
// routing to the explicitly mentioned children and pins included.
func TestSnapshot500(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		r := rand.New(rand.NewPCG(seed, 500))
		log := snapshotLog(r, 60)[1:] // the warm session has started
		for i := range log {
			// targets on the warm session's hosts and children
			log[i] = strings.NewReplacer(`"delly"`, `"host4"`, `"c1"`, `"ct8"`, `"pve2"`, `"node3"`).Replace(log[i])
		}
		want := effectsOf(t, warm500(t), log, false)
		got := effectsOf(t, warm500(t), log, true)
		if !bytes.Equal(got, want) {
			t.Fatalf("seed %d: effects differ after restores", seed)
		}
	}
}

func TestSnapshotNotStarted(t *testing.T) {
	st := New(Options{})
	if _, err := st.Snapshot(); err == nil {
		t.Fatal("a session that has not started gave a snapshot")
	}
	if st.Started() || st.ID() != "" || st.View().Resources != 0 {
		t.Fatalf("view of a fresh state: %+v", st.View())
	}
}

// Same state, same bytes; a restored state answers Started, ID and View as
// the original.
func TestSnapshotDeterministic(t *testing.T) {
	st := warm500(t)
	a, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := warm500(t).Snapshot()
	if !bytes.Equal(a, b) {
		t.Fatal("two equal sessions snapshot differently")
	}
	back, err := Restore(Options{ReceiptKey: testKey}, a)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Started() || back.ID() != "s1" || back.View() != st.View() {
		t.Fatalf("restored view %+v, want %+v", back.View(), st.View())
	}
}

// Restore refuses damage, naming it.
func TestRestoreRefuses(t *testing.T) {
	st := run(t, []step{{in: line(start)}, {in: callEv("q", "query", `{}`), want: "allow q"}, {in: discoverHost}})
	good, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(from, to string) []byte {
		if !bytes.Contains(good, []byte(from)) {
			t.Fatalf("snapshot has no %s:\n%s", from, good)
		}
		return bytes.Replace(good, []byte(from), []byte(to), 1)
	}
	mutate := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	tooMany := mutate(func(m map[string]any) {
		var res []any
		for i := 0; i < 501; i++ {
			res = append(res, map[string]any{"kind": "node", "provider_uid": fmt.Sprint(i), "at": 0})
		}
		m["context"].(map[string]any)["resources"] = res
	})
	future := mutate(func(m map[string]any) {
		m["context"].(map[string]any)["times"] = []string{"2999-01-01T00:00:00Z"}
	})
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "EOF"},
		{"truncated", good[:len(good)/2], "unexpected EOF"},
		{"trailing", append(append([]byte{}, good...), "{}"...), "data after"},
		{"version", edit(`{"v":1,`, `{"v":2,`), "version 2"},
		{"other version shape", []byte(`{"v":9,"whatever":true}`), "version 9"},
		{"unknown field", edit(`"seq":`, `"sek":1,"seq":`), "unknown field"},
		{"too large", make([]byte, MaxSnapshot+1), "limit"},
		{"start type", edit(`"type":"session_start"`, `"type":"tool_call"`), "start.type"},
		{"start field", edit(`"type":"session_start"`, `"type":"session_start","call_id":"x"`), "start: field"},
		{"start fails", edit(`"schema_version":1`, `"schema_version":7`), "does not start"},
		{"fsm state", edit(`"state":"READING"`, `"state":"DONE"`), "state"},
		{"turn", edit(`"turn":{"n":1`, `"turn":{"n":0`), "turn.n"},
		{"context count", tooMany, "context: resolved: snapshot field resources: 501 entries"},
		{"context registration", edit(`"provider_uid":"delly"`, `"provider_uid":""`), "resources[0].provider_uid"},
		{"context clock", future, "resources[0].at: after the context's clock"},
		{"receipts", edit(`"receipts":["rcpt_`, `"receipts":["x`), "receipts[0]"},
		{"receipt count", edit(`"receipt_count":1`, `"receipt_count":0`), "receipt_count"},
		{"negative seq", edit(`"seq":`, `"seq":-`), "seq"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Restore(Options{ReceiptKey: testKey}, c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Restore: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// Every field session_start may carry survives in the snapshot: Restore
// replays the start exactly as it came (a new start field must be kept
// by start() too).
func TestSnapshotKeepsStartFields(t *testing.T) {
	full := `{"type":"session_start","schema_version":1,"session_id":"s","workspace_root":"/w","connection_id":"c",
	 "mode":"m","model":"gpt","context_window":1000,"tools":[{"name":"q","kind":"resolve","args":{}}],
	 "config":{"agent_id":"a"},"seed":"000102030405060708090a0b0c0d0e0f","server_connection_id":"sc","workspace_realpath":"/real/w"}`
	st := New(Options{})
	ev := Decode([]byte(line(full)))
	if ev.Err() != nil {
		t.Fatal(ev.Err())
	}
	Transition(st, ev)
	data, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Restore(Options{}, data)
	if err != nil {
		t.Fatal(err)
	}
	got := presentFields(&back.begin)
	if want := fields[EvSessionStart]; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("restored start carries %v, want %v", got, want)
	}
	if back.begin.Tools[0].Args == nil {
		t.Fatal(`"args": {} (no args allowed) came back as absent (unchecked)`)
	}
}
