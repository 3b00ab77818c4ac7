package hook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The decisions every golden gate event is answered with.
var goldenDecisions = []struct {
	name string
	d    Decision
}{
	{"allow", Decision{Permission: Allow, Reason: "fine"}},
	{"allow+context", Decision{Permission: Allow, Context: "govkit: 1 file written, not yet verified."}},
	{"deny", Decision{Permission: Deny, Reason: "FSM_BLOCKED: read back a.go before you claim it is fixed."}},
	{"failure", Failure("the state file is locked")},
}

// TestGateGolden decodes every event in testdata/gate/events with its
// agent's dialect, and answers it with each of goldenDecisions through
// Reply; the decoded event (or the error) and every answer are compared
// with testdata/gate/golden (refresh with -run TestGateGolden -update).
func TestGateGolden(t *testing.T) {
	events, err := filepath.Glob("testdata/gate/events/*.json")
	if err != nil || len(events) == 0 {
		t.Fatalf("no events: %v", err)
	}
	for _, path := range events {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		agent, _, _ := strings.Cut(name, "-")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d := Dialects[agent]
			var b bytes.Buffer
			ev, err := d.Decode(raw)
			if err != nil {
				b.WriteString("error: " + err.Error() + "\n")
			} else {
				b.WriteString("event: ")
				b.Write(renderEvent(ev))
				for _, dec := range goldenDecisions {
					b.WriteString("--- " + dec.name + "\n")
					b.Write(render(Reply(d, ev, dec.d)))
				}
			}
			compareGolden(t, filepath.Join("testdata/gate/golden", name+".golden"), b.Bytes())
		})
	}
}

func renderEvent(ev Event) []byte {
	b, err := json.Marshal(struct {
		Kind string
		Event
	}{ev.Kind.String(), ev})
	if err != nil {
		return []byte(err.Error() + "\n")
	}
	return append(b, '\n')
}

func compareGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("differs from %s\n--- got\n%s--- want\n%s", golden, got, want)
	}
}

// The kind each golden gate event decodes to; "" is an event gate hook
// does not govern, which must not decode.
var gateKinds = map[string]string{
	"claude-post-edit": "post_tool", "claude-post-bash": "post_tool", "claude-post-failure": "post_tool",
	"claude-stop": "stop", "claude-stop-active": "stop", "claude-subagent-stop": "stop",
	"claude-session-start": "session_start", "claude-session-end": "session_end", "claude-prompt": "prompt",
	"claude-notification": "", "claude-precompact": "", "claude-post-no-tool": "", "claude-post-bad-input": "",
	"codex-post-bash": "post_tool", "codex-post-apply-patch": "post_tool", "codex-stop": "stop",
	"codex-stop-no-message": "stop", "codex-session-start": "session_start", "codex-prompt": "prompt",
	"codex-session-end": "",
	"gemini-after-tool": "post_tool", "gemini-after-tool-error": "post_tool", "gemini-after-tool-mcp": "post_tool",
	"gemini-after-agent": "stop", "gemini-before-agent": "prompt", "gemini-session-start": "session_start",
	"gemini-session-end": "session_end", "gemini-before-model": "",
	"cursor-post-tool-use": "post_tool", "cursor-post-tool-use-shell": "post_tool",
	"cursor-post-tool-use-failure": "post_tool", "cursor-after-shell": "post_tool", "cursor-after-mcp": "post_tool",
	"cursor-after-file-edit": "post_tool", "cursor-stop": "stop", "cursor-stop-loop": "stop",
	"cursor-session-start": "session_start", "cursor-session-end": "session_end", "cursor-prompt": "prompt",
	"cursor-after-agent-response": "",
	"cline-post-tool-use":         "post_tool", "cline-post-tool-use-failed": "post_tool", "cline-task-start": "session_start",
	"cline-task-resume": "session_start", "cline-task-cancel": "session_end", "cline-task-complete": "stop",
	"cline-prompt": "prompt", "cline-precompact": "",
	"copilot-post-tool-use": "post_tool", "copilot-post-tool-use-failure": "post_tool",
	"copilot-pascal-post-tool-use": "post_tool", "copilot-agent-stop": "stop", "copilot-pascal-stop": "stop",
	"copilot-subagent-stop": "stop", "copilot-session-start": "session_start", "copilot-session-end": "session_end",
	"copilot-prompt": "prompt", "copilot-error-occurred": "",
}

