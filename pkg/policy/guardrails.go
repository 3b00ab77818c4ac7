package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Guardrails are hard limits on a session that no policy and no approval
// can lift (seed 003 "Guardrails": "cannot be overridden, even with
// approval"; H-18, H-21, H-22; DESIGN §12):
//
//	guardrails:
//	  rate_limit: {writes_per_minute: 20, scope: session}                   # RATE_LIMITED
//	  circuit_breaker: {consecutive_errors: 5, window: 10m, cooldown: 15m}  # CIRCUIT_OPEN
//
// They are computed from the session's own recorded history (auditd's
// events), so every enforcement point that asks auditd shares them; this
// file evaluates that history purely, at a time passed in.
type Guardrails struct {
	RateLimit      *RateLimit      `yaml:"rate_limit" json:"rate_limit,omitempty"`
	CircuitBreaker *CircuitBreaker `yaml:"circuit_breaker" json:"circuit_breaker,omitempty"`
	Line           int             `yaml:"-" json:"-"` // where its mapping starts in its file
}

// RateLimit caps a session's writes: write and destructive decisions that
// were not denied, in the last minute. Reads are never rate-limited.
type RateLimit struct {
	WritesPerMinute int `yaml:"writes_per_minute" json:"writes_per_minute"`
	// Scope is what the limit counts per: only "session" for now ("" means
	// session).
	Scope string `yaml:"scope" json:"scope,omitempty"`
	Line  int    `yaml:"-" json:"-"`
}

// CircuitBreaker pauses a session after ConsecutiveErrors tool errors in
// a row, all within Window, for Cooldown after the last of them.
type CircuitBreaker struct {
	ConsecutiveErrors int           `yaml:"consecutive_errors" json:"consecutive_errors"`
	Window            time.Duration `yaml:"window" json:"window"`
	Cooldown          time.Duration `yaml:"cooldown" json:"cooldown"`
	Line              int           `yaml:"-" json:"-"`
}

// Guardrail reason codes (DESIGN §12): Decision.Code when a tripped
// guardrail refuses a request; gate exits 125 with them.
const (
	CodeRateLimited = "RATE_LIMITED"
	CodeCircuitOpen = "CIRCUIT_OPEN"
)

// ScopeSession is the only rate-limit scope so far.
const ScopeSession = "session"

// Bounds of the guardrail settings. auditd reads at most a bounded number
// of a session's events per decision, so a limit far above any agent's
// real pace would only make it read more.
const (
	MaxWritesPerMinute   = 1000
	MaxConsecutiveErrors = 1000
	maxGuardrailPeriod   = 24 * time.Hour
	rateWindow           = time.Minute
)

// GuardrailName values in traces.
const (
	GuardrailRateLimit      = "rate_limit"
	GuardrailCircuitBreaker = "circuit_breaker"
)

// SessionHistory is what was recorded of one session, as the guardrails
// need it; auditd builds it from its events (pkg/auditd guardrails.go).
type SessionHistory struct {
	// ID is the session's id, for the trace.
	ID string
	// Writes are the times of the session's write and destructive
	// decisions whose enforced effect was not deny (at least those of the
	// last minute), in any order. Checks after execution are not writes.
	Writes []time.Time
	// Outcomes are the session's tool executions that ended in success or
	// error, in the order they were recorded (at least those of the last
	// Lookback).
	Outcomes []ToolOutcome
	// WritesTruncated and OutcomesTruncated say the session recorded more
	// than the reader takes for one decision: that guardrail then refuses
	// (fail closed, DESIGN §3) rather than decide on part of the history.
	WritesTruncated, OutcomesTruncated bool
}

// ToolOutcome is one recorded tool execution: when, and whether it failed
// (an error or a timeout).
type ToolOutcome struct {
	At    time.Time
	Error bool
}

// GuardrailsTrace is the "guardrails" member of a DecisionTrace. When the
// guardrails were evaluated, Checks has one entry per configured
// guardrail; Code, RetryAfterSeconds and LiftsAt then name the trip that
// refuses the request (CIRCUIT_OPEN before RATE_LIMITED) and when every
// tripped guardrail has lifted. When they were not evaluated (no session,
// a check after execution, a local evaluation) Detail says why.
type GuardrailsTrace struct {
	Evaluated         bool             `json:"evaluated"`
	SessionID         string           `json:"session_id,omitempty"`
	Detail            string           `json:"detail,omitempty"`
	Checks            []GuardrailCheck `json:"checks,omitempty"`
	Code              string           `json:"code,omitempty"`
	RetryAfterSeconds int64            `json:"retry_after_seconds,omitempty"`
	LiftsAt           *time.Time       `json:"lifts_at,omitempty"`
}

