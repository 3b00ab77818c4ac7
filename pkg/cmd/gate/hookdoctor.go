package gate

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/hookrun"
	"github.com/govkit/govkit/pkg/termtext"
)

// isGateHook tells a gate hook registration from classify hook's.
func isGateHook(command string) bool {
	return strings.Contains(command, "gate") && strings.Contains(command, " hook")
}

// hookDoctor is gate doctor --agent: it finds the agent's gate hook
// registrations and runs each through a session as the agent would: a read,
// a write, a stop (refused: the write is unchecked), a read of what was
// written, a stop (allowed).
func hookDoctor(o *Options, agent, dir, command string) error {
	s, ok := hook.Setups[agent]
	if !ok || s.SampleEvent == nil {
		return cli.Failf("--agent %q is not a supported agent", agent).WithHint(hookAgentHint)
	}
	w := o.IO.Out
	problems := 0
	bad := func(format string, args ...any) {
		problems++
		fmt.Fprintf(w, "  ✗ "+format+"\n", args...)
	}
	good := func(format string, args ...any) { fmt.Fprintf(w, "  ✓ "+format+"\n", args...) }
	info := func(format string, args ...any) { fmt.Fprintf(w, "  - "+format+"\n", args...) }
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return cli.Failf("finding the working directory: %v", err).WithHint("pass --dir")
		}
		dir = wd
	}
	fmt.Fprintf(w, "hook (%s):\n", agent)
	commands, script := []string{command}, false
	if command == "" {
		commands, script = registeredGateHooks(s, dir, good, bad), s.Script
	}
	if blocks, note := hook.StopBlocks(agent); !blocks {
		info("%s cannot refuse a stop from a hook: %s", agent, note)
	}
	for _, c := range commands {
		walkSession(s, agent, hookrun.Argv(c, script), good, bad, info)
	}
	if len(commands) == 0 {
		bad("no settings file registers gate hook for %s (looked for %s); run: gate hook install --agent %s", agent, strings.Join(s.Files, ", "), agent)
	}
	if problems > 0 {
		return cli.Silent(1)
	}
	return nil
}

// registeredGateHooks lists the gate hook commands the agent's settings
// register (Cline: the hook scripts gate hook install names).
func registeredGateHooks(s hook.Setup, dir string, good, bad func(string, ...any)) []string {
	home, _ := os.UserHomeDir()
	files := hookrun.SettingsFiles(s, dir, home)
	if s.Script {
		var snippet map[string]string
		_ = json.Unmarshal([]byte(s.GateSnippet("gate hook")), &snippet)
		for name := range snippet {
			if p := filepath.Join(dir, name); fileExists(p) {
				files = append(files, p)
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range files {
		data, err := hookrun.ReadSettings(f)
		if err != nil {
			bad("%v", err)
			continue
		}
		cmds, err := s.RegisteredCommands(f, data)
		if err != nil {
			bad("%v", err)
			continue
		}
		for _, c := range cmds {
			if isGateHook(c) || (s.Script && isGateHook(string(data))) {
				if !seen[c] {
					good("%s registers %q", f, c)
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// walkSession runs the doctor's session through one registered command.
func walkSession(s hook.Setup, agent string, argv []string, good, bad, info func(string, ...any)) {
	tmp, err := os.MkdirTemp("", "govkit-doctor-")
	if err != nil {
		bad("a temporary directory: %v", err)
		return
	}
	defer os.RemoveAll(tmp)
	seen := filepath.Join(tmp, "seen.txt")
	made := filepath.Join(tmp, "made.txt")
	if err := os.WriteFile(seen, []byte("govkit doctor\n"), 0o600); err != nil {
		bad("%v", err)
		return
	}
	var id [8]byte
	_, _ = io.ReadFull(rand.Reader, id[:])
	session := "govkit-doctor-" + hex.EncodeToString(id[:])
	send := func(k hook.EventKind, tool string, input json.RawMessage, output json.RawMessage, last string) (hookrun.Result, bool) {
		ev := s.SampleEvent(k, session, tmp, tool, input, output, last)
		if ev == nil {
			return hookrun.Result{}, false
		}
		return hookrun.Run(argv, tmp, ev), true
	}
	text, _ := json.Marshal("govkit doctor\n")
	pre := func(what, tool, path string, wantAllow bool) bool {
		res, _ := send(hook.PreTool, tool, s.FileInput(tool, path), nil, "")
		got := s.Outcome(res.Stdout, res.Exit)
		if got == hook.Deny || (wantAllow && got != hook.Allow) {
			bad("%s (%s %s) answered %s%s: %s", what, tool, filepath.Base(path), got, res.Detail, firstAnswerLine(res.Stdout))
			return false
		}
		good("%s (%s %s) → %s", what, tool, filepath.Base(path), got)
		send(hook.PostTool, tool, s.FileInput(tool, path), text, "")
		return true
	}
	stop := func(what string, wantRefused bool) {
		res, ok := send(hook.Stop, "", nil, nil, "Done.")
		if !ok {
			info("%s: %s has no stop hook", what, agent)
			return
		}
		refused := s.StopOutcome(res.Stdout, res.Exit) == hook.Deny
		blocks, _ := hook.StopBlocks(agent)
		switch {
		case refused == wantRefused:
			good("%s → %s", what, map[bool]string{true: "refused: the write is not checked yet", false: "allowed"}[refused])
		case !blocks && !refused:
			info("%s → allowed (%s cannot refuse a stop)", what, agent)
		default:
			bad("%s: refused=%v, want %v%s: %s", what, refused, wantRefused, res.Detail, firstAnswerLine(res.Stdout))
		}
	}
	send(hook.SessionStart, "", nil, nil, "")
	if !pre("read", s.ReadTool, seen, true) {
		return
	}
	if !pre("write", s.WriteTool, made, false) {
		return
	}
	_ = os.WriteFile(made, []byte("govkit doctor\n"), 0o600)
	stop("stop after the write", true)
	if !pre("read back", s.ReadTool, made, true) {
		return
	}
	stop("stop after the check", false)
	send(hook.SessionEnd, "", nil, nil, "")
}

func firstAnswerLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return termtext.Truncate(s, 300)
}
