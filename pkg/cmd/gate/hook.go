package gate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/gitconfig"
	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/hookgate"
	"github.com/govkit/govkit/pkg/receiptkey"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/sessionstore"
	"github.com/govkit/govkit/pkg/statedir"
	"github.com/govkit/govkit/pkg/toolgov"
)

// HookOptions are the flags of gate hook.
type HookOptions struct {
	*Options

	Agent            string
	StateDir         string
	OnWrite          string
	OnUnbounded      string
	OnDestructive    string
	Budget           time.Duration
	StrictResolution bool
	ReadBudget       string
	ReadMode         string
	ContextTTL       time.Duration
	ReceiptKey       string
	ToolKinds        []string
}

const hookAgentHint = "pass --agent claude, codex, gemini, cursor, cline or copilot"

func newCmdHook(opts *Options) *cobra.Command {
	ho := &HookOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "hook --agent AGENT",
		Short: "Govern a coding agent's session from its hooks: tool calls, results and stops",
		Long: `Hook is classify hook grown into a session gate. The agent runs it for each hook
event (before and after every tool call, when it wants to stop, when a session
starts and ends); gate keeps the session's state between these processes in
one small file per session and answers in the agent's own protocol:

  - before a tool call: the session's workflow (a write needs a file read or
    listed first, and a write must be checked before the next one), the
    read budgets, pkg/intent for shell commands, then, with --url, auditd's
    policy: require_approval becomes the agent's "ask" naming the approval id
    (or a deny saying 'approvals approve ID' where the agent cannot ask), and
    an approved request is consumed by exactly the call it was asked for;
  - after it: the result's receipt, the files it read or listed;
  - at a stop: no final answer while a write is unchecked, none that claims
    results no tool produced;
  - at session end: the state file is deleted.

It fails closed: a malformed event, a state file that is damaged, locked for
too long or too large, auditd unreachable with --url, or no answer within
--budget is answered with the agent's blocking form.

State files live in --state-dir (default $XDG_STATE_HOME/govkit/sessions),
0600, one per session id, and expire after --context-ttl without use.

Set it up with "gate hook install --agent AGENT"; check it with
"gate doctor --agent AGENT".`,
		Example: `  gate hook install --agent claude > hooks.json   # then merge into .claude/settings.json
  gate hook --agent claude --url http://127.0.0.1:1199 < event.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ho.flags = c.Flags()
			return ho.run()
		},
	}
	f := cmd.Flags()
	f.StringVar(&ho.Agent, "agent", "", "the `AGENT` whose protocol to speak: "+strings.Join(hook.Agents(), ", "))
	cmd.PersistentFlags().StringVar(&ho.StateDir, "state-dir", "", "keep session state files in `DIR` (default $XDG_STATE_HOME/govkit/sessions)")
	f.StringVar(&ho.OnWrite, "on-write", "allow", "without --url: the `ANSWER` for a write the session allows: allow, ask or deny")
	f.StringVar(&ho.OnDestructive, "on-destructive", "ask", "without --url: the `ANSWER` for a destructive write (rm -rf, a Delete) the session allows: ask or deny")
	f.StringVar(&ho.OnUnbounded, "on-unbounded", "deny", "the `ANSWER` for a command that may never finish: deny or ask")
	f.DurationVar(&ho.Budget, "budget", 5*time.Second, "block when no decision is made within this `DURATION`")
	f.BoolVar(&ho.StrictResolution, "strict-resolution", true, "refuse an edit of a file not read or listed in the session (STRICT_RESOLUTION)")
	f.StringVar(&ho.ReadBudget, "read-budget", "warn", "`WHAT` a spent read budget does: warn (a soft limit; the warning reaches the model) or enforce (the read is refused)")
	f.StringVar(&ho.ReadMode, "read-mode", "off", "search → ref → read for Read/Grep/Glob, in `MODE`: off, warn or enforce")
	f.DurationVar(&ho.ContextTTL, "context-ttl", hookgate.DefaultContextTTL, "a file unused for `DURATION` must be read again; a session unused that long starts afresh")
	f.StringVar(&ho.ReceiptKey, "receipt-key", "", "sign receipts with the key in `FILE`, created 0600 if absent (default: govkit's receipt key)")
	f.StringArrayVar(&ho.ToolKinds, "tool-kind", nil, "give MCP tools matching `GLOB=KIND` a kind: read, search, resolve or write (repeatable; others are writes)")
	cli.SkipConfig(f, "agent")
	_ = cmd.RegisterFlagCompletionFunc("agent", cobra.FixedCompletions(hook.Agents(), cobra.ShellCompDirectiveNoFileComp))
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cli.Fail(err, "run gate hook --help")
	})
	// Every agent lets the call through when its hook exits 3: a usage or
	// configuration error must still block.
	cli.FailClosed(cmd, func(error) int { return ho.failClosed(os.Args[1:]) })
	cmd.AddCommand(newCmdHookInstall(opts), newCmdHookReset(ho))
	return cmd
}

// failClosed answers with the agent's blocking form when the hook cannot
// run properly.
func (o *HookOptions) failClosed(args []string) int {
	agent := o.Agent
	if agent == "" {
		agent = hook.AgentArg(args)
	}
	ans := hook.Misconfigured(agent, nil, hookgate.Failure("the hook is misconfigured; run gate doctor --agent "+agent))
	o.IO.Out.Write(ans.Stdout)
	if ans.Stderr != "" {
		fmt.Fprintln(o.IO.ErrOut, ans.Stderr)
	}
	return ans.Exit
}

func (o *HookOptions) dialect() (hook.Dialect, error) {
	d, ok := hook.Dialects[o.Agent]
	if !ok {
		if o.Agent == "" {
			return nil, cli.Failf("--agent is required").WithHint(hookAgentHint)
		}
		return nil, cli.Failf("--agent %q is not a supported agent", o.Agent).WithHint(hookAgentHint)
	}
	return d, nil
}

// hookMemoryLimit is where a gate hook process collects garbage at all.
const hookMemoryLimit = 512 << 20

func (o *HookOptions) run() error {
	// One event, then exit: collecting garbage is wasted work that an
	// agent waits for (about 2 ms of the 10 ms budget on 2 cores, measured
	// with bin/hookbench -gate 500). The heap stays bounded: the event and
	// the state file are (hook.MaxEvent, sessionstore's 8 MiB), and past
	// the limit the collector runs again.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(hookMemoryLimit)
	d, err := o.dialect()
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(io.LimitReader(o.IO.In, hook.MaxEvent+1))
	var ans hook.Answer
	if err != nil {
		ans = d.Encode(hookgate.Failure("reading the event: " + err.Error()))
	} else {
		ans = o.answer(d, raw)
	}
	o.IO.Out.Write(ans.Stdout)
	if ans.Stderr != "" {
		fmt.Fprintln(o.IO.ErrOut, ans.Stderr)
	}
	if ans.Exit != 0 {
		return cli.Silent(ans.Exit)
	}
	return nil
}

// answer builds the gate and lets it answer raw; a setup that cannot work
// is answered in the event's own kind, blocking.
func (o *HookOptions) answer(d hook.Dialect, raw []byte) hook.Answer {
	ctx, cancel := context.WithTimeout(context.Background(), max(o.Budget, time.Millisecond))
	defer cancel()
	g, err := o.gate(d)
	if err != nil {
		kind := hook.PreTool
		if ev, derr := d.Decode(raw); derr == nil {
			kind = ev.Kind
		}
		return d.Answer(kind, hookgate.Failure(err.Error()))
	}
	return g.Handle(ctx, raw)
}

func (o *HookOptions) gate(d hook.Dialect) (*hookgate.Gate, error) {
	policy := hook.Policy{OnWrite: hook.Permission(o.OnWrite), OnUnbounded: hook.Permission(o.OnUnbounded)}
	if err := policy.Validate(); err != nil {
		return nil, fmt.Errorf("--%v", err)
	}
	if o.Budget <= 0 {
		return nil, fmt.Errorf("--budget must be positive")
	}
	switch hook.Permission(o.OnDestructive) {
	case hook.Ask, hook.Deny:
	default:
		return nil, fmt.Errorf("--on-destructive must be ask or deny, not %q", o.OnDestructive)
	}
	cfg := hookgate.Config{ContextTTL: o.ContextTTL, ReadBudget: o.ReadBudget, ReadMode: o.ReadMode}
	strict := o.StrictResolution
	cfg.StrictResolution = &strict
	for _, tk := range o.ToolKinds {
		glob, kind, ok := strings.Cut(tk, "=")
		if !ok {
			return nil, fmt.Errorf("--tool-kind %q: want GLOB=KIND", tk)
		}
		cfg.MCPTools = append(cfg.MCPTools, hookgate.ToolRule{Match: glob, Kind: kind})
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	store, err := o.store(cfg.TTL())
	if err != nil {
		return nil, err
	}
	key, err := o.receiptKey()
	if err != nil {
		return nil, err
	}
	g := &hookgate.Gate{
		Agent: o.Agent, Dialect: d, Store: store, Config: cfg, Policy: policy, OnDestructive: hook.Permission(o.OnDestructive),
		Session:  session.Options{ReceiptKey: key},
		Classify: gitconfig.Classify,
	}
	if o.urlGiven() {
		c, err := o.client()
		if err != nil {
			return nil, err
		}
		g.Gov = toolgov.New(c, nil, nil)
		g.GovTimeout = o.Budget
	}
	return g, nil
}

func (o *HookOptions) store(ttl time.Duration) (*sessionstore.Store, error) {
	dir := o.StateDir
	if dir == "" {
		base, err := statedir.Dir()
		if err != nil {
			return nil, fmt.Errorf("no state directory: %v (pass --state-dir DIR)", err)
		}
		dir = filepath.Join(base, "sessions")
	}
	s, err := sessionstore.Open(dir, sessionstore.Options{TTL: ttl, LockWait: min(o.Budget/2, 2*time.Second)})
	if err != nil {
		return nil, fmt.Errorf("--state-dir %s: %v", dir, err)
	}
	return s, nil
}

func (o *HookOptions) receiptKey() ([]byte, error) {
	path := o.ReceiptKey
	if path == "" {
		p, err := receiptkey.DefaultPath()
		if err != nil {
			return nil, fmt.Errorf("no receipt key: %v (pass --receipt-key FILE)", err)
		}
		path = p
	}
	key, err := receiptkey.LoadOrCreate(path)
	if err != nil {
		return nil, fmt.Errorf("--receipt-key %s: %v", path, err)
	}
	return key, nil
}

// newCmdHookInstall returns `gate hook install`: the settings that register
// every hook gate needs, as JSON only on stdout (to redirect or merge with
// jq), with where to put them on stderr. It edits no file.
func newCmdHookInstall(opts *Options) *cobra.Command {
	var agent, command string
	cmd := &cobra.Command{
		Use:   "install --agent AGENT",
		Short: "Print the settings that register gate hook for every hook event an agent has",
		Long: `Install prints the hook registrations for AGENT — before and after each tool
call, stop, session start and end, prompt — as JSON on standard output, and
where to put them on standard error. It edits no file: redirect it, or merge
it into the agent's settings with jq. The registered command is this binary's
absolute path with 'hook --agent AGENT' (and --url when given here); change it
with --command.`,
		Example: `  gate hook install --agent claude > /tmp/hooks.json
  jq -s '.[0] * .[1]' .claude/settings.json /tmp/hooks.json > /tmp/s && mv /tmp/s .claude/settings.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			s, ok := hook.Setups[agent]
			if !ok || s.GateSnippet == nil {
				return cli.Failf("--agent %q is not a supported agent", agent).WithHint(hookAgentHint)
			}
			if command == "" {
				command = cli.SelfPath("gate") + " hook --agent " + agent
				if f := c.Flags().Lookup("url"); f != nil && f.Changed {
					command += " --url " + opts.URL
				}
			}
			fmt.Fprint(opts.IO.Out, s.GateSnippet(command))
			e := opts.IO.ErrOut
			fmt.Fprintf(e, "gate: add this to %s (hooks: %s)\n", s.Target, strings.Join(s.GateEvents, ", "))
			fmt.Fprintf(e, "gate: %s also reads: %s\n", agent, strings.Join(s.Files, ", "))
			for _, n := range s.Notes {
				fmt.Fprintf(e, "gate: note: %s\n", n)
			}
			if blocks, note := hook.StopBlocks(agent); !blocks {
				fmt.Fprintf(e, "gate: note: %s cannot refuse a stop from a hook: %s\n", agent, note)
			}
			fmt.Fprintf(e, "gate: then check it: %s doctor --agent %s\n", cli.SelfPath("gate"), agent)
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "the `AGENT` to set up: "+strings.Join(hook.Agents(), ", "))
	cmd.Flags().StringVar(&command, "command", "", "the hook `COMMAND` to register (default: this binary's absolute path + hook --agent AGENT)")
	cli.SkipConfig(cmd.Flags(), "agent", "command")
	_ = cmd.RegisterFlagCompletionFunc("agent", cobra.FixedCompletions(hook.Agents(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// newCmdHookReset returns `gate hook reset`: delete one session's state
// file (a damaged one blocks every call of its session).
func newCmdHookReset(ho *HookOptions) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "reset --session ID",
		Short: "Forget one session's state (its state file)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if id == "" {
				return cli.Failf("--session is required").WithHint("pass the session id the agent reports (Claude Code: session_id)")
			}
			store, err := ho.store(hookgate.DefaultContextTTL)
			if err != nil {
				return cli.Fail(err, "")
			}
			e, err := store.Lock(context.Background(), id)
			if err != nil {
				return cli.Failf("session %s: %v", id, err)
			}
			defer e.Close()
			if err := e.Delete(); err != nil {
				return cli.Failf("session %s: %v", id, err)
			}
			fmt.Fprintf(ho.IO.ErrOut, "gate: session %s forgotten\n", id)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "session", "", "the session `ID` whose state to delete")
	cli.SkipConfig(cmd.Flags(), "session")
	return cmd
}
