package convtools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/govkit/govkit/pkg/gate"
	"github.com/govkit/govkit/pkg/sandbox"
	"github.com/govkit/govkit/pkg/session/response"
)

// bash runs one command in a new shell started in the conversation's
// directory, so a cd never outlives its call (REQ-BED-010, B-10).
//
// Which runner: an unrestricted command with auditd goes through gate
// run's whole pipeline in fix mode (classification, policy, approvals,
// receipt; B-14c). The two other cases are ones gate.Run cannot serve, so
// they call pkg/sandbox directly: restricted bash must run at the isolated
// level whatever pkg/intent says of the command, because the conversation's
// mode decides, not the command (gate's readonly mode would refuse a
// command it classifies as a write before Landlock could show it cannot
// write, and its auto level would pick readonly, which allows TCP); and
// unrestricted bash without auditd runs unconfined, which gate allows only
// in fix mode, and fix mode needs auditd.
func (r *Runner) bash(ctx context.Context, call Call, a bashArgs) Result {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, r.Timeout, errTimedOut)
		defer cancel()
	}
	var res Result
	if !call.Restricted && r.Client != nil {
		res = r.bashGate(ctx, call, *a.Command)
	} else {
		level := sandbox.Off
		if call.Restricted {
			level = sandbox.Isolated
		}
		res = r.bashSandbox(ctx, call, *a.Command, level)
	}
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errTimedOut) {
			res.OK, res.Code = false, response.ExecutionFailed
			res.Error = fmt.Sprintf("the command ran out of its %s timeout; its process group was killed", r.Timeout)
		} else {
			res.OK, res.Cancelled, res.Code = false, true, response.ExecutionFailed
			res.Error = "cancelled: the command's process group was killed"
		}
	}
	return res
}

var errTimedOut = errors.New("tool timeout")

// bashSandbox runs the command at level (off or isolated) with pkg/sandbox,
// through gate's own execution discipline (gate.Execute): a process group
// of its own, SIGKILLed as soon as ctx ends and again once the shell exits,
// so nothing it started outlives the call (B-05b). Restricted bash reaches
// no unix socket either: gate serve's own API socket would let the agent
// approve its own mode upgrade (B-15c).
func (r *Runner) bashSandbox(ctx context.Context, call Call, command string, level sandbox.Level) Result {
	cfg := sandbox.Config{Level: level, Dir: call.Cwd, Env: r.commandEnv(call.Cwd), NoUnixSockets: level == sandbox.Isolated}
	if level != sandbox.Off {
		tmp, err := os.MkdirTemp(r.TempRoot, "convtools-")
		if err != nil {
			return refusal(response.ExecutionFailed, "the sandbox's private temp dir: "+err.Error())
		}
		defer os.RemoveAll(tmp)
		cfg.TempDir = tmp
	}
	sc, err := sandbox.Command(ctx, cfg, "bash", "-c", command)
	if err != nil {
		// Never degrade silently (B-14b): a restricted command whose
		// sandbox the kernel cannot enforce does not run.
		res := refusal(response.ExecutionFailed, "bash did not run: "+err.Error())
		res.Sandbox = "unavailable"
		return res
	}
	out := newCapture(r.maxOutput())
	sc.Cmd.Stdin = nil // /dev/null: no one types into a conversation's tool
	ex, err := gate.Execute(ctx, sc.Cmd, 0, out, out, func(*exec.Cmd) error { return sc.Start() })
	if err != nil {
		res := refusal(response.ExecutionFailed, "bash did not start: "+err.Error())
		res.Sandbox = sc.Report.String()
		return res
	}
	res := Result{Sandbox: sc.Report.String(), ExitCode: ex.ExitCode}
	res.Output, res.Truncated = out.text()
	res.OK = res.ExitCode == 0
	if ex.Escaped {
		res.Output += fmt.Sprintf("\n[a process the command started left its process group and kept its output open; reading stopped after %s]", gate.DrainGrace)
	}
	if !res.OK {
		res.Code, res.Error = response.ExecutionFailed, fmt.Sprintf("exit code %d", res.ExitCode)
	}
	return res
}

// bashGate runs the command through gate run's pipeline in fix mode: the
// policy decides per resource, the conversation's directory
// ("workdir:<cwd>"); gate kills the process group on ctx's end itself.
func (r *Runner) bashGate(ctx context.Context, call Call, command string) Result {
	out := newCapture(r.maxOutput())
	gr, err := gate.Run(ctx, gate.Request{
		Shell: command, Mode: gate.Fix, Resource: "workdir:" + call.Cwd, Session: call.Session,
		Timeout: 0, MaxOutput: r.maxOutput(), Wait: r.ApprovalWait, Dir: call.Cwd, Env: r.commandEnv(call.Cwd),
		Stdout: out, Stderr: out, Client: r.Client, Spool: r.Spool,
	})
	res := Result{Sandbox: gr.Sandbox}
	res.Output, res.Truncated = out.text()
	if gr.Receipt != nil {
		res.Receipt = gr.Receipt.EventID
	}
	if err != nil || gr.CommandExitCode == nil {
		res.ExitCode = -1
		res.Code, res.Error = gateCode(gr.Code), gr.Message
		if gr.Hint != "" {
			res.Error += " (" + gr.Hint + ")"
		}
		return res
	}
	res.ExitCode = *gr.CommandExitCode
	res.OK = gr.Status == gate.StatusRan && res.ExitCode == 0
	if !res.OK {
		res.Code, res.Error = response.ExecutionFailed, fmt.Sprintf("exit code %d", res.ExitCode)
		if gr.Message != "" {
			res.Code, res.Error = gateCode(gr.Code), gr.Message
		}
	}
	return res
}

// gateCode maps gate's reason codes onto the envelope's: the codes an agent
// recovers by are the seeds' own, the rest is an execution failure.
func gateCode(c string) string {
	switch c {
	case gate.CodePolicyBlocked, gate.CodeApprovalDenied, gate.CodeBlastRadius:
		return response.PolicyBlocked
	case gate.CodeApprovalRequired, gate.CodeApprovalPending:
		return response.ApprovalRequired
	case gate.CodeUsage, gate.CodeUnbounded:
		return response.InvalidInput
	}
	return response.ExecutionFailed
}

// commandEnv is the server's environment for a command, without govkit's
// own variables (but with the Mark): a conversation's command must not reach auditd with gate
// serve's token (DESIGN §11: the agent is an untrusted proposer). PWD is
// the working directory the shell starts in.
func (r *Runner) commandEnv(cwd string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GOVKIT_") || strings.HasPrefix(kv, "PWD=") || strings.HasPrefix(kv, "OLDPWD=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PWD="+cwd)
	if r.Mark != "" {
		env = append(env, MarkEnv+"="+r.Mark)
	}
	return env
}

// capture keeps the first max bytes of a command's output (stdout and
// stderr interleaved as written) and counts the rest.
type capture struct {
	mu    sync.Mutex
	max   int64
	buf   []byte
	total int64
}

func newCapture(max int64) *capture { return &capture{max: max} }

// Write never fails: a command must not die of EPIPE because its output is
// no longer kept.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.max - int64(len(c.buf)); room > 0 {
		c.buf = append(c.buf, p[:min(int64(len(p)), room)]...)
	}
	return len(p), nil
}

// text is what was kept, with a note saying how much was not.
func (c *capture) text() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := strings.ToValidUTF8(string(c.buf), "\uFFFD")
	if c.total <= int64(len(c.buf)) {
		return s, false
	}
	return s + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", len(c.buf), c.total), true
}
