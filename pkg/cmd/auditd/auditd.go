// Package auditd is the command tree of the auditd binary: the audit daemon
// (HTTP API, group-commit writer, Unix-socket stream; DESIGN §6) and its
// export subcommand.
package auditd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/approval"
	daemon "github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/notify"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/redact"
	"github.com/govkit/govkit/pkg/servertls"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/stream"
	"github.com/govkit/govkit/pkg/token"
)

// ServeOptions are the parsed flags and dependencies of the daemon.
type ServeOptions struct {
	IO   *cli.IOStreams
	Addr string
	// URLFile receives auditd's URL once it listens (--url-file).
	URLFile string
	DB      string
	Socket  string
	// Tokens is the tokens file; empty is local mode (DESIGN §7).
	Tokens          string
	ApprovalTimeout time.Duration
	// ApprovalValidFor is how long an approved request may be consumed
	// (--approval-valid-for, GOVKIT_APPROVAL_VALID_FOR).
	ApprovalValidFor time.Duration
	Notify           notify.Config
	emailTo          string
	// PolicyFile and InfraFile are what POST /api/v1/decisions and the
	// explain endpoints evaluate with (DESIGN §8); empty: none. Both are
	// read again on SIGHUP.
	PolicyFile    string
	InfraFile     string
	PolicyDryRun  bool
	DefaultEffect string
	// ReadOnly serves --db without writing it: queries only (issue 13).
	ReadOnly bool
	// RedactPatterns are extra NAME=REGEX secret formats (--redact-pattern,
	// GOVKIT_REDACT_PATTERNS); redactSource names where they came from when
	// not the command line, for errors.
	RedactPatterns []string
	redactSource   string
	redactor       *redact.Redactor
	// Context ends the daemon; nil means on SIGTERM or SIGINT.
	Context context.Context

	// TLSCert and TLSKey are the PEM files auditd serves HTTPS with; both
	// or neither (DESIGN §11 "Transport").
	TLSCert, TLSKey string
	// InsecurePlaintext lets a tokens-mode listener beyond loopback serve
	// plain HTTP (a TLS proxy in front, say); it is logged as a warning.
	InsecurePlaintext bool

	// Signed checkpoints (issue 19): the key file auditd key create
	// wrote (empty: none), their origin (default the key's name), how
	// many events or how long between them, and the append-only file
	// each is also written to.
	CheckpointKey      string
	CheckpointOrigin   string
	CheckpointEvery    int64
	CheckpointInterval time.Duration
	CheckpointLog      string
}

