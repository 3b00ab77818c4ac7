// Package approvals is the command tree of the approvals binary: humans list,
// inspect, approve and deny pending requests, and scripts request an approval
// and wait for the decision, all through auditd's API (DESIGN §7).
package approvals

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// Exit codes of request --wait (DESIGN §7); every other subcommand exits 0
// or cli.ExitFailure.
const (
	exitDenied  = 1
	exitNoGrant = 2 // expired, or no decision before --wait ended
)

// minPoll is the least time between two requests to auditd while following
// a request or the list: a server that answers at once (an error, or an old
// auditd without long-polls) must not be hammered.
const minPoll = time.Second

// Options are the settings every subcommand shares: the root's persistent
// flags and the dependencies tests replace.
type Options struct {
	IO     *cli.IOStreams
	URL    string
	Token  string
	Output cli.Format
	// CACert is --ca-cert: the CA that signs an https:// auditd's
	// certificate; "" trusts the system's CAs.
	CACert string

	// Now is the clock for what is shown: relative times ("3m ago") and
	// the zone of clock times in watch. Waiting uses real timers.
	Now func() time.Time
	// User names the acting user for auditd in local mode (the
	// X-Govkit-User header); "" sends none. With a token auditd ignores it.
	User func() string
	// Context ends a run early (Ctrl-C); nil means on SIGINT or SIGTERM.
	Context context.Context
	// MinPoll overrides minPoll (tests); 0 means minPoll.
	MinPoll time.Duration

	// pacing is the clock that keeps requests to auditd minPoll apart
	// while following a request or the list; nil is the real one. Tests
	// replace it to see and release each retry instead of sleeping through
	// seconds of them and counting what fit (issue 20: tests that don't
	// flake).
	pacing pacingClock

	// urlFromFlag is --url when it was given on the command line, so that
	// the commands we print for the user work as typed.
	urlFromFlag string
	// flags are the running command's, to name a flag as the user set it.
	flags *pflag.FlagSet
}

// NewCmdApprovals returns the approvals root command with every subcommand,
// the process's clock and the user from $USER.
func NewCmdApprovals(streams *cli.IOStreams) *cobra.Command {
	return newCmdTree(&Options{IO: streams, Now: time.Now, User: currentUser})
}

// newCmdTree returns the root with every subcommand, sharing opts.
func newCmdTree(opts *Options) *cobra.Command {
	root := newCmdRoot(opts)
	root.AddCommand(
		newCmdList(opts, nil),
		newCmdShow(opts, nil),
		newCmdDecide(opts, verbApprove, nil),
		newCmdDecide(opts, verbDeny, nil),
		newCmdRequest(opts, nil),
		newCmdWait(opts, nil),
		newCmdCancel(opts, nil),
		newCmdConsume(opts, nil),
		newCmdWatch(opts, nil),
	)
	return root
}

