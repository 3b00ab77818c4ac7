package policy

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The explanation text (seed 003 "Human-Readable Explanation") is built
// from the trace and the compiled policies by a pure function, only when
// asked for: Explain, CheckPostExecution, or MustAllow on a refusal. It
// follows the seed's four examples and adds what would change the outcome
// (DESIGN §5): the blast-radius limit to stay under, the approvals needed,
// when a schedule window opens or closes, why each policy did not apply.
//
// The text is appended into one buffer, with strconv's Append functions
// and no fmt, and its fixed parts (policy headers, quoted names, rule
// labels, messages) are prepared by NewEngine (compileText): with fmt it
// was nine tenths of Explain's cost and ~120 of its 125 allocations
// (issue 20).

// explanation builds the text once per evaluation.
func (ev *evaluation) explanation() string {
	ev.once.Do(func() { ev.text = buildExplanation(ev) })
	return ev.text
}

// MustAllow returns nil when the decision lets the request proceed, else a
// *DeniedError or an *ApprovalRequiredError whose message is the
// explanation (seed 003). It acts on EnforcedEffect, what an enforcement
// point enforces (DESIGN §5.5): under dry-run a deny is only recorded. A
// Decision built by hand without EnforcedEffect falls back to Effect, and
// anything unrecognised is denied (fail closed).
func (d Decision) MustAllow() error {
	eff := d.EnforcedEffect
	if eff == "" {
		eff = d.Effect
	}
	switch eff {
	case EffectAllow:
		return nil
	case EffectRequireApproval:
		return &ApprovalRequiredError{Decision: d, Trace: d.explainedTrace()}
	}
	return &DeniedError{Decision: d, Trace: d.explainedTrace()}
}

// explainedTrace is the trace behind d with its explanation; for a
// Decision that did not come from an Engine, a one-line summary.
func (d Decision) explainedTrace() DecisionTrace {
	if d.eval == nil {
		return DecisionTrace{Decision: d, DefaultApplied: d.DefaultApplied, Explanation: summary(d)}
	}
	tr := d.eval.trace
	tr.Explanation = d.eval.explanation()
	return tr
}

// DeniedError is MustAllow's refusal (seed 003 "Inline at the point of
// denial"): its message is the full explanation.
type DeniedError struct {
	Decision Decision
	Trace    DecisionTrace
}

func (e *DeniedError) Error() string {
	if e.Trace.Explanation != "" {
		return e.Trace.Explanation
	}
	return summary(e.Decision)
}

// ApprovalRequiredError says the request may proceed only after
// Decision.ApprovalQuorum approvals.
type ApprovalRequiredError struct {
	Decision Decision
	Trace    DecisionTrace
}

func (e *ApprovalRequiredError) Error() string {
	if e.Trace.Explanation != "" {
		return e.Trace.Explanation
	}
	return summary(e.Decision)
}

// summary is a one-line account of a decision without its trace.
func summary(d Decision) string {
	var b []byte
	switch d.Effect {
	case EffectAllow:
		b = append(b, "allowed"...)
	case EffectRequireApproval:
		b = append(b, "requires approval from "...)
		b = appendApprovers(b, max(d.ApprovalQuorum, 1))
	default:
		b = append(b, "denied"...)
	}
	if d.DefaultApplied {
		b = append(b, " by the default effect"...)
	} else if d.PolicyName != "" {
		b = append(b, " by policy "...)
		b = strconv.AppendQuote(b, d.PolicyName)
		b = append(b, " rule "...)
		b = strconv.AppendInt(b, int64(d.RuleIndex), 10)
	}
	if d.Message != "" {
		b = append(b, ": "...)
		b = append(b, d.Message...)
	}
	return string(b)
}

func appendApprovers(b []byte, n int) []byte {
	if n == 1 {
		return append(b, "1 approver"...)
	}
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, " approvers"...)
}

func effectWord(e Effect) string {
	switch e {
	case EffectAllow:
		return "ALLOWED"
	case EffectRequireApproval:
		return "REQUIRES APPROVAL"
	}
	return "DENIED"
}