// NewCmdAuditd returns the auditd root command. runF, when not nil,
// replaces the run function (tests).
func NewCmdAuditd(streams *cli.IOStreams, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "auditd [--addr HOST:PORT] [--db FILE] [--socket PATH] [--tokens FILE] [--tls-cert FILE --tls-key FILE] [--policy FILE [--infra FILE]]",
		Short: "Run the audit daemon: a durable, hash-chained event log with an HTTP API",
		Long: `Auditd keeps the audit log: every event that agents, gates and approvers post is
numbered, chained to the previous one by its SHA-256 hash, and committed to a
SQLite file before it is acknowledged. Concurrent posts are committed in
groups (one fsync for up to 256 events), by one writer, so the chain never
forks.

HTTP API:

    POST /api/events        append an event: 201 and the stored event, or 200 and
                            the original when its event_id was stored before;
                            as application/x-ndjson: up to 1000 events, one a line
    GET  /api/events        query: agent, trace_id, session_id, action_class,
                            tool_name, event_type, approval_id, since, until
                            (RFC 3339), after_seq, limit (1-1000, default 100); answers
                            {"events":[…],"next_after_seq":N,"has_more":bool}
    GET  /api/events/{id}   one event
    GET  /api/verify        verify the chain (verify-chain's report)
    GET  /api/checkpoint    the latest signed checkpoint (text/plain; 404: none)
    GET  /api/proof/inclusion?seq=N[&size=S]   the proof that event N is in
                            the tree of size S (default: the latest checkpoint's)
    GET  /api/proof/consistency?from=A&to=B    the proof that the log of A
                            events is a prefix of the log of B
    GET  /health            the chain head; 200 "ok", or 503 "degraded" with a
                            reason: read_only, database_replaced, disk_full
                            or write_failed (the last commit failed)
    GET  /metrics           Prometheus metrics
    POST /v1/approvals      request an approval; GET lists them (status=,
                            after_seq=, wait= to long-poll changes)
    GET  /v1/approvals/pending, /v1/approvals/{id} (wait= holds a pending one)
    POST /v1/approvals/{id}/approve, /v1/approvals/{id}/deny  {"reason":"…"}

Governance API:

    GET  /api/v1/governance            status: the policy in force (file,
                                       sha256, policies, last reload error),
                                       infra file, chain head, pending count
    GET  /api/v1/governance/events     = GET /api/events (same filters)
    GET  /api/v1/governance/approvals/pending   = GET /v1/approvals/pending
    GET  /api/v1/governance/verify     = GET /api/verify
    GET  /api/v1/governance/explain?resource_type=&resource_name=&action=
         [&tags=a,b][&user_id=][&role=a,b][&service=][&rows_affected=N]
         [&pods_affected=N]            what the policy would decide; records
                                       nothing (tags absent: from --infra;
                                       tags= empty: no tags)
    GET  /api/v1/governance/events/{id}/explain   the trace recorded with a
                                       policy_decision event, never re-evaluated
    POST /api/v1/decisions             evaluate an action, request an approval
                                       when it requires one, and record a
                                       policy_decision event with the full trace
                                       (201; a retried event_id: 200, the same
                                       decision, no second approval)
    POST /api/v1/incidents             record an incident event (chained and
                                       streamed; incident_id is idempotent)

Decisions and explain need --policy FILE; without it they answer 503.
Tags come from --infra FILE (the hypothetical explain also takes tags). On SIGHUP auditd reads
--policy and --infra again: a file that loads replaces the policy at once
("auditd: policy reloaded from FILE (N policies, sha256 …)"); one that does
not is logged and reported as policy.reload_error, and the old policy stays.

Approval requests come from policy: POST /v1/approvals evaluates the loaded
policy (409 approval_not_required when it allows, 403 policy_denied when it
denies) and takes the quorum from it. Every approval change (requested,
voted, decided, expired, cancelled, consumed) is appended to the chain and
streamed. Requests expire after --approval-timeout unless they name a ttl;
the requester can never decide their own request. An approved request
releases one execution of exactly its action: POST /v1/approvals/{id}/consume
with its action_hash, once, within --approval-valid-for of the approval.

Auth: with --tokens FILE every endpoint but /health needs a bearer token
(auditd token create); roles: agent (post events, request approvals, read
its own, ask for decisions), approver (decide), auditor (read everything,
report incidents), admin, and gateway (act for principals it authenticated
itself). Without a tokens file auditd runs in local mode: loopback only, no
credentials, and the acting user is the X-Govkit-User header, which the CLIs
fill from $USER. Identity comes from the credential (the trust boundary):
decisions, approval requests and events use the token's principal
(--principal-user/--principal-roles of auditd token create), every stored
event records its caller, and a request that names another principal, other
roles or another agent is refused (403 principal_not_allowed) unless the
token has the gateway role. Tags come from --infra: a request naming tags for
a resource the infra file lists is refused (403 tags_not_allowed), and for
one it does not list only a gateway may name them.

Secrets never enter the chain: before an event is sealed,
auditd replaces PEM private keys, Authorization values, AWS, GCP, Azure,
GitHub, GitLab, Slack, OpenAI, Anthropic and govkit keys, JWTs, URL
passwords, password=, --password and mysql -p values, PGPASSWORD= and
connection-string passwords in tool.raw_command, tool.parameters,
tool.result and tool.error by [REDACTED:kind], and lists what it removed in
the event's redactions ([{"field","kind"}]). --redact-pattern NAME=REGEX
adds a format (repeatable; GOVKIT_REDACT_PATTERNS takes several, one a line
or separated by commas). Redaction cannot be turned off.

Transport: with --tls-cert FILE and --tls-key FILE (PEM; both
or neither) auditd serves HTTPS only, TLS 1.2 at least, and reads the pair
again on SIGHUP. A listener beyond loopback needs --tokens and TLS, or
--insecure-plaintext (plain HTTP, e.g. behind a TLS proxy; logged as a
warning, since tokens then cross the network in the clear). In local mode
auditd checks the address it actually bound, not the name: a "localhost"
that resolves beyond loopback is refused. POST bodies must be
Content-Type application/json (POST /api/events also takes
application/x-ndjson): anything else is 415, so that a web page cannot post
to a local auditd.

Notifications of new and resolved requests: --approval-slack-webhook,
--approval-webhook (JSON; a hooks.slack.com URL gets Slack), email with
--smtp-* and --approval-email-to. A failing channel is retried with backoff
and counted in /metrics; it never delays or loses a request.

Signed checkpoints: with --checkpoint-key FILE (auditd key create) auditd
keeps a Merkle tree (RFC 6962) over its events' hashes beside them and signs
a checkpoint (origin, size, root hash; a C2SP signed note, Ed25519) every
--checkpoint-every events or --checkpoint-interval when the log grew, and at
shutdown. Each is stored in the database and, with --checkpoint-log FILE,
appended to that file and fsynced: a copy outside the database, which shows
a shortened or rewritten log to whoever holds the verifier key.

With --socket, committed events are also streamed as JSON Lines on a Unix
socket (mode 0600). A subscriber may first send {"subscribe":{"since_seq":N}}
to receive every event after N before the live ones; one that falls more than
1024 events behind is dropped with an {"error":…} line.

Auditd prints "auditd: listening on HOST:PORT" (with TLS: "listening on
https://HOST:PORT") on standard error when it is ready, reloads --policy,
--infra and the TLS pair on SIGHUP, and stops cleanly on SIGTERM
or SIGINT: it finishes the requests in flight, commits what is queued,
closes the database and removes the socket. It starts on a database whose
chain is broken, logs the break, and reports it through /api/verify.

Auditd refuses to start on a database it cannot write. With --read-only it
serves one anyway: queries, verify and stream replay work, every write
answers 503 read_only, and /health says degraded. When the database file is
removed or replaced under a running auditd (checked after every commit),
it acknowledges nothing more: every write answers 503 database_replaced
until auditd is restarted.

Exit status: 0 after a clean stop, 3 on a usage error or a failure (a
--policy or --infra file that does not load at start included: auditd then
touches no database; so does a TLS certificate or key that does not
load, and a listener the transport rules refuse).`,
		Example: `  auditd --db /var/lib/govkit/audit.db --socket /run/govkit/audit.sock
  GOVKIT_AUDITD_ADDR=127.0.0.1:0 auditd --db audit.db     # any free port
  auditd --tokens /etc/govkit/tokens.yaml --addr 0.0.0.0:1199 --tls-cert /etc/govkit/tls.crt --tls-key /etc/govkit/tls.key
  auditd --db audit.db --policy /etc/govkit/policies.yaml --infra /etc/govkit/infra.yaml
  kill -HUP $(pidof auditd)                                # reload the policy
  auditd export --db audit.db > audit.jsonl && verify-chain --jsonl audit.jsonl
  auditd key create --out checkpoint.key --name audit.example.com/prod > checkpoint.pub
  auditd --db audit.db --checkpoint-key checkpoint.key --checkpoint-log checkpoints.log`,
		Version: build.String(),
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.redactSource = cli.FlagSource(c.Flags(), "redact-pattern")
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return serveRun(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Addr, "addr", daemon.DefaultAddr, "listen on `HOST:PORT` (loopback only without --tokens; port 0 picks a free one)")
	f.StringVar(&opts.URLFile, "url-file", "", "once listening, write auditd's URL (http://HOST:PORT, https:// with TLS) to `FILE`, replaced atomically, removed at a clean stop: with --addr port 0, how a script learns the address")
	addDBFlag(cmd, &opts.DB)
	f.StringVar(&opts.Socket, "socket", "", "stream committed events on the Unix socket `PATH` (default: no stream)")
	f.StringVar(&opts.Tokens, "tokens", "", "authenticate clients with the tokens `FILE` (auditd token create); without it, local mode: loopback only, no credentials")
	f.StringVar(&opts.TLSCert, "tls-cert", "", "serve HTTPS with the PEM certificate (chain) `FILE`; needs --tls-key; reloaded on SIGHUP")
	f.StringVar(&opts.TLSKey, "tls-key", "", "the PEM private key `FILE` of --tls-cert")
	f.BoolVar(&opts.InsecurePlaintext, "insecure-plaintext", false, "allow plain HTTP on an address beyond loopback (tokens cross the network in the clear; behind a TLS proxy only)")
	f.DurationVar(&opts.ApprovalTimeout, "approval-timeout", approval.DefaultTTL, "how long (`DURATION`) an approval request stays pending when it names no ttl")
	f.DurationVar(&opts.ApprovalValidFor, "approval-valid-for", approval.DefaultValidFor, "how long (`DURATION`) after approval an approval may be consumed (then 410 approval_stale)")
	f.StringVar(&opts.Notify.Webhook, "approval-webhook", "", "POST approval notifications as JSON to `URL` (a hooks.slack.com URL gets Slack messages)")
	f.StringVar(&opts.Notify.SlackWebhook, "approval-slack-webhook", "", "send approval notifications to the Slack incoming webhook `URL`")
	f.StringVar(&opts.Notify.BaseURL, "approval-base-url", "", "the auditd `URL` approvers use, for links and commands in notifications")
	f.StringVar(&opts.emailTo, "approval-email-to", "", "email approval notifications to `ADDRESSES` (comma-separated; needs --smtp-host and --smtp-from)")
	f.StringVar(&opts.Notify.SMTP.Host, "smtp-host", "", "SMTP server `HOST` for approval emails")
	f.IntVar(&opts.Notify.SMTP.Port, "smtp-port", notify.DefaultSMTPPort, "SMTP server `PORT` (587: STARTTLS; 465: TLS)")
	f.StringVar(&opts.Notify.SMTP.User, "smtp-user", "", "SMTP `USER` (AUTH PLAIN, only over TLS)")
	f.StringVar(&opts.Notify.SMTP.Password, "smtp-password", "", "SMTP `PASSWORD`; prefer GOVKIT_SMTP_PASSWORD, a flag shows in ps")
	f.StringVar(&opts.Notify.SMTP.From, "smtp-from", "", "the `ADDRESS` approval emails come from")
	f.StringVar(&opts.PolicyFile, "policy", "", "decide and explain with the policy `FILE` (YAML; see policies.example.yaml); reloaded on SIGHUP")
	f.StringVar(&opts.InfraFile, "infra", "", "the infrastructure `FILE` that gives resources their tags; reloaded on SIGHUP")
	f.BoolVar(&opts.PolicyDryRun, "policy-dry-run", false, "global dry-run: decisions record the policy's effect but enforce allow")
	f.StringVar(&opts.DefaultEffect, "default-effect", "", "override the policy file's default_effect with `EFFECT`: deny, allow or require_approval")
	f.BoolVar(&opts.ReadOnly, "read-only", false, "serve --db read-only: queries, verify and stream replay; every write answers 503 and /health says degraded")
	f.StringVar(&opts.CheckpointKey, "checkpoint-key", "", "sign checkpoints of the log with the key `FILE` (auditd key create); default: none")
	f.StringVar(&opts.CheckpointOrigin, "checkpoint-origin", "", "the checkpoints' `ORIGIN` line (default: the key's name)")
	f.Int64Var(&opts.CheckpointEvery, "checkpoint-every", daemon.DefaultCheckpointEvery, "sign a checkpoint after `N` events")
	f.DurationVar(&opts.CheckpointInterval, "checkpoint-interval", daemon.DefaultCheckpointInterval, "or after `DURATION` when the log grew")
	f.StringVar(&opts.CheckpointLog, "checkpoint-log", "", "also append every checkpoint to `FILE` (append-only, fsynced): a copy outside the database")
	f.StringArrayVar(&opts.RedactPatterns, "redact-pattern", nil, "also redact secrets matching `NAME=REGEX` before sealing, recorded as kind NAME (repeatable; a group named secret limits what is replaced)")
	cli.KeepEnv(f, "redact-pattern", "GOVKIT_REDACT_PATTERNS")
	cli.KeepEnv(f, "socket", "GOVKIT_AUDIT_SOCKET")
	cli.KeepEnv(f, "tokens", "GOVKIT_TOKENS_FILE")
	_ = cmd.MarkFlagFilename("tls-cert", "pem", "crt")
	_ = cmd.MarkFlagFilename("tls-key", "pem", "key")
	cli.KeepEnv(f, "policy", "GOVKIT_POLICY_FILE")
	cli.KeepEnv(f, "infra", "GOVKIT_INFRA_CONFIG")
	cli.AddConfigFlag(cmd)
	cmd.AddCommand(newCmdExport(streams, nil))
	cmd.AddCommand(newCmdMigrate(streams, nil))
	cmd.AddCommand(newCmdToken(streams))
	cmd.AddCommand(newCmdKey(streams))
	cmd.AddCommand(newCmdWitness(streams, nil))
	return cmd
}