// newCmdRoot declares the root and its persistent flags; subcommands are
// added by the caller.
func newCmdRoot(opts *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals <command> [flags]",
		Short: "List, inspect, approve and deny approval requests; request one and wait",
		Long: `Approvals is the human side of auditd's approval workflow. An agent or a script
asks for approval of one action on one resource ("approvals request"); people
list what is waiting, read the request and its policy explanation, and approve
or deny it; the requester waits for the decision and acts on its exit status.

auditd opens a request only when its policy requires approval, with the
policy's quorum. A request is pending until quorum distinct approvers approve
it (approved), one approver denies it (denied), its time runs out (expired),
or its requester withdraws it (cancelled). An approved request releases one
execution of exactly its action: consuming it (gate does, or 'approvals
consume') makes it consumed, within 15 minutes of approval by default. All
requests are kept in history. The requester can never approve their own
request, and each approver counts once. Every change is also recorded in the
audit chain.

Who you are: with --token, the token's name. Without a tokens file auditd runs
in local mode and takes your name from $USER, which approvals sends with every
request.

Output is text on a terminal and JSON otherwise (choose with -o): one request
object per line, each with "schema_version": 1 and "id".

Exit status:

    0  success (request --wait, wait: approved)
    1  request --wait, wait: denied; request: the policy denies the action;
       consume: refused (consumed already, another action, stale)
    2  request --wait, wait: expired, cancelled, consumed already, or no
       decision before the wait ended
    3  usage error, auditd unreachable or refusing, internal failure`,
		Example: `  approvals list --pending
  approvals show apr_2al33qaosuvdf2jaxgt5fxm46g
  approvals approve apr_2al33qaosuvdf2jaxgt5fxm46g --reason "checked the migration"
  approvals deny apr_2al33qaosuvdf2jaxgt5fxm46g --reason "not during the freeze"
  approvals request --resource database:prod-db --action write --reason "fix orders" --wait 15m
  approvals wait apr_2al33qaosuvdf2jaxgt5fxm46g --timeout 10m
  approvals consume apr_2al33qaosuvdf2jaxgt5fxm46g --action-hash "$hash"
  approvals watch -o json | jq -r 'select(.status == "pending") | .id'`,
		Version: build.String(),
		Args:    cobra.NoArgs,
		// Without a command there is nothing to do: a usage error (exit
		// 3), not help and exit 0, so that a script with a typo fails.
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Failf("no command given").
				WithHint("run 'approvals list --pending', or 'approvals --help' for every command")
		},
	}
	pf := cmd.PersistentFlags()
	cli.AddURLFlag(pf, &opts.URL, client.DefaultURL, "auditd's `URL`")
	pf.StringVar(&opts.Token, "token", "", "authenticate with `TOKEN` (auditd with a tokens file)")
	cli.AddCACertFlag(pf, &opts.CACert)
	pf.VarP(&opts.Output, "output", "o", "output `format`: text or json (default: text on a terminal, json otherwise)")
	_ = cmd.RegisterFlagCompletionFunc("output",
		cobra.FixedCompletions([]string{string(cli.FormatText), string(cli.FormatJSON)}, cobra.ShellCompDirectiveNoFileComp))
	cli.KeepEnv(pf, "url", "GOVKIT_AUDIT_URL")
	cli.AddConfigFlag(cmd)
	return cmd
}

// prepare runs before every subcommand's own validation: it remembers a
// --url given on the command line.
func (o *Options) prepare(c *cobra.Command) {
	o.flags = c.Flags()
	o.urlFromFlag = ""
	if f := c.Flags().Lookup("url"); f != nil && f.Changed {
		o.urlFromFlag = o.URL
	}
}

// currentUser is $USER, else the account's name from the system.
func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// client returns the client for --url as the acting user, with a warning
// when its token would cross the network in the clear.
func (o *Options) client() (*client.Client, error) {
	c, err := o.newClient()
	if err != nil {
		return nil, err
	}
	if c.SendsTokenInClear() {
		fmt.Fprintf(o.IO.ErrOut, "approvals: warning: --url %s is plain HTTP beyond loopback: the token crosses the network in the clear; use https:// (auditd --tls-cert)\n", o.URL)
	}
	return c, nil
}