// GuardrailCheck is one guardrail's verdict for a request.
type GuardrailCheck struct {
	Name              string     `json:"name"` // rate_limit | circuit_breaker
	Passed            bool       `json:"passed"`
	Detail            string     `json:"detail"`
	Code              string     `json:"code,omitempty"`
	RetryAfterSeconds int64      `json:"retry_after_seconds,omitempty"`
	LiftsAt           *time.Time `json:"lifts_at,omitempty"`
}

// Tripped reports whether a guardrail refuses the request.
func (t *GuardrailsTrace) Tripped() bool { return t != nil && t.Code != "" }

// Lookback is how far back each part of a session's history matters at
// most: the last minute of writes, and a circuit breaker's window plus
// its cooldown of outcomes. Zero when that guardrail is not configured.
func (g *Guardrails) Lookback() (writes, outcomes time.Duration) {
	if g == nil {
		return 0, 0
	}
	if g.RateLimit != nil {
		writes = rateWindow
	}
	if cb := g.CircuitBreaker; cb != nil {
		outcomes = cb.Window + cb.Cooldown
	}
	return writes, outcomes
}

// NotEvaluated is the trace of guardrails that were not evaluated, and why.
func NotEvaluated(why string) *GuardrailsTrace {
	return &GuardrailsTrace{Detail: why}
}

// Evaluate checks a request for action against h at now. Nil g has no
// guardrails (nil trace); nil h means the request has no session, and
// the guardrails, which count per session, are not evaluated.
//
// The rate limit refuses a write or destructive action when the session
// already has WritesPerMinute writes in the last minute; it lifts when the
// oldest of them turns a minute old. The circuit breaker opens when
// ConsecutiveErrors tool executions in a row failed within Window, and
// stays open for Cooldown after the error that opened it: while open it
// refuses every action of the session, reads too (the agent is paused,
// seed 003 "auto-pause an agent"), and outcomes recorded meanwhile neither
// extend nor close it, so the announced time holds. When it lifts the
// count starts again from zero.
func (g *Guardrails) Evaluate(action Action, h *SessionHistory, now time.Time) *GuardrailsTrace {
	if g == nil {
		return nil
	}
	if h == nil {
		return NotEvaluated("no session_id: " + g.names() + " count per session, so they were not evaluated")
	}
	t := &GuardrailsTrace{Evaluated: true, SessionID: h.ID}
	var lifts time.Time
	trip := func(c GuardrailCheck, code string, at time.Time) GuardrailCheck {
		c.Code = code
		c.LiftsAt, c.RetryAfterSeconds = liftTimes(at, now)
		if t.Code != CodeCircuitOpen {
			t.Code = code
		}
		lifts = latest(lifts, at)
		return c
	}
	if rl := g.RateLimit; rl != nil {
		c, at := rl.check(action, h, now)
		if !c.Passed {
			c = trip(c, CodeRateLimited, at)
		}
		t.Checks = append(t.Checks, c)
	}
	if cb := g.CircuitBreaker; cb != nil {
		c, at := cb.check(h, now)
		if !c.Passed {
			c = trip(c, CodeCircuitOpen, at)
		}
		t.Checks = append(t.Checks, c)
	}
	if t.Code != "" {
		t.LiftsAt, t.RetryAfterSeconds = liftTimes(lifts, now)
	}
	return t
}

