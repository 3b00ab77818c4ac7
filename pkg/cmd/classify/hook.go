package classify

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/gitconfig"
	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/intent"
)

// HookOptions are the parsed flags and dependencies of `classify hook`.
type HookOptions struct {
	IO          *cli.IOStreams
	Agent       string
	OnWrite     string
	OnUnbounded string
	Budget      time.Duration
	// Classify classifies one command run in cwd; nil means the real
	// classifier, checking git config in cwd. Tests inject panics here.
	Classify func(command, cwd string) intent.Result
}

const agentHint = "pass --agent claude, codex, gemini, cursor, cline or copilot"

// newCmdHook returns `classify hook`, which answers one coding-agent hook
// event (DESIGN §4 "Hook mode").
func newCmdHook(streams *cli.IOStreams, runF func(*HookOptions) error) *cobra.Command {
	opts := &HookOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "hook --agent AGENT",
		Short: "Answer a coding agent's pre-tool-call hook",
		Long: `Hook reads one hook event (JSON) on standard input, as the agent sends it before
a tool call, and answers in that agent's own protocol: read-only and bounded
shell commands are allowed, writes ask the user (or are denied where the agent
cannot ask), commands that never end are denied with a bounded rewrite. Other
tools are judged by name: reading tools are allowed, editing and unknown tools
are writes.

It fails closed: a malformed, oversized or unexpected event, an internal error
or a decision that takes longer than --budget is answered with the agent's
blocking form, never an allow.

Set it up with "classify hook install --agent AGENT"; check it with
"classify doctor --agent AGENT".`,
		Example: `  echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}' |
    classify hook --agent claude
  classify hook install --agent cursor`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return hookRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "the `AGENT` whose protocol to speak: "+strings.Join(hook.Agents(), ", "))
	cmd.Flags().StringVar(&opts.OnWrite, "on-write", "ask", "`ANSWER` for commands that are not provably read-only: ask, deny or allow")
	cmd.Flags().StringVar(&opts.OnUnbounded, "on-unbounded", "deny", "`ANSWER` for commands that may never finish: deny or ask")
	cmd.Flags().DurationVar(&opts.Budget, "budget", 2*time.Second, "deny when no decision is made within this `DURATION`")
	cli.AddConfigFlag(cmd)
	// Each registration names its agent: a config file must not change it.
	cli.SkipConfig(cmd.Flags(), "agent")
	_ = cmd.RegisterFlagCompletionFunc("agent", cobra.FixedCompletions(hook.Agents(), cobra.ShellCompDirectiveNoFileComp))
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cli.Fail(err, "run classify hook --help")
	})
	// Every agent lets the call through when its hook exits 3: a usage or
	// config error must still block.
	cli.FailClosed(cmd, func(error) int { return failClosedHook(opts, os.Args[1:]) })
	cmd.AddCommand(newCmdHookInstall(streams))
	return cmd
}

// failClosedHook answers with the agent's deny when the hook cannot run
// properly.
func failClosedHook(opts *HookOptions, args []string) int {
	ans := hook.Misconfigured(opts.Agent, args, hook.Failure("the hook is misconfigured; run classify doctor"))
	opts.IO.Out.Write(ans.Stdout)
	return ans.Exit
}

func hookRun(opts *HookOptions) error {
	d, ok := hook.Dialects[opts.Agent]
	if !ok {
		if opts.Agent == "" {
			return cli.Failf("--agent is required").WithHint(agentHint)
		}
		return cli.Failf("--agent %q is not a supported agent", opts.Agent).WithHint(agentHint)
	}
	ans := hookAnswer(opts, d)
	opts.IO.Out.Write(ans.Stdout)
	if ans.Stderr != "" {
		fmt.Fprintln(opts.IO.ErrOut, ans.Stderr)
	}
	if ans.Exit != 0 {
		return cli.Silent(ans.Exit)
	}
	return nil
}

// hookAnswer reads the event and decides; every problem becomes the
// dialect's deny.
func hookAnswer(opts *HookOptions, d hook.Dialect) hook.Answer {
	raw, err := io.ReadAll(io.LimitReader(opts.IO.In, hook.MaxEvent+1))
	if err != nil {
		return d.Encode(hook.Failure("reading the event: " + err.Error()))
	}
	policy := hook.Policy{OnWrite: hook.Permission(opts.OnWrite), OnUnbounded: hook.Permission(opts.OnUnbounded)}
	if err := policy.Validate(); err != nil {
		return d.Encode(hook.Failure("--" + err.Error()))
	}
	if opts.Budget <= 0 {
		return d.Encode(hook.Failure("--budget must be positive"))
	}
	classify := opts.Classify
	if classify == nil {
		classify = gitconfig.Classify
	}
	return hook.Respond(d, raw, hook.NewJudge(policy, classify), opts.Budget)
}

// newCmdHookInstall returns `classify hook install`, which prints the
// settings to add; it never edits the user's files.
func newCmdHookInstall(streams *cli.IOStreams) *cobra.Command {
	var agent, command string
	cmd := &cobra.Command{
		Use:   "install --agent AGENT",
		Short: "Print the settings that register classify as an agent's hook",
		Long: `Install prints what to add so that the agent runs "classify hook" before each
tool call: on standard output the settings JSON alone (for Cline, the hook
script), ready for jq or the file; on standard error where it goes and what
else to do. It does not edit any file. The hook command uses this binary's
absolute path, so the agent does not depend on its PATH; change it with --command.`,
		Example: `  classify hook install --agent claude > /tmp/hooks.json
  jq -s '.[0] * .[1]' .claude/settings.json /tmp/hooks.json > /tmp/s && mv /tmp/s .claude/settings.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			s, ok := hook.Setups[agent]
			if !ok {
				return cli.Failf("--agent %q is not a supported agent", agent).WithHint(agentHint)
			}
			if command == "" {
				command = cli.SelfPath("classify") + " hook --agent " + agent
			}
			// The snippet alone on stdout, so that it can go to jq or to
			// the file as it is; what to do with it on stderr (issue 20),
			// as gate hook install does.
			fmt.Fprint(streams.Out, s.Snippet(command))
			e := streams.ErrOut
			if s.Script {
				fmt.Fprintf(e, "classify: create %s with this\n", s.Target)
			} else {
				fmt.Fprintf(e, "classify: add this to %s\n", s.Target)
			}
			fmt.Fprintf(e, "classify: %s also reads: %s\n", agent, strings.Join(s.Files, ", "))
			for _, n := range s.Notes {
				fmt.Fprintf(e, "classify: note: %s\n", n)
			}
			fmt.Fprintf(e, "classify: then check it: %s doctor --agent %s\n", cli.SelfPath("classify"), agent)
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "the `AGENT` to set up: "+strings.Join(hook.Agents(), ", "))
	cmd.Flags().StringVar(&command, "command", "", "the hook `COMMAND` to register (default: this binary's absolute path + hook --agent AGENT)")
	cli.SkipConfig(cmd.Flags(), "agent", "command")
	_ = cmd.RegisterFlagCompletionFunc("agent", cobra.FixedCompletions(hook.Agents(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
