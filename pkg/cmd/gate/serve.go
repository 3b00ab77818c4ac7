package gate

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/convstore"
	"github.com/govkit/govkit/pkg/convtools"
	"github.com/govkit/govkit/pkg/llm"
	"github.com/govkit/govkit/pkg/receiptkey"
	"github.com/govkit/govkit/pkg/sandbox"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/servertls"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/statedir"
	"github.com/govkit/govkit/pkg/stream"
	"github.com/govkit/govkit/pkg/token"
)

// ServeOptions are the flags of gate serve.
type ServeOptions struct {
	*Options

	LLM             string
	Model           string
	APIKeyFile      string
	DB              string
	Listen          string
	URLFile         string
	Socket          string
	WorkdirRoot     string
	ToolProtocol    string
	SubagentTimeout time.Duration
	MaxImageDim     int
	ToolTimeout     time.Duration

	// Tokens, TLSCert, TLSKey and InsecurePlaintext open the API beyond
	// loopback, as auditd's flags of the same names do (DESIGN §11).
	Tokens            string
	TLSCert           string
	TLSKey            string
	InsecurePlaintext bool
}

func newCmdServe(opts *Options) *cobra.Command {
	o := &ServeOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "serve --llm URL --model MODEL [flags]",
		Short: "Run agent conversations against an OpenAI-compatible model, every tool call governed",
		Long: `Serve runs agent conversations (docs/serve.md) against any
OpenAI-compatible /v1/chat/completions endpoint (LM Studio, Ollama, vLLM,
llama.cpp server, or a hosted one) and real tools: bash (through gate's
sandbox), read_file, search and patch, plus spawn_agents, submit_result and
request_mode_upgrade.

Each conversation has a fixed working directory. It starts restricted where
Landlock works (read-only tools, bash in the isolated sandbox: read-only
filesystem, no network; patch refused) and becomes unrestricted only when a
person approves the agent's request_mode_upgrade — in auditd with --url
('approvals approve ID'), else through the API. A downgrade is immediate.

Every state is written to the SQLite file --db before its effects run: after
a crash or kill -9, every conversation is back, idle, with its history.

Tools are called natively (--tool-protocol native, the default). For a model
without tool calling, --tool-protocol envelope uses a strict text
envelope instead: the prompt describes every tool, the model replies with
exactly one JSON object {"tool": NAME, "args": {...}, "nonce": TOOL_NONCE}
under a response_format JSON schema, the nonce is new for every request, and a
reply that is not exactly one valid call for a registered tool with valid
arguments and this request's nonce runs nothing: the model is told the
rejection code (tool_call_invalid_format, tool_call_unknown_tool,
tool_call_invalid_args, tool_call_multiple, tool_call_nonce_invalid) and asked
again; three rejections in a row put the conversation in error.

The HTTP API listens on loopback (--listen) or a 0600 Unix socket (--socket);
'gate conversations' is its command-line client. docs/serve.md has the API.
With --tokens FILE (auditd's tokens file format; auditd token create) every
request needs a bearer token, each person sees only their own conversations
(admins all; auditors read all), and --listen may name an address beyond
loopback, served over HTTPS (--tls-cert, --tls-key) or, behind a TLS proxy,
with --insecure-plaintext.

Exit status: 0 stopped by a signal; 3 usage, an unreachable database or a
listener that cannot be opened.`,
		Example: `  gate serve --llm http://127.0.0.1:1234/v1 --model qwen2.5-coder --listen 127.0.0.1:8700
  gate serve --llm http://127.0.0.1:11434/v1 --model llama3.1 --socket /run/user/1000/gate.sock --url http://127.0.0.1:1199
  gate serve --llm http://127.0.0.1:1234/v1 --model gemma-2-9b-it --tool-protocol envelope`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.flags = c.Flags()
			return o.run()
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.LLM, "llm", "", "the OpenAI-compatible endpoint's base `URL` (e.g. http://127.0.0.1:1234/v1)")
	f.StringVar(&o.Model, "model", "", "the `MODEL` new conversations use")
	f.StringVar(&o.APIKeyFile, "api-key-file", "", "read the endpoint's API key from `FILE` (0600)")
	f.StringVar(&o.DB, "db", "", "the conversations' SQLite `FILE` (default $XDG_STATE_HOME/govkit/serve.db)")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:8700", "serve the API on loopback `ADDR`")
	f.StringVar(&o.URLFile, "url-file", "", "once listening, write the API's URL (http://HOST:PORT, https:// with TLS) to `FILE`, removed at a clean stop: with --listen port 0, how a script learns the address")
	f.StringVar(&o.Socket, "socket", "", "serve the API on a 0600 Unix socket at `PATH` instead")
	f.StringVar(&o.Tokens, "tokens", "", "authenticate clients with the tokens `FILE` (auditd token create); needed for --listen beyond loopback")
	f.StringVar(&o.TLSCert, "tls-cert", "", "serve HTTPS with the PEM certificate (chain) `FILE`; needs --tls-key")
	f.StringVar(&o.TLSKey, "tls-key", "", "the PEM private key `FILE` of --tls-cert")
	f.BoolVar(&o.InsecurePlaintext, "insecure-plaintext", false, "allow plain HTTP beyond loopback (tokens cross the network in the clear; behind a TLS proxy only)")
	f.StringVar(&o.WorkdirRoot, "workdir-root", "", "conversations' working directories must lie under `DIR`")
	f.StringVar(&o.ToolProtocol, "tool-protocol", "native", "how the model calls tools: `PROTOCOL` is native (the API's tool calling) or envelope (a strict JSON text envelope)")
	f.DurationVar(&o.SubagentTimeout, "subagent-timeout", 10*time.Minute, "fail a sub-agent that has not submitted a result after `DURATION`")
	f.DurationVar(&o.ToolTimeout, "tool-timeout", 10*time.Minute, "kill a tool still running after `DURATION`")
	f.IntVar(&o.MaxImageDim, "max-image-dim", 1568, "resize attached images to at most `PIXELS` wide and high")
	return cmd
}