func (g *Guardrails) names() string {
	switch {
	case g.RateLimit != nil && g.CircuitBreaker != nil:
		return "the rate limit and the circuit breaker"
	case g.RateLimit != nil:
		return "the rate limit"
	case g.CircuitBreaker != nil:
		return "the circuit breaker"
	}
	return "guardrails"
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// liftTimes is a trip's lifts_at (UTC) and retry_after_seconds, both
// rounded up to whole seconds (retry at least 1), so that retrying at
// either never lands just before the lift.
func liftTimes(at, now time.Time) (*time.Time, int64) {
	u := liftSecond(at).UTC()
	wait := u.Sub(now)
	secs := int64((wait + time.Second - 1) / time.Second)
	return &u, max(secs, 1)
}

func (rl *RateLimit) check(action Action, h *SessionHistory, now time.Time) (GuardrailCheck, time.Time) {
	c := GuardrailCheck{Name: GuardrailRateLimit, Passed: true}
	limit := rl.WritesPerMinute
	since := now.Add(-rateWindow)
	var recent []time.Time
	for _, w := range h.Writes {
		if w.After(since) {
			recent = append(recent, w)
		}
	}
	n := len(recent)
	if actionBit(action) == maskRead {
		c.Detail = fmt.Sprintf("reads are not rate-limited (%s in the last minute, limit %d)", plural(n, "write"), limit)
		return c, time.Time{}
	}
	if h.WritesTruncated {
		c.Passed = false
		c.Detail = fmt.Sprintf("the session recorded more writes in the last minute than auditd reads per decision; refused (fail closed), limit %d", limit)
		return c, now.Add(rateWindow)
	}
	if n < limit {
		c.Detail = fmt.Sprintf("%s in the last minute, limit %d", plural(n, "write"), limit)
		return c, time.Time{}
	}
	// Refused until only limit-1 of these writes are younger than a
	// minute: when the (n-limit+1)th oldest turns a minute old.
	slices.SortFunc(recent, func(a, b time.Time) int { return a.Compare(b) })
	at := recent[n-limit].Add(rateWindow)
	c.Passed = false
	lift := liftSecond(at)
	c.Detail = fmt.Sprintf("%s in the last minute, limit %d: writes are refused until %s (in %s)",
		plural(n, "write"), limit, stamp(lift), waitText(lift.Sub(now)))
	return c, at
}

func (cb *CircuitBreaker) check(h *SessionHistory, now time.Time) (GuardrailCheck, time.Time) {
	c := GuardrailCheck{Name: GuardrailCircuitBreaker, Passed: true}
	if h.OutcomesTruncated {
		at := now.Add(cb.Cooldown)
		c.Passed = false
		c.Detail = fmt.Sprintf("the session recorded more tool executions in the last %s than auditd reads per decision; refused (fail closed) for the cooldown, until %s",
			durText(cb.Window+cb.Cooldown), stamp(liftSecond(at)))
		return c, at
	}
	var run []time.Time // consecutive errors, all within the window of the last
	var openUntil, lastError time.Time
	for _, o := range h.Outcomes {
		if o.At.Before(openUntil) {
			continue // open: neither extended nor closed by what happens meanwhile
		}
		if !o.Error {
			run = run[:0]
			continue
		}
		run = append(run, o.At)
		for len(run) > 0 && o.At.Sub(run[0]) > cb.Window {
			run = run[1:]
		}
		if len(run) >= cb.ConsecutiveErrors {
			openUntil, lastError = o.At.Add(cb.Cooldown), o.At
			run = run[:0]
		}
	}
	if now.Before(openUntil) {
		lift := liftSecond(openUntil)
		c.Passed = false
		c.Detail = fmt.Sprintf("%s in a row within %s, the last at %s: open, every action of the session is refused until %s (in %s)",
			plural(cb.ConsecutiveErrors, "error"), durText(cb.Window), stamp(lastError), stamp(lift), waitText(lift.Sub(now)))
		return c, openUntil
	}
	n := 0
	for _, at := range run {
		if now.Sub(at) <= cb.Window {
			n++
		}
	}
	c.Detail = fmt.Sprintf("%s in a row in the last %s, opens at %d", plural(n, "error"), durText(cb.Window), cb.ConsecutiveErrors)
	if !openUntil.IsZero() {
		c.Detail += fmt.Sprintf(" (it was open until %s)", stamp(liftSecond(openUntil)))
	}
	return c, time.Time{}
}

// liftSecond rounds a lift time up to the second: what the texts, lifts_at
// and retry_after_seconds all announce.
func liftSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// waitText is a wait rounded up to the second: "42s", "14m10s".
func waitText(d time.Duration) string {
	return durText(((d + time.Second - 1) / time.Second) * time.Second)
}

// durText is a duration without the zero units of String: "10m", "1h30m".
func durText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// guard applies the engine's guardrails to an evaluation (ExplainSession).
// A trip refuses the request unless the policies already deny it: Effect
// and EnforcedEffect become deny, even in front of require_approval (H-18),
// and Code and Message say which guardrail and until when. Under global
// dry-run the refusal is recorded and allow is enforced, as for any deny
// (DESIGN §5.5). After execution the action already ran: the guardrails
// are not evaluated then.
func (e *Engine) guard(ev *evaluation, h *SessionHistory) {
	if e.guardrails == nil || e.err != nil {
		return
	}
	if ev.post {
		ev.trace.Guardrails = NotEvaluated("not evaluated after execution: the action already ran (guardrails refuse before it)")
		return
	}
	gt := e.guardrails.Evaluate(ev.req.Action, h, ev.now())
	ev.trace.Guardrails = gt
	if !gt.Tripped() || ev.enforced == EffectDeny {
		return
	}
	d := &ev.trace.Decision
	ev.overridden = *d
	d.Effect, d.EnforcedEffect, d.ApprovalQuorum = EffectDeny, EffectDeny, 0
	d.Code, d.Message, d.DryRun = gt.Code, gt.message(), e.dryRun
	if e.dryRun {
		d.EnforcedEffect = EffectAllow
	}
}

// message is the Decision.Message of a trip: its code, the tripped
// checks' details and when it lifts.
func (t *GuardrailsTrace) message() string {
	var parts []string
	for _, c := range t.Checks {
		if !c.Passed {
			parts = append(parts, c.Detail)
		}
	}
	return t.Code + ": " + strings.Join(parts, "; ")
}

// ExplainSession is Explain with the policy file's guardrails evaluated
// against the request's session history h (nil: the request has no
// session). The evaluation time is req.Context.Time, else the clock.
func (e *Engine) ExplainSession(req Request, h *SessionHistory) DecisionTrace {
	ev := e.evaluate(req, false)
	e.guard(ev, h)
	tr := ev.trace
	tr.Explanation = ev.explanation()
	return tr
}

// ExplainUnguarded is Explain for an engine with guardrails when no
// session history is at hand (a local evaluation): the trace lists them as
// not evaluated, for the reason why.
func (e *Engine) ExplainUnguarded(req Request, why string) DecisionTrace {
	ev := e.evaluate(req, false)
	if e.guardrails != nil && e.err == nil {
		ev.trace.Guardrails = NotEvaluated(why)
	}
	tr := ev.trace
	tr.Explanation = ev.explanation()
	return tr
}

// CheckPostExecutionSession is CheckPostExecution for an engine with
// guardrails: the trace says they are not evaluated after execution.
func (e *Engine) CheckPostExecutionSession(req Request) DecisionTrace {
	ev := e.evaluate(req, true)
	e.guard(ev, nil)
	tr := ev.trace
	tr.Explanation = ev.explanation()
	return tr
}

// Guardrails returns the engine's guardrails (nil when the policy file has
// none); callers must not change them.
func (e *Engine) Guardrails() *Guardrails { return e.guardrails }

// decodeGuardrails decodes the top-level guardrails: mapping. Explicit
// values are checked here (as approval_quorum is: in the struct an explicit
// 0 and an absent key look the same); validateGuardrails checks the rest.
func (d *decoder) guardrails(n *yaml.Node, field string) *Guardrails {
	g := &Guardrails{Line: n.Line}
	d.mapping(n, field, []string{GuardrailRateLimit, GuardrailCircuitBreaker}, func(key string, v *yaml.Node, field string) {
		if isNull(v) {
			d.errorf(v.Line, field, "empty: remove it, or give its settings (see policies.example.yaml)")
			return
		}
		switch key {
		case GuardrailRateLimit:
			rl := &RateLimit{Line: v.Line}
			d.mapping(v, field, []string{"writes_per_minute", "scope"}, func(key string, v *yaml.Node, field string) {
				switch key {
				case "writes_per_minute":
					rl.WritesPerMinute = d.positive(v, field, MaxWritesPerMinute)
				case "scope":
					switch rl.Scope = d.str(v, field); rl.Scope {
					case ScopeSession:
					case "":
						d.errorf(v.Line, field, `empty: the only scope is "session" for now (the limit counts each session's writes)`)
					default:
						d.errorf(v.Line, field, "%s", scopeProblem(rl.Scope))
					}
				}
			})
			g.RateLimit = rl
		case GuardrailCircuitBreaker:
			cb := &CircuitBreaker{Line: v.Line}
			d.mapping(v, field, []string{"consecutive_errors", "window", "cooldown"}, func(key string, v *yaml.Node, field string) {
				switch key {
				case "consecutive_errors":
					cb.ConsecutiveErrors = d.positive(v, field, MaxConsecutiveErrors)
				case "window":
					cb.Window = d.duration(v, field)
				case "cooldown":
					cb.Cooldown = d.duration(v, field)
				}
			})
			g.CircuitBreaker = cb
		}
	})
	return g
}

// positive decodes an integer in 1..limit; a bad value is reported (and
// decodes as -1: a load with errors never reaches validate).
func (d *decoder) positive(n *yaml.Node, field string, limit int) int {
	v, ok := d.integer(n, field)
	if !ok {
		return -1
	}
	if v < 1 || v > limit {
		d.errorf(n.Line, field, "%d is not between 1 and %d", v, limit)
		return -1
	}
	return v
}

// duration decodes a Go duration ("10m", "1h30m") between 1s and 24h; a
// bad value is reported (and decodes as -1).
func (d *decoder) duration(n *yaml.Node, field string) time.Duration {
	s := d.str(n, field)
	if s == "" {
		d.errorf(n.Line, field, "want a Go duration such as 10m, got nothing")
		return -1
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.errorf(n.Line, field, "%s is not a Go duration (such as 90s, 10m or 1h30m)", quote(s))
		return -1
	}
	if msg := durationProblem(v); msg != "" {
		d.errorf(n.Line, field, "%s %s", quote(s), msg)
		return -1
	}
	return v
}

func scopeProblem(scope string) string {
	return quote(scope) + ` is not supported: the only scope is "session" for now (the limit counts each session's writes)`
}

func durationProblem(v time.Duration) string {
	if v < time.Second || v > maxGuardrailPeriod {
		return "is not between 1s and 24h"
	}
	return ""
}

// validateGuardrails checks guardrails built in code, or decoded (the
// decoder has reported bad values already: here are the required keys).
func validateGuardrails(p *problems, g *Guardrails) {
	if g == nil {
		return
	}
	line := g.Line
	if g.RateLimit == nil && g.CircuitBreaker == nil {
		p.add("guardrails", line, "empty: give rate_limit, circuit_breaker or both, or remove guardrails")
	}
	if rl := g.RateLimit; rl != nil {
		base := "guardrails.rate_limit"
		l := max(rl.Line, line)
		switch n := rl.WritesPerMinute; {
		case n == 0:
			p.add(base+".writes_per_minute", l, "required: how many writes a session may make per minute (1 to "+strconv.Itoa(MaxWritesPerMinute)+")")
		case n > MaxWritesPerMinute || n < 0:
			p.add(base+".writes_per_minute", l, strconv.Itoa(n)+" is not between 1 and "+strconv.Itoa(MaxWritesPerMinute))
		}
		switch rl.Scope {
		case "", ScopeSession:
		default:
			p.add(base+".scope", l, scopeProblem(rl.Scope))
		}
	}
	if cb := g.CircuitBreaker; cb != nil {
		base := "guardrails.circuit_breaker"
		l := max(cb.Line, line)
		switch n := cb.ConsecutiveErrors; {
		case n == 0:
			p.add(base+".consecutive_errors", l, "required: how many tool errors in a row open the circuit (1 to "+strconv.Itoa(MaxConsecutiveErrors)+")")
		case n > MaxConsecutiveErrors || n < 0:
			p.add(base+".consecutive_errors", l, strconv.Itoa(n)+" is not between 1 and "+strconv.Itoa(MaxConsecutiveErrors))
		}
		for _, f := range []struct {
			name, what string
			v          time.Duration
		}{{"window", "how close together the errors must be", cb.Window}, {"cooldown", "how long the circuit stays open", cb.Cooldown}} {
			switch {
			case f.v == 0:
				p.add(base+"."+f.name, l, "required: "+f.what+", a Go duration such as 10m")
			case durationProblem(f.v) != "":
				p.add(base+"."+f.name, l, f.v.String()+" "+durationProblem(f.v))
			}
		}
	}
}

// lintGuardrails reports guardrail settings that load but hardly guard.
func lintGuardrails(g *Guardrails) []Finding {
	if g == nil {
		return nil
	}
	var out []Finding
	if cb := g.CircuitBreaker; cb != nil {
		if cb.Cooldown > 0 && cb.Cooldown < time.Minute {
			out = append(out, Finding{Kind: FindingGuardrailShortCooldown, Rule: -1, Line: cb.Line, Message: fmt.Sprintf(
				"circuit_breaker cooldown %s pauses a failing session for less than a minute, hardly a pause for an agent in a failure loop; use a few minutes or more", durText(cb.Cooldown))})
		}
		if cb.ConsecutiveErrors > 1 && cb.Window > 0 && cb.Window < time.Minute {
			out = append(out, Finding{Kind: FindingGuardrailShortWindow, Rule: -1, Line: cb.Line, Message: fmt.Sprintf(
				"circuit_breaker window %s: %d errors in a row must all fall within it, which a command-by-command agent rarely manages; the breaker would almost never open; use minutes", durText(cb.Window), cb.ConsecutiveErrors)})
		}
	}
	return out
}
