package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// randomConfig is a parent or a sub-agent, with or without Landlock.
func randomConfig(r *rand.Rand, i int) Config {
	cfg := parentCfg()
	if r.IntN(3) == 0 {
		cfg = subCfg()
	}
	cfg.ID = fmt.Sprintf("c%d", i)
	cfg.LandlockAvailable = r.IntN(4) != 0
	return cfg
}

var toolNames = []string{"bash", "read_file", "search", "patch", "mystery", ToolSpawnAgents, ToolRequestModeUpgrade, ToolSubmitResult}

func randomArgs(r *rand.Rand, name string) string {
	switch name {
	case ToolSpawnAgents:
		return []string{`{"tasks":[{"task":"a"},{"task":"b"}]}`, `{"tasks":[]}`, `nonsense`}[r.IntN(3)]
	case ToolRequestModeUpgrade:
		return []string{`{"reason":"need to write"}`, `{}`}[r.IntN(2)]
	case ToolSubmitResult:
		return []string{`{"result":"done"}`, `{"result":3}`}[r.IntN(2)]
	}
	return `{"command":"ls"}`
}

// randomEvent draws an event that mostly fits the conversation's state, and
// sometimes one that does not (stale ids, wrong states, unknown types).
func randomEvent(r *rand.Rand, c *Conversation) Event {
	req := c.RequestID
	if r.IntN(8) == 0 {
		req = fmt.Sprintf("%s/llm/%d", c.ID, r.IntN(c.Requests+2))
	}
	switch k := r.IntN(20); {
	case k < 3:
		return Event{Type: EvUserMessage, Text: []string{"hi", "", "fix it"}[r.IntN(3)]}
	case k < 7:
		ev := Event{Type: EvLLMResponse, RequestID: req, Text: []string{"", "ok", "thinking"}[r.IntN(3)], EndTurn: r.IntN(2) == 0}
		if r.IntN(4) != 0 {
			ev.Usage = &Usage{TotalTokens: r.IntN(1100)}
		}
		for n := r.IntN(4); n > 0; n-- {
			name := toolNames[r.IntN(len(toolNames))]
			id := fmt.Sprintf("t%d", r.IntN(6)) // duplicates and reuse on purpose
			if r.IntN(5) == 0 {
				id = ""
			}
			ev.ToolCalls = append(ev.ToolCalls, call(id, name, randomArgs(r, name)))
		}
		return ev
	case k < 8 && r.IntN(2) == 0:
		return Event{Type: EvLLMRejected, RequestID: req, Text: "not json", Code: "tool_call_invalid_format", Detail: "prose"}
	case k < 9:
		return Event{Type: EvLLMError, RequestID: req, Status: []int{0, 429, 500, 503, 401, 403, 400}[r.IntN(7)], Retryable: r.IntN(2) == 0}
	case k < 10:
		return Event{Type: EvRetryDue, RequestID: req}
	case k < 14:
		ev := Event{Type: EvToolResult, CallID: fmt.Sprintf("t%d", r.IntN(6)), OK: r.IntN(3) != 0, Output: "out", Error: "err"}
		if c.Running != nil && r.IntN(5) != 0 {
			ev.CallID, ev.Generation = c.Running.Call.ID, c.Running.Generation
		}
		return ev
	case k < 15:
		return Event{Type: EvCancel}
	case k < 16:
		return Event{Type: EvModeDecision, Approved: r.IntN(2) == 0}
	case k < 17:
		return Event{Type: EvModeDowngrade}
	case k < 18:
		return Event{Type: EvContinue}
	case k < 19:
		ev := Event{Type: EvSubagentResult, SubagentID: "nobody", Outcome: []string{SubagentDone, SubagentFailed, SubagentTimeout, "bogus"}[r.IntN(4)], Result: "r"}
		if len(c.Subagents) > 0 {
			ev.SubagentID = c.Subagents[r.IntN(len(c.Subagents))].ID
		}
		return ev
	}
	return Event{Type: "bogus"}
}

func snapshot(t testing.TB, c *Conversation) []byte {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reload is what the executor does at start-up: unmarshal a snapshot.
func reload(t testing.TB, b []byte) *Conversation {
	t.Helper()
	var c Conversation
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, &c); !bytes.Equal(got, b) {
		t.Fatalf("JSON round trip changed the snapshot:\n%s\n%s", b, got)
	}
	return &c
}

// cancelToIdle cancels, then confirms a killed tool as the executor does.
func cancelToIdle(t testing.TB, c *Conversation) {
	t.Helper()
	was := c.State
	Transition(c, Event{Type: EvCancel, At: "2026-05-01T12:00:00Z"})
	if c.State == Cancelling {
		Transition(c, Event{Type: EvToolResult, CallID: c.Running.Call.ID, Generation: c.Running.Generation, At: "2026-05-01T12:00:01Z"})
	}
	want := Idle
	if was == ContextExhausted {
		want = ContextExhausted
	}
	if c.State != want {
		t.Fatalf("cancel from %s reached %s", was, c.State)
	}
	if c.Running != nil || len(c.Queue) > 0 || c.InFlight {
		t.Fatalf("cancel from %s left work: running %v queue %d in flight %v", was, c.Running, len(c.Queue), c.InFlight)
	}
	if err := matched(c); err != nil {
		t.Fatalf("cancel from %s: %v", was, err)
	}
}

