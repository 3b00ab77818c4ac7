package hook

import (
	"fmt"
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
