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
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	daemon "github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store/sqlite"
	"github.com/govkit/govkit/pkg/stream"
)

// ServeOptions are the parsed flags and dependencies of the daemon.
type ServeOptions struct {
	IO     *cli.IOStreams
	Addr   string
	DB     string
	Socket string
	// Context ends the daemon; nil means on SIGTERM or SIGINT.
	Context context.Context
}

// NewCmdAuditd returns the auditd root command. runF, when not nil,
// replaces the run function (tests).
func NewCmdAuditd(streams *cli.IOStreams, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "auditd [--addr HOST:PORT] [--db FILE] [--socket PATH]",
		Short: "Run the audit daemon: a durable, hash-chained event log with an HTTP API",
		Long: `Auditd keeps the audit log: every event that agents, gates and approvers post is
numbered, chained to the previous one by its SHA-256 hash, and committed to a
SQLite file before it is acknowledged. Concurrent posts are committed in
groups (one fsync for up to 256 events), by one writer, so the chain never
forks.

HTTP API (loopback only until authentication arrives):

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
	cli.SetEnvName(f, "addr", "GOVKIT_AUDITD_ADDR")
	cli.SetEnvName(f, "socket", "GOVKIT_AUDIT_SOCKET")
	cli.AddConfigFlag(cmd)
	cmd.AddCommand(newCmdExport(streams, nil))
	return cmd
}

// addDBFlag declares --db, also GOVKIT_AUDIT_DB.
func addDBFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "db", "audit.db", "the audit database `FILE` (SQLite)")
	cli.SetEnvName(cmd.Flags(), "db", "GOVKIT_AUDIT_DB")
	_ = cmd.MarkFlagFilename("db", "db")
}

func (o *ServeOptions) validate() error {
	if err := daemon.CheckLoopback(o.Addr); err != nil {
		return cli.Fail(err, "pass --addr 127.0.0.1:PORT (or set GOVKIT_AUDITD_ADDR); auditd accepts remote clients once it authenticates them (a later release)")
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
	srv, err := daemon.New(cfg, st)
	if err != nil {
		closeListener(sock)
		ln.Close()
		return cli.Fail(err, "")
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
