package hook

import (
	"fmt"
	"strings"
	"time"
)

// MaxEvent bounds the event read from stdin (DESIGN §3: bounded reads).
const MaxEvent = 1 << 20

// Answer is what the hook process writes and how it exits.
type Answer struct {
	Stdout []byte
	Stderr string
	Exit   int
}

// Judge decides one decoded event.
type Judge func(Event) Decision

// Respond runs the whole hook for one raw pre-tool-call event in the
// agent's dialect (classify hook; any other kind of event is a Failure):
// bound the input, decode, judge within budget, encode. Every failure path
// — oversized or malformed input, a panic anywhere, a blown budget — ends
// in the dialect's deny form. Nothing but an explicit Allow from judge can
// produce an allow.
func Respond(d Dialect, raw []byte, judge Judge, budget time.Duration) (ans Answer) {
	defer func() {
		if p := recover(); p != nil {
			ans = d.Encode(Failure(fmt.Sprintf("internal error: %v", p)))
		}
	}()
	if len(raw) > MaxEvent {
		return d.Encode(Failure(fmt.Sprintf("the event is %d bytes; the limit is %d", len(raw), MaxEvent)))
	}
	ev, err := d.Decode(raw)
	if err != nil {
		return d.Encode(Failure("malformed event: " + err.Error()))
	}
	if ev.Kind != PreTool {
		// classify hook answers pre-tool calls only; gate hook answers the
		// rest. Registered for another event, it blocks as it always has.
		return d.Encode(Failure("malformed event: a " + ev.Kind.String() + " event, not a pre-tool call"))
	}
	dec := judgeWithin(judge, ev, budget)
	if ev.NoAsk {
		dec = settle(dec, false)
	}
	return d.Encode(dec)
}

// judgeWithin runs judge with a deadline; a panic in judge or a decision
// that does not come in time is a Failure.
func judgeWithin(judge Judge, ev Event, budget time.Duration) Decision {
	done := make(chan Decision, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Failure(fmt.Sprintf("internal error: %v", p))
			}
		}()
		done <- judge(ev)
	}()
	timer := time.NewTimer(budget)
	defer timer.Stop()
	select {
	case d := <-done:
		return d
	case <-timer.C:
		return Failure(fmt.Sprintf("no decision within the %v budget", budget))
	}
}

// Misconfigured is the answer of a hook command that cannot run properly
// (a bad flag, an unreadable config): d in the blocking form of the agent
// named by --agent in args, since every agent lets a call through when its
// hook merely exits 3. When even the agent is unknown it is exit 2, which
// blocks in Claude Code, Codex, Gemini CLI and Cursor.
func Misconfigured(agent string, args []string, d Decision) Answer {
	if agent == "" {
		agent = AgentArg(args)
	}
	dialect, ok := Dialects[agent]
	if !ok {
		return Answer{Exit: 2}
	}
	return dialect.Encode(d)
}

// AgentArg finds --agent in raw arguments, for when flag parsing failed.
func AgentArg(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--agent="); ok {
			return v
		}
		if a == "--agent" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
