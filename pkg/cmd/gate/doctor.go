package gate

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/gate"
	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/sandbox"
)

func newCmdDoctor(opts *Options) *cobra.Command {
	var spool, agent, dir, command string
	cmd := &cobra.Command{
		Use:   "doctor [flags]",
		Short: "Say which sandbox levels and modes this machine supports, and whether auditd, its policy and the token work",
		Long: `Doctor checks what gate can enforce here and now:

  - the kernel: the Landlock ABI and seccomp, and so which --sandbox levels
    gate can enforce (it never degrades silently: a level the kernel cannot
    enforce makes gate run exit 127);
  - auditd (--url, GOVKIT_URL; default ` + client.DefaultURL + `): whether it
    answers, whether the token is accepted, and whether a policy is loaded
    and enforcing (not dry-run): what fix mode requires;
  - the spool: incidents waiting to be sent to auditd.

With --agent AGENT it checks a coding agent's gate hook instead: that the
agent's settings register it, and that each registered command, run as the
agent runs it, allows a read, lets a write through (or asks), refuses a stop
while the write is unchecked, allows reading it back, then lets the agent stop.

Exit status: 0 healthy; 1 a problem (a sandbox level unavailable, or an auditd
named with --url that fails a fix-mode check); 3 usage error.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.flags = c.Flags()
			if agent != "" {
				return hookDoctor(opts, agent, dir, command)
			}
			return doctorRun(opts, spool)
		},
	}
	cmd.Flags().StringVar(&spool, "spool", "", "the incident spool `DIR` (default $XDG_STATE_HOME/govkit/spool)")
	cmd.Flags().StringVar(&agent, "agent", "", "check the gate hook of coding `AGENT` instead: "+strings.Join(hook.Agents(), ", "))
	cmd.Flags().StringVar(&dir, "dir", "", "with --agent: the project `DIR` whose settings to read (default: the working directory)")
	cmd.Flags().StringVar(&command, "hook-command", "", "with --agent: check this hook `COMMAND` instead of the registered ones")
	cli.SkipConfig(cmd.Flags(), "agent", "dir", "hook-command")
	_ = cmd.RegisterFlagCompletionFunc("agent", cobra.FixedCompletions(hook.Agents(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func doctorRun(o *Options, spoolDir string) error {
	w := o.IO.Out
	problems := 0
	bad := func(format string, args ...any) {
		problems++
		fmt.Fprintf(w, "  ✗ "+format+"\n", args...)
	}
	good := func(format string, args ...any) { fmt.Fprintf(w, "  ✓ "+format+"\n", args...) }
	info := func(format string, args ...any) { fmt.Fprintf(w, "  - "+format+"\n", args...) }

	fmt.Fprintln(w, "sandbox:")
	sup := sandbox.Probe()
	if sup.LandlockABI > 0 {
		good("landlock abi %d", sup.LandlockABI)
	} else {
		bad("landlock unavailable: %s", sup.LandlockError)
	}
	if sup.Seccomp {
		good("seccomp")
	} else {
		bad("seccomp unavailable: %s", sup.SeccompError)
	}
	for _, l := range []sandbox.Level{sandbox.ReadOnly, sandbox.Isolated} {
		if err := sup.Check(l); err != nil {
			bad("--sandbox %s: %v", l, err)
		} else {
			good("--sandbox %s can be enforced", l)
		}
	}

	fmt.Fprintln(w, "modes:")
	good("readonly: needs no auditd")
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	named := o.urlGiven()
	fail := bad
	if !named {
		// Not asked for: fix mode is simply not set up here.
		fail = info
	}
	if _, err := c.Health(ctx); err != nil {
		fail("fix: auditd at %s does not answer (%s)", c.BaseURL(), client.Reason(err))
	} else if st, err := c.Governance(ctx); err != nil {
		fail("fix: auditd at %s refuses the token: %s", c.BaseURL(), client.Reason(err))
	} else {
		good("auditd at %s answers (auth: %s; chain head %d)", c.BaseURL(), st.Auth, st.Chain.HeadSeq)
		switch {
		case !st.Policy.Loaded:
			fail("fix: no policy loaded (start auditd with --policy FILE)")
		case st.Policy.DryRun:
			fail("fix: the policy %s is in dry-run: fix mode refuses to start", st.Policy.File)
		default:
			good("fix: policy %s in force (sha256 %.12s…)", st.Policy.File, st.Policy.SHA256)
		}
	}

	fmt.Fprintln(w, "spool:")
	if spoolDir == "" {
		spoolDir = gate.DefaultSpoolDir()
	}
	pending, err := gate.Spool{Dir: spoolDir}.Pending()
	switch {
	case err != nil:
		bad("%v", err)
	case len(pending) == 0:
		good("%s: empty", spoolDir)
	default:
		info("%s: %d incident(s) waiting for auditd (sent at gate's next contact)", spoolDir, len(pending))
	}
	if problems > 0 {
		return cli.Silent(1)
	}
	return nil
}
