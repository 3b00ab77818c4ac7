package classify

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/intent"
)

// A classifier that panics or hangs must end in the agent's deny, through
// the real command.
func TestHookRun_FailClosed(t *testing.T) {
	event := `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/tmp"}`
	// The hanging classifier answers (allow) when the test ends, or after
	// 10 s should hookRun wait for it instead of denying at its budget.
	ended := make(chan struct{})
	defer close(ended)
	hang := func(string, string) intent.Result {
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
		}
		return intent.Classify("ls")
	}
	for name, classify := range map[string]func(string, string) intent.Result{
		"panic": func(string, string) intent.Result { panic("injected") },
		"hang":  hang,
	} {
		t.Run(name, func(t *testing.T) {
			streams, in, out, errOut := cli.Test()
			in.WriteString(event)
			opts := &HookOptions{IO: streams, Agent: "claude", OnWrite: "ask", OnUnbounded: "deny",
				Budget: 50 * time.Millisecond, Classify: classify}
			err := hookRun(opts)
			var ee *cli.ExitError
			if !errors.As(err, &ee) || ee.Code != 2 {
				t.Fatalf("err = %v, want exit 2", err)
			}
			if !strings.Contains(out.String(), `"permissionDecision":"deny"`) || errOut.Len() == 0 {
				t.Errorf("stdout %q stderr %q", out, errOut)
			}
		})
	}
}

// The event's cwd reaches the classifier, so git commands are checked in the
// repository the agent works in.
func TestHookRun_PassesCwd(t *testing.T) {
	streams, in, out, _ := cli.Test()
	in.WriteString(`{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"git status","dir_path":"sub"},"cwd":"/repo"}`)
	var gotCwd string
	opts := &HookOptions{IO: streams, Agent: "gemini", OnWrite: "ask", OnUnbounded: "deny", Budget: time.Second,
		Classify: func(cmd, cwd string) intent.Result { gotCwd = cwd; return intent.Classify(cmd) }}
	if err := hookRun(opts); err != nil {
		t.Fatal(err)
	}
	if gotCwd != "/repo/sub" || strings.TrimSpace(out.String()) != "{}" {
		t.Errorf("cwd %q, stdout %q", gotCwd, out)
	}
}

// hook install prints the settings alone on stdout, so that stdout parses
// as JSON exactly (jq, or the file as it is), and what to do with it on
// stderr (issue 20). Cline's registration is a script: stdout is the
// script alone.
func TestHookInstall_StdoutIsTheSnippetAlone(t *testing.T) {
	for _, agent := range hook.Agents() {
		t.Run(agent, func(t *testing.T) {
			streams, _, out, errOut := cli.Test()
			code := cli.Main("classify", NewCmdClassify(streams, nil), streams,
				[]string{"hook", "install", "--agent", agent, "--command", "classify hook --agent " + agent})
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			s := hook.Setups[agent]
			if out.String() != s.Snippet("classify hook --agent "+agent) {
				t.Errorf("stdout is not the snippet alone:\n%s", out)
			}
			if !s.Script {
				var v map[string]any
				dec := json.NewDecoder(strings.NewReader(out.String()))
				dec.UseNumber()
				if err := dec.Decode(&v); err != nil {
					t.Fatalf("stdout is not JSON: %v\n%s", err, out)
				}
				if rest := strings.TrimSpace(out.String()[dec.InputOffset():]); rest != "" {
					t.Fatalf("stdout holds more than the JSON: %q", rest)
				}
				if !strings.Contains(out.String(), `"classify hook --agent `+agent+`"`) {
					t.Errorf("stdout does not register the command:\n%s", out)
				}
			}
			notes := errOut.String()
			if !strings.Contains(notes, "classify: ") || !strings.Contains(notes, s.Target) || !strings.Contains(notes, "doctor --agent "+agent) {
				t.Errorf("stderr lacks where to add it and how to check it:\n%s", notes)
			}
			for _, n := range s.Notes {
				if !strings.Contains(notes, n) {
					t.Errorf("stderr lacks the note %q", n)
				}
			}
		})
	}
}
