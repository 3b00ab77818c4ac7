package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const guardedBase = `version: "1"
policies:
  - name: prod
    resources: [{type: database}]
    rules:
      - {action: read, effect: allow}
      - {action: write, effect: allow}
      - action: destructive
        effect: allow
        conditions: {require_approval: true, approval_quorum: 2}
  - name: frozen
    resources: [{type: database, name: frozen-db}]
    rules: [{action: [read, write, destructive], effect: deny}]
guardrails:
  rate_limit: {writes_per_minute: 3, scope: session}
  circuit_breaker:
    consecutive_errors: 3
    window: 10m
    cooldown: 15m
`

func TestLoadGuardrails(t *testing.T) {
	cfg, err := LoadNamed("policies.yaml", strings.NewReader(guardedBase))
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Guardrails
	if g == nil || g.RateLimit == nil || g.CircuitBreaker == nil {
		t.Fatalf("%+v", g)
	}
	if g.Line != 15 || g.RateLimit.WritesPerMinute != 3 || g.RateLimit.Scope != "session" || g.RateLimit.Line != 15 ||
		g.CircuitBreaker.ConsecutiveErrors != 3 || g.CircuitBreaker.Window != 10*time.Minute ||
		g.CircuitBreaker.Cooldown != 15*time.Minute || g.CircuitBreaker.Line != 17 {
		t.Errorf("decoded %+v %+v %+v", g, g.RateLimit, g.CircuitBreaker)
	}
	if w, o := g.Lookback(); w != time.Minute || o != 25*time.Minute {
		t.Errorf("lookback %s %s", w, o)
	}
	// Without guardrails: as before.
	cfg, err = LoadNamed("policies.yaml", strings.NewReader(base))
	if err != nil || cfg.Guardrails != nil {
		t.Fatalf("%v %+v", err, cfg.Guardrails)
	}
}

