package auditd

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/internal/notekey"
	"github.com/govkit/govkit/pkg/atomicfile"
	daemon "github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/witness"
)

// exitRefused is `auditd witness --once`'s status when it refused to
// cosign: the log forked, went back, or its checkpoint is not the log's
// (as verify-chain exits 1 on tampering).
const exitRefused = 1

// maxWitnessState bounds the state file read: one cosigned note.
const maxWitnessState = 64 << 10

// WitnessOptions are the parsed flags of `auditd witness`.
type WitnessOptions struct {
	IO       *cli.IOStreams
	Log      string   // --log: the auditd to witness
	Key      string   // --key: the witness's signing key file
	LogKeys  []string // --log-key: the log's verifier keys
	State    string   // --state: the last cosigned note
	Interval time.Duration
	Once     bool
	Listen   string // --listen: serve GET /checkpoint
	Token    string
	CACert   string

	// Context ends the run; nil means on SIGINT or SIGTERM.
	Context context.Context
	// Listener, when not nil, replaces --listen's (tests).
	Listener net.Listener

	roots *x509.CertPool
}

func newCmdWitness(streams *cli.IOStreams, runF func(*WitnessOptions) error) *cobra.Command {
	opts := &WitnessOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "witness --log URL --key FILE --log-key VERIFIER [--state FILE] [--interval D] [--once] [--listen ADDR]",
		Short: "Cosign a log's checkpoints after checking that each extends the last one cosigned",
		Long: `Witness watches another auditd's signed checkpoints (auditd --checkpoint-key)
and cosigns each one it has verified, so that rewriting the log takes fooling
an independent process too, not just holding the log's key (issue 19; the
C2SP tlog-witness protocol, simplified to polling).

Every --interval it fetches GET /api/checkpoint from --log, opens the note
with --log-key (a note the log's key did not sign is refused), and, when it
is newer than the last one it cosigned, fetches the consistency proof from
that one (GET /api/proof/consistency) and verifies it. Only then does it add
its own signature (--key, made by auditd key create) to the note: a cosigned
checkpoint carries the log's signature and the witness's. The first
checkpoint it sees is trusted as it is (trust on first use): start the
witness when the log is known to be sound.

It refuses, with a log line saying why, a checkpoint smaller than the last
cosigned (the log went back), one of the same size with another root or
whose consistency proof fails (the log forked or was rewritten), and one of
another origin. It never moves on from a refusal: the last cosigned note
stays its state until an operator removes the file.

State and publication: --state FILE holds the last cosigned note, replaced
atomically and fsynced after each cosignature; it is read back at start and
must carry the witness's own signature. That file is the publication: copy
it, or serve it with --listen ADDR (loopback only), which answers
GET /checkpoint with the note (text/plain; 404 before the first). Check a
cosigned note with verify-chain --checkpoint FILE --key LOG --key WITNESS,
or open it with both verifier keys (pkg/checkpoint.Open).

Logs go to standard error, each line starting with "auditd witness: ".

Exit status:

    0  stopped by SIGTERM or SIGINT; --once: cosigned, or nothing new
    1  --once: refused to cosign (a fork, a rollback, a forged checkpoint)
    3  usage error, unreadable key or state, auditd refusing or (with
       --once) unreachable`,
		Example: `  auditd key create --out witness.key --name witness.example.com > witness.pub
  auditd witness --log https://audit.example.com:1199 --key witness.key \
      --log-key audit.example.com/prod+1a2b3c4d+AbC… --state witness.note --listen 127.0.0.1:1299
  auditd witness --once --log http://127.0.0.1:1199 --key witness.key --log-key checkpoint.pub --state witness.note`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return witnessRun(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Log, "log", "", "the auditd whose checkpoints to witness, at `URL`")
	f.StringVar(&opts.Key, "key", "", "cosign with the signing key `FILE` (auditd key create)")
	f.StringArrayVar(&opts.LogKeys, "log-key", nil, "the log's verifier key `VERIFIER` (or a file holding it; repeatable)")
	f.StringVar(&opts.State, "state", "", "keep the last cosigned note in `FILE` (default: in memory only)")
	f.DurationVar(&opts.Interval, "interval", 10*time.Second, "poll the log's checkpoint every `DURATION`")
	f.BoolVar(&opts.Once, "once", false, "check and cosign once, then exit (0: cosigned or nothing new, 1: refused)")
	f.StringVar(&opts.Listen, "listen", "", "serve the last cosigned note at GET /checkpoint on `ADDR` (loopback)")
	f.StringVar(&opts.Token, "token", "", "authenticate to --log with `TOKEN` (role auditor)")
	cli.AddCACertFlag(f, &opts.CACert)
	cli.SkipConfig(f, "once")
	return cmd
}

