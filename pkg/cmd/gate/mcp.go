package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/mcpgate"
	"github.com/govkit/govkit/pkg/receiptkey"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/sessionloop"
	"github.com/govkit/govkit/pkg/table"
	"github.com/govkit/govkit/pkg/toolgov"
)

// ExitMCPServer is gate mcp's status when the server exited, or closed its
// output, while the client was still connected.
const ExitMCPServer = 1

// serverGrace is how long the server has to exit after its input closes,
// and again after SIGTERM, before it is killed (the MCP spec's stdio
// shutdown).
const serverGrace = 5 * time.Second

// MCPOptions are the flags and arguments of gate mcp.
type MCPOptions struct {
	*Options

	ReceiptKey  string
	PrintKinds  bool
	Output      cli.Format
	CallTimeout time.Duration
	MaxMessage  int
	Server      []string
}

func newCmdMCP(opts *Options) *cobra.Command {
	o := &MCPOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "mcp [flags] -- SERVER-COMMAND [ARG...]",
		Short: "Put govkit's session reducer in front of an MCP server (a stdio proxy)",
		Long: `Mcp is a stdio MCP proxy. An MCP client (Claude Code, Claude Desktop,
any MCP host) starts 'gate mcp -- SERVER-COMMAND', and gate starts the server
as its child and relays JSON-RPC both ways. Every tools/call passes govkit's
session reducer first (the RESOLVING → READING → VERIFYING workflow,
strict resolution over the resources the tools return, the read budgets
and search → ref → read); everything else (resources, prompts,
notifications, progress, cancellation, pings, the server's own requests)
passes through unchanged.

Each tool gets a kind (resolve, read, write or search): from the "mcp"
section of --config, else from the server's annotations (readOnlyHint →
read; otherwise write), else write. --print-kinds starts the server, lists
its tools and prints each tool's kind and what decided it.

A refused call is answered as a tool result with isError: true whose text is
the ToolResponse envelope (code, message, recovery_hint), never a protocol
error, so the model can recover. Every result carries its signed receipt in
_meta["govkit/receipt"] (check it with 'gate receipt verify'), the call's
kind in _meta["govkit/kind"].

With --url (or GOVKIT_URL), auditd governs too: every write the reducer
allows asks auditd's policy (POST /api/v1/decisions), a require_approval is
refused with APPROVAL_REQUIRED naming the approval ('approvals approve ID',
then the same call again consumes it, once), and every decision and outcome
is recorded in auditd's chain with the session id. A call auditd cannot
decide or record does not run.

Bounds: a message over --max-message bytes, either way, is answered with an
error for its id; a tools/call unanswered after --call-timeout is answered
"timed out" and cancelled at the server; when the server exits, every
pending request is answered with an error and gate exits 1.

docs/mcp.md has the client setup, the config format and examples.

Exit status: 0 the client closed its end; 1 the server exited or closed its
output first (stderr says how); 3 usage, an unreadable config or receipt
key, or the server could not start.`,
		Example: `  gate mcp -- npx -y @modelcontextprotocol/server-filesystem /srv
  gate mcp --config examples/mcp/filesystem.yaml -- npx -y @modelcontextprotocol/server-filesystem /srv
  gate mcp --url http://127.0.0.1:8600 --config examples/mcp/filesystem.yaml -- npx -y @modelcontextprotocol/server-filesystem /srv
  gate mcp --print-kinds --config examples/mcp/filesystem.yaml -- npx -y @modelcontextprotocol/server-filesystem /srv
  claude mcp add fs -- gate mcp --config ~/.config/govkit/fs.yaml -- npx -y @modelcontextprotocol/server-filesystem ~/src`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.Failf("no server command given").WithHint("run 'gate mcp [flags] -- SERVER-COMMAND [ARG...]'")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.flags = c.Flags()
			o.Server = args
			return o.run()
		},
	}
	f := cmd.Flags()
	// The server's own flags must reach it even without "--".
	f.SetInterspersed(false)
	f.StringVar(&o.ReceiptKey, "receipt-key", "", "sign receipts with the key in `FILE`, created 0600 if absent (default: govkit's receipt key)")
	f.BoolVar(&o.PrintKinds, "print-kinds", false, "start the server, list its tools, print each tool's kind and exit")
	f.DurationVar(&o.CallTimeout, "call-timeout", mcpgate.DefaultCallTimeout, "answer a tools/call the server has not answered after `DURATION` with \"timed out\", and cancel it")
	f.IntVar(&o.MaxMessage, "max-message", mcpgate.DefaultMaxMessage, "refuse a JSON-RPC message longer than `BYTES`, either way")
	cli.AddOutputFlag(cmd, &o.Output)
	cli.SkipConfig(f, "print-kinds")
	return cmd
}

