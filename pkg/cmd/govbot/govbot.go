// Package govbot is the command tree of the govbot binary: a one-shot,
// read-only compliance report over auditd's governance API, for cron and
// CI, whose only state is its optional --history file (DESIGN §8; seed 003
// "Compliance Reporting (cmd/govbot/)").
package govbot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govreport"
	"github.com/govkit/govkit/pkg/notify"
	"github.com/govkit/govkit/pkg/policy"
)

// exitUnreachable is the exit status when the gateway could not be
// reached, or is not auditd (DESIGN §8; seed 003 "Exit Codes"); 2 is
// govreport.ExitAlerts, which the report's summary decides (a broken chain,
// a tampering incident, uncovered executions), and 3 cli.ExitFailure.
const exitUnreachable = 1

// DefaultMaxEvents is --max-events: the most events phase 3 reads.
const DefaultMaxEvents = govreport.DefaultMaxEvents

// Defaults of seed 003 "Running govbot" and "Detection Logic › Phase 5".
const (
	defaultSince      = 24 * time.Hour
	defaultStaleAfter = 30 * time.Minute
	maxMaxEvents      = 100_000_000
	// requestTimeout bounds each request to auditd: verification of a
	// large chain takes seconds, a hung gateway must not hold a cron job.
	requestTimeout = 2 * time.Minute
)

// defaultRetention is --history-retention: a quarter of daily runs.
const defaultRetention = 90 * 24 * time.Hour

// Options are govbot's flags and the dependencies tests replace.
type Options struct {
	IO         *cli.IOStreams
	Gateway    string
	Token      string
	Since      Duration
	StaleAfter Duration
	Webhook    string
	MaxEvents  int
	Output     cli.Format
	CACert     string // --ca-cert: the CA of an https:// auditd
	// History is --history: the SQLite file that keeps the runs for the
	// trend block; "" keeps none. HistoryRetention is how long runs stay.
	History          string
	HistoryRetention Duration
	// Policy is --policy: the policy file auditd has in force, read to
	// name dead rules; rules is its labels, loaded by validate, and
	// policySHA256 the file's hash, checked against auditd's.
	Policy       string
	rules        map[string][]string
	policySHA256 string

	// Now is the report's clock: the window's end and the age of pending
	// approvals. Nil means time.Now.
	Now func() time.Time
	// HTTPClient posts to --webhook; nil means one that does not follow
	// redirects.
	HTTPClient *http.Client
	// WebhookBackoff is the first wait before a retry of --webhook; 0
	// means pkg/notify's default (tests shorten it).
	WebhookBackoff time.Duration
	// Context ends a run early; nil means on SIGINT or SIGTERM.
	Context context.Context

	// gatewaySource says where --url came from, for error hints.
	gatewaySource string
	// roots is --ca-cert, loaded by validate.
	roots *x509.CertPool
}

// NewCmdGovbot returns the govbot command with the process's clock.
func NewCmdGovbot(streams *cli.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: streams, Now: time.Now}, nil)
}

