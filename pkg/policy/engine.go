package policy

import (
	"bytes"
	"encoding/json"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Engine evaluates requests against a loaded Config. It is immutable after
// NewEngine and safe for concurrent use.
type Engine struct {
	policies      []compiledPolicy
	defaultEffect Effect
	dryRun        bool
	clock         func() time.Time
	err           error  // the config could not be compiled: every request is denied
	defaultMsg    string // Decision.Message when the default applies
	guardrails    *Guardrails
}

// compiledPolicy is a Policy prepared at NewEngine so that evaluation does
// no parsing, zone loading or lowercasing (DESIGN §10: the trace stays on).
type compiledPolicy struct {
	name       string
	enabled    bool
	audit      bool
	principals []Principal // lowercased; empty means anyone
	selectors  []selector
	rules      []compiledRule
	nconds     int // condition traces the deciding rule can need, at most
	// shownPrincipals and shownResources are copies as written, for the
	// explanation; copies, so that changing the Config later cannot change
	// what an Engine says.
	shownPrincipals []Principal
	shownResources  []ResourceSelector
	text            policyText // the explanation's fixed parts (compileText)
}

// selector is a compiled ResourceSelector. Types, names, tags, roles, users
// and services compare case-insensitively: "Production" and "production"
// are one tag, and a deny must not be dodged by capitalisation.
type selector struct {
	typ     string
	glob    string // lowercased path.Match pattern; "" matches any name
	prefix  string // the glob's literal prefix, a cheap filter before path.Match
	literal bool   // the glob has no metacharacters: plain equality
	tags    []string
}

type actionMask uint8

const (
	maskRead actionMask = 1 << iota
	maskWrite
	maskDestructive
)

func actionBit(a Action) actionMask {
	switch {
	case strings.EqualFold(string(a), string(ActionRead)):
		return maskRead
	case strings.EqualFold(string(a), string(ActionWrite)):
		return maskWrite
	case strings.EqualFold(string(a), string(ActionDestructive)):
		return maskDestructive
	}
	return 0
}

// compiledRule is a Rule with its trace fields precomputed; the slices and
// strings are shared by every trace (treat traces as read-only).
type compiledRule struct {
	mask        actionMask
	actions     []string
	effect      Effect
	message     string
	sched       *schedule
	schedDetail string
	approval    bool // conditions.require_approval
	quorum      int  // ≥ 1
	quorumText  string
	maxRows     int // -1: no limit
	maxPods     int
	nconds      int
	text        ruleText
}

// NewEngine compiles cfg.PolicyConfig (seed 003's policy.NewEngine). A
// config from LoadFile is already valid; one built in code is validated
// here, and if it is invalid the engine fails closed — every request is
// denied and Err says why (DESIGN §3).
func NewEngine(cfg EngineConfig) *Engine {
	e := &Engine{dryRun: cfg.DryRun, clock: cfg.Clock, defaultEffect: EffectDeny}
	pc := cfg.PolicyConfig
	if pc != nil && pc.DefaultEffect != "" {
		e.defaultEffect = pc.DefaultEffect
	}
	if cfg.DefaultEffect != "" {
		if !validEffect(cfg.DefaultEffect) {
			e.err = &LoadError{Field: "default_effect", Msg: quote(string(cfg.DefaultEffect)) + " is not one of " + effectNames}
			return e
		}
		e.defaultEffect = cfg.DefaultEffect
	}
	e.defaultMsg = "no policy produced an outcome; default effect is " + string(e.defaultEffect)
	if pc == nil {
		return e
	}
	if err := pc.validate(nil); err != nil {
		e.err = err
		return e
	}
	if g := pc.Guardrails; g != nil {
		// A copy, as for the policies: changing the Config later cannot
		// change what an Engine enforces.
		c := *g
		if g.RateLimit != nil {
			rl := *g.RateLimit
			c.RateLimit = &rl
		}
		if g.CircuitBreaker != nil {
			cb := *g.CircuitBreaker
			c.CircuitBreaker = &cb
		}
		e.guardrails = &c
	}
	e.policies = make([]compiledPolicy, len(pc.Policies))
	for i := range pc.Policies {
		e.policies[i] = compilePolicy(&pc.Policies[i])
	}
	return e
}

// Err reports why the engine denies everything, or nil.
func (e *Engine) Err() error { return e.err }

func compilePolicy(p *Policy) compiledPolicy {
	cp := compiledPolicy{
		name:    p.Name,
		enabled: p.Enabled == nil || *p.Enabled,
		audit:   p.Enforcement == "audit",
	}
	cp.shownPrincipals = slices.Clone(p.Principals)
	for _, rs := range p.Resources {
		if rs.Match != nil {
			rs.Match = &TagMatch{Tags: slices.Clone(rs.Match.Tags)}
		}
		cp.shownResources = append(cp.shownResources, rs)
	}
	for _, pr := range p.Principals {
		cp.principals = append(cp.principals, Principal{
			Role: strings.ToLower(pr.Role), User: strings.ToLower(pr.User), Service: strings.ToLower(pr.Service),
		})
	}
	for _, rs := range p.Resources {
		s := selector{typ: strings.ToLower(rs.Type), glob: strings.ToLower(rs.Name)}
		if i := strings.IndexAny(s.glob, `*?[\`); i >= 0 {
			s.prefix = s.glob[:i]
		} else {
			s.literal = true
		}
		if rs.Match != nil {
			for _, t := range rs.Match.Tags {
				s.tags = append(s.tags, strings.ToLower(t))
			}
		}
		cp.selectors = append(cp.selectors, s)
	}
	cp.rules = make([]compiledRule, len(p.Rules))
	for i := range p.Rules {
		cp.rules[i] = compileRule(&p.Rules[i])
		cp.nconds = max(cp.nconds, cp.rules[i].nconds)
	}
	compileText(&cp)
	return cp
}

func compileRule(r *Rule) compiledRule {
	cr := compiledRule{effect: r.Effect, message: r.Message, quorum: 1, maxRows: -1, maxPods: -1}
	for _, a := range r.Actions {
		cr.mask |= actionBit(a)
		cr.actions = append(cr.actions, string(a))
	}
	if c := r.Conditions; c != nil {
		cr.approval = c.RequireApproval
		if c.ApprovalQuorum > 0 {
			cr.quorum = c.ApprovalQuorum
		}
		if c.MaxRowsAffected != nil {
			cr.maxRows = *c.MaxRowsAffected
			cr.nconds++
		}
		if c.MaxPodsAffected != nil {
			cr.maxPods = *c.MaxPodsAffected
			cr.nconds++
		}
		if c.Schedule != nil {
			cr.sched, _ = compileSchedule(c.Schedule) // validated by NewEngine
			cr.schedDetail = "inside " + cr.sched.desc
			cr.nconds++
		}
	}
	if cr.approval && cr.effect != EffectDeny {
		cr.nconds++
	}
	cr.quorumText = "quorum " + strconv.Itoa(cr.quorum)
	return cr
}

// evaluation is one request's evaluation: the trace and what the
// explanation text needs beyond it. A Decision keeps a pointer to it.
type evaluation struct {
	engine *Engine
	req    Request
	at     time.Time // the time schedules were checked against
	atSet  bool
	post   bool // CheckPostExecution
	trace  DecisionTrace
	// enforced is the enforced effect before global dry-run; overridden is
	// the policies' decision when a guardrail replaced it (guard).
	enforced   Effect
	overridden Decision

	once sync.Once
	text string
}

// now is the request's time for schedules: Context.Time, else the
// engine's clock; read once, and only if a schedule asks.
func (ev *evaluation) now() time.Time {
	if !ev.atSet {
		switch {
		case !ev.req.Context.Time.IsZero():
			ev.at = ev.req.Context.Time
		case ev.engine.clock != nil:
			ev.at = ev.engine.clock()
		default:
			panic("policy: a schedule needs the request's Context.Time or EngineConfig.Clock; neither was given")
		}
		ev.atSet = true
	}
	return ev.at
}

// Evaluate decides a request (seed 003's engine.Evaluate). It builds the
// full trace, as Explain does, but not the explanation text; the returned
// Decision keeps the trace so MustAllow can explain a refusal.
func (e *Engine) Evaluate(req Request) Decision {
	return e.evaluate(req, false).trace.Decision
}

// Explain decides a request and returns the full trace with its
// explanation (seed 003 "Explainability").
func (e *Engine) Explain(req Request) DecisionTrace {
	ev := e.evaluate(req, false)
	tr := ev.trace
	tr.Explanation = ev.explanation()
	return tr
}

// outcome is one policy's result, ranked for DESIGN §5 point 3.
type outcome struct {
	effect  Effect
	quorum  int
	policy  int // -1: none
	rule    int
	message string
}

var noOutcome = outcome{policy: -1}

func rank(e Effect) int {
	switch e {
	case EffectDeny:
		return 3
	case EffectRequireApproval:
		return 2
	case EffectAllow:
		return 1
	}
	return 0
}

// stricter reports whether o beats cur under "most restrictive wins":
// deny > require_approval > allow, and between two require_approval
// outcomes the larger quorum (asking fewer approvers than a policy demands
// would weaken it). Equal outcomes keep the earlier policy (DESIGN §5.3).
func (o outcome) stricter(cur outcome) bool {
	if cur.policy < 0 {
		return true
	}
	if ro, rc := rank(o.effect), rank(cur.effect); ro != rc {
		return ro > rc
	}
	return o.effect == EffectRequireApproval && o.quorum > cur.quorum
}

// subject is what policies match on, lowercased once per evaluation (no
// allocation when it already is), so selectors compare with ==.
type subject struct {
	typ, name, user, service string
	roles, tags              []string
}

func newSubject(req *Request) subject {
	return subject{
		typ:     strings.ToLower(req.Resource.Type),
		name:    strings.ToLower(req.Resource.Name),
		user:    strings.ToLower(req.Principal.UserID),
		service: strings.ToLower(req.Principal.Service),
		roles:   lowerAll(req.Principal.Roles),
		tags:    lowerAll(req.Resource.Tags),
	}
}

// lowerAll returns ss itself when every element is already lowercase.
func lowerAll(ss []string) []string {
	for i, s := range ss {
		if strings.ToLower(s) != s {
			out := make([]string, len(ss))
			copy(out, ss[:i])
			for j := i; j < len(ss); j++ {
				out[j] = strings.ToLower(ss[j])
			}
			return out
		}
	}
	return ss
}

func (e *Engine) evaluate(req Request, post bool) *evaluation {
	ev := &evaluation{engine: e, req: req, post: post}
	tr := &ev.trace
	d := &tr.Decision
	d.PostExecution = post
	if e.err != nil {
		d.Effect, d.EnforcedEffect = EffectDeny, EffectDeny
		d.Message = "policy configuration is invalid; every request is denied"
		tr.PoliciesEvaluated = []PolicyTrace{}
		e.finish(ev, false)
		return ev
	}
	mask := actionBit(req.Action)
	sub := newSubject(&ev.req)
	// Pass 1 (DESIGN §5 point 1): which policies apply. It also sizes one
	// backing array for the rule traces and one for the condition traces
	// of all applying policies, so the trace costs a handful of
	// allocations however many policies apply.
	tr.PoliciesEvaluated = make([]PolicyTrace, len(e.policies))
	nrules, nconds := 0, 0
	for i := range e.policies {
		p := &e.policies[i]
		pt := &tr.PoliciesEvaluated[i]
		pt.PolicyName = p.name
		switch {
		case !p.enabled:
			pt.SkipReason = SkipDisabled
		case !p.principalMatches(&sub):
			pt.SkipReason = SkipPrincipalMismatch
		case p.matchingSelector(&sub) < 0:
			pt.SkipReason = SkipResourceMismatch
		default:
			pt.Matched = true
			nrules += len(p.rules)
			nconds += p.nconds
		}
	}
	// Pass 2 (points 2–3): each applying policy's outcome; the most
	// restrictive wins.
	buf := traceBuffers{rules: make([]RuleTrace, 0, nrules)}
	if nconds > 0 {
		buf.conds = make([]ConditionTrace, 0, nconds)
	}
	best, enforced := noOutcome, noOutcome
	for i := range e.policies {
		pt := &tr.PoliciesEvaluated[i]
		if !pt.Matched {
			continue
		}
		p := &e.policies[i]
		out, ok := p.decide(ev, mask, pt, &buf)
		if !ok {
			continue
		}
		out.policy = i
		if out.stricter(best) {
			best = out
		}
		// Point 5: an audit policy's outcome counts as allow for
		// enforcement; allow never beats anything, so it is left out.
		if !p.audit && out.stricter(enforced) {
			enforced = out
		}
	}
	if best.policy < 0 {
		// Point 4.
		d.Effect, d.EnforcedEffect = e.defaultEffect, e.defaultEffect
		d.Message = e.defaultMsg
		if mask == 0 {
			// Fail closed (DESIGN §3): an action no rule can name must not
			// fall through to a permissive default.
			d.Effect, d.EnforcedEffect = EffectDeny, EffectDeny
			d.Message = "unknown action " + quote(string(req.Action)) + " (want " + actionNames + ")"
		}
		if d.Effect == EffectRequireApproval {
			d.ApprovalQuorum = 1 // DESIGN §5: the default quorum
		}
		e.finish(ev, false)
		return ev
	}
	d.Effect = best.effect
	d.PolicyName = e.policies[best.policy].name
	d.RuleIndex = best.rule
	d.Message = best.message
	d.DryRun = e.policies[best.policy].audit
	d.EnforcedEffect = EffectAllow
	if enforced.policy >= 0 {
		d.EnforcedEffect = enforced.effect
	}
	switch {
	case d.Effect == EffectRequireApproval:
		d.ApprovalQuorum = best.quorum
	case d.EnforcedEffect == EffectRequireApproval:
		// An audit policy's deny outranks an enforced require_approval in
		// Effect; the enforcement point still needs the quorum it acts on.
		d.ApprovalQuorum = enforced.quorum
	}
	e.finish(ev, true)
	return ev
}

// traceBuffers are the backing arrays rule and condition traces are cut
// from; their capacity is exact, so appends never reallocate and each
// policy's slice is capped (a caller's append cannot clobber a neighbour).
type traceBuffers struct {
	rules []RuleTrace
	conds []ConditionTrace
}

// finish applies global dry-run and links the Decision to its evaluation.
func (e *Engine) finish(ev *evaluation, decided bool) {
	tr := &ev.trace
	d := &tr.Decision
	tr.DefaultApplied = !decided
	d.DefaultApplied = !decided
	ev.enforced = d.EnforcedEffect
	if e.dryRun {
		d.EnforcedEffect = EffectAllow
		d.DryRun = true
	}
	d.eval = ev
}

func (p *compiledPolicy) principalMatches(sub *subject) bool {
	if len(p.principals) == 0 {
		return true
	}
	for _, pr := range p.principals {
		if principalMatch(pr, sub) {
			return true
		}
	}
	return false
}

// principalMatch: role ∈ request roles, user == user_id, service ==
// service (DESIGN §5 point 1), on lowercased values.
func principalMatch(pr Principal, sub *subject) bool {
	switch {
	case pr.Role != "":
		for _, r := range sub.roles {
			if r == pr.Role {
				return true
			}
		}
	case pr.User != "":
		return sub.user == pr.User
	case pr.Service != "":
		return sub.service == pr.Service
	}
	return false
}

// matchingSelector returns the index of the first selector matching the
// resource, or -1.
func (p *compiledPolicy) matchingSelector(sub *subject) int {
	for i := range p.selectors {
		if p.selectors[i].matches(sub) {
			return i
		}
	}
	return -1
}

func (s *selector) matches(sub *subject) bool {
	return sub.typ == s.typ && s.nameMatches(sub.name) && s.missingTag(sub.tags) < 0
}

func (s *selector) nameMatches(name string) bool {
	switch {
	case s.glob == "":
		return true
	case s.literal:
		return name == s.glob
	case !strings.HasPrefix(name, s.prefix):
		return false
	}
	ok, _ := path.Match(s.glob, name)
	return ok
}

// missingTag returns the index of the first selector tag the resource
// lacks, or -1.
func (s *selector) missingTag(tags []string) int {
next:
	for i, t := range s.tags {
		for _, x := range tags {
			if x == t {
				continue next
			}
		}
		return i
	}
	return -1
}

// decide runs DESIGN §5 point 2 inside one applying policy: rules in order,
// skipped on action or schedule, the first remaining rule decides. It
// traces the rules up to and including the deciding one.
func (p *compiledPolicy) decide(ev *evaluation, mask actionMask, pt *PolicyTrace, buf *traceBuffers) (outcome, bool) {
	start := len(buf.rules)
	out, decided := noOutcome, false
	for i := range p.rules {
		r := &p.rules[i]
		rt := RuleTrace{Index: i, Actions: r.actions, Effect: string(r.effect)}
		switch {
		case r.mask&mask == 0:
			rt.SkipReason = SkipActionMismatch
		case r.sched != nil && !r.sched.active(ev.now()):
			rt.SkipReason = SkipScheduleInactive
		default:
			rt.Matched = true
			out, decided = r.apply(ev, &rt, buf), true
			out.rule = i
		}
		buf.rules = append(buf.rules, rt)
		if decided {
			break
		}
	}
	pt.Rules = buf.rules[start:len(buf.rules):len(buf.rules)]
	return out, decided
}

// apply evaluates the deciding rule's conditions (seed 003 "Guardrails";
// DESIGN §5 point 2): a failed max_* makes the outcome deny, and
// require_approval turns allow into require_approval.
func (r *compiledRule) apply(ev *evaluation, rt *RuleTrace, buf *traceBuffers) outcome {
	out := outcome{effect: r.effect, message: r.message}
	start := len(buf.conds)
	if r.sched != nil {
		buf.conds = append(buf.conds, ConditionTrace{Name: "schedule", Passed: true, Detail: r.schedDetail})
	}
	failed := ""
	if r.maxRows >= 0 {
		c := limitCondition("max_rows_affected", "rows_affected", ev.req.Context.RowsAffected, r.maxRows, ev.post)
		if !c.Passed {
			failed = c.Detail
		}
		buf.conds = append(buf.conds, c)
	}
	if r.maxPods >= 0 {
		c := limitCondition("max_pods_affected", "pods_affected", ev.req.Context.PodsAffected, r.maxPods, ev.post)
		if !c.Passed && failed == "" {
			failed = c.Detail
		}
		buf.conds = append(buf.conds, c)
	}
	if r.approval && r.effect != EffectDeny {
		buf.conds = append(buf.conds, ConditionTrace{Name: "require_approval", Passed: true, Detail: r.quorumText})
	}
	if len(buf.conds) > start {
		rt.Conditions = buf.conds[start:len(buf.conds):len(buf.conds)]
	}
	switch {
	case failed != "":
		if out.effect != EffectDeny {
			out.message = "blast radius exceeded: " + failed
		}
		out.effect = EffectDeny
	case r.effect == EffectAllow && r.approval, r.effect == EffectRequireApproval:
		out.effect = EffectRequireApproval
		out.quorum = r.quorum
	}
	return out
}

// decisionJSON is Decision's wire form (DESIGN §5): policy_name and
// rule_index are present together — rule_index even when 0 — unless the
// default applied, when both are absent.
type decisionJSON struct {
	Effect         Effect  `json:"effect"`
	EnforcedEffect Effect  `json:"enforced_effect"`
	PolicyName     *string `json:"policy_name,omitempty"`
	RuleIndex      *int    `json:"rule_index,omitempty"`
	Message        string  `json:"message,omitempty"`
	ApprovalQuorum int     `json:"approval_quorum,omitempty"`
	DryRun         bool    `json:"dry_run"`
	PostExecution  bool    `json:"post_execution,omitempty"`
	Code           string  `json:"code,omitempty"`
}

// MarshalJSON writes the DESIGN §5 "decision" object.
func (d Decision) MarshalJSON() ([]byte, error) {
	j := decisionJSON{
		Effect: d.Effect, EnforcedEffect: d.EnforcedEffect, Message: d.Message,
		ApprovalQuorum: d.ApprovalQuorum, DryRun: d.DryRun, PostExecution: d.PostExecution, Code: d.Code,
	}
	if !d.DefaultApplied {
		j.PolicyName, j.RuleIndex = &d.PolicyName, &d.RuleIndex
	}
	if d.Effect == EffectRequireApproval && j.ApprovalQuorum < 1 {
		j.ApprovalQuorum = 1 // DESIGN §5: present when require_approval, default 1
	}
	// Messages say "rows_affected=1500 > limit=1000": keep > readable.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads the "decision" object; a decision without
// policy_name and rule_index is one where the default applied.
func (d *Decision) UnmarshalJSON(data []byte) error {
	var j decisionJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*d = Decision{
		Effect: j.Effect, EnforcedEffect: j.EnforcedEffect, Message: j.Message,
		ApprovalQuorum: j.ApprovalQuorum, DryRun: j.DryRun, PostExecution: j.PostExecution, Code: j.Code,
		DefaultApplied: j.PolicyName == nil && j.RuleIndex == nil,
	}
	if j.PolicyName != nil {
		d.PolicyName = *j.PolicyName
	}
	if j.RuleIndex != nil {
		d.RuleIndex = *j.RuleIndex
	}
	return nil
}
