// Package classify is the command tree of the classify binary: it reads shell
// commands from arguments or standard input and reports, per command, whether
// it is read-only, bounded and how risky it is (DESIGN §4).
package classify

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/gitconfig"
	"github.com/govkit/govkit/pkg/intent"
)

// ClassifyOptions are the parsed flags and the dependencies of one run.
type ClassifyOptions struct {
	IO *cli.IOStreams
	// Classify classifies one command. Nil means an intent.Classifier built
	// from the flags; tests inject a fake to pin the printed output.
	Classify func(command string) intent.Result
	// RepoConfig reads a repository's risky git settings for --cwd.
	RepoConfig intent.RepoConfigFunc

	Output cli.Format
	Cwd    string
	// cwdSource names where --cwd's value came from when it was not the
	// command line (GOVKIT_CWD, a config file), for error messages.
	cwdSource string
	Null      bool
	// Args is the command given as arguments; empty means read a batch
	// from standard input.
	Args []string
}

// NewCmdClassify returns the classify root command. It only declares and
// validates flags; runF, when not nil, replaces the run function (tests).
func NewCmdClassify(streams *cli.IOStreams, runF func(*ClassifyOptions) error) *cobra.Command {
	opts := &ClassifyOptions{IO: streams, RepoConfig: gitconfig.IntentRisks}
	cmd := &cobra.Command{
		Use:   "classify [flags] [--] [COMMAND...]",
		Short: "Decide whether a shell command is read-only, bounded, and how risky it is",
		Long: `Classify decides, from a shell command's syntax alone, whether the command is
read-only, whether it terminates on its own, and how risky it is. It never runs
the command.

With arguments, classify reads one command: the arguments are joined with single
spaces, as sh -c "$*" would see them, so quote the whole command as one argument
when its own quoting matters. Flags are read only before the command; put --
before a command that starts with "-" or with the word "completion".

Without arguments, classify reads commands from standard input, one per line
(blank lines are skipped), or NUL-separated with -0 so that a command may span
lines, and prints each result as soon as it is decided. A line over 1 MiB,
invalid UTF-8 or an input without any command is an error (exit 3); results
already printed stay printed.

Output is text on a terminal and JSON Lines otherwise (choose with -o). Each JSON
object carries "schema_version": 1, "command", "intent", "bounded",
"interactive", "risk", "action_class", "reasons", "suggested_rewrite" and
"auto_recoverable".

Exit status (in a batch the worst wins: 3, then 1, then 2, then 0):

    0  every command is read-only and bounded
    1  some command writes, or cannot be proven read-only (write_or_unknown)
    2  no command writes, but some may not terminate (follow, pager, REPL, TTY)
    3  usage error, bad input or internal failure`,
		Example: `  # One command; the exit code is the verdict.
  classify -- rm -rf /tmp/build
  classify 'journalctl -u nginx -f'

  # A file of commands, one per line, as JSON Lines.
  classify -o json < commands.txt

  # NUL-separated commands, like find -print0 output: they may span lines.
  printf '%s\0' 'ls -la' 'for f in *.log; do
    wc -l "$f"
  done' | classify -0

  # Script on the exit code.
  if classify -- "$cmd" >/dev/null; then
    sh -c "$cmd"
  else
    echo "needs review: $cmd" >&2
  fi

  # Check git commands against the repository they will run in.
  classify --cwd ~/src/app -- git status`,
		Version: build.String(),
		Args:    cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Args = args
			opts.cwdSource = cli.FlagSource(c.Flags(), "cwd")
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return classifyRun(opts)
		},
	}
	// Everything from the first argument on is the command: `classify ls -la`
	// must not read -la as classify's flags.
	cmd.Flags().SetInterspersed(false)

	cli.AddOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Cwd, "cwd", "",
		"the `DIR` the commands will run in: check git commands against its repository config")
	cmd.Flags().BoolVarP(&opts.Null, "null", "0", false,
		"read NUL-separated commands from standard input instead of lines")
	_ = cmd.MarkFlagDirname("cwd")
	cli.SkipConfig(cmd.Flags(), "null")
	cli.AddConfigFlag(cmd)
	cmd.AddCommand(newCmdHook(streams, nil), newCmdDoctor(streams, nil))
	return cmd
}

