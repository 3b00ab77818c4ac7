// Package auditd is the command tree of the auditd binary: the audit daemon
// (HTTP API, group-commit writer, Unix-socket stream; DESIGN §6) and its
// export subcommand.
package auditd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/approval"
	daemon "github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/notify"
	"github.com/govkit/govkit/pkg/store/sqlite"
	"github.com/govkit/govkit/pkg/stream"
	"github.com/govkit/govkit/pkg/token"
)

// ServeOptions are the parsed flags and dependencies of the daemon.
type ServeOptions struct {
	IO     *cli.IOStreams
	Addr   string
	DB     string
	Socket string
	// Tokens is the tokens file; empty is local mode (DESIGN §7).
	Tokens          string
	ApprovalTimeout time.Duration
	Notify          notify.Config
	emailTo         string
	// Context ends the daemon; nil means on SIGTERM or SIGINT.
	Context context.Context
}

// NewCmdAuditd returns the auditd root command. runF, when not nil,
// replaces the run function (tests).
func NewCmdAuditd(streams *cli.IOStreams, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "auditd [--addr HOST:PORT] [--db FILE] [--socket PATH] [--tokens FILE]",
		Short: "Run the audit daemon: a durable, hash-chained event log with an HTTP API",
		Long: `Auditd keeps the audit log: every event that agents, gates and approvers post is
numbered, chained to the previous one by its SHA-256 hash, and committed to a
SQLite file before it is acknowledged. Concurrent posts are committed in
groups (one fsync for up to 256 events), by one writer, so the chain never
forks.

HTTP API:

    POST /api/events        append an event: 201 and the stored event, or 200 and
                            the original when its event_id was stored before
    GET  /api/events        query: agent, trace_id, session_id, action_class,
                            tool_name, event_type, since, until (RFC 3339),
                            after_seq, limit (1-1000, default 100); answers
                            {"events":[…],"next_after_seq":N,"has_more":bool}
    GET  /api/events/{id}   one event
    GET  /api/verify        verify the chain (verify-chain's report)
    GET  /health            liveness and the chain head
    GET  /metrics           Prometheus metrics
    POST /v1/approvals      request an approval; GET lists them (status=,
                            after_seq=, wait= to long-poll changes)
    GET  /v1/approvals/pending, /v1/approvals/{id} (wait= holds a pending one)
    POST /v1/approvals/{id}/approve, /v1/approvals/{id}/deny  {"reason":"…"}

Every approval change (requested, voted, decided, expired) is appended to the
chain and streamed. Requests expire after --approval-timeout unless they name
a ttl; the requester can never decide their own request.

Auth: with --tokens FILE every endpoint but /health needs a bearer token
(auditd token create); roles: agent (post events, request approvals, read
its own), approver (decide), auditor (read everything), admin. Without a
tokens file auditd runs in local mode: loopback only, no credentials, and
the acting user is the X-Govkit-User header, which the CLIs fill from $USER.

Notifications of new and resolved requests: --approval-slack-webhook,
--approval-webhook (JSON; a hooks.slack.com URL gets Slack), email with
--smtp-* and --approval-email-to. A failing channel is retried with backoff
and counted in /metrics; it never delays or loses a request.

With --socket, committed events are also streamed as JSON Lines on a Unix
socket (mode 0600). A subscriber may first send {"subscribe":{"since_seq":N}}
to receive every event after N before the live ones; one that falls more than
1024 events behind is dropped with an {"error":…} line.

Auditd prints "auditd: listening on HOST:PORT" on standard error when it is
ready, and stops cleanly on SIGTERM or SIGINT: it finishes the requests in
flight, commits what is queued, closes the database and removes the socket.
It starts on a database whose chain is broken, logs the break, and reports it
through /api/verify.

Exit status: 0 after a clean stop, 3 on a usage error or a failure.`,
		Example: `  auditd --db /var/lib/govkit/audit.db --socket /run/govkit/audit.sock
  GOVKIT_AUDITD_ADDR=127.0.0.1:0 auditd --db audit.db     # any free port
  auditd --tokens /etc/govkit/tokens.yaml --addr 0.0.0.0:1199 --approval-timeout 15m
  auditd export --db audit.db > audit.jsonl && verify-chain --jsonl audit.jsonl`,
		Version: build.String(),
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
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
	f.StringVar(&opts.Addr, "addr", daemon.DefaultAddr, "listen on `HOST:PORT` (loopback only; port 0 picks a free one)")
	addDBFlag(cmd, &opts.DB)
	f.StringVar(&opts.Socket, "socket", "", "stream committed events on the Unix socket `PATH` (default: no stream)")
	f.StringVar(&opts.Tokens, "tokens", "", "authenticate clients with the tokens `FILE` (auditd token create); without it, local mode: loopback only, no credentials")
	f.DurationVar(&opts.ApprovalTimeout, "approval-timeout", approval.DefaultTTL, "how long an approval request stays pending when it names no ttl")
	f.StringVar(&opts.Notify.Webhook, "approval-webhook", "", "POST approval notifications as JSON to `URL` (a hooks.slack.com URL gets Slack messages)")
	f.StringVar(&opts.Notify.SlackWebhook, "approval-slack-webhook", "", "send approval notifications to the Slack incoming webhook `URL`")
	f.StringVar(&opts.Notify.BaseURL, "approval-base-url", "", "the auditd `URL` approvers use, for links and commands in notifications")
	f.StringVar(&opts.emailTo, "approval-email-to", "", "email approval notifications to `ADDRESSES` (comma-separated; needs --smtp-host and --smtp-from)")
	f.StringVar(&opts.Notify.SMTP.Host, "smtp-host", "", "SMTP server `HOST` for approval emails")
	f.IntVar(&opts.Notify.SMTP.Port, "smtp-port", notify.DefaultSMTPPort, "SMTP server `PORT` (587: STARTTLS; 465: TLS)")
	f.StringVar(&opts.Notify.SMTP.User, "smtp-user", "", "SMTP `USER` (AUTH PLAIN, only over TLS)")
	f.StringVar(&opts.Notify.SMTP.Password, "smtp-password", "", "SMTP `PASSWORD`; prefer GOVKIT_SMTP_PASSWORD, a flag shows in ps")
	f.StringVar(&opts.Notify.SMTP.From, "smtp-from", "", "the `ADDRESS` approval emails come from")
	cli.SetEnvName(f, "addr", "GOVKIT_AUDITD_ADDR")
	cli.SetEnvName(f, "socket", "GOVKIT_AUDIT_SOCKET")
	cli.SetEnvName(f, "tokens", "GOVKIT_TOKENS_FILE")
	cli.AddConfigFlag(cmd)
	cmd.AddCommand(newCmdExport(streams, nil))
	cmd.AddCommand(newCmdToken(streams))
	return cmd
}