// addDBFlag declares --db, also GOVKIT_AUDIT_DB.
func addDBFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "db", "audit.db", "the audit database: a SQLite `FILE`, or a PostgreSQL postgres://… URL or host=… dbname=… string, which several auditd instances may share")
	cli.KeepEnv(cmd.Flags(), "db", "GOVKIT_AUDIT_DB")
	_ = cmd.MarkFlagFilename("db", "db")
}

func (o *ServeOptions) validate() error {
	switch {
	case o.TLSCert != "" && o.TLSKey == "":
		return cli.Failf("--tls-key is required with --tls-cert").
			WithHint("pass --tls-key FILE with the certificate's private key (or set GOVKIT_TLS_KEY), or leave out --tls-cert to serve plain HTTP on loopback")
	case o.TLSKey != "" && o.TLSCert == "":
		return cli.Failf("--tls-cert is required with --tls-key").
			WithHint("pass --tls-cert FILE with the key's certificate (or set GOVKIT_TLS_CERT), or leave out --tls-key to serve plain HTTP on loopback")
	}
	if err := daemon.CheckAddr(o.Addr); err != nil {
		return cli.Fail(err, "pass --addr HOST:PORT, such as 127.0.0.1:1199 (or set GOVKIT_AUDITD_ADDR)")
	}
	if o.Tokens == "" {
		if err := daemon.CheckLoopback(o.Addr); err != nil {
			return cli.Fail(err, "pass --addr 127.0.0.1:PORT (or set GOVKIT_AUDITD_ADDR), or authenticate clients with --tokens FILE (auditd token create)")
		}
	}
	if o.ApprovalTimeout < approval.MinTTL || o.ApprovalTimeout > approval.MaxTTL {
		return cli.Failf("--approval-timeout %s is not between %s and %s", o.ApprovalTimeout, approval.MinTTL, approval.MaxTTL).
			WithHint("pass a duration such as 15m (or set GOVKIT_APPROVAL_TIMEOUT)")
	}
	if o.ApprovalValidFor < time.Second || o.ApprovalValidFor > approval.MaxValidFor {
		return cli.Failf("--approval-valid-for %s is not between 1s and %s", o.ApprovalValidFor, approval.MaxValidFor).
			WithHint("pass a duration such as 15m (or set GOVKIT_APPROVAL_VALID_FOR)")
	}
	if o.emailTo != "" {
		o.Notify.SMTP.To = []string{o.emailTo}
	}
	if err := o.Notify.Validate(); err != nil {
		return cli.Fail(err, "fix the notification settings: flags --approval-*/--smtp-* or the GOVKIT_ variables named above")
	}
	if o.DB == "" {
		return cli.Failf("--db is empty").WithHint("pass --db FILE or set GOVKIT_AUDIT_DB")
	}
	switch policy.Effect(o.DefaultEffect) {
	case "", policy.EffectDeny, policy.EffectAllow, policy.EffectRequireApproval:
	default:
		return cli.Failf("--default-effect %q is not deny, allow or require_approval", o.DefaultEffect).
			WithHint("pass --default-effect deny (or set GOVKIT_DEFAULT_EFFECT), or leave it out to use the policy file's default_effect")
	}
	if err := o.parseRedactPatterns(); err != nil {
		return err
	}
	switch {
	case o.CheckpointKey == "" && (o.CheckpointLog != "" || o.CheckpointOrigin != ""):
		return cli.Failf("--checkpoint-log and --checkpoint-origin need --checkpoint-key").
			WithHint("pass --checkpoint-key FILE (auditd key create --out FILE makes one)")
	case o.CheckpointEvery < 1:
		return cli.Failf("--checkpoint-every %d is not a positive number of events", o.CheckpointEvery).
			WithHint("pass --checkpoint-every N, e.g. 1000")
	case o.CheckpointInterval < 100*time.Millisecond:
		return cli.Failf("--checkpoint-interval %s is shorter than 100ms", o.CheckpointInterval).
			WithHint("pass --checkpoint-interval DURATION, e.g. 10s")
	}
	if o.CheckpointOrigin != "" {
		if err := checkpoint.CheckOrigin(o.CheckpointOrigin); err != nil {
			return cli.Fail(fmt.Errorf("--checkpoint-origin: %w", err), "pass --checkpoint-origin such as audit.example.com/prod, or leave it out to use the key's name")
		}
	}
	if len(o.Socket) > stream.MaxSocketPath {
		return cli.Failf("--socket path is %d bytes long; the limit is %d", len(o.Socket), stream.MaxSocketPath).
			WithHint("pass a shorter --socket path, e.g. under /run or /tmp")
	}
	return nil
}

