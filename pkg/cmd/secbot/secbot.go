// Package secbot is the command tree of the secbot binary: the automated
// security responder of seed 003 ("Security Responder Bot (cmd/secbot/)";
// DESIGN §8). It follows auditd's event stream, matches secbot's four
// patterns (pkg/detect) and turns each match into an incident through
// POST /api/v1/incidents, at most one per pattern and agent per cooldown.
package secbot

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/stream"
)

// DefaultListen is where secbot serves /health, /metrics and /callback.
// The seed listens on ":9091", every interface; /callback takes
// unauthenticated POSTs, so govkit keeps the seed's port on loopback
// unless told otherwise (DESIGN §7: loopback by default).
const DefaultListen = "127.0.0.1:9091"

// maxCooldown bounds --cooldown: beyond a day a storm of one kind would
// hide every later match of it for longer than anyone watches.
const maxCooldown = 24 * time.Hour

// Options are secbot's flags and the dependencies tests replace.
type Options struct {
	IO      *cli.IOStreams
	Socket  string
	Gateway string
	Token   string
	Listen  string
	// URLFile receives the URL --listen serves on, once it does
	// (--url-file): with port 0, how a script learns the address.
	URLFile  string
	Cooldown time.Duration
	DryRun   bool
	// Once is --once: one pass through the HTTP API, for cron (once.go).
	Once bool
	// SinceSeq is --since-seq: replay the events after it first; -1
	// (client.Live) starts at the chain's current head.
	SinceSeq int64
	Output   cli.Format
	CACert   string // --ca-cert: the CA of an https:// auditd

	// Now is the clock of alerts and the cooldown; nil means time.Now.
	Now func() time.Time
	// Context ends the run (exit 0); nil means on SIGINT or SIGTERM.
	Context context.Context
	// Ready, when not nil, is called with the address --listen serves
	// on once it does (tests listen on port 0).
	Ready func(addr string)
	// MinBackoff and MaxBackoff bound the wait between reconnections to
	// the stream and between retries of an incident; zero means the
	// defaults (tests shorten them).
	MinBackoff, MaxBackoff time.Duration

	roots *x509.CertPool // --ca-cert, loaded by validate
}

// NewCmdSecbot returns the secbot command with the process's clock.
func NewCmdSecbot(streams *cli.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: streams, Now: time.Now}, nil)
}

// newCmd declares the flags and validates them; runF replaces the run
// (tests of flag parsing).
func newCmd(opts *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secbot --socket PATH [--url URL] [--listen HOST:PORT] [--cooldown 5m] [--dry-run]",
		Short: "Turn security-relevant audit events into incidents, with a cooldown",
		Long: `Secbot is an automated security responder. It follows auditd's event stream on
its Unix socket, checks every event against four patterns, and records each
match as an incident through auditd's POST /api/v1/incidents, so that the
incident is itself hash-chained, streamed and visible to govbot:

  hash_mismatch                critical  the event's event_hash is not the SHA-256
                                         of its canonical content, or its prev_hash
                                         does not link to the event before it
  unauthorized_destructive     critical  a destructive action whose approval is
                                         missing, unknown, pending, denied or expired
  potential_sql_injection      warning   a SQL syntax error in the tool's result or
                                         error (PostgreSQL, MySQL, SQLite, SQL Server,
                                         Oracle, SQLSTATE 42601/42000)
  potential_command_injection  warning   "permission denied" or "command not found"
                                         in the tool's result or error

Cooldown: at most one incident per pattern and agent per --cooldown (alert
storms become one incident; the rest are counted in /metrics). Each incident
names the event behind it, and its incident_id is derived from the pattern
and that event, so a retry after a lost answer creates no duplicate.
Incident events themselves are only checked for hash_mismatch: secbot never
answers its own incidents.

The stream: when auditd restarts, secbot reconnects with backoff and resumes
after the last event it saw, missing none and seeing none twice. It starts
at the chain's head (asked from --url), or replays from --since-seq.

Output: one line per incident created on standard output (JSON with
"schema_version": 1 when not a terminal; choose with -o); with --dry-run the
incidents it would create, with "dry_run": true, and nothing is created.
Logs go to standard error, each line starting "secbot: ".

HTTP (--listen): GET /health, GET /metrics (Prometheus: events seen, matches,
incidents created, failed and suppressed, by pattern), and POST /callback,
where an incident handler reports back asynchronously (a JSON object such as
{"incident_id":"…","status":"ready"}, at most 1 MiB: 202, logged).
aiHelpDesk's secbot listened on :9091, every interface; this one listens on
127.0.0.1:9091 because nothing on that port asks for credentials. Pass
--listen :9091 to open it to the network (behind a firewall), or --listen ''
to serve nothing.

--url is read even with --dry-run (the chain head, and the approvals that
destructive actions name, when the stream has not shown them); when it does
not answer, secbot still runs.

Auth: with a tokens file on auditd, pass a --token with the auditor role (it
creates incidents and reads events and approvals).

Environment: GOVKIT_AUDIT_SOCKET (--socket), GOVKIT_URL or GOVKIT_AUDIT_URL (--url),
GOVKIT_TOKEN (--token), GOVKIT_SECBOT_LISTEN, GOVKIT_SECBOT_COOLDOWN and
GOVKIT_SECBOT_DRY_RUN; flags win over them, and they over the config file.

--once is secbot from cron: no --socket, no --listen; it reads the events
after --since-seq (default: the whole log) up to the chain's head through
--url, answers every match as above, and exits. Incident IDs come from the
pattern and the event, so a rerun creates no incident twice.

Exit status:

    0  stopped by SIGTERM or SIGINT; --once: no new incident
    2  --once: new incidents created (with --dry-run: incidents it would create)
    3  usage error, a failure it cannot recover from; --once: auditd
       unreachable or refusing, or an incident that could not be created`,
		Example: `  secbot --socket /run/govkit/audit.sock --url http://127.0.0.1:1199
  secbot --socket /tmp/helpdesk-audit.sock --url http://127.0.0.1:1199 --listen :9091 --cooldown 5m
  secbot --socket /tmp/helpdesk-audit.sock --dry-run --since-seq 0 | jq -r .type
  secbot --once --url http://127.0.0.1:1199 || notify-oncall        # from cron
  GOVKIT_AUDIT_SOCKET=/run/govkit/audit.sock GOVKIT_TOKEN=… secbot
  curl -s 127.0.0.1:9091/metrics | grep govkit_secbot_incidents`,
		Version: build.String(),
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.validate(c.Flags()); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return run(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Socket, "socket", "", "follow auditd's event stream on the Unix socket `PATH` (auditd --socket)")
	cli.AddURLFlag(f, &opts.Gateway, client.DefaultURL, "auditd's `URL`: incidents are created there, approvals and the chain head read", "gateway")
	f.StringVar(&opts.Token, "token", "", "authenticate with `TOKEN` (auditd with a tokens file); prefer GOVKIT_TOKEN, a flag shows in ps")
	cli.AddCACertFlag(f, &opts.CACert)
	f.StringVar(&opts.Listen, "listen", DefaultListen, "serve /health, /metrics and /callback on `HOST:PORT` ('' serves nothing)")
	f.StringVar(&opts.URLFile, "url-file", "", "once serving, write the URL of --listen (http://HOST:PORT) to `FILE`, replaced atomically, removed at a clean stop: with --listen port 0, how a script learns the address")
	f.DurationVar(&opts.Cooldown, "cooldown", detect.DefaultCooldown, "at most one incident per pattern and agent per `DURATION`")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print the incidents secbot would create, and create none")
	f.BoolVar(&opts.Once, "once", false, "check the events after --since-seq (default: all) up to the head once, then exit (0: no new incident, 2: new incidents)")
	f.Int64Var(&opts.SinceSeq, "since-seq", client.Live, "replay the events after seq `N` first (0: the whole log); -1: start at the chain's head")
	cli.AddOutputFlag(cmd, &opts.Output)
	cli.AddConfigFlag(cmd)
	cli.KeepEnv(f, "socket", "GOVKIT_AUDIT_SOCKET")
	cli.KeepEnv(f, "url", "GOVKIT_AUDIT_URL")
	cli.SkipConfig(f, "since-seq", "once") // one invocation's choice, not a setting
	_ = cmd.MarkFlagFilename("socket")
	return cmd
}

