// Package gate is govkit's enforcement point for commands: it classifies a
// command, applies the operating mode, asks auditd's policy, waits for and
// consumes an approval, runs the command sandboxed and bounded in time and
// output, checks its blast radius and records a receipt (DESIGN §12).
package gate

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/intent"
)

// Exit codes of gate (DESIGN §12). When the command ran, gate exits with
// the command's own code.
const (
	ExitTimedOut  = 124 // the command ran out of --timeout and its process group was killed
	ExitRefused   = 125 // refused: mode, policy, unbounded, guardrail, approval, blast radius
	ExitApproval  = 126 // an approval is required or still pending (its id on stderr)
	ExitCannotRun = 127 // gate could not run: usage, sandbox, governance
)

// Mode is the operating mode (seed 003 "Operating Mode").
type Mode string

const (
	// ReadOnly refuses every command that may write (the default): it
	// needs no auditd at all.
	ReadOnly Mode = "readonly"
	// Fix lets writes run under governance: auditd must answer with a
	// policy in force, which decides each command.
	Fix Mode = "fix"
)

// ParseMode reads a --mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ReadOnly, Fix:
		return m, nil
	}
	return "", fmt.Errorf("mode %q is not readonly or fix", s)
}

// DefaultMaxOutput is --max-output's default: 1 MiB shown per run.
const DefaultMaxOutput = 1 << 20

// Request is one command for gate to decide on and, unless CheckOnly, run.
type Request struct {
	// Argv is the command to run without a shell; Shell is a command line
	// for bash -c. Exactly one is set.
	Argv  []string
	Shell string

	Mode Mode
	// Resource is what the command acts on, TYPE:NAME (required in fix
	// mode: the policy decides per resource; its tags come from auditd's
	// infra file, never from here).
	Resource string
	// Session is the agent session: guardrails count per session, and the
	// audit events carry it.
	Session string
	// Sandbox is auto, readonly, isolated or off ("" is auto).
	Sandbox string
	// Timeout kills the command's process group (0: no limit).
	Timeout time.Duration
	// MaxOutput bounds the bytes of stdout and stderr together that reach
	// the caller (0: DefaultMaxOutput).
	MaxOutput int64
	// Wait is how long to wait for a required approval (0: do not wait,
	// exit 126 with its id).
	Wait time.Duration
	// ApprovalID is an approval the caller already holds for exactly this
	// command (from an earlier 126): gate consumes it instead of asking
	// for a new one.
	ApprovalID string
	// AutoRewrite runs classify's suggested bounded rewrite of an
	// unbounded command, once (seed 000's auto-recovery, one attempt).
	AutoRewrite bool
	// CheckOnly stops after the policy decision: nothing runs, no approval
	// is requested and nothing is recorded (gate check).
	CheckOnly bool

	Dir   string   // working directory ("" is gate's)
	Env   []string // the command's environment (nil is gate's)
	Stdin io.Reader
	// StdinIsTerminal says a person types on Stdin: psql reading SQL there
	// is interactive and cannot be guarded.
	StdinIsTerminal bool
	Stdout          io.Writer
	Stderr          io.Writer
	// Notes receives gate's own messages for the person or agent running
	// it (the approval id while waiting, warnings); nil discards them.
	Notes io.Writer

	// Client reaches auditd; nil means none (readonly mode only).
	Client *client.Client
	// Spool is where incidents wait for auditd ("" is DefaultSpoolDir()).
	Spool string

	// Now and Rand are the clock and the randomness for ids (nil: the
	// system's).
	Now  func() time.Time
	Rand io.Reader
	// Classifier classifies the command (nil: one for Dir that reads the
	// repository's git configuration, as classify does).
	Classifier *intent.Classifier
}

// Run decides on req and, when everything allows it, runs the command. The
// Result says what happened, with gate's exit code; the error is non-nil
// only when the request itself is malformed (the Result then says so too,
// with ExitCannotRun).
func Run(ctx context.Context, req Request) (Result, error) {
	r, err := newRun(req)
	if err != nil {
		res := Result{SchemaVersion: SchemaVersion, Mode: req.Mode}
		res.refuse(ExitCannotRun, CodeUsage, err.Error(), "")
		return res, err
	}
	r.run(ctx)
	return r.res, nil
}