// parseRedactPatterns builds the redactor from the built-in formats and
// --redact-pattern (DESIGN §11). Each value may hold several patterns, one
// a line or separated by commas before NAME=, which is how
// GOVKIT_REDACT_PATTERNS lists them; a comma inside a REGEX ({2,5}) stays.
func (o *ServeOptions) parseRedactPatterns() error {
	var pats []redact.Pattern
	for _, v := range o.RedactPatterns {
		for _, item := range splitPatterns(v) {
			p, err := redact.ParsePattern(item)
			if err != nil {
				from := "--redact-pattern"
				if o.redactSource != "" {
					from = o.redactSource
				}
				return cli.Failf("%s: %v", from, err).
					WithHint("pass --redact-pattern NAME=REGEX (or set GOVKIT_REDACT_PATTERNS), NAME a lowercase kind such as internal_token and REGEX in Go (RE2) syntax, e.g. --redact-pattern 'internal_token=itk_[a-z0-9]{32}'")
			}
			pats = append(pats, p)
		}
	}
	o.redactor = redact.New(pats...)
	return nil
}

// patternStart is what starts a pattern in a list: NAME=.
var patternStart = regexp.MustCompile(`^\s*[a-z][a-z0-9_]*=`)

// splitPatterns splits a list of NAME=REGEX on newlines, and on commas
// followed by NAME=.
func splitPatterns(v string) []string {
	var out []string
	for line := range strings.Lines(v) {
		line = strings.TrimRight(line, "\r\n")
		start := 0
		for i := 0; i < len(line); i++ {
			if line[i] == ',' && patternStart.MatchString(line[i+1:]) {
				out = append(out, line[start:i])
				start = i + 1
			}
		}
		out = append(out, line[start:])
	}
	kept := out[:0]
	for _, p := range out {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return kept
}

// syncWriter serializes the daemon's log lines, which come from several
// goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "auditd: "+format+"\n", args...)
}

