// Package gate is the command tree of the gate binary: run a command under
// govkit's governance (gate run), ask whether it would run (gate check),
// check what this machine and auditd can enforce (gate doctor), govern an
// agent's session over JSON Lines (gate session) and check its receipts
// offline (gate receipt verify).
package gate

import (
	"context"
	"fmt"
	"os"
	"os/user"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/gate"
	"github.com/govkit/govkit/pkg/sandbox"
)

// Main runs gate with the process's arguments and standard streams and
// returns its exit code. A sandboxed child never gets here: it is this
// same binary re-executed, and confines itself and execs its command in
// sandbox.MaybeChild first.
func Main() int {
	sandbox.MaybeChild()
	streams := cli.System()
	return cli.Main("gate", NewCmdGate(streams), streams, os.Args[1:])
}

// Options are the settings every subcommand shares.
type Options struct {
	IO      *cli.IOStreams
	URL     string
	Token   string
	CACert  string
	Context context.Context // nil: ends on SIGINT or SIGTERM

	flags *pflag.FlagSet
}

// NewCmdGate returns the gate root command with every subcommand.
func NewCmdGate(streams *cli.IOStreams) *cobra.Command {
	opts := &Options{IO: streams}
	root := &cobra.Command{
		Use:   "gate <command> [flags]",
		Short: "Stand between an agent's command and its execution",
		Long: `Gate is govkit's enforcement point: the one place an agent's command passes
before it runs. 'gate run' classifies the command, applies the operating mode
(readonly refuses every write), asks auditd's policy in fix mode, waits for
and consumes an approval, runs the command in a Landlock sandbox with a
timeout and an output bound, checks its blast radius, and records a receipt
in the audit chain. 'gate check' answers whether a command would run,
without running it. 'gate doctor' says what this machine and auditd can
enforce. 'gate session' governs a whole agent session: the runtime sends its
tool calls and results as JSON Lines and gets back allow, block and receipt
effects (its own exit codes: 'gate session --help'). 'gate hook' puts the
same session in a coding agent's hooks.

Exit status of run and check:

    N    run: the command's own exit status, when it ran
    0    check: it would run
    124  run: the command timed out; its whole process group was killed
    125  refused: read-only mode, policy deny, unbounded, rate limit, circuit
         open, approval denied or used, blast radius exceeded (output withheld)
    126  an approval is required or still pending (its id on stderr)
    127  gate could not run: usage, sandbox unavailable, governance missing`,
		Version: build.String(),
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Failf("no command given").WithHint("run 'gate run -- CMD', or 'gate --help' for every command")
		},
	}
	pf := root.PersistentFlags()
	cli.AddURLFlag(pf, &opts.URL, "", "auditd's `URL` (required in fix mode; default "+client.DefaultURL+" there)")
	pf.StringVar(&opts.Token, "token", "", "authenticate with `TOKEN`: to auditd, or for gate conversations to gate serve")
	cli.AddCACertFlag(pf, &opts.CACert)
	cli.AddConfigFlag(root)
	root.AddCommand(newCmdRun(opts, false), newCmdRun(opts, true), newCmdDoctor(opts), newCmdSession(opts), newCmdReceipt(opts),
		newCmdHook(opts), newCmdMCP(opts), newCmdServe(opts), newCmdConversations(opts))
	return root
}

// urlGiven reports whether --url was set (flag, GOVKIT_URL or config):
// readonly mode talks to auditd only then.
func (o *Options) urlGiven() bool {
	if o.flags == nil {
		return o.URL != ""
	}
	f := o.flags.Lookup("url")
	return f != nil && (f.Changed || cli.FlagSource(o.flags, "url") != "") && o.URL != ""
}

// client returns the client for --url (client.DefaultURL when unset).
func (o *Options) client() (*client.Client, error) {
	url := o.URL
	if url == "" {
		url = client.DefaultURL
	}
	opts := []client.Option{client.WithUserAgent("gate/" + build.String())}
	if o.Token != "" {
		opts = append(opts, client.WithToken(o.Token))
	} else if u, err := user.Current(); err == nil {
		// Local mode names the acting user in a header (DESIGN §11): an
		// approval gate asks for has a requester, as with approvals.
		opts = append(opts, client.WithUser(u.Username))
	}
	roots, err := client.LoadCACert(o.CACert)
	if err != nil {
		return nil, cli.CACertFailure(o.flags, err)
	}
	opts = append(opts, client.WithRootCAs(roots))
	c, err := client.New(url, opts...)
	if err != nil {
		return nil, cli.Fail(err, "pass --url http://HOST:PORT (or set GOVKIT_URL)")
	}
	if c.SendsTokenInClear() {
		fmt.Fprintf(o.IO.ErrOut, "gate: warning: --url %s is plain HTTP beyond loopback: the token crosses the network in the clear; use https:// (auditd --tls-cert)\n", url)
	}
	return c, nil
}

// exitCannotRun makes every usage, configuration or internal failure of
// run and check exit 127, never 3: 3 could be the command's own status.
func exitCannotRun(error) int { return gate.ExitCannotRun }