// validate checks every flag, naming the flag (and the variable or config
// key that set it) in the error.
func (o *Options) validate(flags *pflag.FlagSet) error {
	name := func(flag string) string { return cli.FlagName(flags, flag) }
	switch {
	case o.Socket == "" && !o.Once:
		return cli.Failf("--socket is required: secbot follows auditd's event stream").
			WithHint("pass --socket PATH (or set GOVKIT_AUDIT_SOCKET), the path auditd was started with as --socket")
	case len(o.Socket) > stream.MaxSocketPath:
		return cli.Failf("%s path is %d bytes long; the limit is %d", name("socket"), len(o.Socket), stream.MaxSocketPath).
			WithHint("pass a shorter --socket path, e.g. under /run or /tmp")
	}
	if _, err := client.New(o.Gateway); err != nil {
		return cli.Failf("%s: %v", name("url"), err).
			WithHint("pass --url http://HOST:PORT (or set GOVKIT_URL) naming auditd")
	}
	roots, err := client.LoadCACert(o.CACert) // nil without --ca-cert: the system's
	if err != nil {
		return cli.CACertFailure(flags, err)
	}
	o.roots = roots
	if o.Listen != "" {
		if err := checkListen(o.Listen); err != nil {
			return cli.Failf("%s %q: %v", name("listen"), o.Listen, err).
				WithHint("pass --listen HOST:PORT such as 127.0.0.1:9091, or --listen '' to serve nothing")
		}
	}
	if o.URLFile != "" && (o.Listen == "" || o.Once) {
		return cli.Failf("%s needs --listen: it names the address secbot serves on", name("url-file")).
			WithHint("pass --listen 127.0.0.1:0 with --url-file, or leave --url-file out")
	}
	if o.Cooldown <= 0 || o.Cooldown > maxCooldown {
		return cli.Failf("%s %s must be positive and at most 24h", name("cooldown"), o.Cooldown).
			WithHint("pass --cooldown with a duration such as 5m")
	}
	if o.SinceSeq < client.Live {
		return cli.Failf("--since-seq %d is negative", o.SinceSeq).
			WithHint("pass --since-seq 0 to replay the whole log, N to start after seq N, or leave it out to start at the head")
	}
	return nil
}

// checkListen accepts HOST:PORT with a numeric port (HOST may be empty:
// every interface).
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("not HOST:PORT")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}