// Every gate event decodes to its kind, and classify hook (Respond) answers
// every one of them with its blocking form, as it did before gate hook.
func TestGateKinds(t *testing.T) {
	events, _ := filepath.Glob("testdata/gate/events/*.json")
	if len(events) != len(gateKinds) {
		t.Errorf("%d events, %d expected kinds", len(events), len(gateKinds))
	}
	for name, want := range gateKinds {
		agent, _, _ := strings.Cut(name, "-")
		raw, err := os.ReadFile(filepath.Join("testdata/gate/events", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Dialects[agent].Decode(raw)
		switch {
		case want == "" && err == nil:
			t.Errorf("%s: decoded as %s, want an error", name, ev.Kind)
		case want != "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want != "" && ev.Kind.String() != want:
			t.Errorf("%s: kind %s, want %s", name, ev.Kind, want)
		}
		ans := Respond(Dialects[agent], raw, realJudge(), time.Second)
		if got := Setups[agent].Outcome(ans.Stdout, ans.Exit); got != Deny {
			t.Errorf("%s: classify hook answers %s, want deny:\n%s", name, got, render(ans))
		}
	}
}

// A refused stop is read by the agent as refused, wherever the agent can
// refuse one (StopBlocks), and an allowed one lets the turn end.
func TestStopOutcomes(t *testing.T) {
	for _, agent := range Agents() {
		d, s := Dialects[agent], Setups[agent]
		blocks, note := StopBlocks(agent)
		if note == "" {
			t.Errorf("%s: no stop note", agent)
		}
		for _, dec := range []Decision{{Permission: Deny, Reason: "verify first"}, Failure("locked"), {}, {Permission: Ask}, {Permission: "odd"}} {
			ans := d.Answer(Stop, dec)
			want := Deny
			if !blocks {
				want = Allow // the agent cannot be stopped from stopping
			}
			if got := s.StopOutcome(ans.Stdout, ans.Exit); got != want {
				t.Errorf("%s %+v: the agent reads %s, want %s\n%s", agent, dec, got, want, render(ans))
			}
		}
		ans := d.Answer(Stop, Decision{Permission: Allow, Context: "note"})
		if got := s.StopOutcome(ans.Stdout, ans.Exit); got != Allow {
			t.Errorf("%s: an allowed stop reads %s\n%s", agent, got, render(ans))
		}
	}
	if b, _ := StopBlocks("nobody"); b {
		t.Error("an unknown agent blocks")
	}
}

// The doctor's samples decode back to what they were made from.
func TestSampleEvents(t *testing.T) {
	for _, agent := range Agents() {
		d, s := Dialects[agent], Setups[agent]
		for _, k := range []EventKind{PreTool, PostTool, Stop, SessionStart, SessionEnd, Prompt} {
			for _, tool := range []string{s.ReadTool, s.WriteTool} {
				input := s.FileInput(tool, "/tmp/govkit doctor/a.txt")
				raw := s.SampleEvent(k, "doctor-1", "/tmp", tool, input, json.RawMessage(`"ok"`), "Done.")
				if raw == nil {
					if agent == "codex" && k == SessionEnd {
						continue
					}
					t.Fatalf("%s %s: no sample", agent, k)
				}
				ev, err := d.Decode(raw)
				if err != nil {
					t.Fatalf("%s %s: %v\n%s", agent, k, err, raw)
				}
				if ev.Kind != k || ev.SessionID != "doctor-1" {
					t.Errorf("%s %s: decoded %s session %q\n%s", agent, k, ev.Kind, ev.SessionID, raw)
				}
				if k == PreTool || k == PostTool {
					if ev.Tool != tool || !jsonEqual(ev.Input, input) {
						t.Errorf("%s %s: tool %q input %s, want %q %s", agent, k, ev.Tool, ev.Input, tool, input)
					}
					if k == PreTool && Respond(d, raw, realJudge(), time.Second).Exit < 0 {
						t.Errorf("%s: bad answer", agent)
					}
				}
				if k == Stop && (agent == "claude" || agent == "codex" || agent == "gemini") && ev.LastMessage != "Done." {
					t.Errorf("%s: last message %q", agent, ev.LastMessage)
				}
			}
		}
		if s.ReadTool == "" || s.WriteTool == "" || KindOf(s.WriteTool) == ToolRead {
			t.Errorf("%s: file tools %q %q", agent, s.ReadTool, s.WriteTool)
		}
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && bytes.Equal(jsonRaw(x), jsonRaw(y))
}

// GateSnippet is JSON only, registers the command for every GateEvent, and
// RegisteredCommands finds it.
func TestGateSnippets(t *testing.T) {
	for _, agent := range Agents() {
		s := Setups[agent]
		cmd := "/opt/bin/gate hook --agent " + agent
		snippet := s.GateSnippet(cmd)
		var v map[string]any
		if err := json.Unmarshal([]byte(snippet), &v); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", agent, err, snippet)
		}
		if len(s.GateEvents) == 0 {
			t.Errorf("%s: no gate events", agent)
		}
		if s.Script {
			for _, ev := range s.GateEvents {
				script, _ := v[".clinerules/hooks/"+ev].(string)
				if got, _ := s.RegisteredCommands(ev, []byte(script)); len(got) != 1 {
					t.Errorf("%s: %s script not recognised: %q", agent, ev, script)
				}
			}
			continue
		}
		hooks, _ := v["hooks"].(map[string]any)
		var names []string
		for n := range hooks {
			names = append(names, n)
		}
		if !sameSet(names, s.GateEvents) {
			t.Errorf("%s: snippet registers %v, GateEvents %v", agent, names, s.GateEvents)
		}
		got, err := s.RegisteredCommands("settings.json", []byte(snippet))
		if err != nil || !slices.Equal(got, []string{cmd}) {
			t.Errorf("%s: registered %v %v", agent, got, err)
		}
	}
	if got, _ := Setups["claude"].RegisteredCommands("s.json", []byte(`{"hooks":{"Stop":[{"hooks":[{"command":"aggregate hook"}]}]}}`)); len(got) != 0 {
		t.Errorf("aggregate hook counted as gate hook: %v", got)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Every answer to every kind is empty or one JSON value (stdout is parsed
// by the agent, and for Claude's SessionStart plain text would become
// context), and an answer that is not an allow is never silent where the
// agent can hear it.
func TestAnswersAreJSON(t *testing.T) {
	for _, agent := range Agents() {
		d := Dialects[agent]
		for k := PreTool; k <= Prompt+1; k++ {
			for _, dec := range goldenDecisions {
				ans := d.Answer(k, dec.d)
				if out := bytes.TrimSpace(ans.Stdout); len(out) > 0 && !json.Valid(out) {
					t.Errorf("%s %s %s: stdout is not JSON: %q", agent, k, dec.name, ans.Stdout)
				}
				if (k == PostTool || k == Stop) && !dec.d.Allowed() && len(ans.Stdout) == 0 && ans.Stderr == "" {
					t.Errorf("%s %s %s: a refusal says nothing", agent, k, dec.name)
				}
			}
			// An unknown kind is answered with the blocking form.
			if k > Prompt && Setups[agent].Outcome(d.Answer(k, Decision{Permission: Allow}).Stdout, d.Answer(k, Decision{Permission: Allow}).Exit) != Deny {
				t.Errorf("%s: unknown kind %s allowed", agent, k)
			}
		}
		// PreTool answers are exactly classify hook's.
		for _, dec := range goldenDecisions {
			if a, b := d.Answer(PreTool, dec.d), d.Encode(dec.d); !bytes.Equal(a.Stdout, b.Stdout) || a.Exit != b.Exit || a.Stderr != b.Stderr {
				t.Errorf("%s: Answer(PreTool) differs from Encode", agent)
			}
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[EventKind]string{PreTool: "pre_tool", Stop: "stop", Prompt: "prompt", EventKind(9): "kind(9)", EventKind(-1): "kind(-1)"} {
		if k.String() != want {
			t.Errorf("%d: %s", int(k), k)
		}
	}
}

func BenchmarkDecodeAnswer(b *testing.B) {
	raw, err := os.ReadFile("testdata/gate/events/claude-post-edit.json")
	if err != nil {
		b.Fatal(err)
	}
	d := Dialects["claude"]
	dec := Decision{Permission: Allow, Context: "ok"}
	b.ReportAllocs()
	for b.Loop() {
		ev, err := d.Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		Reply(d, ev, dec)
	}
}
