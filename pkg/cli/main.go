package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Main runs root with args and returns the process exit code. Every govkit
// binary's main is os.Exit(<name>.Main()), which ends here:
//
//   - flags are parsed by cobra; before a command runs, the flags the user
//     did not set are filled from GOVKIT_* variables and the config file
//     (LoadConfig), so command code only reads its own typed flag fields;
//   - errors are printed once, in the one stderr voice, and mapped to an
//     exit code (report); cobra prints nothing itself;
//   - cobra's own errors (unknown flag, bad flag value, bad arguments) are
//     usage errors: exit 3 with a hint to run --help;
//   - a panic is an internal error: exit 3 with an error line, never a stack
//     dump into an agent's transcript and never exit 0.
func Main(prog string, root *cobra.Command, streams *IOStreams, args []string) (code int) {
	var running *cobra.Command // the command whose own code started
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(streams.ErrOut, "%s: error: internal error: %v\n", prog, r)
			fmt.Fprintf(streams.ErrOut, "%s: hint: this is a bug in %s; please report it with the input that caused it\n", prog, prog)
			code = ExitFailure
			if f, ok := failClosers[running]; ok {
				code = f(fmt.Errorf("internal error: %v", r))
			}
		}
	}()

	if args == nil {
		args = []string{} // nil would make cobra read os.Args itself
	}
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return Fail(err, helpHint(c))
	})

	// ran records whether a command's own code started: an error that is not
	// an *ExitError and arrives before that came from cobra's argument
	// checks, so it is a usage error and gets the --help hint.
	ran := false
	loader := NewConfigLoader(prog)
	VisitCommands(root, func(c *cobra.Command) {
		if c.RunE == nil && c.Run == nil {
			return
		}
		preRunE, preRun := c.PreRunE, c.PreRun
		c.PreRun = nil
		c.PreRunE = func(c *cobra.Command, args []string) error {
			if err := loader.Load(c); err != nil {
				return err
			}
			if preRunE != nil {
				return preRunE(c, args)
			}
			if preRun != nil {
				preRun(c, args)
			}
			return nil
		}
		if runE := c.RunE; runE != nil {
			c.RunE = func(c *cobra.Command, args []string) error {
				ran, running = true, c
				return runE(c, args)
			}
		} else {
			run := c.Run
			c.Run = func(c *cobra.Command, args []string) {
				ran = true
				run(c, args)
			}
		}
	})

	fixCompletionCmd(root, args)

	cmd, err := root.ExecuteC()
	usageHint := ""
	if !ran && cmd != nil {
		usageHint = helpHint(cmd)
	}
	code = report(streams.ErrOut, prog, err, usageHint)
	if f, ok := failClosers[cmd]; ok && code == ExitFailure {
		code = f(err)
	}
	return code
}

// failClosers answer for commands whose callers take exit 3 as "go ahead".
var failClosers = map[*cobra.Command]func(error) int{}

// FailClosed makes f answer when c fails with a usage, config or internal
// error (exit 3): f writes whatever c's caller needs to stop and returns the
// exit code. classify hook uses it because every coding agent lets a tool
// call run when its hook exits 3 (DESIGN §4: fail closed).
func FailClosed(c *cobra.Command, f func(err error) int) { failClosers[c] = f }

// fixCompletionCmd makes cobra's default completion command fail on an
// unknown shell: left alone, `prog completion tcsh` prints help and exits 0,
// and a binary never exits 0 after an error (DESIGN §3). Cobra adds the
// command itself only when it is being called; this call does the same.
func fixCompletionCmd(root *cobra.Command, args []string) {
	root.InitDefaultCompletionCmd(args...)
	for _, c := range root.Commands() {
		if c.Name() == "completion" && c.Run == nil && c.RunE == nil {
			// Runnable now, so cobra checks its NoArgs and reports the
			// unknown shell; without one it prints help, as before.
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
}

func helpHint(c *cobra.Command) string {
	return fmt.Sprintf("run '%s --help' for usage", c.CommandPath())
}

// VisitCommands calls f on c and every command below it, parents first.
func VisitCommands(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		VisitCommands(sub, f)
	}
}