// TestProperties runs many random event sequences and checks, after every
// event: no message is lost (seq strictly increasing, persisted messages
// unchanged, persist carries exactly the new ones, B-07a first); a
// sub-agent is never unrestricted where Landlock works (B-18); cancel from
// that state reaches idle (B-05) and Restore of its snapshot is idle
// (B-07b), both with every tool request answered (B-05d); and the whole
// sequence replays to the same effects (B-01b).
func TestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 1))
	sequences, steps := 1000, 60
	if testing.Short() {
		sequences = 200
	}
	states := map[State]int{}
	for i := 0; i < sequences; i++ {
		cfg := randomConfig(r, i)
		c, first := New(cfg)
		if first[0].Type != EfPersist {
			t.Fatalf("New: %v", types(first))
		}
		var log []Event
		var effects [][]Effect
		at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
		for s := 0; s < steps; s++ {
			at = at.Add(time.Duration(r.IntN(5000)) * time.Millisecond)
			ev := randomEvent(r, c)
			ev.At = at.Format(time.RFC3339Nano)
			before := snapshot(t, c)
			old := append([]Message(nil), c.Messages...)
			eff := Transition(c, ev)
			after := snapshot(t, c)
			log, effects = append(log, ev), append(effects, eff)
			states[c.State]++
			where := fmt.Sprintf("sequence %d step %d (%s in %s)", i, s, ev.Type, c.State)

			// persist first, exactly when something changed.
			changed := !bytes.Equal(before, after)
			if changed != (len(eff) > 0 && eff[0].Type == EfPersist) {
				t.Fatalf("%s: changed %v, effects %v", where, changed, types(eff))
			}
			for j, e := range eff {
				if j > 0 && e.Type == EfPersist {
					t.Fatalf("%s: a second persist", where)
				}
			}
			// No message lost or rewritten; seq strictly increasing.
			if len(c.Messages) < len(old) || !reflect.DeepEqual(c.Messages[:len(old)], old) {
				t.Fatalf("%s: history rewritten", where)
			}
			for j := 1; j < len(c.Messages); j++ {
				if c.Messages[j].Seq <= c.Messages[j-1].Seq {
					t.Fatalf("%s: seq %d after %d", where, c.Messages[j].Seq, c.Messages[j-1].Seq)
				}
			}
			if n := len(c.Messages); n > 0 && c.Messages[n-1].Seq != c.LastSeq {
				t.Fatalf("%s: LastSeq %d", where, c.LastSeq)
			}
			if changed && !reflect.DeepEqual(eff[0].Messages, nilIfEmpty(c.Messages[len(old):])) {
				t.Fatalf("%s: persist carries %d messages, %d are new", where, len(eff[0].Messages), len(c.Messages)-len(old))
			}
			// B-18.
			if c.Subagent && c.LandlockAvailable && c.Mode != Restricted {
				t.Fatalf("%s: sub-agent %s", where, c.Mode)
			}
			if !c.LandlockAvailable && c.Mode != Unrestricted {
				t.Fatalf("%s: restricted without Landlock", where)
			}
			// At most one tool runs (B-04a).
			n := 0
			for _, e := range eff {
				if e.Type == EfExecuteTool {
					n++
					if c.Running == nil || c.Running.Call.ID != e.Call.ID || e.Generation != c.Generation {
						t.Fatalf("%s: execute_tool %s is not the admitted running call", where, e.Call.ID)
					}
				}
			}
			if n > 1 {
				t.Fatalf("%s: %d tools started", where, n)
			}
			if err := matched(c); err != nil {
				t.Fatalf("%s: %v", where, err)
			}

			// Cancel from here reaches idle.
			cancelToIdle(t, reload(t, after))
			// Restore from this persisted state is idle.
			back := reload(t, after)
			reff := Restore(back, "2026-05-01T13:00:00Z")
			if len(reff) > 0 && reff[0].Type != EfPersist {
				t.Fatalf("%s: restore effects %v", where, types(reff))
			}
			if want := Idle; back.State != want && !(c.State == ContextExhausted && back.State == ContextExhausted) {
				t.Fatalf("%s: restored to %s", where, back.State)
			}
			if back.Running != nil || len(back.Queue) > 0 || back.InFlight || back.RequestID != "" {
				t.Fatalf("%s: restore left work", where)
			}
			if err := matched(back); err != nil {
				t.Fatalf("%s: after restore: %v", where, err)
			}
			if c.Subagent && !back.Finished {
				t.Fatalf("%s: restored sub-agent not finished", where)
			}
		}
		// Replay determinism (B-01b).
		c2, first2 := New(cfg)
		if !reflect.DeepEqual(first, first2) {
			t.Fatal("New is not deterministic")
		}
		for s, ev := range log {
			if eff := Transition(c2, ev); !reflect.DeepEqual(eff, effects[s]) {
				t.Fatalf("sequence %d step %d: replay differs", i, s)
			}
		}
		if !bytes.Equal(snapshot(t, c), snapshot(t, c2)) {
			t.Fatalf("sequence %d: replay ends elsewhere", i)
		}
	}
	for _, s := range []State{Idle, AwaitingLLM, LLMRequesting, ToolExecuting, AwaitingModeApproval, Cancelling, Error, ContextExhausted} {
		if states[s] == 0 {
			t.Errorf("no random sequence reached %s", s)
		}
	}
	t.Logf("states visited: %v", states)
}

func nilIfEmpty(m []Message) []Message {
	if len(m) == 0 {
		return nil
	}
	return m
}