// addDBFlag declares --db, also GOVKIT_AUDIT_DB.
func addDBFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "db", "audit.db", "the audit database `FILE` (SQLite)")
	cli.SetEnvName(cmd.Flags(), "db", "GOVKIT_AUDIT_DB")
	_ = cmd.MarkFlagFilename("db", "db")
}

func (o *ServeOptions) validate() error {
	if o.Tokens == "" {
		if err := daemon.CheckLoopback(o.Addr); err != nil {
			return cli.Fail(err, "pass --addr 127.0.0.1:PORT (or set GOVKIT_AUDITD_ADDR), or authenticate clients with --tokens FILE (auditd token create)")
		}
	}
	if o.ApprovalTimeout < approval.MinTTL || o.ApprovalTimeout > approval.MaxTTL {
		return cli.Failf("--approval-timeout %s is not between %s and %s", o.ApprovalTimeout, approval.MinTTL, approval.MaxTTL).
			WithHint("pass a duration such as 15m (or set GOVKIT_APPROVAL_TIMEOUT)")
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
	if len(o.Socket) > stream.MaxSocketPath {
		return cli.Failf("--socket path is %d bytes long; the limit is %d", len(o.Socket), stream.MaxSocketPath).
			WithHint("pass a shorter --socket path, e.g. under /run or /tmp")
	}
	return nil
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

func serveRun(o *ServeOptions) (err error) {
	log := &syncWriter{w: o.IO.ErrOut}
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

	st, err := sqlite.Open(o.DB, sqlite.Options{})
	if err != nil {
		closeListener(sock)
		ln.Close()
		return cli.Fail(err, "check --db (or GOVKIT_AUDIT_DB): auditd creates the file if its directory exists")
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = cli.Fail(cerr, "")
		}
	}()
	cfg := daemon.DefaultConfig()
	cfg.Logf = log.logf
	cfg.ApprovalTTL = o.ApprovalTimeout
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
	if len(notifiers) > 0 {
		dispatch = notify.NewDispatcher(notifiers, notify.Options{Logf: log.logf, Observe: srv.ObserveNotification})
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
	log.logf("database %s, %d events", o.DB, seq)
	if o.Tokens == "" {
		log.logf("local mode: no tokens file, so no credentials are checked and auditd listens on loopback only; approvers are named by the %s header (the CLIs send $USER)", daemon.UserHeader)
	} else {
		log.logf("clients authenticate with bearer tokens from %s", o.Tokens)
		if daemon.CheckLoopback(o.Addr) != nil {
			log.logf("warning: listening beyond loopback over plain HTTP: tokens cross the network in the clear unless a TLS proxy terminates in front of auditd")
		}
	}
	// Scripts wait for this line to learn the address (port 0): it comes
	// last, when every listener is up.
	log.logf("listening on %s", ln.Addr())

	runErr := srv.Run(ctx, ln, sock)
	seq, _ = srv.Head()
	if runErr != nil {
		return cli.Fail(runErr, "")
	}
	log.logf("stopped; %d events in %s", seq, o.DB)
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
