package hook

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/intent"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func realJudge() Judge {
	return NewJudge(DefaultPolicy, func(cmd, cwd string) intent.Result { return intent.Classify(cmd) })
}

// TestGolden runs every event in testdata/events through its agent's
// dialect and compares stdout, stderr and the exit code with
// testdata/golden (refresh with go test ./pkg/hook -run TestGolden -update).
func TestGolden(t *testing.T) {
	events, err := filepath.Glob("testdata/events/*.json")
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
			ans := Respond(Dialects[agent], raw, realJudge(), 2*time.Second)
			got := render(ans)
			golden := filepath.Join("testdata/golden", name+".golden")
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
				t.Errorf("answer differs from %s\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

func render(a Answer) []byte {
	var b bytes.Buffer
	b.WriteString("exit: " + strconv.Itoa(a.Exit) + "\n")
	b.WriteString("stdout: " + string(a.Stdout))
	if len(a.Stdout) == 0 || a.Stdout[len(a.Stdout)-1] != '\n' {
		b.WriteString("\n")
	}
	b.WriteString("stderr: " + a.Stderr + "\n")
	return b.Bytes()
}

// The outcome each agent sees, for every golden event: read as the agent
// reads its hook's answer (Setup.Outcome), not as we meant it.
func TestOutcomes(t *testing.T) {
	want := map[string]Permission{
		"claude-allow": Allow, "claude-write": Ask, "claude-unbounded": Deny, "claude-destructive": Ask,
		"claude-read-tool": Allow, "claude-edit-tool": Ask, "claude-mcp-tool": Ask, "claude-powershell": Ask,
		"codex-allow": Allow, "codex-write": Deny, "codex-unbounded": Deny, "codex-destructive": Deny,
		"codex-apply-patch": Deny,
		"gemini-allow":      Allow, "gemini-write": Deny, "gemini-unbounded": Deny, "gemini-read-tool": Allow,
		"gemini-write-tool": Deny, "gemini-mcp-tool": Deny,
		"cursor-allow": Allow, "cursor-write": Ask, "cursor-unbounded": Deny, "cursor-mcp": Ask,
		"cursor-read-file": Allow, "cursor-pretooluse-write": Deny,
		"cline-allow": Allow, "cline-write": Deny, "cline-unbounded": Deny, "cline-read-tool": Allow,
		"cline-write-tool": Deny, "cline-old-field": Allow,
		"copilot-allow": Allow, "copilot-string-args": Ask, "copilot-unbounded": Deny, "copilot-pascal": Allow,
		"copilot-edit-tool": Ask,
	}
	for _, agent := range Agents() {
		want[agent+"-malformed"] = Deny
		want[agent+"-wrong-shape"] = Deny
	}
	for name, perm := range want {
		agent, _, _ := strings.Cut(name, "-")
		raw, err := os.ReadFile(filepath.Join("testdata/events", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		ans := Respond(Dialects[agent], raw, realJudge(), 2*time.Second)
		if got := Setups[agent].Outcome(ans.Stdout, ans.Exit); got != perm {
			t.Errorf("%s: the agent sees %s, want %s (%s)", name, got, perm, render(ans))
		}
	}
}

// Every failure path ends in the agent's blocking form.
func TestFailClosed(t *testing.T) {
	good := map[string]string{
		"claude":  `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`,
		"codex":   `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`,
		"gemini":  `{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`,
		"cursor":  `{"hook_event_name":"beforeShellExecution","command":"ls","cwd":"/"}`,
		"cline":   `{"hookName":"PreToolUse","preToolUse":{"toolName":"execute_command","parameters":{"command":"ls"}}}`,
		"copilot": `{"toolName":"bash","toolArgs":{"command":"ls"}}`,
	}
	panics := Judge(func(Event) Decision { panic("boom") })
	// A judge that answers allow when the test ends, or after 10 s should
	// Respond wait for it instead of denying at its budget.
	ended := make(chan struct{})
	defer close(ended)
	slow := Judge(func(Event) Decision {
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
		}
		return Decision{Permission: Allow}
	})
	zero := Judge(func(Event) Decision { return Decision{} })
	odd := Judge(func(Event) Decision { return Decision{Permission: "yes"} })
	for agent, ev := range good {
		d, s := Dialects[agent], Setups[agent]
		if got := s.Outcome(Respond(d, []byte(ev), realJudge(), time.Second).Stdout, Respond(d, []byte(ev), realJudge(), time.Second).Exit); got != Allow {
			t.Fatalf("%s: the sample read-only event is not allowed: %s", agent, got)
		}
		cases := map[string]Answer{
			"panic":         Respond(d, []byte(ev), panics, time.Second),
			"over budget":   Respond(d, []byte(ev), slow, 10*time.Millisecond),
			"zero":          Respond(d, []byte(ev), zero, time.Second),
			"odd":           Respond(d, []byte(ev), odd, time.Second),
			"oversized":     Respond(d, append([]byte(ev), bytes.Repeat([]byte(" "), MaxEvent)...), realJudge(), time.Second),
			"empty":         Respond(d, nil, realJudge(), time.Second),
			"two values":    Respond(d, []byte(ev+ev), realJudge(), time.Second),
			"empty command": Respond(d, []byte(strings.Replace(ev, `"ls"`, `""`, 1)), realJudge(), time.Second),
		}
		for name, ans := range cases {
			if got := s.Outcome(ans.Stdout, ans.Exit); got != Deny {
				t.Errorf("%s/%s: the agent sees %s, want deny: %s", agent, name, got, render(ans))
			}
		}
		// A member of the wrong type is named in JSON's words (issue 20),
		// not Go's ("cannot unmarshal number into Go struct field").
		wrong := Respond(d, []byte(strings.Replace(ev, `"ls"`, `5`, 1)), realJudge(), time.Second)
		if got := string(render(wrong)); strings.Contains(got, "Go ") || strings.Contains(got, "unmarshal") {
			t.Errorf("%s: a number for the command: %s", agent, got)
		}
	}
	bad := Respond(Dialects["claude"], []byte(`{"hook_event_name":"PreToolUse","future":1,"tool_name":5}`), realJudge(), time.Second)
	if got := string(render(bad)); !strings.Contains(got, "malformed event: tool_name must be a string, not a number") {
		t.Errorf("a number for tool_name: %s", got)
	}
}

func TestPolicy(t *testing.T) {
	write := intent.Classify("rm x")
	unbounded := intent.Classify("tail -f x")
	for _, tt := range []struct {
		r    intent.Result
		p    Policy
		want Permission
	}{
		{write, DefaultPolicy, Ask},
		{write, Policy{OnWrite: Deny, OnUnbounded: Deny}, Deny},
		{write, Policy{OnWrite: Allow, OnUnbounded: Deny}, Allow},
		{unbounded, DefaultPolicy, Deny},
		{unbounded, Policy{OnWrite: Ask, OnUnbounded: Ask}, Ask},
		{intent.Classify("ls"), Policy{OnWrite: Deny, OnUnbounded: Deny}, Allow},
	} {
		if got := DecideCommand(tt.r, tt.p); got.Permission != tt.want {
			t.Errorf("%q with %+v: %s, want %s", tt.r.Command, tt.p, got.Permission, tt.want)
		}
	}
	if d := DecideCommand(unbounded, DefaultPolicy); !strings.Contains(d.Reason, "tail -n 200 x") {
		t.Errorf("unbounded reason lacks the rewrite: %s", d.Reason)
	}
	if err := (Policy{OnWrite: "maybe", OnUnbounded: Deny}).Validate(); err == nil {
		t.Error("bad on-write accepted")
	}
	if err := (Policy{OnWrite: Ask, OnUnbounded: Allow}).Validate(); err == nil {
		t.Error("on-unbounded allow accepted")
	}
}

// The doctor's samples go through every dialect's Sample and back.
func TestSamplesRoundTrip(t *testing.T) {
	for _, agent := range Agents() {
		s := Setups[agent]
		for cmd, want := range map[string]bool{"ls -la": true, "rm -rf /tmp/x": false} {
			ans := Respond(Dialects[agent], s.Sample(cmd, "/tmp"), realJudge(), time.Second)
			if got := s.Outcome(ans.Stdout, ans.Exit) == Allow; got != want {
				t.Errorf("%s %q: allowed=%v\n%s", agent, cmd, got, render(ans))
			}
		}
	}
}

func TestRegisteredCommands(t *testing.T) {
	for _, agent := range Agents() {
		s := Setups[agent]
		snippet := s.Snippet("/opt/bin/classify hook --agent " + agent)
		path := "settings.json"
		if s.Script {
			path = "PreToolUse"
		}
		got, err := s.RegisteredCommands(path, []byte(snippet))
		if err != nil || len(got) != 1 {
			t.Errorf("%s: snippet not recognised: %v %v\n%s", agent, got, err, snippet)
		}
	}
	toml := []byte("[[hooks.PreToolUse]]\nmatcher = \"^Bash$\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"classify hook --agent codex\"\n")
	if got, _ := Setups["codex"].RegisteredCommands("config.toml", toml); len(got) != 1 || got[0] != "classify hook --agent codex" {
		t.Errorf("toml: %v", got)
	}
	if _, err := Setups["claude"].RegisteredCommands("settings.json", []byte("{")); err == nil {
		t.Error("broken JSON accepted")
	}
}
