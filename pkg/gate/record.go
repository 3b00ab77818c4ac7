package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/intent"
)

// execute runs the command, bounds its output, checks its blast radius and
// records it.
func (r *run) execute(ctx context.Context) {
	b := &budget{left: r.req.MaxOutput}
	hold := r.limits.any()
	stdout, stderr := newStream(r.req.Stdout, b, hold), newStream(r.req.Stderr, b, hold)

	guard, ok := r.transactionGuard()
	if !ok {
		return
	}
	cmd, start, cleanup, err := r.process(ctx)
	defer cleanup()
	if err != nil {
		r.cannotStart(err)
		return
	}
	if guard != nil {
		cmd.Stdin = bytes.NewReader(guard.Stdin)
	}
	ex, err := Execute(ctx, cmd, r.req.Timeout, stdout, stderr, start)
	if err != nil {
		r.cannotStart(err)
		return
	}
	code := ex.ExitCode
	r.res.CommandExitCode, r.res.DurationMS = &code, ex.Duration.Milliseconds()
	r.res.Status, r.res.ExitCode = StatusRan, code
	if ex.Escaped {
		r.warn("a process the command started left its process group and kept its output open; gate stopped reading after %s", DrainGrace)
	}
	if ex.TimedOut {
		r.res.refuse(ExitTimedOut, CodeTimedOut, "the command ran out of --timeout "+r.req.Timeout.String()+"; its process group was killed", "raise --timeout, or bound the command")
		r.res.Status, r.res.Retryable = StatusTimedOut, true
	}

	withheld := false
	if hold {
		br := &BlastRadius{}
		text, complete := stdout.heldText()
		if guard != nil {
			r.guardOutcome(guard, stderr, br)
		}
		// A command that timed out is not checked: its output is withheld.
		withheld = ex.TimedOut
		if !withheld {
			why := r.checkBlastRadius(ctx, text, complete, br)
			if withheld = br.Exceeded; withheld {
				r.res.refuse(ExitRefused, CodeBlastRadius, why, "narrow the command (a WHERE clause, a selector) to stay within the limit")
			}
		}
		if withheld {
			stdout.withhold()
			stderr.withhold()
		} else {
			stdout.release()
			stderr.release()
		}
		r.res.BlastRadius = br
	}
	r.res.Stdout, r.res.Stderr = stdout.report(withheld), stderr.report(withheld)
	r.record(ctx, ex, withheld)
}

// cannotStart settles a command that never ran: the sandbox could not
// confine it, or it could not be started (not found, not executable).
func (r *run) cannotStart(err error) {
	if isConfinementFailure(err) {
		r.res.refuse(ExitCannotRun, CodeSandboxUnavailable, err.Error(), "pass --sandbox off to run without confinement, if that is acceptable")
		return
	}
	r.res.refuse(ExitCannotRun, CodeExecutionFailed, "the command could not be started: "+err.Error(), "check the program's name and PATH")
}

// outcomeStatus is the tool_execution's outcome.status: success, error,
// timeout or withheld. auditd's circuit breaker counts error and timeout.
func outcomeStatus(ex Execution, withheld bool) string {
	switch {
	case ex.TimedOut:
		return "timeout"
	case withheld:
		return "withheld"
	case ex.ExitCode != 0:
		return "error"
	}
	return "success"
}

// executionData is the data member of gate's tool_execution event: what
// the common fields do not hold.
type executionData struct {
	Gate           string         `json:"gate"` // gate's version
	ExitCode       int            `json:"exit_code"`
	TimedOut       bool           `json:"timed_out,omitempty"`
	Mode           Mode           `json:"mode"`
	Sandbox        string         `json:"sandbox"`
	Classification classification `json:"classification"`
	Rewrite        *Rewrite       `json:"rewrite,omitempty"`
	Stdout         *Output        `json:"stdout"`
	Stderr         *Output        `json:"stderr"`
	BlastRadius    *BlastRadius   `json:"blast_radius,omitempty"`
	DecisionID     string         `json:"decision_event_id,omitempty"`
}

// classification is the gist of classify's verdict in the audit event.
type classification struct {
	Intent  intent.Intent `json:"intent"`
	Bounded bool          `json:"bounded"`
	Risk    intent.Risk   `json:"risk"`
	Codes   []intent.Code `json:"reasons,omitempty"`
}

// record appends the tool_execution event whose id and hash are the
// receipt. Readonly mode records when auditd is there; in fix mode a
// failure to record is an incident, spooled for the next contact.
func (r *run) record(ctx context.Context, ex Execution, withheld bool) {
	c := r.req.Client
	if c == nil {
		return
	}
	cl := r.res.Classification
	data := executionData{
		Gate: build.String(), ExitCode: ex.ExitCode, TimedOut: ex.TimedOut, Mode: r.req.Mode, Sandbox: r.res.Sandbox,
		Classification: classification{Intent: cl.Intent, Bounded: cl.Bounded, Risk: cl.Risk},
		Rewrite:        r.res.Rewrite, Stdout: r.res.Stdout, Stderr: r.res.Stderr, BlastRadius: r.res.BlastRadius,
	}
	for _, rs := range cl.Reasons {
		data.Classification.Codes = append(data.Classification.Codes, rs.Code)
	}
	if r.res.Decision != nil {
		data.DecisionID = r.res.Decision.EventID
	}
	raw, err := json.Marshal(data)
	if err != nil {
		r.warn("encoding the audit event: %v", err)
		return
	}
	tool := &audit.Tool{Name: r.tool, RawCommand: r.command, DurationMS: ex.Duration.Milliseconds()}
	if !withheld {
		tool.Result = r.res.Stdout.Excerpt
		if ex.ExitCode != 0 {
			tool.Error = strings.TrimSpace(r.res.Stderr.Excerpt)
		}
	}
	ev := audit.Event{
		SchemaVersion: audit.SchemaVersion, EventID: r.newID(), EventType: audit.TypeToolExecution,
		SessionID: r.req.Session, ActionClass: r.action(), Tool: tool,
		Outcome: &audit.Outcome{Status: outcomeStatus(ex, withheld)}, ApprovalID: r.approval, Data: raw,
	}
	r.setResource(&ev)
	stored, err := c.Append(ctx, ev)
	if err != nil {
		msg := "the run could not be recorded: auditd did not answer (" + client.Reason(err) + ")"
		if r.req.Mode == Fix {
			r.incident("governance_unavailable", "governance unavailable after execution: "+msg+"; the tool_execution event is in this incident", &ev)
		}
		r.warn("%s", msg)
		return
	}
	r.res.Receipt = &Receipt{EventID: stored.EventID, EventHash: stored.EventHash, Seq: stored.Seq}
}