func (o *MCPOptions) run() error {
	if o.CallTimeout <= 0 {
		return cli.Failf("--call-timeout %s: must be positive", o.CallTimeout).WithHint("pass --call-timeout 2m")
	}
	if o.MaxMessage < 1024 {
		return cli.Failf("--max-message %d: must be at least 1024 bytes", o.MaxMessage).WithHint("pass --max-message 8388608")
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	if o.PrintKinds {
		return o.printKinds(ctx, cfg)
	}
	key, err := o.receiptKey()
	if err != nil {
		return err
	}
	workspace, err := sessionloop.Realpath(cfg.WorkspaceRoot, "")
	if err != nil {
		return cli.Failf("mcp.workspace_root: %v", err)
	}
	popts := mcpgate.Options{Config: cfg, Session: session.Options{ReceiptKey: key},
		CallTimeout: o.CallTimeout, MaxMessage: o.MaxMessage, Workspace: workspace,
		ServerName: serverName(o.Server), Log: o.IO.ErrOut}
	if o.urlGiven() {
		c, err := o.client()
		if err != nil {
			return err
		}
		popts.Governance = toolgov.New(c, nil, nil)
	}
	p, err := mcpgate.New(popts)
	if err != nil {
		return cli.Fail(err, "fix the mcp section of --config")
	}
	return o.proxy(ctx, p)
}

// config reads the mcp section of the file --config names; without one,
// the server's annotations decide every kind.
func (o *MCPOptions) config() (*mcpgate.Config, error) {
	f := o.flags.Lookup("config")
	if f == nil || f.Value.String() == "" {
		return &mcpgate.Config{}, nil
	}
	name := f.Value.String()
	fh, err := os.Open(name)
	if err != nil {
		return nil, cli.Failf("--config %v", unwrapPath(err)).WithHint("pass --config FILE naming a YAML file with an mcp section (docs/mcp.md)")
	}
	defer fh.Close()
	cfg, err := mcpgate.ParseConfig(fh)
	if err != nil {
		return nil, cli.Failf("--config %s: %v", name, err).WithHint("see docs/mcp.md for the mcp section's format")
	}
	return cfg, nil
}

func (o *MCPOptions) receiptKey() ([]byte, error) {
	path := o.ReceiptKey
	if path == "" {
		p, err := receiptkey.DefaultPath()
		if err != nil {
			return nil, cli.Fail(err, "pass --receipt-key FILE")
		}
		path = p
	}
	key, err := receiptkey.LoadOrCreate(path)
	if err != nil {
		return nil, cli.Failf("%s: %v", cli.FlagName(o.flags, "receipt-key"), err).
			WithHint("pass --receipt-key FILE naming a key file of yours (created 0600 if absent)")
	}
	return key, nil
}

// serverCommand is the child, in its own process group so that a server
// started through npx or a shell goes with all its processes.
func (o *MCPOptions) serverCommand() *exec.Cmd {
	cmd := exec.Command(o.Server[0], o.Server[1:]...)
	cmd.Stderr = o.IO.ErrOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

func (o *MCPOptions) proxy(ctx context.Context, p *mcpgate.Proxy) error {
	cmd := o.serverCommand()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return cli.Failf("starting the server: %v", err)
	}
	// Our own pipe, not StdoutPipe: Wait closes StdoutPipe's read end as
	// soon as the server exits, racing the proxy's last reads of what the
	// server wrote before it died.
	stdout, serverOut, err := os.Pipe()
	if err != nil {
		return cli.Failf("starting the server: %v", err)
	}
	defer stdout.Close()
	cmd.Stdout = serverOut
	err = cmd.Start()
	serverOut.Close()
	if err != nil {
		return cli.Failf("starting the server %s: %v", o.Server[0], unwrapExec(err)).
			WithHint("check the command after --; it must be an MCP server speaking stdio")
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	runErr := p.Run(ctx, o.IO.In, o.IO.Out, stdout, stdin)

	var gone *mcpgate.ServerGoneError
	if errors.As(runErr, &gone) {
		// The server closed its output: it exited, or is about to.
		status := stopServer(cmd, stdin, waited, serverGrace)
		msg := "the MCP server " + describeExit(status)
		if gone.Err != nil {
			msg += " (reading its output: " + gone.Err.Error() + ")"
		}
		if gone.Pending > 0 {
			msg += "; " + cli.Plural(gone.Pending, "request was", "requests were") + " pending, answered with errors"
		}
		return &cli.ExitError{Code: ExitMCPServer, Err: errors.New(msg)}
	}
	stopServer(cmd, stdin, waited, serverGrace)
	switch {
	case runErr == nil:
		return nil
	case errors.Is(runErr, context.Canceled):
		return cli.Failf("interrupted; the MCP server was stopped")
	default:
		return cli.Failf("%v", runErr)
	}
}

// stopServer ends the server as the MCP spec's stdio shutdown says: close
// its input, wait, SIGTERM, wait, SIGKILL; it returns how it ended.
func stopServer(cmd *exec.Cmd, stdin io.Closer, waited <-chan error, grace time.Duration) error {
	_ = stdin.Close()
	select {
	case err := <-waited:
		return err
	case <-time.After(grace):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-waited:
		return err
	case <-time.After(grace):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return <-waited
}

// describeExit says how the server ended, from cmd.Wait's error.
func describeExit(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exited with status 0"
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed by " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	default:
		return "ended: " + err.Error()
	}
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return fmt.Errorf("%s: %w", ee.Name, ee.Err)
	}
	return unwrapPath(err)
}

// serverName labels the server in receipts: the command's base name, or,
// for a launcher (npx, uvx, node, python…), its first argument that is not
// a flag.
func serverName(argv []string) string {
	name := filepath.Base(argv[0])
	switch name {
	case "npx", "uvx", "node", "python", "python3", "bunx", "deno", "pipx", "docker":
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				return filepath.Base(a)
			}
		}
	}
	return name
}