// run is one Request on its way through the pipeline.
type run struct {
	req      Request
	res      Result
	resType  string
	resName  string
	command  string   // the shell text that is classified, decided and recorded
	argv     []string // what is executed
	tool     string   // the tool name recorded and bound by approvals
	spool    Spool
	now      func() time.Time
	rand     io.Reader
	limits   limits
	approval string // the approval consumed for this run
}

func newRun(req Request) (*run, error) {
	r := &run{req: req, now: req.Now, rand: req.Rand}
	if r.now == nil {
		r.now = time.Now
	}
	if r.rand == nil {
		r.rand = rand.Reader
	}
	if req.Mode == "" {
		r.req.Mode = ReadOnly
	}
	if _, err := ParseMode(string(r.req.Mode)); err != nil {
		return nil, err
	}
	if _, err := parseSandbox(req.Sandbox); err != nil {
		return nil, err
	}
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return nil, fmt.Errorf("give the command either as arguments after -- or with -c, not both")
	case len(req.Argv) == 0 && strings.TrimSpace(req.Shell) == "":
		return nil, fmt.Errorf("no command given")
	case len(req.Argv) > 0:
		text, err := shellText(req.Argv)
		if err != nil {
			return nil, err
		}
		r.command, r.argv = text, req.Argv
		r.tool = toolName(req.Argv[0])
	default:
		r.command, r.argv, r.tool = req.Shell, []string{"bash", "-c", req.Shell}, "bash"
	}
	if req.Resource != "" {
		typ, name, ok := strings.Cut(req.Resource, ":")
		if !ok || strings.TrimSpace(typ) == "" || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("resource %q is not TYPE:NAME", req.Resource)
		}
		r.resType, r.resName = typ, name
	}
	if r.req.Mode == Fix {
		if req.Resource == "" {
			return nil, fmt.Errorf("fix mode needs the resource the command acts on (TYPE:NAME): the policy decides per resource")
		}
		if req.Client == nil {
			return nil, fmt.Errorf("fix mode requires governance: no auditd URL given")
		}
	}
	if req.Timeout < 0 || req.Wait < 0 || req.MaxOutput < 0 {
		return nil, fmt.Errorf("timeout, wait and max-output must not be negative")
	}
	if r.req.MaxOutput == 0 {
		r.req.MaxOutput = DefaultMaxOutput
	}
	dir := req.Spool
	if dir == "" {
		dir = DefaultSpoolDir()
	}
	r.spool = Spool{Dir: dir}
	r.res = Result{
		SchemaVersion: SchemaVersion, Command: r.command, Argv: req.Argv, Mode: r.req.Mode,
		Session: req.Session, Sandbox: "off",
	}
	if r.resType != "" {
		r.res.Resource = &Resource{Type: r.resType, Name: r.resName}
	}
	return r, nil
}

// shellText is argv as one bash command line, each word quoted as needed,
// so that what is classified and recorded is exactly what runs.
func shellText(argv []string) (string, error) {
	words := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			return "", fmt.Errorf("argument %d cannot be written as a shell word: %v", i+1, err)
		}
		words[i] = q
	}
	return strings.Join(words, " "), nil
}

// toolName is the program's base name: what approvals bind and events
// record as the tool.
func toolName(prog string) string {
	if i := strings.LastIndexByte(prog, '/'); i >= 0 {
		prog = prog[i+1:]
	}
	return prog
}

func (r *run) notef(format string, args ...any) {
	if r.req.Notes != nil {
		fmt.Fprintf(r.req.Notes, "gate: "+format+"\n", args...)
	}
}

// run is the pipeline, in DESIGN §12's order. Each stage either passes or
// settles the Result.
func (r *run) run(ctx context.Context) {
	stages := []func(context.Context) bool{
		r.classify,
		r.checkMode,
		r.startGovernance,
		r.decide,
		r.prepareSandbox,
	}
	for _, stage := range stages {
		if !stage(ctx) {
			return
		}
	}
	if r.req.CheckOnly {
		r.res.Status = StatusWouldRun
		return
	}
	r.execute(ctx)
}