func (o *ServeOptions) run() error {
	switch {
	case o.LLM == "":
		return cli.Failf("--llm is required").WithHint("pass --llm http://127.0.0.1:1234/v1 (LM Studio) or http://127.0.0.1:11434/v1 (Ollama)")
	case o.Model == "":
		return cli.Failf("--model is required").WithHint("pass the model's name as the endpoint knows it, e.g. --model qwen2.5-coder")
	case o.ToolProtocol != "native" && o.ToolProtocol != "envelope":
		return cli.Failf("--tool-protocol %q: not native or envelope", o.ToolProtocol).
			WithHint("native for models with tool calling (the default), envelope for models without it")
	}
	key := ""
	if o.APIKeyFile != "" {
		b, err := os.ReadFile(o.APIKeyFile)
		if err != nil {
			return cli.Failf("--api-key-file %v", unwrapPath(err))
		}
		key = strings.TrimSpace(string(b))
	}
	lc, err := llm.New(o.LLM, key)
	if err != nil {
		return cli.Failf("--llm %s: %v", o.LLM, err)
	}
	var tokens *token.Set
	if o.Tokens != "" {
		logf := func(format string, args ...any) { fmt.Fprintf(o.IO.ErrOut, "gate serve: "+format+"\n", args...) }
		if tokens, err = token.NewSet(o.Tokens, logf, time.Now); err != nil {
			return cli.Fail(err, "check --tokens: a tokens file made by auditd token create, mode 0600")
		}
	}
	ln, err := o.listener()
	if err != nil {
		return err
	}
	defer ln.Close()
	db := o.DB
	if db == "" {
		dir, err := statedir.Dir()
		if err != nil {
			return cli.Fail(err, "pass --db FILE")
		}
		db = filepath.Join(dir, "serve.db")
	}
	// One gate serve per database: a second would restore and drive the
	// same conversations, and kill the first one's tools as leftovers.
	lock, err := lockDB(db)
	if err != nil {
		return err
	}
	defer lock.Close()
	st, err := convstore.Open(db)
	if err != nil {
		return cli.Failf("--db %s: %v", db, err)
	}
	defer st.Close()
	keyPath, err := receiptkey.DefaultPath()
	if err != nil {
		return cli.Fail(err, "set XDG_STATE_HOME")
	}
	rkey, err := receiptkey.LoadOrCreate(keyPath)
	if err != nil {
		return cli.Failf("the receipt key %s: %v", keyPath, err)
	}
	so := serve.Options{Store: st, LLM: lc, Model: o.Model, WorkdirRoot: o.WorkdirRoot, Session: session.Options{ReceiptKey: rkey},
		Tools: &convtools.Runner{Timeout: o.ToolTimeout, Mark: toolMark(db)}, SubagentTimeout: o.SubagentTimeout, MaxImageDim: o.MaxImageDim, Log: o.IO.ErrOut,
		EnvelopeProtocol: o.ToolProtocol == "envelope"}
	if err := sandbox.Probe().Check(sandbox.Isolated); err == nil {
		so.LandlockAvailable = true
	} else {
		fmt.Fprintf(o.IO.ErrOut, "gate serve: restricted mode is unavailable (%v): conversations start unrestricted\n", err)
	}
	if o.urlGiven() {
		c, err := o.client()
		if err != nil {
			return err
		}
		so.Auditd = c
		so.Tools.Client = c
	}
	if tokens != nil {
		so.Tokens = tokens
	}
	srv, err := serve.New(so)
	if err != nil {
		return cli.Failf("%v", err)
	}
	defer srv.Close()
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if o.URLFile != "" {
		scheme := "http://"
		if o.TLSCert != "" {
			scheme = "https://"
		}
		remove, err := cli.WriteURLFile("--url-file", o.URLFile, scheme+ln.Addr().String())
		if err != nil {
			hs.Close()
			return err
		}
		defer remove()
	}
	fmt.Fprintf(o.IO.ErrOut, "gate serve: listening on %s, model %s at %s, database %s\n", ln.Addr(), o.Model, o.LLM, db)
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return cli.Failf("serving: %v", err)
	}
}

