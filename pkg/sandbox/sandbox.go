package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Level is how much a command is confined.
type Level string

// The levels, weakest first.
const (
	Off      Level = "off"
	ReadOnly Level = "readonly"
	Isolated Level = "isolated"
)

var levels = []Level{Off, ReadOnly, Isolated}

// ParseLevel parses a level name; the error names the valid values.
func ParseLevel(s string) (Level, error) {
	for _, l := range levels {
		if s == string(l) {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown sandbox level %q (valid: off, readonly, isolated)", s)
}

// Config is what Command needs besides the command itself.
type Config struct {
	Level Level
	// TempDir is the private, writable temp dir (required unless Level is
	// off); the command gets TMPDIR set to it. The caller creates and
	// removes it.
	TempDir string
	// Dir is the command's working directory ("" = the caller's).
	Dir string
	// Env is the command's environment (nil = the caller's).
	Env []string
	// NoUnixSockets (isolated only) refuses socket(2) of AF_UNIX as well,
	// and with Landlock ABI ≥ 9 connecting to pathname unix sockets, so
	// that the command reaches no local server either: not the socket of
	// the gate serve that runs it (an agent could approve its own mode
	// upgrade there), not docker's. socketpair(2) stays allowed: it
	// connects to nothing outside.
	NoUnixSockets bool
}

// Report says what is enforced on a command: the child applies exactly
// this plan or fails with a *SetupError, so once Cmd.Start has returned nil
// the report is what holds.
type Report struct {
	Level       Level    `json:"level"`
	LandlockABI int      `json:"landlock_abi,omitempty"`
	Landlock    []string `json:"landlock,omitempty"`
	Seccomp     []string `json:"seccomp,omitempty"`
	TempDir     string   `json:"temp_dir,omitempty"`
}

// String is the one-line form the gate report and audit event carry, e.g.
// "landlock abi 7: fs read-only, tcp denied, ipc scoped; seccomp: sockets
// denied, io_uring denied, tiocsti denied", or "off".
func (r Report) String() string {
	if r.Level == Off || r.Level == "" {
		return "off"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "landlock abi %d: %s", r.LandlockABI, strings.Join(r.Landlock, ", "))
	if len(r.Seccomp) > 0 {
		b.WriteString("; seccomp: " + strings.Join(r.Seccomp, ", "))
	}
	return b.String()
}

// UnavailableError is returned when the kernel cannot enforce a level.
type UnavailableError struct {
	Level  Level
	Reason string // what the kernel lacks
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("sandbox %s cannot be enforced: %s", e.Level, e.Reason)
}

// SetupError is returned by Cmd.Start when the child could not confine
// itself or exec the command; the child has been waited for.
type SetupError struct {
	Stage string // "plan", "lookup", "landlock", "seccomp" or "exec"
	Err   string
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("sandbox setup failed (%s): %s", e.Stage, e.Err)
}

// Cmd is a command prepared by Command.
type Cmd struct {
	// Cmd is the process to start. Set Stdin, Stdout, Stderr, SysProcAttr
	// and Cancel on it as usual, but start it with Cmd.Start (not
	// Cmd.Cmd.Start) and leave ExtraFiles alone: fd 3 is the setup pipe.
	Cmd    *exec.Cmd
	Report Report

	setupR, setupW *os.File // nil when Level is off
}

// planEnv carries the plan to the child; setupFD is the child's end of the
// setup pipe (ExtraFiles[0]).
const (
	planEnv = "GOVKIT_SANDBOX_CHILD"
	setupFD = 3
)

// plan is what the child applies; it goes in planEnv as JSON. The target's
// name and arguments go in argv, which has no per-string size limit beyond
// the one the command has anyway.
type plan struct {
	Level       Level  `json:"level"`
	LandlockABI int    `json:"landlock_abi"`
	TempDir     string `json:"temp_dir"`
	FD          int    `json:"fd"`
	NoUnix      bool   `json:"no_unix,omitempty"`
}

// Command prepares name with args under cfg. It probes the kernel and
// returns an *UnavailableError when the level cannot be enforced.
func Command(ctx context.Context, cfg Config, name string, args ...string) (*Cmd, error) {
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	if cfg.Level == Off {
		c := exec.CommandContext(ctx, name, args...)
		c.Dir, c.Env = cfg.Dir, env
		return &Cmd{Cmd: c, Report: Report{Level: Off}}, nil
	}
	if _, err := ParseLevel(string(cfg.Level)); err != nil {
		return nil, err
	}
	if cfg.TempDir == "" || !filepath.IsAbs(cfg.TempDir) {
		return nil, fmt.Errorf("sandbox %s needs an absolute private temp dir, got %q", cfg.Level, cfg.TempDir)
	}
	if fi, err := os.Stat(cfg.TempDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox temp dir %s is not a directory", cfg.TempDir)
	}
	sup := Probe()
	if err := sup.Check(cfg.Level); err != nil {
		return nil, err
	}
	if cfg.NoUnixSockets && cfg.Level != Isolated {
		return nil, fmt.Errorf("sandbox %s: NoUnixSockets needs the isolated level", cfg.Level)
	}
	p := plan{Level: cfg.Level, LandlockABI: sup.LandlockABI, TempDir: cfg.TempDir, FD: setupFD, NoUnix: cfg.NoUnixSockets}
	pj, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox setup pipe: %w", err)
	}
	c := exec.CommandContext(ctx, "/proc/self/exe")
	c.Args = append([]string{os.Args[0], name}, args...)
	c.Dir = cfg.Dir
	c.Env = append(withoutVars(env, planEnv, "TMPDIR"), "TMPDIR="+cfg.TempDir, planEnv+"="+string(pj))
	c.ExtraFiles = []*os.File{w}
	return &Cmd{Cmd: c, Report: p.report(), setupR: r, setupW: w}, nil
}

// Start starts the command. For a sandboxed level it waits until the child
// has exec'd the command (or failed to); a failure comes back as a
// *SetupError after the child was reaped, so the caller must not Wait.
func (c *Cmd) Start() error {
	if c.setupR == nil {
		return c.Cmd.Start()
	}
	defer c.setupR.Close()
	err := c.Cmd.Start()
	c.setupW.Close()
	if err != nil {
		return err
	}
	// The child closes its end on exec (close-on-exec) or after writing the
	// reason; a context cancellation kills it, which closes it too.
	msg, rerr := io.ReadAll(io.LimitReader(c.setupR, 64<<10))
	if rerr == nil && len(msg) == 0 {
		return nil
	}
	_ = c.Cmd.Wait()
	if rerr != nil {
		return &SetupError{Stage: "plan", Err: "reading the setup pipe: " + rerr.Error()}
	}
	return decodeSetupError(msg)
}

// Wait waits for the command started by Start.
func (c *Cmd) Wait() error { return c.Cmd.Wait() }

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

func decodeSetupError(msg []byte) *SetupError {
	var e SetupError
	if err := json.Unmarshal(bytes.TrimSpace(msg), &e); err != nil || e.Stage == "" {
		return &SetupError{Stage: "plan", Err: strings.TrimSpace(string(msg))}
	}
	return &e
}

// withoutVars returns env without the named variables.
func withoutVars(env []string, names ...string) []string {
	out := make([]string, 0, len(env)+2)
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// report says what a plan enforces; the child applies exactly this.
func (p plan) report() Report {
	r := Report{Level: p.Level, LandlockABI: p.LandlockABI, TempDir: p.TempDir}
	if p.Level == Off {
		return Report{Level: Off}
	}
	ro := "fs read-only"
	if fsRights(p.LandlockABI)&accessIoctlDev == 0 {
		ro += " (device ioctls not covered)"
	}
	r.Landlock = []string{ro}
	r.Seccomp = []string{"tiocsti denied"}
	if p.Level == Isolated {
		if netRights(p.LandlockABI)&accessNetUDP != 0 {
			r.Landlock = append(r.Landlock, "tcp and udp denied")
		} else {
			r.Landlock = append(r.Landlock, "tcp denied")
		}
		if scopes(p.LandlockABI) != 0 {
			r.Landlock = append(r.Landlock, "ipc scoped")
		}
		r.Seccomp = []string{"sockets denied", "io_uring denied", "tiocsti denied"}
		if p.NoUnix {
			r.Seccomp = slices.Insert(r.Seccomp, 1, "unix sockets denied")
		}
	}
	return r
}

// errSimulated marks a capability the test simulation took away.
var errSimulated = errors.New("simulated by GOVKIT_SANDBOX_SIMULATE")