// newCmd declares the flags and validates them; runF replaces the run
// (tests of flag parsing).
func newCmd(opts *Options, runF func(*Options) error) *cobra.Command {
	opts.Since = Duration(defaultSince)
	opts.StaleAfter = Duration(defaultStaleAfter)
	opts.HistoryRetention = Duration(defaultRetention)
	cmd := &cobra.Command{
		Use:   "govbot [--url URL] [--since 24h] [--webhook URL] [-o text|json]",
		Short: "One-shot compliance report over auditd's governance API, for cron and CI",
		Long: `Govbot asks auditd's governance API for a compliance snapshot and prints it.
It only reads from auditd and needs nothing but auditd's URL (and a token with
the auditor role when auditd has a tokens file); its one state, kept only with
--history FILE, is a file of its own. Run it from cron, a systemd timer or a
Kubernetes CronJob, and act on its exit status.

The report has seven phases:

  1 Governance status   GET /api/v1/governance: auditd, policy, infra, chain head
  2 Policy overview     the loaded policies, their rules and their decisions
  3 Audit activity      GET /api/v1/governance/events?since=: events by type,
                        agent and action class; incidents; destructive actions
                        without a consumed approval
  4 Policy decisions    per resource: allow, deny, require_approval, no_match
  5 Pending approvals   GET /api/v1/governance/approvals/pending
  6 Chain integrity     GET /api/v1/governance/verify
  7 Summary             alerts and warnings; with --webhook, posted to Slack

Alerts (exit 2): the audit chain does not verify; the approvals table
disagrees with the chain's approval events (approval_mismatch: an edited
status, vote, quorum, action hash or expiry); a tampering incident
(chain_tampering, hash_mismatch, head_regressed, approval_mismatch,
checkpoint_inconsistent) in the window; write or destructive tool executions without a policy decision
(UNCOVERED_EXECUTIONS: none of the execution's decision_event_id, trace_id
or approval leads to a policy_decision).

Warnings (printed; the exit status stays 0): no policy loaded, a failed
policy reload, dry-run mode, enabled policies and rules that decided
nothing in the window (DEAD_RULES), no_match decisions on a resource missing
from the infra file (NO_MATCH_DECISIONS: it has no tags and the default
effect applied, add it) or on a known resource no policy covers
(NO_MATCH_UNCOVERED: add or widen a policy), approvals pending longer than
--stale-after (the notification channel may not be working), other
incidents, destructive actions without an approved approval, and a window
larger than --max-events.

With --history FILE, govbot keeps each run's verdict and counts in a SQLite
file (created 0600; runs older than --history-retention are deleted) and
ends the report with a trend block: the runs kept, and this run against the
previous one (alerts and warnings up or down, codes new and resolved). The
history is govbot's only state; auditd is never written to.

Dead rules are named by index (rule_index, from 0) and, where a decision's
trace showed them, by their actions and effect; with --policy FILE, the
policy file auditd has in force, every one is named with its line. A file
that is not the one in force (another sha256) is not used, and govbot says so.

Output is text on a terminal and one JSON object otherwise (choose with -o).
A failure to post to --webhook is reported on standard error and does not
change the exit status.

Environment: GOVKIT_URL or GOVKIT_AUDIT_URL (--url), GOVKIT_TOKEN (--token; prefer it,
a flag shows in ps), GOVKIT_GOVBOT_WEBHOOK, GOVKIT_GOVBOT_SINCE,
GOVKIT_GOVBOT_STALE_AFTER, GOVKIT_GOVBOT_MAX_EVENTS, GOVKIT_HISTORY,
GOVKIT_HISTORY_RETENTION and GOVKIT_POLICY; flags win over them,
and they over the config file's govbot section. The seed's one-dash spelling
(-gateway URL -since 6h -webhook URL) is accepted.

Exit status:

    0  healthy, or warnings only
    1  auditd is unreachable, or what answers at --url is not auditd
    2  alerts present
    3  usage error, refused credentials, an untrusted TLS certificate
       (--ca-cert), a --history file that cannot be used, internal failure`,
		Example: `  govbot --url http://127.0.0.1:1199
  govbot --url http://auditd.internal:1199 --since 6h -o json
  govbot --url http://auditd.internal:1199 --history /var/lib/govbot/history.db
  GOVKIT_TOKEN=… govbot --url https://auditd.internal --webhook https://hooks.slack.com/services/…`,
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
	cli.AddURLFlag(f, &opts.Gateway, client.DefaultURL, "auditd's `URL` (the governance gateway)", "gateway")
	f.StringVar(&opts.Token, "token", "", "authenticate with `TOKEN`, one with the auditor role (auditd with a tokens file)")
	f.Var(&opts.Since, "since", "report on the last `DURATION` of events: 6h, 24h, 7d")
	f.Var(&opts.StaleAfter, "stale-after", "warn about approvals pending longer than `DURATION`")
	f.StringVar(&opts.Webhook, "webhook", "", "post the summary to the Slack incoming webhook `URL`")
	f.IntVar(&opts.MaxEvents, "max-events", DefaultMaxEvents, "analyse at most the latest `N` events of the window")
	f.StringVar(&opts.History, "history", "", "keep each run in the SQLite `FILE` and add a trend block to the report")
	f.Var(&opts.HistoryRetention, "history-retention", "delete runs older than `DURATION` from --history")
	f.StringVar(&opts.Policy, "policy", "", "name dead rules from the policy `FILE` auditd has in force")
	cli.AddCACertFlag(f, &opts.CACert)
	cli.AddOutputFlag(cmd, &opts.Output)
	cli.AddConfigFlag(cmd)
	cli.KeepEnv(f, "url", "GOVKIT_AUDIT_URL")
	return cmd
}

// validate checks every flag, naming the flag (or the variable or config
// key that set it) in the error.
func (o *Options) validate(flags *pflag.FlagSet) error {
	name := func(flag string) string { return cli.FlagName(flags, flag) }
	o.gatewaySource = cli.FlagSource(flags, "url")
	if f := flags.Lookup("url"); f != nil && !f.Changed && !flags.Changed("gateway") && o.gatewaySource == "" {
		o.gatewaySource = "the default"
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
	if o.Since <= 0 {
		return cli.Failf("%s %s is not a positive duration", name("since"), o.Since.String()).
			WithHint("pass --since with a look-back window such as 6h, 24h or 7d")
	}
	if o.StaleAfter <= 0 {
		return cli.Failf("%s %s is not a positive duration", name("stale-after"), o.StaleAfter.String()).
			WithHint("pass --stale-after with a duration such as 30m")
	}
	if o.MaxEvents < 1 || o.MaxEvents > maxMaxEvents {
		return cli.Failf("%s %d is not between 1 and %d", name("max-events"), o.MaxEvents, maxMaxEvents).
			WithHint(fmt.Sprintf("pass --max-events N, or leave it out for %d", DefaultMaxEvents))
	}
	if o.HistoryRetention <= 0 {
		return cli.Failf("%s %s is not a positive duration", name("history-retention"), o.HistoryRetention.String()).
			WithHint("pass --history-retention with a duration such as 30d or 90d")
	}
	if o.Policy != "" {
		data, err := policy.ReadFile(o.Policy)
		var cfg *policy.Config
		if err == nil {
			cfg, err = policy.LoadNamed(o.Policy, bytes.NewReader(data))
		}
		if err != nil {
			return cli.Failf("%s: %v", name("policy"), err).
				WithHint("pass --policy with the policy file auditd was started with (auditd --policy), or leave it out")
		}
		sum := sha256.Sum256(data)
		o.rules, o.policySHA256 = govreport.RuleLabels(cfg), hex.EncodeToString(sum[:])
	}
	if o.Webhook != "" {
		if err := notify.CheckURL(o.Webhook); err != nil {
			// Never echo the URL: a Slack webhook's path is its secret.
			return cli.Failf("%s %v", name("webhook"), err).
				WithHint("pass --webhook with a Slack incoming webhook URL (https://hooks.slack.com/services/…)")
		}
	}
	return nil
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Duration is a flag value: a Go duration (90m, 1h30m) or whole days
// (7d), since look-back windows are often counted in days.
type Duration time.Duration

// String implements pflag.Value, in the shortest form: 24h, 30m, 7d.
func (d *Duration) String() string { return govreport.FormatDuration(time.Duration(*d)) }

// Set implements pflag.Value.
func (d *Duration) Set(s string) error {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 3660 {
			return fmt.Errorf("%q is not a duration such as 30m, 24h or 7d", s)
		}
		*d = Duration(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 30m, 24h or 7d", s)
	}
	*d = Duration(v)
	return nil
}

// Type implements pflag.Value; it names the argument in --help.
func (d *Duration) Type() string { return "duration" }

// seedFlags are the flags seed 003 "Running govbot" spells with one dash
// (Go's flag package: go run ./cmd/govbot/ -gateway URL -since 6h).
var seedFlags = []string{"gateway", "since", "webhook"}

// seedCompat rewrites -gateway, -since and -webhook (and -name=value) to
// their two-dash forms, so the seed's command lines work as written; pflag
// would read -gateway as the shorthands -g -a -t….
func seedCompat(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && slices.Contains(seedFlags, name) {
			out[i] = "-" + a
		}
	}
	return out
}
