package hook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/intent"
)

// FuzzRespond: for every dialect, no input panics, and an allow comes only
// from an event that decodes and is judged allowed (a malformed event never
// allows).
func FuzzRespond(f *testing.F) {
	events, _ := filepath.Glob("testdata/events/*.json")
	gate, _ := filepath.Glob("testdata/gate/events/*.json")
	for _, p := range append(events, gate...) {
		if raw, err := os.ReadFile(p); err == nil {
			f.Add(string(raw))
		}
	}
	judge := NewJudge(DefaultPolicy, func(cmd, cwd string) intent.Result { return intent.Classify(cmd) })
	f.Fuzz(func(t *testing.T, raw string) {
		for _, agent := range Agents() {
			d, s := Dialects[agent], Setups[agent]
			ans := Respond(d, []byte(raw), judge, 5*time.Second)
			if s.Outcome(ans.Stdout, ans.Exit) != Allow {
				continue
			}
			ev, err := d.Decode([]byte(raw))
			if err != nil {
				t.Fatalf("%s allowed a malformed event (%v)", agent, err)
			}
			if !judge(ev).Allowed() {
				t.Fatalf("%s allowed an event judged %s: %+v", agent, judge(ev).Permission, ev)
			}
			if ev.Shell && intent.Classify(ev.Command).Verdict() != intent.VerdictReadOnly {
				t.Fatalf("%s allowed %q", agent, ev.Command)
			}
			if !ev.Shell && KindOf(ev.Tool) != ToolRead {
				t.Fatalf("%s allowed tool %q", agent, ev.Tool)
			}
		}
	})
}

// FuzzDecode: for every dialect, no input panics Decode or any answer; an
// event that decodes is well formed (a known kind, a tool for tool events,
// input a JSON object, output JSON), decodes the same twice, and fails
// closed: a Failure answered to it refuses a stop wherever the agent can
// refuse one, and is the deny form after a tool. Every answer is empty or
// JSON.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"testdata/events", "testdata/gate/events"} {
		events, _ := filepath.Glob(dir + "/*.json")
		for _, p := range events {
			if raw, err := os.ReadFile(p); err == nil {
				f.Add(string(raw))
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, agent := range Agents() {
			d, s := Dialects[agent], Setups[agent]
			ev, err := d.Decode([]byte(raw))
			if err != nil {
				continue
			}
			if ev.Kind < PreTool || ev.Kind > Prompt {
				t.Fatalf("%s: kind %d", agent, ev.Kind)
			}
			if (ev.Kind == PreTool || ev.Kind == PostTool) && ev.Tool == "" {
				t.Fatalf("%s: a %s event without a tool", agent, ev.Kind)
			}
			if ev.Input != nil && (!json.Valid(ev.Input) || bytes.TrimSpace(ev.Input)[0] != '{') {
				t.Fatalf("%s: input %q is not a JSON object", agent, ev.Input)
			}
			if ev.Output != nil && !json.Valid(ev.Output) {
				t.Fatalf("%s: output %q is not JSON", agent, ev.Output)
			}
			again, _ := d.Decode([]byte(raw))
			if !bytes.Equal(renderEvent(ev), renderEvent(again)) {
				t.Fatalf("%s: decoding twice differs", agent)
			}
			fail := Reply(d, ev, Failure("fuzz"))
			for _, ans := range []Answer{fail, Reply(d, ev, Decision{Permission: Allow, Context: raw})} {
				if out := bytes.TrimSpace(ans.Stdout); len(out) > 0 && !json.Valid(out) {
					t.Fatalf("%s %s: stdout is not JSON: %q", agent, ev.Kind, ans.Stdout)
				}
			}
			switch ev.Kind {
			case PreTool:
				if s.Outcome(fail.Stdout, fail.Exit) != Deny {
					t.Fatalf("%s: a Failure lets the call run", agent)
				}
			case Stop:
				if blocks, _ := StopBlocks(agent); blocks && s.StopOutcome(fail.Stdout, fail.Exit) != Deny {
					t.Fatalf("%s: a Failure lets the agent stop: %s", agent, render(fail))
				}
			case PostTool:
				if (agent == "claude" || agent == "codex" || agent == "gemini") && fail.Exit != 2 {
					t.Fatalf("%s: a post-tool Failure is not the deny form: %s", agent, render(fail))
				}
			}
		}
	})
}