func TestLoadGuardrailErrors(t *testing.T) {
	ed := func(old, new string) string {
		t.Helper()
		if !strings.Contains(guardedBase, old) {
			t.Fatalf("no %q", old)
		}
		return strings.Replace(guardedBase, old, new, 1)
	}
	tests := []struct{ name, doc, want string }{
		{"unknown guardrail", ed("  rate_limit:", "  budget: {}\n  rate_limit:"),
			`policies.yaml:15: guardrails.budget: unknown key (want one of rate_limit, circuit_breaker)`},
		{"unknown key", ed("writes_per_minute: 3", "writes_per_minut: 3"),
			`policies.yaml:15: guardrails.rate_limit.writes_per_minut: unknown key (want one of writes_per_minute, scope)`},
		{"scope", ed("scope: session", "scope: agent"),
			`policies.yaml:15: guardrails.rate_limit.scope: "agent" is not supported: the only scope is "session" for now (the limit counts each session's writes)`},
		{"empty scope", ed("scope: session", `scope: ""`),
			`policies.yaml:15: guardrails.rate_limit.scope: empty: the only scope is "session" for now…`},
		{"zero writes", ed("writes_per_minute: 3", "writes_per_minute: 0"),
			`policies.yaml:15: guardrails.rate_limit.writes_per_minute: 0 is not between 1 and 1000`},
		{"text writes", ed("writes_per_minute: 3", "writes_per_minute: many"),
			`policies.yaml:15: guardrails.rate_limit.writes_per_minute: want an integer, got "many"`},
		{"missing writes", ed("writes_per_minute: 3, ", ""),
			`policies.yaml:15: guardrails.rate_limit.writes_per_minute: required: how many writes a session may make per minute (1 to 1000)`},
		{"negative errors", ed("consecutive_errors: 3", "consecutive_errors: -2"),
			`policies.yaml:17: guardrails.circuit_breaker.consecutive_errors: -2 is not between 1 and 1000`},
		{"not a duration", ed("window: 10m", "window: 600"),
			`policies.yaml:18: guardrails.circuit_breaker.window: "600" is not a Go duration (such as 90s, 10m or 1h30m)`},
		{"negative duration", ed("cooldown: 15m", "cooldown: -15m"),
			`policies.yaml:19: guardrails.circuit_breaker.cooldown: "-15m" is not between 1s and 24h`},
		{"too long", ed("cooldown: 15m", "cooldown: 48h"),
			`policies.yaml:19: guardrails.circuit_breaker.cooldown: "48h" is not between 1s and 24h`},
		{"null duration", ed("cooldown: 15m", "cooldown:"),
			`policies.yaml:19: guardrails.circuit_breaker.cooldown: want a Go duration such as 10m, got nothing`},
		{"missing cooldown", ed("    cooldown: 15m\n", ""),
			`policies.yaml:17: guardrails.circuit_breaker.cooldown: required: how long the circuit stays open, a Go duration such as 10m`},
		{"null guardrail", ed("  rate_limit: {writes_per_minute: 3, scope: session}", "  rate_limit:"),
			`policies.yaml:15: guardrails.rate_limit: empty: remove it, or give its settings (see policies.example.yaml)`},
		{"null guardrails", strings.SplitAfter(guardedBase, "guardrails:\n")[0],
			`policies.yaml:14: guardrails: empty: give rate_limit, circuit_breaker or both, or remove guardrails`},
		{"empty guardrails", strings.SplitAfter(guardedBase, "guardrails:")[0] + " {}\n",
			`policies.yaml:14: guardrails: empty: give rate_limit, circuit_breaker or both, or remove guardrails`},
		{"a list", strings.SplitAfter(guardedBase, "guardrails:")[0] + " [rate_limit]\n",
			`policies.yaml:14: guardrails: want a mapping with keys rate_limit, circuit_breaker, got a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadNamed("policies.yaml", strings.NewReader(tt.doc))
			if err == nil {
				t.Fatal("loaded")
			}
			got := strings.Split(err.Error(), "\n")[0]
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(got, prefix) {
					t.Errorf("got  %s\nwant %s", got, tt.want)
				}
			} else if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var le *LoadError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Errorf("not located: %#v", err)
			}
		})
	}
}

// Guardrails built in code are validated as loaded ones are.
func TestValidateGuardrailsHandBuilt(t *testing.T) {
	cfg := &Config{Version: "1", Guardrails: &Guardrails{
		RateLimit:      &RateLimit{WritesPerMinute: 5000, Scope: "tenant"},
		CircuitBreaker: &CircuitBreaker{ConsecutiveErrors: 2, Window: time.Millisecond},
	}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("valid")
	}
	for _, want := range []string{
		"guardrails.rate_limit.writes_per_minute: 5000 is not between 1 and 1000",
		`guardrails.rate_limit.scope: "tenant" is not supported`,
		"guardrails.circuit_breaker.window: 1ms is not between 1s and 24h",
		"guardrails.circuit_breaker.cooldown: required",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	if e := NewEngine(EngineConfig{PolicyConfig: cfg}); e.Err() == nil {
		t.Error("engine built from invalid guardrails")
	}
}

var t0 = time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func outcomes(start time.Duration, step time.Duration, pattern string) []ToolOutcome {
	var out []ToolOutcome
	for i, c := range pattern {
		out = append(out, ToolOutcome{At: at(start + time.Duration(i)*step), Error: c == 'E'})
	}
	return out
}

// TestGuardrailsEvaluate: tripping and lifting, for both guardrails, at an
// injected time.
func TestGuardrailsEvaluate(t *testing.T) {
	g := &Guardrails{
		RateLimit:      &RateLimit{WritesPerMinute: 3},
		CircuitBreaker: &CircuitBreaker{ConsecutiveErrors: 3, Window: 10 * time.Minute, Cooldown: 15 * time.Minute},
	}
	writes := []time.Time{at(10 * time.Second), at(20 * time.Second), at(30 * time.Second)}
	tests := []struct {
		name    string
		action  Action
		h       SessionHistory
		now     time.Time
		code    string // "" passes
		lifts   time.Time
		retry   int64
		details []string // fragments of the checks' details, in order
	}{
		{name: "empty session", action: ActionWrite, now: at(0),
			details: []string{"0 writes in the last minute, limit 3", "0 errors in a row in the last 10m, opens at 3"}},
		{name: "under the limit", action: ActionWrite, h: SessionHistory{Writes: writes[:2]}, now: at(40 * time.Second),
			details: []string{"2 writes in the last minute, limit 3"}},
		{name: "rate limit trips at the limit", action: ActionWrite, h: SessionHistory{Writes: writes}, now: at(40 * time.Second),
			code: CodeRateLimited, lifts: at(70 * time.Second), retry: 30,
			details: []string{"3 writes in the last minute, limit 3: writes are refused until 2026-03-09T12:01:10Z (in 30s)"}},
		{name: "destructive counts as a write", action: ActionDestructive, h: SessionHistory{Writes: writes}, now: at(40 * time.Second),
			code: CodeRateLimited, lifts: at(70 * time.Second), retry: 30},
		{name: "writes in any order", action: ActionWrite, h: SessionHistory{Writes: []time.Time{writes[2], writes[0], writes[1]}}, now: at(40 * time.Second),
			code: CodeRateLimited, lifts: at(70 * time.Second), retry: 30},
		{name: "over the limit lifts when enough age out", action: ActionWrite,
			h: SessionHistory{Writes: append([]time.Time{at(5 * time.Second)}, writes...)}, now: at(40 * time.Second),
			code: CodeRateLimited, lifts: at(70 * time.Second), retry: 30},
		{name: "rate limit lifts a minute after the oldest", action: ActionWrite, h: SessionHistory{Writes: writes}, now: at(70 * time.Second),
			details: []string{"2 writes in the last minute, limit 3"}},
		{name: "reads are never rate-limited", action: ActionRead, h: SessionHistory{Writes: writes}, now: at(40 * time.Second),
			details: []string{"reads are not rate-limited (3 writes in the last minute, limit 3)"}},
		{name: "retry rounds up", action: ActionWrite, h: SessionHistory{Writes: writes}, now: at(40*time.Second + time.Millisecond),
			code: CodeRateLimited, lifts: at(70 * time.Second), retry: 30},
		{name: "too many writes to read: fail closed", action: ActionWrite, h: SessionHistory{WritesTruncated: true}, now: at(0),
			code: CodeRateLimited, lifts: at(time.Minute), retry: 60, details: []string{"fail closed"}},

		{name: "two errors stay closed", action: ActionWrite, h: SessionHistory{Outcomes: outcomes(0, time.Minute, "EE")}, now: at(3 * time.Minute),
			details: []string{"0 writes", "2 errors in a row in the last 10m, opens at 3"}},
		{name: "circuit opens on the third error", action: ActionWrite, h: SessionHistory{Outcomes: outcomes(0, time.Minute, "EEE")}, now: at(3 * time.Minute),
			code: CodeCircuitOpen, lifts: at(17 * time.Minute), retry: 14 * 60,
			details: []string{"0 writes", "3 errors in a row within 10m, the last at 2026-03-09T12:02:00Z: open, every action of the session is refused until 2026-03-09T12:17:00Z (in 14m)"}},
		{name: "open circuit refuses reads too", action: ActionRead, h: SessionHistory{Outcomes: outcomes(0, time.Minute, "EEE")}, now: at(3 * time.Minute),
			code: CodeCircuitOpen, lifts: at(17 * time.Minute), retry: 14 * 60},
		{name: "circuit lifts after the cooldown", action: ActionWrite, h: SessionHistory{Outcomes: outcomes(0, time.Minute, "EEE")}, now: at(17 * time.Minute),
			details: []string{"0 writes", "0 errors in a row in the last 10m, opens at 3 (it was open until 2026-03-09T12:17:00Z)"}},
		{name: "a success resets the count", action: ActionWrite, h: SessionHistory{Outcomes: outcomes(0, time.Minute, "EESEE")}, now: at(5 * time.Minute),
			details: []string{"0 writes", "2 errors in a row"}},
		{name: "errors further apart than the window", action: ActionWrite, h: SessionHistory{Outcomes: outcomes(0, 6*time.Minute, "EEE")}, now: at(13 * time.Minute),
			details: []string{"0 writes", "2 errors in a row in the last 10m"}},
		{name: "outcomes while open neither close nor extend it", action: ActionWrite,
			h: SessionHistory{Outcomes: outcomes(0, time.Minute, "EEESSEEEE")}, now: at(9 * time.Minute),
			code: CodeCircuitOpen, lifts: at(17 * time.Minute), retry: 8 * 60},
		{name: "after the lift the count starts again", action: ActionWrite,
			h: SessionHistory{Outcomes: append(outcomes(0, time.Minute, "EEE"), outcomes(20*time.Minute, time.Minute, "EE")...)}, now: at(22 * time.Minute),
			details: []string{"0 writes", "2 errors in a row in the last 10m, opens at 3"}},
		{name: "and opens again on a new run", action: ActionWrite,
			h: SessionHistory{Outcomes: append(outcomes(0, time.Minute, "EEE"), outcomes(20*time.Minute, time.Minute, "EEE")...)}, now: at(22 * time.Minute),
			code: CodeCircuitOpen, lifts: at(37 * time.Minute), retry: 15 * 60},
		{name: "too many outcomes to read: fail closed", action: ActionRead, h: SessionHistory{OutcomesTruncated: true}, now: at(0),
			code: CodeCircuitOpen, lifts: at(15 * time.Minute), retry: 15 * 60, details: []string{"reads are not", "fail closed"}},

		{name: "both tripped: CIRCUIT_OPEN, lifting when both have", action: ActionWrite,
			h: SessionHistory{Writes: writes, Outcomes: outcomes(-2*time.Minute, time.Minute, "EEE")}, now: at(40 * time.Second),
			code: CodeCircuitOpen, lifts: at(15 * time.Minute), retry: 15*60 - 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.h.ID = "s1"
			tr := g.Evaluate(tt.action, &tt.h, tt.now)
			if !tr.Evaluated || tr.SessionID != "s1" || len(tr.Checks) != 2 {
				t.Fatalf("trace %+v", tr)
			}
			if tr.Code != tt.code || tr.Tripped() != (tt.code != "") {
				t.Fatalf("code %q, want %q: %+v", tr.Code, tt.code, tr)
			}
			if tt.code != "" {
				if tr.LiftsAt == nil || !tr.LiftsAt.Equal(tt.lifts) || tr.RetryAfterSeconds != tt.retry {
					t.Errorf("lifts %v retry %d, want %v %d", tr.LiftsAt, tr.RetryAfterSeconds, tt.lifts, tt.retry)
				}
			} else if tr.LiftsAt != nil || tr.RetryAfterSeconds != 0 {
				t.Errorf("passed with lifts %v retry %d", tr.LiftsAt, tr.RetryAfterSeconds)
			}
			for i, c := range tr.Checks {
				if c.Passed != (c.Code == "") || c.Passed != (c.LiftsAt == nil) {
					t.Errorf("check %+v", c)
				}
				if i < len(tt.details) && !strings.Contains(c.Detail, tt.details[i]) {
					t.Errorf("check %d: %q, want %q", i, c.Detail, tt.details[i])
				}
			}
		})
	}
}

// Only the configured guardrails are checked; without a session none is.
func TestGuardrailsEvaluateConfigured(t *testing.T) {
	var none *Guardrails
	if none.Evaluate(ActionWrite, &SessionHistory{}, t0) != nil {
		t.Error("nil guardrails evaluated")
	}
	rl := &Guardrails{RateLimit: &RateLimit{WritesPerMinute: 1}}
	tr := rl.Evaluate(ActionWrite, &SessionHistory{Outcomes: outcomes(0, time.Second, "EEEEEEEE")}, at(time.Minute))
	if len(tr.Checks) != 1 || tr.Checks[0].Name != GuardrailRateLimit || tr.Tripped() {
		t.Errorf("%+v", tr)
	}
	tr = rl.Evaluate(ActionWrite, nil, t0)
	if tr.Evaluated || tr.Checks != nil || tr.Detail != "no session_id: the rate limit count per session, so they were not evaluated" && !strings.HasPrefix(tr.Detail, "no session_id") {
		t.Errorf("%+v", tr)
	}
}

func guardedEngine(t *testing.T, dryRun bool) *Engine {
	t.Helper()
	cfg, err := LoadNamed("policies.yaml", strings.NewReader(guardedBase))
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(EngineConfig{PolicyConfig: cfg, DryRun: dryRun})
	if e.Err() != nil {
		t.Fatal(e.Err())
	}
	return e
}

// A tripped guardrail refuses in front of allow and require_approval
// (H-18), leaves a policy's deny alone, and follows global dry-run.
func TestExplainSessionGuardrails(t *testing.T) {
	full := &SessionHistory{ID: "s1", Writes: []time.Time{at(10 * time.Second), at(20 * time.Second), at(30 * time.Second)}}
	open := &SessionHistory{ID: "s1", Outcomes: outcomes(0, time.Second, "EEE")}
	req := func(action Action, name string) Request {
		return Request{Resource: RequestResource{Type: "database", Name: name}, Action: action, Context: RequestContext{Time: at(40 * time.Second)}}
	}
	tests := []struct {
		name             string
		dryRun           bool
		req              Request
		h                *SessionHistory
		effect, enforced Effect
		code             string
		dryRunFlag       bool
		text             []string
	}{
		{name: "allow under the limit", req: req(ActionWrite, "db1"), h: &SessionHistory{ID: "s1"},
			effect: EffectAllow, enforced: EffectAllow,
			text: []string{"for write: ALLOWED", "Guardrails (session s1):\n  ✓ rate_limit: 0 writes in the last minute, limit 3\n  ✓ circuit_breaker: 0 errors in a row in the last 10m, opens at 3"}},
		{name: "rate limited allow", req: req(ActionWrite, "db1"), h: full,
			effect: EffectDeny, enforced: EffectDeny, code: CodeRateLimited,
			text: []string{"for write: DENIED\n\nRefused by guardrail RATE_LIMITED for session s1 until 2026-03-09T12:01:10Z (retry in 30s).\nA guardrail cannot be overridden by approval.",
				`Without the guardrail: ALLOWED by policy "prod" rule 1.`,
				"  ✗ rate_limit: 3 writes in the last minute, limit 3: writes are refused until 2026-03-09T12:01:10Z (in 30s)"}},
		{name: "open circuit in front of require_approval", req: req(ActionDestructive, "db1"), h: open,
			effect: EffectDeny, enforced: EffectDeny, code: CodeCircuitOpen,
			text: []string{`Without the guardrail: REQUIRES APPROVAL by policy "prod" rule 2.`, "✗ circuit_breaker: 3 errors in a row within 10m, the last at 2026-03-09T12:00:02Z: open, every action"}},
		{name: "open circuit refuses a read", req: req(ActionRead, "db1"), h: open,
			effect: EffectDeny, enforced: EffectDeny, code: CodeCircuitOpen},
		{name: "a policy deny stays the policy's", req: req(ActionWrite, "frozen-db"), h: full,
			effect: EffectDeny, enforced: EffectDeny,
			text: []string{"✗ rate_limit: 3 writes"}},
		{name: "global dry-run records, enforces allow", dryRun: true, req: req(ActionWrite, "db1"), h: full,
			effect: EffectDeny, enforced: EffectAllow, code: CodeRateLimited, dryRunFlag: true,
			text: []string{"Dry run: decisions are recorded, not enforced — enforced effect: allow."}},
		{name: "no session", req: req(ActionWrite, "db1"), h: nil,
			effect: EffectAllow, enforced: EffectAllow,
			text: []string{"Guardrails: no session_id: the rate limit and the circuit breaker count per session, so they were not evaluated."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := guardedEngine(t, tt.dryRun).ExplainSession(tt.req, tt.h)
			d := tr.Decision
			if d.Effect != tt.effect || d.EnforcedEffect != tt.enforced || d.Code != tt.code || d.DryRun != tt.dryRunFlag {
				t.Fatalf("decision %+v", d)
			}
			if tr.Guardrails == nil {
				t.Fatal("no guardrails in the trace")
			}
			if tt.code != "" && (d.ApprovalQuorum != 0 || !strings.HasPrefix(d.Message, tt.code+": ")) {
				t.Errorf("refusal %+v", d)
			}
			for _, want := range tt.text {
				if !strings.Contains(tr.Explanation, want) {
					t.Errorf("explanation lacks %q:\n%s", want, tr.Explanation)
				}
			}
		})
	}
}

// The contract: decision.code and the guardrails member in JSON, and back.
func TestGuardrailsTraceJSON(t *testing.T) {
	h := &SessionHistory{ID: "s1", Outcomes: outcomes(0, time.Second, "EEE")}
	tr := guardedEngine(t, false).ExplainSession(Request{Resource: RequestResource{Type: "database", Name: "db1"}, Action: ActionWrite, Context: RequestContext{Time: at(time.Minute)}}, h)
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		`"decision":{"effect":"deny","enforced_effect":"deny","policy_name":"prod","rule_index":1,"message":"CIRCUIT_OPEN: 3 errors in a row within 10m`,
		`"dry_run":false,"code":"CIRCUIT_OPEN"}`,
		`"default_applied":false,"guardrails":{"evaluated":true,"session_id":"s1","checks":[{"name":"rate_limit","passed":true,"detail":"0 writes in the last minute, limit 3"},{"name":"circuit_breaker","passed":false,"detail":"3 errors in a row within 10m, the last at 2026-03-09T12:00:02Z: open, `,
		`"code":"CIRCUIT_OPEN","retry_after_seconds":842,"lifts_at":"2026-03-09T12:15:02Z"}],"code":"CIRCUIT_OPEN","retry_after_seconds":842,"lifts_at":"2026-03-09T12:15:02Z"},"explanation":`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("JSON lacks %s\n%s", want, s)
		}
	}
	var back DecisionTrace
	if err := json.Unmarshal(b, &back); err != nil || back.Decision.Code != CodeCircuitOpen || !back.Guardrails.Tripped() || back.Guardrails.Checks[1].LiftsAt == nil {
		t.Fatalf("%v %+v", err, back)
	}
	// A file without guardrails: the trace is as before.
	cfg, _ := LoadNamed("p.yaml", strings.NewReader(base))
	plain := NewEngine(EngineConfig{PolicyConfig: cfg}).ExplainSession(Request{Resource: RequestResource{Type: "database", Name: "x"}, Action: ActionWrite}, h)
	if b, _ := json.Marshal(plain); strings.Contains(string(b), "guardrails") || strings.Contains(string(b), `"code"`) {
		t.Errorf("%s", b)
	}
}

// After execution the action already ran: not evaluated, and said so.
func TestGuardrailsAfterExecution(t *testing.T) {
	tr := guardedEngine(t, false).CheckPostExecutionSession(Request{Resource: RequestResource{Type: "database", Name: "db1"}, Action: ActionWrite, Context: RequestContext{RowsAffected: 5}})
	if tr.Guardrails == nil || tr.Guardrails.Evaluated || !strings.Contains(tr.Guardrails.Detail, "after execution") || tr.Decision.Code != "" || !tr.Decision.PostExecution {
		t.Fatalf("%+v", tr)
	}
}

func TestLintGuardrails(t *testing.T) {
	doc := strings.Replace(strings.Replace(guardedBase, "window: 10m", "window: 30s", 1), "cooldown: 15m", "cooldown: 20s", 1)
	cfg, err := LoadNamed("policies.yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range Lint(cfg) {
		if f.Line != 17 || f.Rule != -1 || f.Policy != "" {
			t.Errorf("%+v", f)
		}
		kinds = append(kinds, f.Kind)
	}
	if strings.Join(kinds, ",") != FindingGuardrailShortCooldown+","+FindingGuardrailShortWindow {
		t.Errorf("findings %v", kinds)
	}
	cfg, _ = LoadNamed("policies.yaml", strings.NewReader(guardedBase))
	if f := Lint(cfg); len(f) != 0 {
		t.Errorf("sane guardrails: %+v", f)
	}
}