// outcomeWord is an effect as a block's "→ DENY" line shows it.
func outcomeWord(e Effect) string {
	switch e {
	case EffectAllow:
		return "ALLOW"
	case EffectDeny:
		return "DENY"
	case EffectRequireApproval:
		return "REQUIRE_APPROVAL"
	}
	return strings.ToUpper(string(e))
}

// policyText and ruleText are the fixed parts of the text for one policy
// and one rule, prepared by NewEngine.
type policyText struct {
	quoted string // the name, quoted as %q does
	header string // `Policy "name" (audit) matched (`
	// skipped starts the policy's line under "Policies that did not
	// apply": `  "name": `.
	skipped string
	// principals are the principals as "role=dba"; needs is the
	// principal-mismatch reason up to the request: "principal — needs
	// role dba or user x (request: ".
	principals []string
	needs      string
	selectors  []string // "type=database, tag=production"
}

type ruleText struct {
	head       string // "  Rule 0  read → allow"
	labelRunes int    // of "read → allow", for the column
	message    string // `    Message: "…"` and a newline, or ""
}

// compileText prepares cp's fixed text from its shown principals and
// resources (compilePolicy).
func compileText(cp *compiledPolicy) {
	t := &cp.text
	t.quoted = strconv.Quote(cp.name)
	t.header = "Policy " + t.quoted
	if cp.audit {
		t.header += " (audit)"
	}
	t.header += " matched ("
	t.skipped = "  " + t.quoted + ": "
	var want []string
	for _, pr := range cp.shownPrincipals {
		l := principalLabel(pr)
		t.principals = append(t.principals, l)
		want = append(want, strings.Replace(l, "=", " ", 1))
	}
	t.needs = "principal — needs " + joinOr(want) + " (request: "
	for _, rs := range cp.shownResources {
		t.selectors = append(t.selectors, selectorLabel(rs))
	}
	for i := range cp.rules {
		r := &cp.rules[i]
		label := strings.Join(r.actions, ", ") + " → " + string(r.effect)
		r.text.head = "  Rule " + strconv.Itoa(i) + "  " + label
		r.text.labelRunes = utf8.RuneCountInString(label)
		if r.message != "" {
			r.text.message = "    Message: " + strconv.Quote(r.message) + "\n"
		}
	}
}

func selectorLabel(rs ResourceSelector) string {
	sel := "type=" + rs.Type
	if rs.Name != "" {
		sel += ", name=" + rs.Name
	}
	if rs.Match != nil {
		switch len(rs.Match.Tags) {
		case 0:
		case 1:
			sel += ", tag=" + rs.Match.Tags[0]
		default:
			sel += ", tags=" + strings.Join(rs.Match.Tags, ",")
		}
	}
	return sel
}

// policyResult is one applying policy's outcome, re-derived for the text.
type policyResult struct {
	index  int
	rule   int // -1: no rule applied
	effect Effect
	failed []ConditionTrace
}

func buildExplanation(ev *evaluation) string {
	x := &explainer{ev: ev, e: ev.engine, d: ev.trace.Decision, req: shownRequest(ev.req), sub: newSubject(&ev.req)}
	x.b = make([]byte, 0, 1024+128*len(ev.trace.PoliciesEvaluated))
	x.deciding = x.decidingPolicy()
	return x.build()
}

// shownRequest is the request as the text shows it. Its strings come from
// the agent and the text goes to terminals and logs: each is bounded and,
// if it holds control or other unprintable characters, escaped (DESIGN §3
// "never echo whole untrusted inputs").
func shownRequest(req Request) Request {
	req.Principal.UserID = shown(req.Principal.UserID)
	req.Principal.Service = shown(req.Principal.Service)
	req.Principal.Roles = shownAll(req.Principal.Roles)
	req.Resource.Type = shown(req.Resource.Type)
	req.Resource.Name = shown(req.Resource.Name)
	req.Resource.Tags = shownAll(req.Resource.Tags)
	req.Action = Action(shown(string(req.Action)))
	return req
}

func shown(s string) string {
	// 100 characters, not termtext.Truncate's bytes: a non-ASCII name shows
	// as much of itself as an ASCII one.
	const limit = 100
	if len(s) > limit && utf8.RuneCountInString(s) > limit {
		s = string([]rune(s)[:limit]) + "…"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return shownSlow(s) // not plain printable ASCII
		}
	}
	return s
}