// listener is a 0600 Unix socket, loopback TCP, or, with --tokens, TCP
// beyond loopback over TLS (or plain behind a proxy, when asked): the API
// runs tools on this machine, so no one unauthenticated reaches it from
// another (DESIGN §11 "Transport", as auditd).
func (o *ServeOptions) listener() (net.Listener, error) {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, cli.Failf("--tls-cert and --tls-key go together").
			WithHint("pass both PEM files, or neither to serve plain HTTP on loopback")
	}
	if o.Socket != "" {
		if o.URLFile != "" {
			return nil, cli.Failf("--url-file is for --listen, not --socket").WithHint("clients reach the socket by its path")
		}
		if o.TLSCert != "" {
			return nil, cli.Failf("--tls-cert is for --listen, not --socket").WithHint("the socket is 0600: leave out --tls-cert and --tls-key")
		}
		l, err := stream.Listen(o.Socket)
		if err != nil {
			return nil, cli.Failf("--socket %v", err)
		}
		return l, nil
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return nil, cli.Failf("--listen %s: %v", o.Listen, err).WithHint("pass --listen 127.0.0.1:PORT")
	}
	var cert *servertls.Certificate
	if o.TLSCert != "" {
		var err error
		if cert, err = servertls.LoadCertificate(o.TLSCert, o.TLSKey, time.Now()); err != nil {
			return nil, cli.Fail(err, "check --tls-cert and --tls-key: PEM files, the key matching the certificate")
		}
	}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) {
			err = oe.Err // "bind: address already in use", without "listen tcp ADDR"
		}
		return nil, cli.Failf("--listen %s: %v", o.Listen, err).WithHint("is another gate serve running there? pick another --listen 127.0.0.1:PORT")
	}
	// What was bound decides, not the name.
	switch {
	case servertls.IsLoopbackAddr(l.Addr()):
	case o.Tokens == "":
		l.Close()
		return nil, cli.Failf("--listen %s is bound to %s, which is not loopback; without --tokens gate serve authenticates no one", o.Listen, l.Addr()).
			WithHint("listen on 127.0.0.1:PORT or a --socket, or authenticate clients with --tokens FILE and serve HTTPS with --tls-cert and --tls-key")
	case cert == nil && !o.InsecurePlaintext:
		l.Close()
		return nil, cli.Failf("--listen %s is beyond loopback over plain HTTP: bearer tokens would cross the network in the clear", o.Listen).
			WithHint("pass --tls-cert FILE and --tls-key FILE; behind a TLS proxy, pass --insecure-plaintext")
	}
	if cert != nil {
		l = tls.NewListener(l, cert.TLSConfig())
	}
	return l, nil
}

// toolMark names the tools of the gate serve on database db in their
// environment: a restart kills what a predecessor on the same database,
// killed with -9, left running, and nothing of a server on another.
func toolMark(db string) string {
	if abs, err := filepath.Abs(db); err == nil {
		db = abs
	}
	sum := sha256.Sum256([]byte(db))
	return hex.EncodeToString(sum[:8])
}

// lockDB takes an exclusive lock on DB.lock for as long as the process
// lives: the kernel releases it however the process ends, kill -9 included,
// so a restart is never refused by a dead server's lock.
func lockDB(db string) (*os.File, error) {
	if dir := filepath.Dir(db); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, cli.Failf("--db %s: %v", db, unwrapPath(err))
		}
	}
	f, err := os.OpenFile(db+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, cli.Failf("--db %s: %v", db, unwrapPath(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, cli.Failf("--db %s: another gate serve is using it", db).
				WithHint("stop that one, or give this one its own --db FILE")
		}
		return nil, cli.Failf("--db %s: locking %s.lock: %v", db, db, err)
	}
	return f, nil
}
