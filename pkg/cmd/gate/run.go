package gate

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/gate"
)

// RunOptions are the flags of run and check.
type RunOptions struct {
	*Options
	check bool

	Shell       string
	Mode        string
	Resource    string
	Session     string
	Sandbox     string
	Timeout     time.Duration
	MaxOutput   int64
	Wait        time.Duration
	Approval    string
	AutoRewrite bool
	Report      string
	Spool       string
	Output      cli.Format
}

func newCmdRun(opts *Options, check bool) *cobra.Command {
	ro := &RunOptions{Options: opts, check: check}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG...] | run [flags] -c 'SHELL COMMAND'",
		Short: "Run a command under governance: classify, mode, policy, approval, sandbox, receipt",
		Long: `Run decides on a command and, when everything allows it, runs it, in this order:

  1. classify it; an unbounded command is refused (125, UNBOUNDED), or with
     --auto-rewrite its bounded rewrite runs instead, once (auto-recovery is
     bounded to one attempt; the report says so);
  2. the operating mode: readonly (the default) refuses every command that may
     write (125, READONLY_MODE); fix lets writes through under governance, and
     at start requires auditd to answer with a policy in force that is not in
     dry-run (else 127, "fix mode requires audit: ...", "... requires policy: ...");
  3. in fix mode, auditd's policy decides (the decision is recorded): deny is
     125 with the explanation on stderr; rate limits and the circuit breaker
     of the policy's guardrails refuse with 125 and the time until they lift;
     require_approval prints the approval id and exits 126, or with --wait
     waits for it; an approval is consumed with the command's action hash
     before it runs, so it releases exactly one run of exactly this command
     (--approval ID uses one you already hold);
  4. the sandbox: --sandbox auto runs read-only commands under Landlock with
     the whole filesystem read-only but /dev/null, the terminal and a private
     temp dir; isolated also denies TCP (Landlock) and every other socket
     family and io_uring (seccomp). When the kernel cannot enforce it, 127;
     gate never degrades silently;
  5. the command runs with stdin, stdout and stderr passed through, in its
     own process group, killed whole at --timeout (124); at most --max-output
     bytes reach you, and the report gives the full size and SHA-256;
  6. when the deciding rule limits rows or pods (max_rows_affected,
     max_pods_affected) the output is held until the count is checked; over
     the limit it is withheld (125) and a post_execution decision is recorded.
     A psql command runs inside a transaction that commits only within the
     limit, else rolls back;
  7. the run is recorded as a tool_execution event (exit code, duration,
     output digest, classification, sandbox, approval): its id and hash are
     the receipt in the --report JSON.

In fix mode, if auditd stops answering mid-way the command is refused (127),
the incident is written to stderr and to the spool (--spool), and the spool is
sent to auditd at the next successful contact.`,
		Example: `  gate run -- ls -la /etc
  gate run --sandbox isolated -c 'grep -r TODO src | head'
  gate run --auto-rewrite -- tail -f /var/log/syslog
  gate run --mode fix --resource database:orders --wait 15m -- psql -c "DELETE FROM carts WHERE id = 42"
  gate run --mode fix --resource database:orders --approval apr_2al33qaosuvdf2jaxgt5fxm46g -- psql -c "..."
  gate run --report /tmp/gate.json -- df -h`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ro.flags = c.Flags()
			return ro.run(args)
		},
	}
	if check {
		cmd.Use = "check [flags] -- CMD [ARG...] | check [flags] -c 'SHELL COMMAND'"
		cmd.Short = "Say whether a command would run, without running it (exit 0, 125 or 126)"
		cmd.Long = `Check takes a command through run's pipeline up to and including the policy
decision, and runs nothing: it classifies, applies the mode, checks the
sandbox can be enforced and, in fix mode, asks auditd for a hypothetical
decision (recorded nowhere, no approval requested) for the principal run's
decision would have: the token's, or in local mode your user name. For CI
and for agents that want to know first.

It prints the report (text on a terminal, JSON otherwise; -o chooses).

Exit status: 0 it would run; 125 it would be refused; 126 it needs an
approval; 127 gate could not decide (usage, sandbox, governance).`
		cmd.Example = `  gate check -- rm -rf build
  gate check --mode fix --resource database:orders -o json -c "psql -c 'DELETE FROM t'"`
		cli.AddOutputFlag(cmd, &ro.Output)
	}
	// Flags end at the command's name: 'gate run ls -la' runs ls -la.
	cmd.Flags().SetInterspersed(false)
	f := cmd.Flags()
	f.StringVarP(&ro.Shell, "command", "c", "", "run the `SHELL` command line with bash -c instead of arguments")
	f.StringVar(&ro.Mode, "mode", string(gate.ReadOnly), "operating `MODE`: readonly (refuse writes) or fix (writes under governance)")
	f.StringVar(&ro.Resource, "resource", "", "what the command acts on, `TYPE:NAME` (required in fix mode)")
	f.StringVar(&ro.Session, "session", "", "the agent session `ID` (guardrails count per session; recorded)")
	f.StringVar(&ro.Sandbox, "sandbox", gate.SandboxAuto, "`LEVEL`: auto (readonly for read-only commands), readonly, isolated or off")
	f.DurationVar(&ro.Timeout, "timeout", 0, "kill the command's process group after `DURATION` (exit 124; default no limit)")
	f.Int64Var(&ro.MaxOutput, "max-output", gate.DefaultMaxOutput, "show at most `BYTES` of output; the report has the full size and SHA-256")
	f.DurationVar(&ro.Wait, "wait", 0, "wait up to `DURATION` for a required approval (default: exit 126 at once)")
	f.StringVar(&ro.Approval, "approval", "", "consume the approval `ID` you hold for exactly this command")
	f.BoolVar(&ro.AutoRewrite, "auto-rewrite", false, "run classify's bounded rewrite of an unbounded command, once")
	f.StringVar(&ro.Report, "report", "", "write gate's JSON report to `FILE`")
	f.StringVar(&ro.Spool, "spool", "", "keep incidents auditd could not take in `DIR` (default $XDG_STATE_HOME/govkit/spool)")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"readonly", "fix"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("sandbox", cobra.FixedCompletions([]string{"auto", "readonly", "isolated", "off"}, cobra.ShellCompDirectiveNoFileComp))
	cli.SkipConfig(f, "command", "resource", "wait", "approval", "report")
	cli.FailClosed(cmd, exitCannotRun)
	return cmd
}