// kindRow is one line of --print-kinds -o json.
type kindRow struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`
	Kind          string `json:"kind"`
	Action        string `json:"action"`
	Source        string `json:"source"`
	Idempotent    bool   `json:"idempotent,omitempty"`
	Listed        bool   `json:"listed"`
}

func (o *MCPOptions) printKinds(ctx context.Context, cfg *mcpgate.Config) error {
	ctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
	defer cancel()
	tools, err := mcpgate.ListTools(ctx, &mcp.CommandTransport{Command: o.serverCommand(), TerminateDuration: serverGrace}, build.String())
	if err != nil {
		return cli.Failf("the MCP server %s: %v", o.Server[0], err).
			WithHint("check the command after --; it must be an MCP server speaking stdio")
	}
	listed := map[string]bool{}
	for _, t := range tools {
		listed[t.Name] = true
	}
	kinds := cfg.Kinds(tools)
	if o.Output.Resolve(o.IO) == cli.FormatJSON {
		for _, k := range kinds {
			if err := cli.WriteJSON(o.IO.Out, kindRow{SchemaVersion: 1, Tool: k.Name, Kind: k.Kind, Action: k.Action,
				Source: k.Source, Idempotent: k.Idempotent, Listed: listed[k.Name]}); err != nil {
				return err
			}
		}
		return nil
	}
	rows := make([][]string, 0, len(kinds))
	for _, k := range kinds {
		src := k.Source
		if !listed[k.Name] {
			src += " (not listed by the server)"
		}
		action := k.Action
		if k.Idempotent {
			action += ", idempotent"
		}
		rows = append(rows, []string{k.Name, k.Kind, action, src})
	}
	s, err := table.Render("", []string{"TOOL", "KIND", "ACTION", "SOURCE"}, rows)
	if err != nil {
		return err
	}
	_, err = io.WriteString(o.IO.Out, s)
	return err
}
