package classify

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/hookrun"
)

// DoctorOptions are the parsed flags and dependencies of `classify doctor`.
type DoctorOptions struct {
	IO    *cli.IOStreams
	Agent string
	Dir   string // the project directory (default: the working directory)
	Home  string // the user's home (default: os.UserHomeDir)
	Self  string // this binary (default: os.Executable)
	// LookPath finds a program on PATH (exec.LookPath).
	LookPath func(string) (string, error)
}

// doctorSamples are the commands round-tripped through a registered hook:
// the first must be allowed, the second must not.
var doctorSamples = [2]string{"ls -la", "rm -rf /tmp/govkit-doctor-sample"}

func newCmdDoctor(streams *cli.IOStreams, runF func(*DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{IO: streams, LookPath: exec.LookPath}
	cmd := &cobra.Command{
		Use:   "doctor [--agent AGENT]",
		Short: "Check that coding agents run classify as their hook, and that it answers",
		Long: `Doctor checks that "classify" on PATH is this binary, that the agent's settings
register "classify hook" with a command that exists, and sends a read-only and a
write sample event through each registered command, reading the answers as the
agent would. It prints what is wrong and how to fix it.

Without --agent it checks every agent whose settings files exist.

Exit status: 0 healthy, 1 problems found, 3 usage error.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Agent != "" {
				if _, ok := hook.Setups[opts.Agent]; !ok {
					return cli.Failf("--agent %q is not a supported agent", opts.Agent).WithHint(agentHint)
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "check only this `AGENT`: "+strings.Join(hook.Agents(), ", "))
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "the project `DIR` whose agent settings to check (default: the working directory)")
	cli.SkipConfig(cmd.Flags(), "agent", "dir")
	_ = cmd.RegisterFlagCompletionFunc("agent", cobra.FixedCompletions(hook.Agents(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// doctor collects findings and prints them as it goes.
type doctor struct {
	w        io.Writer
	problems int
}

func (d *doctor) ok(format string, args ...any) {
	fmt.Fprintf(d.w, "ok    "+format+"\n", args...)
}

func (d *doctor) fail(fix, format string, args ...any) {
	d.problems++
	fmt.Fprintf(d.w, "FAIL  "+format+"\n", args...)
	if fix != "" {
		fmt.Fprintf(d.w, "      fix: %s\n", fix)
	}
}

func doctorRun(opts *DoctorOptions) error {
	if opts.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return cli.Failf("finding the working directory: %v", err).WithHint("pass --dir")
		}
		opts.Dir = wd
	}
	if opts.Home == "" {
		opts.Home, _ = os.UserHomeDir()
	}
	if opts.Self == "" {
		opts.Self = cli.SelfPath("classify")
	}
	d := &doctor{w: opts.IO.Out}
	d.checkPath(opts)

	agents := hook.Agents()
	if opts.Agent != "" {
		agents = []string{opts.Agent}
	}
	checked := 0
	for _, agent := range agents {
		files := hookrun.SettingsFiles(hook.Setups[agent], opts.Dir, opts.Home)
		if opts.Agent == "" && len(files) == 0 {
			continue // that agent is not set up here
		}
		checked++
		d.checkAgent(opts, agent, files)
	}
	if checked == 0 {
		d.fail("run classify hook install --agent AGENT and add what it prints",
			"no agent settings found in %s or %s", opts.Dir, opts.Home)
	}
	if d.problems > 0 {
		fmt.Fprintf(opts.IO.Out, "%d problem(s) found\n", d.problems)
		return cli.Silent(1)
	}
	fmt.Fprintln(opts.IO.Out, "healthy")
	return nil
}

// checkPath: agents run "classify" from PATH unless the hook names a path.
func (d *doctor) checkPath(opts *DoctorOptions) {
	onPath, err := opts.LookPath("classify")
	if err != nil {
		d.ok("classify is not on PATH; hook commands must name it by absolute path (%s)", opts.Self)
		return
	}
	abs, _ := filepath.Abs(onPath)
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	if abs != opts.Self {
		d.fail("put "+filepath.Dir(opts.Self)+" first on PATH, or name "+opts.Self+" in the hook command",
			"classify on PATH is %s, not this binary (%s): a hook that runs \"classify\" gets the other one", abs, opts.Self)
		return
	}
	d.ok("classify on PATH is this binary (%s)", abs)
}

func (d *doctor) checkAgent(opts *DoctorOptions, agent string, files []string) {
	s := hook.Setups[agent]
	install := "run classify hook install --agent " + agent + " and add what it prints"
	if len(files) == 0 {
		d.fail(install, "%s: no settings file (looked for %s)", agent, strings.Join(s.Files, ", "))
		return
	}
	var commands []string
	for _, f := range files {
		data, err := hookrun.ReadSettings(f)
		if err != nil {
			d.fail("fix or remove "+f, "%s: %v", agent, err)
			continue
		}
		cmds, err := s.RegisteredCommands(f, data)
		if err != nil {
			d.fail("fix the syntax of "+f, "%s: %v", agent, err)
			continue
		}
		for _, c := range cmds {
			d.ok("%s: %s registers %q", agent, f, c)
		}
		commands = append(commands, cmds...)
	}
	if len(commands) == 0 {
		d.fail(install, "%s: no settings file registers classify hook (read %s)", agent, strings.Join(files, ", "))
		return
	}
	for _, c := range commands {
		d.checkCommand(opts, agent, s, c)
	}
}

// checkCommand checks that the registered command exists and answers the
// samples as it should, read as the agent reads it.
func (d *doctor) checkCommand(opts *DoctorOptions, agent string, s hook.Setup, command string) {
	argv := hookrun.Argv(command, s.Script)
	if s.Script {
		if fi, err := os.Stat(command); err != nil || fi.Mode()&0o111 == 0 {
			d.fail("chmod +x "+command, "%s: %s is not executable, so the agent skips it", agent, command)
			return
		}
	} else if prog := hookrun.Program(command); prog != "" {
		if _, err := opts.LookPath(prog); err != nil {
			d.fail("use the absolute path printed by classify hook install --agent "+agent,
				"%s: the hook command's program %s is not found (%v)", agent, prog, err)
			return
		}
	}
	if !strings.Contains(command, "--agent "+agent) && !strings.Contains(command, "--agent="+agent) && !s.Script {
		d.fail("register classify hook --agent "+agent, "%s: the hook command does not say --agent %s: %q", agent, agent, command)
	}
	want := [2]string{"allow", "ask or deny"}
	for i, sample := range doctorSamples {
		res := hookrun.Run(argv, opts.Dir, s.Sample(sample, opts.Dir))
		got, detail := s.Outcome(res.Stdout, res.Exit), res.Detail
		good := got == hook.Allow
		if i == 1 {
			good = got != hook.Allow
		}
		if !good {
			d.fail("run the command by hand with a sample event (classify hook --help) and see classify doctor's output above",
				"%s: %q answered %s for %q, want %s%s", agent, command, got, sample, want[i], detail)
			continue
		}
		d.ok("%s: %q → %s", agent, sample, got)
	}
}