func (o *RunOptions) run(args []string) error {
	mode, err := gate.ParseMode(o.Mode)
	if err != nil {
		return cli.Failf("%s: %v", cli.FlagName(o.flags, "mode"), err).WithHint("pass --mode readonly or --mode fix")
	}
	if o.MaxOutput < 0 {
		return cli.Failf("--max-output %d is negative", o.MaxOutput).WithHint("pass --max-output BYTES, e.g. 1048576")
	}
	if o.Timeout < 0 || o.Wait < 0 {
		return cli.Failf("--timeout and --wait must not be negative").WithHint("pass a duration like 30s")
	}
	if (o.Shell == "") == (len(args) == 0) {
		return cli.Failf("give the command either after -- or with -c, exactly once").
			WithHint("gate run -- CMD ARG..., or gate run -c 'SHELL COMMAND'")
	}
	req := gate.Request{
		Argv: args, Shell: o.Shell, Mode: mode, Resource: o.Resource, Session: o.Session,
		Sandbox: o.Sandbox, Timeout: o.Timeout, MaxOutput: o.MaxOutput, Wait: o.Wait,
		ApprovalID: o.Approval, AutoRewrite: o.AutoRewrite, CheckOnly: o.check, Spool: o.Spool,
		Stdin: o.IO.In, StdinIsTerminal: o.IO.IsStdinTTY(), Stdout: o.IO.Out, Stderr: o.IO.ErrOut, Notes: o.IO.ErrOut,
	}
	if mode == gate.Fix || o.urlGiven() {
		c, err := o.client()
		if err != nil {
			return err
		}
		req.Client = c
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	res, runErr := gate.Run(ctx, req)
	if o.Report != "" {
		if err := gate.WriteReport(o.Report, res); err != nil {
			fmt.Fprintf(o.IO.ErrOut, "gate: warning: --report %s: %v\n", o.Report, err)
		}
	}
	if runErr != nil {
		return cli.Failf("%v", runErr).WithHint("run 'gate " + o.verb() + " --help' for usage")
	}
	if o.check {
		if err := o.printCheck(res); err != nil {
			return err
		}
	}
	return exitFor(res)
}

func (o *RunOptions) verb() string {
	if o.check {
		return "check"
	}
	return "run"
}

// exitFor is gate's exit: the command's own status when it ran, else the
// refusal in the one stderr voice, with its hint.
func exitFor(res gate.Result) error {
	if res.Code == "" || res.Status == gate.StatusRan {
		if res.ExitCode == 0 {
			return nil
		}
		return cli.Silent(res.ExitCode)
	}
	msg := res.Message
	if res.Code != "" {
		msg = strings.ToLower(res.Code) + ": " + msg
	}
	return &cli.ExitError{Code: res.ExitCode, Err: errors.New(msg), Hint: res.Hint}
}

// printCheck prints check's verdict.
func (o *RunOptions) printCheck(res gate.Result) error {
	if o.Output.Resolve(o.IO) == cli.FormatJSON {
		return cli.WriteJSON(o.IO.Out, res)
	}
	verdict := "would run"
	switch res.ExitCode {
	case gate.ExitRefused:
		verdict = "refused"
	case gate.ExitApproval:
		verdict = "needs approval"
	case gate.ExitCannotRun:
		verdict = "cannot run"
	}
	fmt.Fprintf(o.IO.Out, "%s: %s\n", verdict, res.Command)
	if cl := res.Classification; cl != nil {
		fmt.Fprintf(o.IO.Out, "  classify: %s, bounded %v, risk %s\n", cl.Intent, cl.Bounded, cl.Risk)
	}
	fmt.Fprintf(o.IO.Out, "  mode: %s; sandbox: %s\n", res.Mode, res.Sandbox)
	if d := res.Decision; d != nil {
		fmt.Fprintf(o.IO.Out, "  policy: %s (hypothetical): %s\n", d.EnforcedEffect, d.Explanation)
	}
	return nil
}