func (opts *ClassifyOptions) validate() error {
	if opts.Cwd != "" {
		problem := ""
		fi, err := os.Stat(opts.Cwd)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problem = "no such directory"
		case err != nil:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			problem = err.Error()
		case !fi.IsDir():
			problem = "not a directory"
		}
		if problem != "" {
			hint := "pass an existing directory to --cwd"
			if opts.cwdSource != "" {
				problem += " (set by " + opts.cwdSource + ")"
				hint += ", or fix " + opts.cwdSource
			}
			return cli.Failf("--cwd %s: %s", opts.Cwd, problem).WithHint(hint)
		}
	}
	if len(opts.Args) > 0 {
		if opts.Null {
			return cli.Failf("--null applies to commands read from standard input, not to a command given as arguments").
				WithHint("drop --null, or pipe the commands to classify --null")
		}
		command := opts.command()
		if strings.Trim(command, " \t\n") == "" {
			return cli.Failf("the command is empty").
				WithHint("pass the command to classify after the flags, e.g. classify -- ls -la")
		}
		if !utf8.ValidString(command) {
			return cli.Failf("the command is not valid utf-8")
		}
		return nil
	}
	if opts.IO.IsStdinTTY() {
		return cli.Failf("no command given and standard input is a terminal").
			WithHint("pass a command as arguments (classify -- ls -la), or pipe commands to standard input, one per line or NUL-separated with --null")
	}
	return nil
}

// command is the command given as arguments: joined with single spaces, as
// sh -c "$*" would see it.
func (opts *ClassifyOptions) command() string { return strings.Join(opts.Args, " ") }

// intentOptions configures the classifier: --cwd turns on the repository
// config check for git commands (DESIGN §4).
func (opts *ClassifyOptions) intentOptions() intent.Options {
	if opts.Cwd == "" {
		return intent.Options{}
	}
	return intent.Options{Dir: opts.Cwd, RepoConfig: opts.RepoConfig}
}

func classifyRun(opts *ClassifyOptions) error {
	classify := opts.Classify
	if classify == nil {
		classify = intent.New(opts.intentOptions()).Classify
	}
	p := newPrinter(opts.IO.Out, opts.Output.Resolve(opts.IO))

	if len(opts.Args) > 0 {
		r := classify(opts.command())
		if err := p.print(&r); err != nil {
			return err
		}
		if err := p.flush(); err != nil {
			return err
		}
		return verdictError(r.Verdict())
	}
	return classifyBatch(opts, classify, p)
}

// classifyBatch classifies every record on standard input, printing each
// result before reading on, and returns the worst verdict. An input error
// ends the batch with exit 3 after the results printed so far.
func classifyBatch(opts *ClassifyOptions, classify func(string) intent.Result, p *printer) error {
	records := newRecordReader(opts.IO.In, opts.Null)
	var texts recordStrings
	worst, n := intent.VerdictReadOnly, 0
	for {
		// Flush before a read that may block, so that a caller feeding
		// commands one at a time gets each answer at once, while a large
		// file is still written in big chunks.
		if !records.ready() {
			if err := p.flush(); err != nil {
				return err
			}
		}
		rec, err := records.next()
		if errors.Is(err, errEndOfInput) {
			break
		}
		if err != nil {
			if ferr := p.flush(); ferr != nil {
				return ferr
			}
			return cli.Failf("%v", err)
		}
		if isBlank(rec) {
			continue
		}
		n++
		r := classify(texts.text(rec))
		if err := p.print(&r); err != nil {
			return err
		}
		if v := r.Verdict(); v.Worse(worst) {
			worst = v
		}
	}
	if err := p.flush(); err != nil {
		return err
	}
	if n == 0 {
		hint := "pipe commands to classify, one per line, or pass one as arguments"
		if opts.Null {
			hint = "pipe NUL-separated commands to classify --null, or pass one as arguments"
		}
		return cli.Failf("standard input holds no command").WithHint(hint)
	}
	return verdictError(worst)
}

// verdictError turns a verdict into the exit code of DESIGN §4, silently.
func verdictError(v intent.Verdict) error {
	if v == intent.VerdictReadOnly {
		return nil
	}
	return cli.Silent(int(v))
}

func isBlank(rec []byte) bool {
	for _, b := range rec {
		if b != ' ' && b != '\t' && b != '\n' {
			return false
		}
	}
	return true
}
