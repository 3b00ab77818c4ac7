// Package auditor is the command tree of the auditor binary: a real-time
// monitor of auditd's event stream that raises security alerts and verifies
// the hash chain periodically (DESIGN §8; seed 003 "Auditor CLI",
// "Security Detection", "Webhook Alerts").
package auditor

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/internal/notekey"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/notify"
	"github.com/govkit/govkit/pkg/stream"
)

// exitAlerts is --once's exit status when it raised alerts; 0 is none, 3
// an error (DESIGN §3).
const exitAlerts = 2

// Bounds of the durations a user may choose.
const (
	minVerifyInterval = time.Second
	maxVerifyInterval = 24 * time.Hour
	minClockSkew      = time.Second
)

// Options are the parsed flags and the dependencies of one run.
type Options struct {
	IO *cli.IOStreams

	Socket         string
	AuditURL       string
	Token          string
	VerifyInterval time.Duration
	Webhook        string
	MaxPerMinute   int
	HoursStart     int
	HoursEnd       int
	Timezone       string
	ClockSkew      time.Duration
	State          string
	Once           bool
	SinceSeq       int64
	Verbose        bool
	Output         cli.Format
	CACert         string // --ca-cert: the CA of an https:// auditd
	// CheckpointKeys are --checkpoint-key: verifier keys, or files of
	// them, that auditd's signed checkpoints must open with (issue 19).
	CheckpointKeys []string

	// Now is the detection clock; nil means time.Now.
	Now func() time.Time
	// Context ends the run; nil means on SIGINT or SIGTERM.
	Context context.Context
	// WebhookClient posts alerts; nil means a client that follows no
	// redirects (a redirected POST is a failure, not a silent GET).
	WebhookClient *http.Client
	// Delays of reconnecting and of webhook retries; zero means the
	// defaults (tests shorten them).
	ReconnectMin, ReconnectMax time.Duration
	WebhookBackoff             time.Duration

	loc   *time.Location // --timezone, resolved by validate
	roots *x509.CertPool // --ca-cert, loaded by validate
	keys  note.Verifiers // --checkpoint-key, loaded by validate (nil: none)
}

// NewCmdAuditor returns the auditor root command. It only declares and
// validates flags; runF, when not nil, replaces the run function (tests).
func NewCmdAuditor(streams *cli.IOStreams, runF func(*Options) error) *cobra.Command {
	return newCmd(&Options{IO: streams}, runF)
}

