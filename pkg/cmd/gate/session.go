package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/analytics"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/receiptkey"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/sessionloop"
)

// SessionOptions are the flags of gate session.
type SessionOptions struct {
	*Options

	Record           string
	Force            bool
	Replay           string
	Emit             bool
	MetricsAddr      string
	MetricsURLFile   string
	ReceiptKey       string
	StrictResolution bool
}

func newCmdSession(opts *Options) *cobra.Command {
	so := &SessionOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "session [flags]",
		Short: "Govern an agent's session: events in, effects out, JSON Lines on stdio",
		Long: `Session runs govkit's session reducer (the
RESOLVING → READING → VERIFYING workflow, resolved resources, read budgets,
search before read, the strict tool-call envelope, signed receipts) for an
agent runtime in any language. The runtime writes one JSON event per line on
stdin; gate writes the effects of each, one JSON object per line with its
"seq", on stdout, at once. One process is one connection and one session.

  in:  {"type":"tool_call","call_id":"c1","name":"restart","args":{"target":"web-1"}}
  out: {"type":"block","seq":4,"call_id":"c1","response":{"ok":false,"error":{"code":"STRICT_RESOLUTION",...}}}

The first event is session_start{session_id, workspace_root?, tools, config?};
then tool_call, tool_result, resolve, final, llm_text, clear and tick
(docs/session.md has every field, effect and code). gate stamps each event with the time ("at") and
session_start with a seed, a connection id of its own and the workspace's
real path; a client that sends those fields gets a RESERVED_FIELD error.
A bad line (not JSON, an unknown field, longer than 1 MiB) gets an error
effect with a code, and the session goes on unchanged.

--record FILE keeps the stamped events and their effects, interleaved, as a
log that --replay FILE feeds to a fresh session and compares: it prints the
first effect that differs (the log's line, expected and got) or "identical".
--replay FILE --emit prints the effects instead of comparing them (a
transcript of stamped events in, its effects out). Replay uses the same
--receipt-key, or the receipts differ.

Receipts are signed with the key in --receipt-key (created 0600 if absent;
it never appears in any output). With --url every receipt is also appended
to auditd's audit chain as a tool_receipt event; if auditd does not take
them the session goes on, and gate exits 3 at the end saying how many are
missing.

Exit status: 0 at the end of input; 1 --replay found a divergence; 3 usage,
an unreadable log or key, receipts auditd did not record, or the reader of
stdout went away.`,
		Example: `  gate session < events.jsonl
  coproc GATE { gate session --record run.jsonl; }   # bash: write events to ${GATE[1]}, read effects from ${GATE[0]}
  gate session --replay run.jsonl
  gate session --metrics-addr 127.0.0.1:9464 --url http://127.0.0.1:1199 --token "$TOKEN"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			so.flags = c.Flags()
			return so.run()
		},
	}
	f := cmd.Flags()
	f.StringVar(&so.Record, "record", "", "write the stamped events and their effects to `FILE` (created 0600; refused if it exists)")
	f.BoolVar(&so.Force, "force", false, "let --record replace an existing file")
	f.StringVar(&so.Replay, "replay", "", "replay the recorded `LOG` (- for standard input) and report the first divergence (exit 1)")
	f.BoolVar(&so.Emit, "emit", false, "with --replay: print the effects the log's events produce instead of comparing them")
	f.StringVar(&so.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on `ADDR` (HOST:PORT) at /metrics")
	f.StringVar(&so.MetricsURLFile, "metrics-url-file", "", "once serving --metrics-addr, write its URL (http://HOST:PORT) to `FILE`, replaced atomically, removed at the end: with port 0, how a script learns the address")
	f.StringVar(&so.ReceiptKey, "receipt-key", "", "sign receipts with the key in `FILE`, created 0600 if absent (default: govkit's receipt key)")
	f.BoolVar(&so.StrictResolution, "strict-resolution", true, "block writes on resources not resolved first, unless session_start's config says otherwise (GOVKIT_STRICT_RESOLUTION)")
	cli.SkipConfig(f, "record", "force", "replay", "emit")
	return cmd
}

func (o *SessionOptions) run() error {
	if o.Replay != "" && (o.Record != "" || o.MetricsAddr != "") {
		return cli.Failf("--replay compares a recorded log; it records nothing and serves no metrics").
			WithHint("drop --record and --metrics-addr, or --replay")
	}
	if o.MetricsURLFile != "" && o.MetricsAddr == "" {
		return cli.Failf("--metrics-url-file needs --metrics-addr: it names the address the metrics are served on").
			WithHint("pass --metrics-addr 127.0.0.1:0 with --metrics-url-file, or leave --metrics-url-file out")
	}
	if o.Emit && o.Replay == "" {
		return cli.Failf("--emit only applies to --replay").WithHint("pass --replay LOG --emit")
	}
	if o.Force && o.Record == "" {
		return cli.Failf("--force only applies to --record").WithHint("pass --record FILE --force")
	}
	opts, err := o.sessionOptions()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	if o.Replay != "" {
		return o.replay(ctx, opts)
	}
	return o.live(ctx, opts)
}

// sessionOptions loads the receipt key and the driver's defaults.
func (o *SessionOptions) sessionOptions() (session.Options, error) {
	path := o.ReceiptKey
	if path == "" {
		p, err := receiptkey.DefaultPath()
		if err != nil {
			return session.Options{}, cli.Fail(err, "pass --receipt-key FILE")
		}
		path = p
	}
	key, err := receiptkey.LoadOrCreate(path)
	if err != nil {
		return session.Options{}, cli.Failf("%s: %v", cli.FlagName(o.flags, "receipt-key"), err).
			WithHint("pass --receipt-key FILE naming a key file of yours (created 0600 if absent)")
	}
	opts := session.Options{ReceiptKey: key}
	if f := o.flags.Lookup("strict-resolution"); f.Changed || cli.FlagSource(o.flags, "strict-resolution") != "" {
		v := o.StrictResolution
		opts.StrictResolution = &v
	}
	return opts, nil
}

func (o *SessionOptions) replay(ctx context.Context, opts session.Options) error {
	name, f, done, err := cli.OpenInput(o.Replay, o.IO.In)
	if err != nil {
		return cli.Failf("%s: %v", name, err).WithHint("pass --replay LOG, a file written by gate session --record")
	}
	defer done()
	if o.Emit {
		if _, err := sessionloop.Replay(ctx, opts, f, o.IO.Out); err != nil {
			return cli.Failf("--replay %s: %v", o.Replay, err).WithHint("replay a file written by gate session --record")
		}
		return nil
	}
	sum, err := sessionloop.Replay(ctx, opts, f, nil)
	var d *sessionloop.Divergence
	switch {
	case errors.As(err, &d):
		fmt.Fprintf(o.IO.Out, "divergence at line %d of %s, in the effects of the event on line %d\n", d.Line, o.Replay, d.EventLine)
		fmt.Fprintf(o.IO.Out, "  expected: %s\n  got:      %s\n", jsonOrNone(d.Expected, "no further effect"), jsonOrNone(d.Got, "no further effect"))
		return cli.Silent(1)
	case err != nil:
		return cli.Failf("--replay %s: %v", o.Replay, err).WithHint("replay a file written by gate session --record")
	}
	fmt.Fprintf(o.IO.Out, "replayed %s, %s: identical\n", cli.Plural(sum.Events, "event", "events"), cli.Plural(sum.Effects, "effect", "effects"))
	return nil
}

// jsonOrNone is an effect as compact JSON, or what stands for its absence.
func jsonOrNone(raw json.RawMessage, none string) string {
	if raw == nil {
		return "(" + none + ")"
	}
	return string(raw)
}

func (o *SessionOptions) live(ctx context.Context, opts session.Options) (err error) {
	cfg := sessionloop.Config{Options: opts, Log: o.IO.ErrOut}
	if o.Record != "" {
		flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
		if o.Force {
			flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(o.Record, flag, 0o600)
		if err != nil {
			hint := "pass --record FILE naming a new file"
			if errors.Is(err, os.ErrExist) {
				hint = "pass --force to replace it, or name a new file"
			}
			return cli.Fail(unwrapPath(err), hint)
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = cli.Failf("--record %s: %v", o.Record, unwrapPath(cerr))
			}
		}()
		cfg.Record = f
	}

	// Analytics never wait on anything (seed 004 "State Separation"): the
	// queue drops the newest when full, counted on /metrics.
	queue := analytics.NewQueue(analytics.DefaultSize)
	cfg.Analytics = queue
	var analyzed int
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		_ = queue.Run(context.Background(), func(b []analytics.Event) error { analyzed += len(b); return nil })
	}()
	if o.MetricsAddr != "" {
		m := sessionloop.NewMetrics(o.IO.ErrOut)
		m.WatchQueue(queue)
		cfg.Metrics = m
		addr, shutdown, err := serveMetrics(o.MetricsAddr, m.Handler())
		if err != nil {
			return cli.Failf("--metrics-addr %s: %v", o.MetricsAddr, err).WithHint("pass --metrics-addr HOST:PORT that is free, e.g. 127.0.0.1:9464")
		}
		defer shutdown()
		if o.MetricsURLFile != "" {
			remove, err := cli.WriteURLFile("--metrics-url-file", o.MetricsURLFile, "http://"+addr)
			if err != nil {
				return err
			}
			defer remove()
		}
	}
	var receipts *sessionloop.ReceiptLog
	if o.urlGiven() {
		c, err := o.client()
		if err != nil {
			return err
		}
		receipts = sessionloop.NewReceiptLog(c, 0, nil, nil)
		cfg.Receipts = receipts
	}

	runErr := sessionloop.Run(ctx, cfg, o.IO.In, o.IO.Out)

	queue.Close()
	<-consumed
	var missing error
	if receipts != nil {
		wait, cancel := context.WithTimeout(context.Background(), time.Minute)
		rep := receipts.Close(wait)
		cancel()
		if n := rep.Unrecorded(); n > 0 {
			missing = cli.Failf("%d of %s not recorded in auditd's chain: %v", n, cli.Plural(rep.Receipts, "receipt was", "receipts were"), rep.Err).
				WithHint("check auditd at --url and the token's role; the receipts are in the effects gate wrote (and in --record)")
		}
		d := queue.Drops()
		fmt.Fprintf(o.IO.ErrOut, "gate: session analytics: %d events, %d dropped on a full queue\n", analyzed, d.Total)
	}
	var we *sessionloop.WriteError
	switch {
	case missing != nil:
		return missing
	case errors.As(runErr, &we):
		// The runtime stopped reading (EPIPE): nothing more can be said.
		return cli.Silent(cli.ExitFailure)
	case errors.Is(runErr, context.Canceled):
		return cli.Failf("interrupted before the end of input")
	case runErr != nil:
		return cli.Failf("%v", runErr)
	}
	return nil
}

// serveMetrics serves h at /metrics on addr until shutdown, and returns
// the address it bound (port 0 picks one).
func serveMetrics(addr string, h http.Handler) (bound string, shutdown func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, errors.Unwrap(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// unwrapPath drops *PathError's operation: "open x: permission denied" →
// "x: permission denied".
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}