// softMemoryLimit is the Go heap size at which auditd's garbage collector
// works harder instead of letting the heap double (GOGC): concurrent batch
// appends hold several copies of up to 4 MiB of events in flight, and the
// issue's bar is 100 MiB resident while ingesting (docs/BENCHMARKS.md).
// It is soft: a larger live heap is allowed, at more GC cost. GOMEMLIMIT,
// Go's own variable, overrides it.
const softMemoryLimit = 64 << 20

// gcPercent is auditd's GOGC. Ingest allocates per event (the decoded
// request, the canonical body, the answer) while the live heap stays small,
// so at Go's default of 100 the collector ran ~10% of auditd's CPU at 32
// clients; at 400 it runs a quarter as often, and the soft memory limit
// still bounds the heap (32 clients × batch 64: ~22k → ~27k events/s,
// docs/BENCHMARKS.md). GOGC, Go's own variable, overrides it.
const gcPercent = 400

func serveRun(o *ServeOptions) (err error) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	log := &syncWriter{w: o.IO.ErrOut}
	// The policy first: a file that does not load stops auditd before it
	// opens a listener or a database.
	gov, err := loadPolicy(o)
	if err != nil {
		return err
	}
	// The TLS pair too: a bad one must not leave a database behind.
	var cert *servertls.Certificate
	if o.TLSCert != "" {
		if cert, err = servertls.LoadCertificate(o.TLSCert, o.TLSKey, time.Now()); err != nil {
			return cli.Fail(err, "check --tls-cert and --tls-key (or GOVKIT_TLS_CERT and GOVKIT_TLS_KEY): PEM files, the key matching the certificate")
		}
	}
	// The checkpoint key too.
	var ckpt *daemon.CheckpointConfig
	var vkey string
	if o.CheckpointKey != "" {
		signer, v, err := loadCheckpointKey(o.CheckpointKey, log.logf)
		if err != nil {
			return err
		}
		vkey = v
		ckpt = &daemon.CheckpointConfig{Signer: signer, Origin: o.CheckpointOrigin, Every: o.CheckpointEvery, Interval: o.CheckpointInterval}
	}
	// Listeners first: a refused --socket or --addr leaves no database
	// file behind, and closing a listener removes its socket file.
	var sock net.Listener // nil unless --socket: never a nil *UnixListener
	if o.Socket != "" {
		l, err := stream.Listen(o.Socket)
		if err != nil {
			return cli.Fail(err, "pass another --socket PATH (or set GOVKIT_AUDIT_SOCKET)")
		}
		sock = l
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		closeListener(sock)
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return cli.Failf("listening on %s: %v", o.Addr, err).
			WithHint("pass another --addr (or set GOVKIT_AUDITD_ADDR); port 0 picks a free one")
	}
	// What was bound decides, not the name (DESIGN §11 "Transport").
	loopback := servertls.IsLoopbackAddr(ln.Addr())
	if err := o.checkBound(ln.Addr(), loopback, cert != nil); err != nil {
		closeListener(sock)
		ln.Close()
		return err
	}
	if cert != nil {
		ln = tls.NewListener(ln, cert.TLSConfig())
	}

	st, err := openStore(o.DB, o.ReadOnly)
	if err != nil {
		closeListener(sock)
		ln.Close()
		hint := "check --db (or GOVKIT_AUDIT_DB): auditd creates the file if its directory exists"
		switch {
		case errors.Is(err, store.ErrReadOnly):
			// Refused rather than started to fail every write (issue 13).
			hint = "auditd writes every event to --db (or GOVKIT_AUDIT_DB): make the file and its directory writable by auditd, or pass --read-only to serve queries only"
		case o.ReadOnly:
			hint = "check --db (or GOVKIT_AUDIT_DB): with --read-only the file must exist"
		}
		return cli.Fail(err, hint)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = cli.Fail(cerr, "")
		}
	}()
	if ckpt != nil && o.CheckpointLog != "" && !o.ReadOnly {
		// Append-only: every checkpoint is added after the others, and
		// synced before the next (pkg/auditd's checkpointer).
		f, err := os.OpenFile(o.CheckpointLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			closeListener(sock)
			ln.Close()
			return cli.Fail(err, "pass --checkpoint-log FILE in a directory auditd can write (or set GOVKIT_CHECKPOINT_LOG)")
		}
		defer f.Close() // after the server stopped: its last checkpoint is in
		ckpt.Log = f
	}
	cfg := daemon.DefaultConfig()
	cfg.Logf = log.logf
	cfg.ApprovalTTL = o.ApprovalTimeout
	cfg.ApprovalValidFor = o.ApprovalValidFor
	cfg.ReadOnly = o.ReadOnly
	cfg.Redactor = o.redactor
	cfg.Checkpoints = ckpt
	if o.Tokens != "" {
		set, err := token.NewSet(o.Tokens, log.logf, time.Now)
		if err != nil {
			closeListener(sock)
			ln.Close()
			return cli.Fail(err, "check --tokens (or GOVKIT_TOKENS_FILE); auditd token create --tokens FILE makes one")
		}
		cfg.Tokens = set
		if set.Len() == 0 {
			log.logf("warning: %s holds no tokens: every request but /health is refused until auditd token create adds one", o.Tokens)
		}
	}
	notifiers, err := notify.New(o.Notify)
	if err != nil {
		closeListener(sock)
		ln.Close()
		return cli.Fail(err, "")
	}
	// The dispatcher needs the server's metrics and the server the
	// dispatcher: the hook reads it once both exist.
	var dispatch *notify.Dispatcher
	cfg.OnApprovalChange = func(r approval.Request) {
		if dispatch == nil {
			return
		}
		switch {
		case r.Status != approval.Pending:
			dispatch.Send(notify.Message{Kind: notify.Resolved, Request: r})
		case len(r.Votes) == 0:
			dispatch.Send(notify.Message{Kind: notify.Requested, Request: r})
		}
	}
	srv, err := daemon.New(cfg, st)
	if err != nil {
		closeListener(sock)
		ln.Close()
		return cli.Fail(err, "")
	}
	if err := srv.SetPolicy(gov); err != nil {
		srv.Close()
		closeListener(sock)
		ln.Close()
		return cli.Fail(err, "check --default-effect and --policy")
	}
	if len(notifiers) > 0 {
		dispatch = notify.NewDispatcher(notifiers, notify.Options{Now: time.Now, Logf: log.logf, Observe: srv.ObserveNotification})
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := dispatch.Close(ctx); err != nil {
				log.logf("warning: approval notifications still queued at exit: %v", err)
			}
		}()
		names := make([]string, len(notifiers))
		for i, n := range notifiers {
			names[i] = n.Name()
		}
		log.logf("approval notifications: %s", strings.Join(names, ", "))
	}

	ctx := o.Context
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
	}
	seq, _ := srv.Head()
	if sock != nil {
		log.logf("streaming events on %s", o.Socket)
	}
	log.logf("database %s, %d events", dbName(o.DB), seq)
	if o.ReadOnly {
		log.logf("warning: read-only (--read-only): queries, verify and stream replay only; every write answers 503 and /health says degraded")
	}
	if ckpt != nil && !o.ReadOnly {
		msg := fmt.Sprintf("signing checkpoints every %d events or %s with key %s", o.CheckpointEvery, o.CheckpointInterval, vkey)
		if o.CheckpointLog != "" {
			msg += "; appending them to " + o.CheckpointLog
		}
		log.logf("%s", msg)
	}
	switch {
	case gov.Config != nil:
		st := srv.PolicyStatus()
		msg := fmt.Sprintf("policy loaded from %s (%s); default effect %s", gov.File, describePolicy(gov), st.DefaultEffect)
		if gov.DryRun {
			msg += "; dry run: decisions record the policy's effect and enforce allow"
		}
		log.logf("%s", msg)
	case gov.Infra != nil:
		log.logf("infra loaded from %s (%d resources); no policy: decisions and explain answer 503 until auditd runs with --policy", gov.InfraFile, len(gov.Infra.Resources))
	default:
		log.logf("no policy: POST /api/v1/decisions and the explain endpoints answer 503 (start auditd with --policy FILE)")
	}
	if o.Tokens == "" {
		log.logf("local mode: no tokens file, so no credentials are checked and auditd listens on loopback only; approvers are named by the %s header (the CLIs send $USER)", govapi.UserHeader)
	} else {
		log.logf("clients authenticate with bearer tokens from %s", o.Tokens)
		if !loopback && cert == nil {
			log.logf("warning: --insecure-plaintext: serving plain HTTP beyond loopback on %s: bearer tokens and events cross the network in the clear unless a TLS proxy terminates in front of auditd", ln.Addr())
		}
	}
	if cert != nil {
		log.logf("TLS: certificate %s for %s, expires %s", o.TLSCert, strings.Join(cert.Names(), ", "), cert.Leaf().NotAfter.UTC().Format(time.RFC3339))
		if fi, err := os.Stat(o.TLSKey); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.logf("warning: TLS key %s is readable by group or others (mode %04o): run 'chmod 600 %s'", o.TLSKey, fi.Mode().Perm(), o.TLSKey)
		}
	}
	url := "http://" + ln.Addr().String()
	if cert != nil {
		url = "https://" + ln.Addr().String()
	}
	if o.URLFile != "" {
		remove, err := cli.WriteURLFile("--url-file", o.URLFile, url)
		if err != nil {
			return err
		}
		defer remove()
	}
	hup, stopHup := notifyHangup()
	defer stopHup()
	reloadCtx, stopReload := context.WithCancel(ctx)
	reloadDone := make(chan struct{})
	go func() {
		defer close(reloadDone)
		reloadOnHangup(reloadCtx, hup, o, srv, cert, log)
	}()
	// Scripts wait for this line, or the --url-file, to learn the address
	// (port 0): they come last, when every listener is up.
	if cert != nil {
		log.logf("listening on %s", url)
	} else {
		log.logf("listening on %s", ln.Addr())
	}

	runErr := srv.Run(ctx, ln, sock)
	stopReload()
	<-reloadDone
	seq, _ = srv.Head()
	if runErr != nil {
		return cli.Fail(runErr, "")
	}
	log.logf("stopped; %d events in %s", seq, dbName(o.DB))
	return nil
}