func newCmd(opts *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auditor --socket PATH [--url URL] [flags]",
		Short: "Watch auditd's event stream, raise security alerts, verify the chain",
		Long: `Auditor follows auditd's event stream on its Unix socket and raises an alert
for each suspicious pattern it sees, and verifies the whole hash chain through
auditd's API every --verify-interval.

Detections:

    high_volume               an agent recorded more than --max-events-per-minute
                              events in a sliding minute (once per agent per minute)
    off_hours                 an event outside --allowed-hours-start..--allowed-hours-end
                              in --timezone (once per agent per night)
    unauthorized_destructive  a destructive action that no consumed approval released
    timestamp_gap             an event stamped more than --max-clock-skew in the
                              future, before the previous event, or (live) in the past
    seq_gap                   the stream skipped or repeated a seq: rows deleted
    chain_tampering           verification found broken links (once per broken state)
    approval_mismatch         verification found a row of the approvals table that
                              disagrees with the chain's approval events (once per
                              distinct mismatch)
    head_regressed            the log is shorter than, or differs at, the head
                              pinned in --state after the last clean verification;
                              with --checkpoint-key, also: auditd's signed
                              checkpoint is smaller than the pinned one, or its
                              log no longer holds the pinned size
    checkpoint_inconsistent   with --checkpoint-key: auditd's checkpoint is not
                              signed by a trusted key, or does not extend the
                              pinned one (same size, another root; a failed
                              consistency proof; another origin)

Each alert is one line on standard output: JSON (one object per line, with
"schema_version": 1, "type", "severity", "timestamp", "agent", "message" and
the details of its type) when piped, text on a terminal (choose with -o).
With --incident-webhook each alert is also POSTed there as that JSON object
(a hooks.slack.com URL gets a Slack message); a failing webhook is retried a
few times in the background and never holds up detection. Logs go to
standard error, each line starting with "auditor: ".

State: with --state FILE, auditor records the last seq it processed and, after
each clean verification, the log's size and head hash (the pin). On start it
replays what it missed from there, so a restart of auditor or auditd leaves
no gap and no duplicate. The pin is what reveals a truncated tail, which a
hash chain alone cannot show; after a failed check the pin is never moved,
so the evidence survives restarts: investigate, then remove the file to pin
afresh. The file is replaced atomically (mode 0600). Without --state,
auditor starts at the current head and pins in memory only.

Signed checkpoints (issue 19): with --checkpoint-key (auditd's verifier key,
as auditd key create printed it, or a file holding it; repeatable), every
--verify-interval auditor fetches auditd's latest checkpoint, opens it with
those keys, and pins it (in --state, beside the head). A newer one is pinned
only after the consistency proof from the pinned one verifies; the pinned one
is also checked to be still in the log (an inclusion proof). A checkpoint
that does not open is an alert and is never pinned. A checkpoint is what a
rewrite of the whole database cannot fake without the signing key.

--once replays from the state (or --since-seq) through the HTTP API,
verifies and checks the head once, prints the alerts and exits: for cron.
It needs no --socket.

Exit status:

    0  stopped by SIGTERM or SIGINT; --once: no alerts
    2  --once: alerts raised
    3  usage error, unreadable state file, auditd refusing or (with --once)
       unreachable, internal failure`,
		Example: `  auditor --socket /run/govkit/audit.sock --url http://127.0.0.1:1199 --verify-interval 30s
  auditor --socket /run/govkit/audit.sock --state /var/lib/govkit-auditor/state.json \
      --incident-webhook https://alerts.example.com/hook
  auditor --socket /tmp/audit.sock --allowed-hours-start 22 --allowed-hours-end 6 --timezone Europe/Paris
  auditor --once --state /var/lib/govkit-auditor/state.json || notify-oncall   # from cron
  auditor --socket /run/govkit/audit.sock --state state.json --checkpoint-key /etc/govkit/checkpoint.pub
  auditor --once --since-seq 0 -o json | jq -c 'select(.severity == "critical")'`,
		Version: build.String(),
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.validate(c); err != nil {
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
	cli.AddURLFlag(f, &opts.AuditURL, client.DefaultURL, "auditd's `URL`, for verification, approvals and --once", "audit-url")
	f.StringVar(&opts.Token, "token", "", "authenticate with `TOKEN` (auditd with a tokens file; role auditor)")
	cli.AddCACertFlag(f, &opts.CACert)
	f.DurationVar(&opts.VerifyInterval, "verify-interval", 30*time.Second, "verify the whole chain every `DURATION`")
	f.StringVar(&opts.Webhook, "incident-webhook", "", "POST each alert as JSON to `URL`")
	f.IntVar(&opts.MaxPerMinute, "max-events-per-minute", detect.DefaultMaxEventsPerMinute, "high_volume: alert above `N` events per minute from one agent")
	f.IntVar(&opts.HoursStart, "allowed-hours-start", 6, "off_hours: activity is allowed from `HOUR` (0-23)")
	f.IntVar(&opts.HoursEnd, "allowed-hours-end", 22, "off_hours: until `HOUR` (0-24; below the start wraps midnight)")
	f.StringVar(&opts.Timezone, "timezone", "", "off_hours: read hours in `ZONE`, e.g. Europe/Paris (default: the system's)")
	f.DurationVar(&opts.ClockSkew, "max-clock-skew", detect.DefaultClockSkew, "timestamp_gap: tolerate timestamps off by up to `DURATION`")
	f.StringVar(&opts.State, "state", "", "keep the replay position and the pinned head in `FILE`")
	f.BoolVar(&opts.Once, "once", false, "replay, verify and check the head once, then exit (0: no alerts, 2: alerts)")
	opts.SinceSeq = -1
	f.Var((*sinceSeq)(&opts.SinceSeq), "since-seq", "replay from after `SEQ` (0: the whole log) instead of the state's position")
	f.BoolVar(&opts.Verbose, "verbose", false, "log every event received")
	f.StringArrayVar(&opts.CheckpointKeys, "checkpoint-key", nil, "pin auditd's signed checkpoints, which must open with the verifier key `VERIFIER` (the key or a file of keys; repeatable)")
	cli.AddOutputFlag(cmd, &opts.Output)
	cli.KeepEnv(f, "socket", "GOVKIT_AUDIT_SOCKET")
	cli.KeepEnv(f, "url", "GOVKIT_AUDIT_URL")
	cli.SkipConfig(f, "once", "since-seq")
	_ = cmd.MarkFlagFilename("state", "json")
	cli.AddConfigFlag(cmd)
	return cmd
}

// validate checks the flags, naming the one at fault and where its value
// came from.
func (o *Options) validate(c *cobra.Command) error {
	from := func(name string) string { return cli.FlagName(c.Flags(), name) }
	switch {
	case !o.Once && o.Socket == "":
		return cli.Failf("--socket is required").
			WithHint("pass --socket PATH, the path auditd streams on (its --socket; or set GOVKIT_AUDIT_SOCKET), or use --once")
	case len(o.Socket) > stream.MaxSocketPath:
		return cli.Failf("%s is %d bytes long; the limit is %d", from("socket"), len(o.Socket), stream.MaxSocketPath).
			WithHint("give auditd and auditor a shorter --socket path, e.g. under /run")
	case o.VerifyInterval < minVerifyInterval || o.VerifyInterval > maxVerifyInterval:
		return cli.Failf("%s %s is not between %s and %s", from("verify-interval"), o.VerifyInterval, minVerifyInterval, maxVerifyInterval).
			WithHint("pass a duration such as --verify-interval 30s")
	case o.MaxPerMinute < 1:
		return cli.Failf("%s %d must be at least 1", from("max-events-per-minute"), o.MaxPerMinute).
			WithHint("pass --max-events-per-minute N (the seed's default is 100)")
	case o.HoursStart < 0 || o.HoursStart > 23:
		return cli.Failf("%s %d is not an hour from 0 to 23", from("allowed-hours-start"), o.HoursStart).
			WithHint("pass --allowed-hours-start HOUR, e.g. 6")
	case o.HoursEnd < 0 || o.HoursEnd > 24:
		return cli.Failf("%s %d is not an hour from 0 to 24", from("allowed-hours-end"), o.HoursEnd).
			WithHint("pass --allowed-hours-end HOUR, e.g. 22")
	case o.HoursStart == o.HoursEnd:
		return cli.Failf("--allowed-hours-start and --allowed-hours-end are both %d, which allows no hour at all", o.HoursStart).
			WithHint("pass --allowed-hours-start 0 --allowed-hours-end 24 to allow every hour")
	case o.ClockSkew < minClockSkew:
		return cli.Failf("%s %s is less than %s", from("max-clock-skew"), o.ClockSkew, minClockSkew).
			WithHint("pass a duration such as --max-clock-skew 5m")
	}
	if _, err := client.New(o.AuditURL); err != nil {
		return cli.Failf("%s: %v", from("url"), err).WithHint("pass --url http://HOST:PORT (or set GOVKIT_URL)")
	}
	roots, err := client.LoadCACert(o.CACert) // nil without --ca-cert: the system's
	if err != nil {
		return cli.CACertFailure(c.Flags(), err)
	}
	o.roots = roots
	if o.Webhook != "" {
		if err := notify.CheckURL(o.Webhook); err != nil {
			return cli.Failf("%s %v", from("incident-webhook"), err).WithHint("pass --incident-webhook https://HOST/PATH")
		}
	}
	switch o.Timezone {
	case "", "Local":
		o.loc = time.Local
	default:
		loc, err := time.LoadLocation(o.Timezone)
		if err != nil {
			return cli.Failf("%s %q is not a time zone this system knows", from("timezone"), o.Timezone).
				WithHint("pass an IANA zone such as --timezone Europe/Paris or --timezone UTC")
		}
		o.loc = loc
	}
	if len(o.CheckpointKeys) > 0 {
		vkeys, err := notekey.LoadAll(o.CheckpointKeys)
		if err != nil {
			return cli.Failf("--checkpoint-key %v", err).
				WithHint("pass --checkpoint-key with the verifier key auditd key create printed (NAME+HASH+KEY), or a file holding it")
		}
		keys, err := checkpoint.Verifiers(vkeys...)
		if err != nil {
			return cli.Fail(err, "pass --checkpoint-key with the verifier key auditd key create printed")
		}
		o.keys = keys
	}
	if o.State == "" && c.Flags().Changed("state") {
		return cli.Failf("--state is empty").WithHint("pass --state FILE, or leave it out")
	}
	return nil
}

// hours are the allowed hours of off_hours.
func (o *Options) hours() detect.Hours {
	return detect.Hours{Start: o.HoursStart, End: o.HoursEnd, Loc: o.loc}
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// sinceSeq is --since-seq: a seq >= 0, or -1 while not given (shown as no
// default in --help).
type sinceSeq int64

func (s *sinceSeq) String() string {
	if *s < 0 {
		return ""
	}
	return strconv.FormatInt(int64(*s), 10)
}

func (s *sinceSeq) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a seq (an integer >= 0)", v)
	}
	*s = sinceSeq(n)
	return nil
}

func (s *sinceSeq) Type() string { return "seq" }