// newClient is client without the warning, for completions, which print
// nothing but what they offer.
func (o *Options) newClient() (*client.Client, error) {
	opts := []client.Option{client.WithUserAgent("approvals/" + build.String())}
	if o.Token != "" {
		opts = append(opts, client.WithToken(o.Token))
	}
	if o.User != nil {
		if name := o.User(); name != "" {
			opts = append(opts, client.WithUser(name))
		}
	}
	roots, err := client.LoadCACert(o.CACert) // nil without --ca-cert: the system's
	if err != nil {
		return nil, cli.CACertFailure(o.flags, err)
	}
	opts = append(opts, client.WithRootCAs(roots))
	c, err := client.New(o.URL, opts...)
	if err != nil {
		return nil, cli.Fail(err, "pass --url http://HOST:PORT (or set GOVKIT_URL)")
	}
	return c, nil
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

func (o *Options) minPoll() time.Duration {
	if o.MinPoll > 0 {
		return o.MinPoll
	}
	return minPoll
}

// pacingClock is what paces the requests to auditd: the time, and a sleep
// that ends early, with ctx's error, when ctx ends.
type pacingClock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// realClock is the process's clock.
type realClock struct{}

func (realClock) Now() time.Time                                   { return time.Now() }
func (realClock) Sleep(ctx context.Context, d time.Duration) error { return cli.Sleep(ctx, d) }

// pacingStart is the start of a request to auditd, for pace.
func (o *Options) pacingStart() time.Time {
	if o.pacing == nil {
		return time.Now()
	}
	return o.pacing.Now()
}

// pace returns minPoll after start, or when ctx ends (with its error), so
// that two requests to auditd never start less than minPoll apart, even
// when auditd answers at once (an error, or an old auditd without
// long-polls).
func (o *Options) pace(ctx context.Context, start time.Time) error {
	c := o.pacing
	if c == nil {
		c = realClock{}
	}
	d := o.minPoll() - c.Now().Sub(start)
	if d <= 0 {
		return ctx.Err()
	}
	return c.Sleep(ctx, d)
}

func (o *Options) format() cli.Format { return o.Output.Resolve(o.IO) }

// command is a command line the user can run next, as they invoked us: with
// --url when they gave it on the command line (never with --token).
func (o *Options) command(args string) string {
	if o.urlFromFlag != "" {
		return "approvals " + args + " --url " + o.urlFromFlag
	}
	return "approvals " + args
}

// apiError turns an error from auditd into the one stderr voice: the
// server's own message, and a hint that says what to do. It is the only
// place that reads status codes and refusal codes.
func (o *Options) apiError(err error, id string) error {
	var ae *client.Error
	if errors.As(err, &ae) {
		msg := ae.Message
		switch {
		case ae.Code == approval.RefusedSelfApproval:
			return cli.Failf("%s", msg).WithHint(fmt.Sprintf("another approver must decide it: ask one to run '%s'", o.command("approve "+id)))
		case ae.Code == approval.RefusedExpired:
			return cli.Failf("%s", msg).WithHint("ask the requester for a new request")
		case ae.Code == approval.RefusedAlreadyVoted:
			return cli.Failf("%s", msg).WithHint(fmt.Sprintf("'%s' shows who has voted", o.command("show "+id)))
		case ae.Code == approval.RefusedNotPending:
			return cli.Failf("%s", msg).WithHint(fmt.Sprintf("'%s' shows how it was decided", o.command("show "+id)))
		case ae.Code == govapi.CodePrincipalNotAllowed:
			return cli.Failf("%s", msg).WithHint("the token's principal decides; ask an admin for a token that acts for the right principal")
		case ae.Code == govapi.CodeTagsNotAllowed:
			return cli.Failf("%s", msg).WithHint("leave out --tags: auditd takes the resource's tags from its infra file")
		case ae.Code == govapi.CodeNoPolicy:
			return cli.Failf("%s", msg).WithHint("approval requests come from policy: start auditd with --policy FILE")
		case ae.StatusCode == http.StatusUnauthorized:
			hint := "pass --token TOKEN (or set GOVKIT_TOKEN)"
			if o.Token != "" {
				hint = "the token was refused: check --token (or GOVKIT_TOKEN); 'auditd token create' makes a new one"
			}
			return cli.Failf("auditd refused the request: %s", msg).WithHint(hint)
		case ae.StatusCode == http.StatusForbidden:
			return cli.Failf("auditd refused the request: %s", msg).
				WithHint("use a token with the right role: approver to decide, agent to request, auditor to read")
		case ae.StatusCode == http.StatusNotFound && id != "":
			return cli.Failf("%s", msg).WithHint(fmt.Sprintf("check the ID; '%s' lists the recent requests", o.command("list")))
		case ae.StatusCode == http.StatusNotFound:
			return cli.Failf("auditd at %s has no approvals API: %s", o.URL, msg).
				WithHint("upgrade auditd, or pass --url naming one that has it")
		}
		return cli.Failf("auditd answered %d: %s", ae.StatusCode, msg)
	}
	if errors.Is(err, context.Canceled) {
		return cli.Failf("interrupted")
	}
	if client.IsCertificateError(err) {
		return cli.Failf("auditd at %s: %s", o.URL, client.NetReason(err)).WithHint(cli.CACertHint)
	}
	if client.IsTransient(err) {
		return cli.Failf("cannot reach auditd at %s: %s", o.URL, client.NetReason(err)).
			WithHint("start auditd, or pass --url (or set GOVKIT_URL) naming a running one")
	}
	return cli.Fail(err, "")
}

// outage describes a transient failure for the one line that says auditd
// is being retried.
func (o *Options) outage(err error) string {
	var ae *client.Error
	if errors.As(err, &ae) {
		return fmt.Sprintf("auditd at %s is unavailable (%d: %s)", o.URL, ae.StatusCode, termtext.OneLine(termtext.Truncate(ae.Message, 200)))
	}
	return fmt.Sprintf("cannot reach auditd at %s (%s)", o.URL, client.NetReason(err))
}