func (o *WitnessOptions) validate() error {
	switch {
	case o.Log == "":
		return cli.Failf("--log is required").WithHint("pass --log URL, the auditd whose checkpoints to cosign")
	case o.Key == "":
		return cli.Failf("--key is required").WithHint("pass --key FILE, the witness's signing key (auditd key create --out FILE)")
	case len(o.LogKeys) == 0:
		return cli.Failf("--log-key is required").WithHint("pass --log-key VERIFIER, the verifier key of the log's --checkpoint-key")
	case o.Interval < 100*time.Millisecond:
		return cli.Failf("--interval %s is shorter than 100ms", o.Interval).WithHint("pass --interval DURATION, e.g. 10s")
	}
	if _, err := client.New(o.Log); err != nil {
		return cli.Failf("--log: %v", err).WithHint("pass --log http://HOST:PORT")
	}
	if o.Listen != "" {
		if err := daemon.CheckLoopback(o.Listen); err != nil {
			return cli.Fail(fmt.Errorf("--listen: %w", err), "pass --listen 127.0.0.1:PORT; publish further with a proxy you trust")
		}
	}
	roots, err := client.LoadCACert(o.CACert)
	if err != nil {
		return cli.Fail(err, "pass --ca-cert FILE with the CA that signed --log's certificate")
	}
	o.roots = roots
	return nil
}

// witnessLoop is the state of one run: the engine, the last cosigned
// checkpoint and note, and what it already said.
type witnessLoop struct {
	o   *WitnessOptions
	w   witness.Witness
	c   *client.Client
	mu  sync.Mutex
	cp  *checkpoint.Checkpoint // the last cosigned checkpoint (nil: none)
	msg []byte                 // its cosigned note
	// refused is the last refusal said, so that a log stuck on a fork is
	// one line, not one per poll.
	refused string
}