func shownSlow(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			q := strconv.Quote(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}

// shownAll returns ss itself when it needs neither bounding nor escaping.
func shownAll(ss []string) []string {
	const limit = 20
	same := len(ss) <= limit
	for i := 0; same && i < len(ss); i++ {
		same = shown(ss[i]) == ss[i]
	}
	if same {
		return ss
	}
	var out []string
	for i, s := range ss {
		if i == limit {
			out = append(out, "… "+strconv.Itoa(len(ss)-limit)+" more")
			break
		}
		out = append(out, shown(s))
	}
	return out
}

type explainer struct {
	ev       *evaluation
	e        *Engine
	d        Decision
	req      Request
	sub      subject
	deciding int // the index of the policy that set Effect, or -1
	b        []byte
}

// gap starts a paragraph: exactly one blank line after what came before.
func (x *explainer) gap() {
	n := len(x.b)
	if n > 0 && !(n >= 2 && x.b[n-1] == '\n' && x.b[n-2] == '\n') {
		x.b = append(x.b, '\n')
	}
}

// s appends strings; nl ends a line.
func (x *explainer) s(parts ...string) {
	for _, p := range parts {
		x.b = append(x.b, p...)
	}
}

func (x *explainer) nl() { x.b = append(x.b, '\n') }

func (x *explainer) int(n int) { x.b = strconv.AppendInt(x.b, int64(n), 10) }

func (x *explainer) time(t time.Time, layout string) { x.b = t.AppendFormat(x.b, layout) }

// spaces pads the rule column.
func (x *explainer) spaces(n int) {
	const blank = "                                "
	for n > len(blank) {
		x.b = append(x.b, blank...)
		n -= len(blank)
	}
	x.b = append(x.b, blank[:max(n, 0)]...)
}

func (x *explainer) build() string {
	x.headline()
	if x.e.err != nil {
		x.gap()
		x.s("The policy configuration is invalid, so every request is denied (fail closed):\n")
		for _, l := range strings.Split(x.e.err.Error(), "\n") {
			x.s("  ", l, "\n")
		}
		x.gap()
		x.s("Fix the policy configuration; `govexplain lint --policy FILE` lists the problems.\n")
		return x.done()
	}
	x.guardrailTrip()
	results := x.blocks()
	switch {
	case x.ev.overridden.Effect != "":
		x.overriddenDecision()
	case x.d.DefaultApplied:
		x.defaultApplied()
	default:
		x.decided(results)
	}
	x.guardrailChecks()
	x.dryRun(results)
	x.notApplied()
	return x.done()
}

// guardrailTrip says first that a guardrail refused the request, and until
// when (DESIGN §12).
func (x *explainer) guardrailTrip() {
	g := x.ev.trace.Guardrails
	if x.ev.overridden.Effect == "" || g.LiftsAt == nil {
		return
	}
	x.gap()
	x.s("Refused by guardrail ", g.Code, " for session ", shown(g.SessionID), " until ")
	x.time(g.LiftsAt.UTC(), time.RFC3339)
	x.s(" (retry in ", durText(time.Duration(g.RetryAfterSeconds)*time.Second), ").\n")
	x.s("A guardrail cannot be overridden by approval.\n")
}

// overriddenDecision says what the policies decided before a guardrail
// refused the request.
func (x *explainer) overriddenDecision() {
	d := x.ev.overridden
	x.gap()
	if d.DefaultApplied {
		x.s("Without the guardrail: ", effectWord(d.Effect), " by the default effect.\n")
		return
	}
	if x.auditOnly(d) {
		x.s("Without the guardrail: ")
		x.outcome(d)
		x.s(".\n")
		return
	}
	x.s("Without the guardrail: ", effectWord(d.Effect), " by policy ")
	x.b = strconv.AppendQuote(x.b, d.PolicyName)
	x.s(" rule ")
	x.int(d.RuleIndex)
	x.s(".\n")
}

// guardrailChecks lists each guardrail's check, or why none was made.
func (x *explainer) guardrailChecks() {
	g := x.ev.trace.Guardrails
	if g == nil {
		return
	}
	x.gap()
	if !g.Evaluated {
		x.s("Guardrails: ", g.Detail, ".\n")
		return
	}
	x.s("Guardrails (session ", shown(g.SessionID), "):\n")
	for _, c := range g.Checks {
		x.s("  ", mark(c.Passed), " ", c.Name, ": ", c.Detail, "\n")
	}
}

func mark(passed bool) string {
	if passed {
		return "✓"
	}
	return "✗"
}

func (x *explainer) done() string {
	b := x.b
	for len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	return string(b)
}

func (x *explainer) headline() {
	if x.ev.post {
		x.s("After ", string(x.req.Action), " on ")
		x.what()
		x.s(": ")
	} else {
		x.s("Access to ")
		x.what()
		x.s(" for ", string(x.req.Action), ": ")
	}
	x.outcome(x.d)
	x.nl()
}

// outcome is a decision's effect as the headline says it. When an
// audit-only policy's outcome is stricter than what is enforced, the
// enforced effect comes first and the audit outcome is labelled as such
// (issue 20: the headline said "DENIED" while require_approval was
// enforced, and approvers read it in `approvals show`).
func (x *explainer) outcome(d Decision) {
	if !x.auditOnly(d) {
		x.s(effectWord(d.Effect))
		return
	}
	x.s(effectWord(d.EnforcedEffect), " (enforced); audit-only policy ")
	x.b = strconv.AppendQuote(x.b, d.PolicyName)
	x.s(" would ", effectVerb(d.Effect))
}

// auditOnly reports whether d's Effect came from an enforcement: audit
// policy and is not what is enforced. Under global dry-run nothing is
// enforced and the text says so instead (dryRun).
func (x *explainer) auditOnly(d Decision) bool {
	return !x.e.dryRun && d.DryRun && !d.DefaultApplied && d.Effect != d.EnforcedEffect
}

func effectVerb(e Effect) string {
	if e == EffectRequireApproval {
		return "require approval"
	}
	return string(e)
}

// what is the headline's resource: "prod-db (tags: production, critical)".
func (x *explainer) what() {
	r := x.req.Resource
	if r.Name == "" {
		x.s(r.Type, " (no name)")
	} else {
		x.s(r.Name)
	}
	x.s(" (tags: ")
	if len(r.Tags) == 0 {
		x.s("none")
	}
	for i, t := range r.Tags {
		if i > 0 {
			x.s(", ")
		}
		x.s(t)
	}
	x.s(")")
}

// blocks writes one block per applying policy, as the seed's examples do,
// and returns the outcomes of the policies that produced one.
func (x *explainer) blocks() []policyResult {
	var results []policyResult
	for i := range x.ev.trace.PoliciesEvaluated {
		pt := &x.ev.trace.PoliciesEvaluated[i]
		if !pt.Matched {
			continue
		}
		p := &x.e.policies[i]
		res := policyResult{index: i, rule: -1}
		x.gap()
		x.s(p.text.header)
		x.matchedBy(p)
		x.s("):\n")
		width := 21
		for _, rt := range pt.Rules {
			width = max(width, p.rules[rt.Index].text.labelRunes+2)
		}
		for _, rt := range pt.Rules {
			r := &p.rules[rt.Index]
			x.s(r.text.head)
			x.spaces(width - r.text.labelRunes)
			switch rt.SkipReason {
			case SkipActionMismatch:
				x.s("skipped — action is ", string(x.req.Action), "\n")
				continue
			case SkipScheduleInactive:
				x.s("skipped — outside its schedule (", r.sched.desc, ")\n")
				x.scheduleSkipped(r)
				continue
			}
			x.s("matched\n")
			res.rule = rt.Index
			res.effect, res.failed = ruleOutcome(r, rt)
			x.conditions(r, rt)
			x.s(r.text.message)
		}
		switch {
		case res.rule < 0:
			x.s("  → no rule applies to ", string(x.req.Action), nowSuffix(pt), "\n")
		case i == x.deciding:
			x.s("  → ", outcomeWord(res.effect), "\n")
		default:
			x.s("  → ", outcomeWord(res.effect), " (not the most restrictive outcome)\n")
		}
		if res.rule >= 0 {
			results = append(results, res)
		}
	}
	return results
}

func nowSuffix(pt *PolicyTrace) string {
	for _, rt := range pt.Rules {
		if rt.SkipReason == SkipScheduleInactive {
			return " at this time"
		}
	}
	return ""
}

// decidingPolicy is the index of the policy that set Effect, or -1.
func (x *explainer) decidingPolicy() int {
	if x.d.DefaultApplied {
		return -1
	}
	for i := range x.e.policies {
		if x.e.policies[i].name == x.d.PolicyName {
			return i
		}
	}
	return -1
}

// ruleOutcome re-derives a deciding rule's outcome from its trace.
func ruleOutcome(r *compiledRule, rt RuleTrace) (Effect, []ConditionTrace) {
	var failed []ConditionTrace
	for i, c := range rt.Conditions {
		if !c.Passed {
			if failed == nil {
				// Most rules fail no condition: allocate only when one does.
				failed = make([]ConditionTrace, 0, len(rt.Conditions)-i)
			}
			failed = append(failed, c)
		}
	}
	switch {
	case len(failed) > 0:
		return EffectDeny, failed
	case r.effect == EffectRequireApproval, r.effect == EffectAllow && r.approval:
		return EffectRequireApproval, nil
	}
	return r.effect, nil
}

// matchedBy describes why a policy applies: the principal that matched (if
// the policy names any) and the first matching resource selector.
func (x *explainer) matchedBy(p *compiledPolicy) {
	sep := false
	for j, pr := range p.principals {
		if principalMatch(pr, &x.sub) {
			x.s(p.text.principals[j])
			sep = true
			break
		}
	}
	if j := p.matchingSelector(&x.sub); j >= 0 {
		if sep {
			x.s("; ")
		}
		x.s(p.text.selectors[j])
	}
}

func principalLabel(pr Principal) string {
	switch {
	case pr.Role != "":
		return "role=" + pr.Role
	case pr.User != "":
		return "user=" + pr.User
	}
	return "service=" + pr.Service
}

// conditions writes the seed's ✓/✗ lines for the deciding rule.
func (x *explainer) conditions(r *compiledRule, rt RuleTrace) {
	ctx := x.req.Context
	for _, c := range rt.Conditions {
		x.s("    ", mark(c.Passed), " ")
		switch c.Name {
		case "schedule":
			x.s("schedule: ")
			x.time(x.ev.at.In(r.sched.loc), "Mon 15:04 MST")
			x.s(" is inside ", r.sched.desc)
		case "max_rows_affected":
			x.s("max_rows_affected: ")
			x.limit(ctx.RowsAffected, r.maxRows, "rows")
		case "max_pods_affected":
			x.s("max_pods_affected: ")
			x.limit(ctx.PodsAffected, r.maxPods, "pods")
		case "require_approval":
			x.s("require_approval (quorum: ")
			x.int(r.quorum)
			x.s(")")
		default:
			x.s(c.Name, ": ", c.Detail)
		}
		x.nl()
	}
}

// limit is a blast-radius condition's detail.
func (x *explainer) limit(n, limit int, unit string) {
	switch {
	case n == 0 && x.ev.post:
		x.s("not evaluated (no count of ", unit, " affected), limit is ")
	case n == 0:
		x.s("not evaluated (", unit, " affected unknown before execution), limit is ")
	case n < 0:
		x.int(n)
		x.s(" is not a count of ", unit, ", limit is ")
	default:
		x.int(n)
		x.s(" ", unit, " affected, limit is ")
	}
	x.int(limit)
}

// scheduleSkipped says when a skipped rule's window opens.
func (x *explainer) scheduleSkipped(r *compiledRule) {
	x.s("    now ")
	x.time(x.ev.at.In(r.sched.loc), "Mon 15:04 MST")
	if open, ok := r.sched.next(x.ev.at, true); ok {
		x.s("; the window opens ")
		x.time(open.In(r.sched.loc), "Mon 2006-01-02 15:04 MST")
		x.nl()
		return
	}
	x.s("; the window does not open in the next week\n")
}

// decided closes the text of a decision made by a policy.
func (x *explainer) decided(results []policyResult) {
	var win policyResult
	for _, r := range results {
		if r.index == x.deciding {
			win = r
			break
		}
	}
	p := &x.e.policies[win.index]
	r := &p.rules[win.rule]
	x.gap()
	if x.auditOnly(x.d) {
		x.decidedInAudit(results, win)
		return
	}
	if len(results) > 1 {
		x.s("The most restrictive outcome wins: ", string(x.d.Effect), " from ", p.text.quoted, " rule ")
		x.int(win.rule)
		x.s(".\n")
	}
	if x.ev.post && x.d.Effect != EffectDeny {
		// After execution only a deny withholds the result; an approval
		// was settled before the tool ran.
		x.s("The result may be returned: the operation stayed within its blast-radius limits.\n")
		return
	}
	switch x.d.Effect {
	case EffectDeny:
		if len(win.failed) > 0 {
			x.blastAdvice(p, r, win.failed)
			return
		}
		x.s("This rule cannot be overridden by approval.\n")
		x.windowCloses(r)
	case EffectRequireApproval:
		x.requiresApproval()
		x.postCheckNote(r)
		x.windowCloses(r)
	default:
		x.s("The operation may proceed.\n")
		x.postCheckNote(r)
	}
}

// decidedInAudit closes the text when the most restrictive outcome came
// from an audit-only policy and something else is enforced: it says that
// the audit outcome is only recorded, then what is enforced and how to
// proceed, as decided does for an enforced outcome.
func (x *explainer) decidedInAudit(results []policyResult, win policyResult) {
	p := &x.e.policies[win.index]
	if len(results) > 1 {
		x.s("The most restrictive outcome wins: ", string(x.d.Effect), " from ", p.text.quoted, " rule ")
		x.int(win.rule)
		x.s(", but that policy is audit-only: its ", string(x.d.Effect), " is recorded, not enforced.\n")
	} else {
		x.s("Policy ", p.text.quoted, " is audit-only: its ", string(x.d.Effect), " is recorded, not enforced.\n")
	}
	var r *compiledRule
	x.s("Enforced: ", string(x.d.EnforcedEffect))
	if e, ok := x.enforcing(results); ok {
		ep := &x.e.policies[e.index]
		r = &ep.rules[e.rule]
		x.s(" from ", ep.text.quoted, " rule ")
		x.int(e.rule)
		x.s(".\n")
	} else {
		x.s(" (no enforcing policy decided).\n")
	}
	switch {
	case x.ev.post:
		// Enforced is not deny (auditOnly): the result is not withheld.
		x.s("The result may be returned: the enforced policies' blast-radius limits were not exceeded.\n")
	case x.d.EnforcedEffect == EffectRequireApproval:
		x.requiresApproval()
		if r != nil {
			x.postCheckNote(r)
			x.windowCloses(r)
		}
	default:
		x.s("The operation may proceed.\n")
		if r != nil {
			x.postCheckNote(r)
		}
	}
}

// enforcing is the outcome of the enforce policy that set EnforcedEffect:
// the first with that effect and, for require_approval, that quorum.
func (x *explainer) enforcing(results []policyResult) (policyResult, bool) {
	for _, r := range results {
		p := &x.e.policies[r.index]
		if p.audit || r.effect != x.d.EnforcedEffect {
			continue
		}
		if r.effect == EffectRequireApproval && p.rules[r.rule].quorum != x.d.ApprovalQuorum {
			continue
		}
		return r, true
	}
	return policyResult{}, false
}

// requiresApproval says how many approvals the decision needs and how to
// ask for them.
func (x *explainer) requiresApproval() {
	x.s("Requires approval from ")
	x.b = appendApprovers(x.b, x.d.ApprovalQuorum)
	x.s(". ")
	x.b = appendRequestHint(x.b, x.req)
	x.nl()
}

// appendRequestHint tells a caller that evaluated a request how to ask
// for the approval it needs.
func appendRequestHint(b []byte, req Request) []byte {
	b = append(b, "Request it with `approvals request --resource "...)
	b = append(b, req.Resource.Type...)
	b = append(b, ':')
	b = append(b, req.Resource.Name...)
	b = append(b, " --action "...)
	b = append(b, req.Action...)
	return append(b, "`."...)
}

// ApprovalRequested returns t as an enforcement point reports it once it
// has opened the approval request itself (auditd's POST /api/v1/decisions):
// the explanation says the request exists instead of how to make one (seed
// 003 "Human-Readable Explanation": "An approval request has been created.
// Use `approvals list` …"). req is the request t was evaluated for.
func (t DecisionTrace) ApprovalRequested(req Request) DecisionTrace {
	t.Explanation = strings.Replace(t.Explanation, string(appendRequestHint(nil, shownRequest(req))),
		"An approval request has been created: approvers see it with `approvals list --pending`.", 1)
	return t
}

// blastAdvice says what would have passed (DESIGN §5: "would allow if
// rows_affected ≤ 1000 (was 1500)").
func (x *explainer) blastAdvice(p *compiledPolicy, r *compiledRule, failed []ConditionTrace) {
	would := "allow"
	if r.effect == EffectRequireApproval || r.approval {
		would = "require approval"
	}
	if r.effect == EffectDeny {
		x.s("This rule cannot be overridden by approval.\n")
		return
	}
	if x.ev.post {
		x.s("The result must be withheld: the operation exceeded its blast radius; policy ")
	} else {
		x.s("To proceed, reduce the scope of the operation: policy ")
	}
	x.s(p.text.quoted, " would ", would, " if ")
	ctx := x.req.Context
	first := true
	for _, c := range failed {
		var limit, was int
		switch c.Name {
		case "max_rows_affected":
			x.s(sepIf(!first, " and "), "rows_affected ≤ ")
			limit, was = r.maxRows, ctx.RowsAffected
		case "max_pods_affected":
			x.s(sepIf(!first, " and "), "pods_affected ≤ ")
			limit, was = r.maxPods, ctx.PodsAffected
		default:
			continue
		}
		first = false
		x.int(limit)
		x.s(" (was ")
		x.int(was)
		x.s(")")
	}
	x.s(".\n")
}

func sepIf(ok bool, sep string) string {
	if ok {
		return sep
	}
	return ""
}

// postCheckNote warns that a limit still applies after execution.
func (x *explainer) postCheckNote(r *compiledRule) {
	ctx := x.req.Context
	if x.ev.post {
		return
	}
	if r.maxRows >= 0 && ctx.RowsAffected == 0 {
		x.s("Blast radius is checked after execution: the result is withheld if more than ")
		x.int(r.maxRows)
		x.s(" rows are affected.\n")
	}
	if r.maxPods >= 0 && ctx.PodsAffected == 0 {
		x.s("Blast radius is checked after execution: the result is withheld if more than ")
		x.int(r.maxPods)
		x.s(" pods are affected.\n")
	}
}

// windowCloses says until when a scheduled deciding rule applies.
func (x *explainer) windowCloses(r *compiledRule) {
	if r.sched == nil {
		return
	}
	if end, ok := r.sched.next(x.ev.at, false); ok {
		x.s("The rule applies until its window closes at ")
		x.time(end.In(r.sched.loc), "Mon 2006-01-02 15:04 MST")
		x.s(".\n")
	}
}

// defaultApplied explains a decision no policy made (seed 003 "No policy
// matched"): why each policy did not apply, and the infra advice for a
// resource without tags.
func (x *explainer) defaultApplied() {
	if actionBit(x.req.Action) == 0 {
		x.gap()
		x.s("Unknown action ", quote(string(x.req.Action)), ": want ", actionNames, ". The request is denied (fail closed).\n")
		return
	}
	anyApplied := false
	for i := range x.ev.trace.PoliciesEvaluated {
		anyApplied = anyApplied || x.ev.trace.PoliciesEvaluated[i].Matched
	}
	x.gap()
	if anyApplied {
		x.s("No rule of the matching policies applies to ", string(x.req.Action), " — default effect is ", string(x.e.defaultEffect), ".\n")
	} else {
		x.s("No policy matched this resource — default effect is ", string(x.e.defaultEffect), ".\n")
	}
	if len(x.req.Resource.Tags) == 0 && !anyApplied {
		x.gap()
		x.s("This usually means ")
		if r := x.req.Resource; r.Name == "" {
			x.s("the ", r.Type)
		} else {
			x.s(r.Name)
		}
		x.s(" is not listed in the infrastructure config and\n",
			"therefore has no tags. Add it to the infra file (--infra) with appropriate\n",
			"tags so a policy can be applied.\n")
	}
}

// notApplied lists the policies that did not apply and why (at most 20:
// with a thousand policies the text must stay readable).
func (x *explainer) notApplied() {
	const limit = 20
	n := 0
	for i := range x.ev.trace.PoliciesEvaluated {
		pt := &x.ev.trace.PoliciesEvaluated[i]
		if pt.Matched {
			continue
		}
		if n == 0 {
			x.gap()
			x.s("Policies that did not apply:\n")
		}
		if n++; n <= limit {
			p := &x.e.policies[i]
			x.s(p.text.skipped)
			x.skipDetail(p, pt.SkipReason)
			x.nl()
		}
	}
	if n > limit {
		x.s("  … and ")
		x.int(n - limit)
		x.s(" more\n")
	}
}

func (x *explainer) skipDetail(p *compiledPolicy, reason string) {
	switch reason {
	case SkipDisabled:
		x.s("disabled")
		return
	case SkipPrincipalMismatch:
		x.s(p.text.needs)
		x.requester()
		x.s(")")
		return
	}
	x.s("resource — ")
	// Two selectors can miss for the same reason: each reason is written
	// once. spans are the reasons written so far, as offsets into b.
	var arr [8][2]int
	spans := arr[:0]
	for j := range p.selectors {
		start := len(x.b)
		if len(spans) > 0 {
			x.s("; or ")
		}
		at := len(x.b)
		x.selectorMiss(&p.shownResources[j], &p.selectors[j])
		why := x.b[at:]
		dup := false
		for _, sp := range spans {
			if string(x.b[sp[0]:sp[1]]) == string(why) {
				dup = true
				break
			}
		}
		if dup {
			x.b = x.b[:start]
			continue
		}
		spans = append(spans, [2]int{at, len(x.b)})
	}
}

func joinOr(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// requester is who asked, as a principal mismatch shows it.
func (x *explainer) requester() {
	rp := x.req.Principal
	sep := ""
	if rp.UserID != "" {
		x.s("user ", rp.UserID)
		sep = "; "
	}
	if rp.Service != "" {
		x.s(sep, "service ", rp.Service)
		sep = "; "
	}
	if len(rp.Roles) > 0 {
		x.s(sep, "roles ")
		for i, r := range rp.Roles {
			x.s(sepIf(i > 0, ", "), r)
		}
		sep = "; "
	}
	if sep == "" {
		x.s("no user, service or role")
	}
}

// selectorMiss names what a resource lacks for one selector: the type,
// the name, or the missing tags.
func (x *explainer) selectorMiss(rs *ResourceSelector, s *selector) {
	sub, r := &x.sub, x.req.Resource
	if sub.typ != s.typ {
		x.s("needs type ", rs.Type, " (is ", orNone(r.Type), ")")
		return
	}
	if !s.nameMatches(sub.name) {
		x.s("needs name ", rs.Name, " (is ", orNone(r.Name), ")")
		return
	}
	n := 0
	for _, t := range s.tags {
		if !contains(sub.tags, t) {
			n++
		}
	}
	if n == 1 {
		x.s("missing tag ")
	} else {
		x.s("missing tags ")
	}
	first := true
	for k, t := range s.tags {
		if !contains(sub.tags, t) {
			x.s(sepIf(!first, ", "), rs.Match.Tags[k])
			first = false
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// dryRun says what is enforced when it differs from what was decided.
func (x *explainer) dryRun(results []policyResult) {
	d := x.d
	switch {
	case x.e.dryRun:
		x.gap()
		x.s("Dry run: decisions are recorded, not enforced — enforced effect: ", string(d.EnforcedEffect), ".\n")
	case d.DryRun && !x.auditOnly(d):
		x.gap()
		x.s("Dry run: policy ")
		x.b = strconv.AppendQuote(x.b, d.PolicyName)
		x.s(" is in audit mode, so its ", string(d.Effect), " is only recorded — enforced effect: ", string(d.EnforcedEffect), " (")
		for _, r := range results {
			p := &x.e.policies[r.index]
			if !p.audit && r.effect == d.EnforcedEffect {
				x.s("from ", p.text.quoted, ").\n")
				return
			}
		}
		x.s("no enforce policy decided).\n")
	}
}
