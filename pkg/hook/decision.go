// Package hook speaks coding agents' hook protocols: it decodes one agent
// event (a tool call before or after it runs, a stop, a session's start or
// end, a prompt), decides pre-tool calls with pkg/intent, and answers in
// that agent's dialect, failing closed on anything it cannot decide.
package hook

import (
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/intent"
	"github.com/govkit/govkit/pkg/termtext"
)

// Permission is a hook's answer.
type Permission string

const (
	Deny  Permission = "deny" // the zero decision: see Decision
	Ask   Permission = "ask"
	Allow Permission = "allow"
)

// Decision is what the hook answers, before it is put in an agent's
// dialect. The zero Decision denies: an allow can only come from code that
// sets Allow on purpose.
type Decision struct {
	Permission Permission
	// Reason is addressed to the agent (and the user): what was found and
	// what to do instead.
	Reason string
	// Codes are the reason codes behind the decision.
	Codes []intent.Code
	// Context is extra text for the model (where the agent can add context
	// to its conversation): what gate hook wants it to know even when it
	// allows.
	Context string
}

// Allowed reports whether the decision lets the call run. Anything but an
// explicit Allow is not an allow.
func (d Decision) Allowed() bool { return d.Permission == Allow }

// Policy maps verdicts to permissions (--on-write, --on-unbounded).
type Policy struct {
	OnWrite     Permission // ask (default), deny or allow
	OnUnbounded Permission // deny (default) or ask
}

// DefaultPolicy is DESIGN §4's mapping.
var DefaultPolicy = Policy{OnWrite: Ask, OnUnbounded: Deny}

// Validate reports a policy that names an impossible permission.
func (p Policy) Validate() error {
	switch p.OnWrite {
	case Ask, Deny, Allow:
	default:
		return fmt.Errorf("on-write must be ask, deny or allow, not %q", p.OnWrite)
	}
	switch p.OnUnbounded {
	case Ask, Deny:
	default:
		return fmt.Errorf("on-unbounded must be deny or ask, not %q", p.OnUnbounded)
	}
	return nil
}

// DecideCommand maps a shell command's classification to a decision:
// read-only and bounded → allow; write_or_unknown → OnWrite; unbounded →
// OnUnbounded, with the rewrite in the reason.
func DecideCommand(r intent.Result, p Policy) Decision {
	codes := make([]intent.Code, 0, len(r.Reasons))
	for _, x := range r.Reasons {
		codes = append(codes, x.Code)
	}
	switch r.Verdict() {
	case intent.VerdictReadOnly:
		return Decision{Permission: Allow, Reason: "govkit classify: read-only and bounded", Codes: codes}
	case intent.VerdictUnbounded:
		reason := "govkit classify: this command may never finish (" + findings(r) + ")."
		if r.SuggestedRewrite != "" {
			reason += " Run this bounded form instead: " + r.SuggestedRewrite
		} else {
			reason += " Give it an explicit bound (timeout 30 CMD, a count, --until) and retry."
		}
		return Decision{Permission: p.OnUnbounded, Reason: reason, Codes: codes}
	}
	reason := "govkit classify: not provably read-only (" + findings(r) + ", risk " + r.Risk.String()
	if r.ActionClass == intent.ActionDestructive {
		reason += ", destructive"
	}
	reason += ")."
	switch p.OnWrite {
	case Allow:
		return Decision{Permission: Allow, Reason: reason + " Allowed by --on-write allow.", Codes: codes}
	case Ask:
		return Decision{Permission: Ask, Reason: reason + " Ask the user to approve it.", Codes: codes}
	}
	return Decision{Permission: Deny, Reason: reason + " Ask the user to run it, or to approve it in the agent's settings.", Codes: codes}
}

// findings renders the reasons as "CODE: detail; …", bounded in length.
func findings(r intent.Result) string {
	var b strings.Builder
	for i, x := range r.Reasons {
		if i == 3 {
			fmt.Fprintf(&b, "; +%d more", len(r.Reasons)-3)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(string(x.Code) + ": " + x.Detail)
	}
	return termtext.Truncate(b.String(), 600)
}

// DecideTool decides a non-shell tool by its kind (seed 000 P-34: an
// unknown tool is a write).
func DecideTool(name string, kind ToolKind, p Policy) Decision {
	if kind == ToolRead {
		return Decision{Permission: Allow, Reason: "govkit classify: " + name + " only reads"}
	}
	what := "changes files or state"
	if kind == ToolUnknown {
		what = "is not a known read-only tool"
	}
	r := intent.Result{Intent: intent.WriteOrUnknown, Bounded: true, Risk: intent.RiskMediumWrite,
		Reasons: []intent.Reason{{Code: intent.CodeUnknownCommand, Detail: "tool " + name + " " + what}}}
	if kind == ToolWrite {
		r.Reasons[0].Code = intent.CodeWriteCommand
	}
	return DecideCommand(r, p)
}

// Failure is the decision for anything the hook could not decide: a
// malformed or oversized event, a panic, a blown budget. It is always deny.
func Failure(what string) Decision {
	return Decision{Permission: Deny, Reason: "govkit classify could not decide (" + what + "), so it blocks the call. Ask the user to run it, or fix the hook (classify doctor)."}
}