func witnessRun(o *WitnessOptions) error {
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	logf := func(format string, args ...any) { fmt.Fprintf(o.IO.ErrOut, "auditd witness: "+format+"\n", args...) }
	signer, vkey, err := loadSignerKey("--key", o.Key, logf)
	if err != nil {
		return err
	}
	self, err := note.NewVerifier(vkey)
	if err != nil {
		return cli.Fail(err, "")
	}
	vkeys, err := notekey.LoadAll(o.LogKeys)
	if err != nil {
		return cli.Failf("--log-key %v", err).WithHint("pass --log-key with the verifier key of the log's --checkpoint-key (NAME+HASH+KEY), or a file holding it")
	}
	logKeys, err := checkpoint.Verifiers(vkeys...)
	if err != nil {
		return cli.Fail(err, "pass --log-key with the log's verifier key")
	}
	copts := []client.Option{client.WithUserAgent("auditd-witness/" + build.String())}
	if o.Token != "" {
		copts = append(copts, client.WithToken(o.Token))
	}
	if o.roots != nil {
		copts = append(copts, client.WithRootCAs(o.roots))
	}
	c, err := client.New(o.Log, copts...)
	if err != nil {
		return cli.Fail(err, "pass --log http://HOST:PORT")
	}
	defer c.CloseIdleConnections()
	l := &witnessLoop{o: o, c: c, w: witness.Witness{Log: logKeys, Signer: signer, Self: self}}
	if err := l.load(); err != nil {
		return err
	}
	if o.Listen != "" || o.Listener != nil {
		ln := o.Listener
		if ln == nil {
			if ln, err = net.Listen("tcp", o.Listen); err != nil {
				return cli.Fail(err, "pass --listen with a free loopback port")
			}
		}
		srv := &http.Server{Handler: l, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		logf("serving the cosigned checkpoint at http://%s/checkpoint", ln.Addr())
	}
	from := "no checkpoint cosigned yet: the first is trusted as it is"
	if l.cp != nil {
		from = fmt.Sprintf("last cosigned: %s at size %d", l.cp.Origin, l.cp.Size)
	}
	logf("witnessing %s as %s (%s)", o.Log, vkey, from)
	for {
		err := l.step(ctx, logf)
		var refusal *refusalError
		switch {
		case ctx.Err() != nil:
			return nil
		case o.Once && errors.As(err, &refusal):
			return cli.Silent(exitRefused) // step logged why
		case o.Once && err != nil:
			return cli.Failf("%v", err).WithHint("start auditd, or pass --log naming a running one that signs checkpoints (--checkpoint-key)")
		case o.Once:
			return nil
		case err != nil && refusal == nil:
			logf("cannot check %s: %v; retrying every %s", o.Log, client.Reason(err), o.Interval)
		}
		if cli.Sleep(ctx, o.Interval) != nil {
			return nil
		}
	}
}

// refusalError is a checkpoint the witness refused to cosign.
type refusalError struct{ err error }

func (e *refusalError) Error() string { return "refused to cosign: " + e.err.Error() }
func (e *refusalError) Unwrap() error { return e.err }

// step fetches the log's checkpoint and cosigns it when it extends the
// last one cosigned.
func (l *witnessLoop) step(ctx context.Context, logf func(string, ...any)) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	msg, err := l.c.Checkpoint(ctx)
	if client.IsNotFound(err) {
		if l.o.Once {
			logf("%s has signed no checkpoint yet", l.o.Log)
		}
		return nil
	}
	if err != nil {
		return err
	}
	refuse := func(err error) error {
		r := &refusalError{err}
		if r.Error() != l.refused {
			logf("%s", r.Error())
			l.refused = r.Error()
		}
		return r
	}
	cp, err := checkpoint.Open(msg, l.w.Log)
	if err != nil {
		return refuse(err)
	}
	var p checkpoint.ConsistencyProof
	if l.cp != nil {
		switch witness.Compare(*l.cp, cp) {
		case witness.Same:
			return nil
		case witness.Extends:
			if p, err = l.c.ConsistencyProof(ctx, l.cp.Size, cp.Size); err != nil {
				var ae *client.Error
				if errors.As(err, &ae) && ae.StatusCode == http.StatusConflict {
					return refuse(fmt.Errorf("%w: the log cannot prove size %d consistent with size %d: %s", witness.ErrForked, l.cp.Size, cp.Size, ae.Message))
				}
				return err
			}
		}
	}
	out, cp, err := l.w.Cosign(l.cp, msg, p)
	if err != nil {
		return refuse(err)
	}
	if l.o.State != "" {
		if err := atomicfile.Write(l.o.State, out, 0o644); err != nil {
			return cli.Failf("writing the state file %s: %v", l.o.State, err).WithHint("pass --state FILE in a directory the witness can write")
		}
	}
	l.mu.Lock()
	l.cp, l.msg = &cp, out
	l.mu.Unlock()
	l.refused = ""
	logf("cosigned %s at size %d (root %s)", cp.Origin, cp.Size, cp.Root)
	return nil
}

// load reads the state file: the last note the witness cosigned, which
// must carry its own signature.
func (l *witnessLoop) load() error {
	if l.o.State == "" {
		return nil
	}
	f, err := os.Open(l.o.State)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return cli.Fail(err, "pass --state FILE the witness can read")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxWitnessState+1))
	if err == nil && len(data) > maxWitnessState {
		err = fmt.Errorf("larger than %d bytes", maxWitnessState)
	}
	var cp checkpoint.Checkpoint
	if err == nil {
		cp, err = l.w.Last(data)
	}
	if err != nil {
		return cli.Failf("state file %s: %v", l.o.State, err).
			WithHint("the witness alone writes this file, with the note it cosigned last under --key: restore it, or remove it to trust the log's next checkpoint afresh")
	}
	l.cp, l.msg = &cp, data
	return nil
}

// ServeHTTP answers GET /checkpoint with the last cosigned note.
func (l *witnessLoop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/checkpoint" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	l.mu.Lock()
	msg := l.msg
	l.mu.Unlock()
	if msg == nil {
		http.Error(w, "no checkpoint cosigned yet", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(msg)
}