// checkBound applies DESIGN §11's listener rules to the address actually
// bound: local mode (no tokens file) authenticates no one, so it serves
// loopback only, even with TLS; beyond loopback, tokens need TLS or an
// explicit --insecure-plaintext, or they would cross the network in the
// clear.
func (o *ServeOptions) checkBound(addr net.Addr, loopback, withTLS bool) error {
	switch {
	case loopback:
		return nil
	case o.Tokens == "":
		return cli.Failf("--addr %s is bound to %s, which is not a loopback address; without a tokens file auditd authenticates no one, so it listens only on loopback", o.Addr, addr).
			WithHint("pass --addr 127.0.0.1:PORT (a name such as localhost must resolve to loopback; check /etc/hosts), or authenticate clients with --tokens FILE and --tls-cert/--tls-key")
	case !withTLS && !o.InsecurePlaintext:
		return cli.Failf("--addr %s listens beyond loopback (%s) over plain HTTP: bearer tokens would cross the network in the clear", o.Addr, addr).
			WithHint("pass --tls-cert FILE and --tls-key FILE (or set GOVKIT_TLS_CERT and GOVKIT_TLS_KEY); behind a TLS proxy, pass --insecure-plaintext")
	}
	return nil
}

func closeListener(l net.Listener) {
	if l != nil {
		l.Close()
	}
}

// Main runs auditd with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("auditd", NewCmdAuditd(streams, nil), streams, os.Args[1:])
}
