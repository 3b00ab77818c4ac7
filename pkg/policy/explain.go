package policy

import (
	"fmt"
	"slices"
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
	var b strings.Builder
	switch d.Effect {
	case EffectAllow:
		b.WriteString("allowed")
	case EffectRequireApproval:
		b.WriteString("requires approval from " + approvers(max(d.ApprovalQuorum, 1)))
	default:
		b.WriteString("denied")
	}
	if d.DefaultApplied {
		b.WriteString(" by the default effect")
	} else if d.PolicyName != "" {
		fmt.Fprintf(&b, " by policy %q rule %d", d.PolicyName, d.RuleIndex)
	}
	if d.Message != "" {
		b.WriteString(": " + d.Message)
	}
	return b.String()
}

func approvers(n int) string {
	if n == 1 {
		return "1 approver"
	}
	return strconv.Itoa(n) + " approvers"
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

func outcomeWord(e Effect) string { return strings.ToUpper(string(e)) }

// policyResult is one applying policy's outcome, re-derived for the text.
type policyResult struct {
	index  int
	rule   int // -1: no rule applied
	effect Effect
	failed []ConditionTrace
}

func buildExplanation(ev *evaluation) string {
	x := &explainer{ev: ev, e: ev.engine, d: ev.trace.Decision, req: shownRequest(ev.req), sub: newSubject(&ev.req)}
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
	const limit = 100
	if utf8.RuneCountInString(s) > limit {
		s = string([]rune(s)[:limit]) + "…"
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			q := strconv.Quote(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}

func shownAll(ss []string) []string {
	const limit = 20
	var out []string
	for i, s := range ss {
		if i == limit {
			out = append(out, fmt.Sprintf("… %d more", len(ss)-limit))
			break
		}
		out = append(out, shown(s))
	}
	return out
}

type explainer struct {
	ev  *evaluation
	e   *Engine
	d   Decision
	req Request
	sub subject
	b   strings.Builder
}

// gap starts a paragraph: exactly one blank line after what came before.
func (x *explainer) gap() {
	t := x.b.String()
	if t != "" && !strings.HasSuffix(t, "\n\n") {
		x.b.WriteByte('\n')
	}
}

func (x *explainer) line(format string, args ...any) {
	fmt.Fprintf(&x.b, format, args...)
	x.b.WriteByte('\n')
}

func (x *explainer) build() string {
	x.headline()
	if x.e.err != nil {
		x.gap()
		x.line("The policy configuration is invalid, so every request is denied (fail closed):")
		for _, l := range strings.Split(x.e.err.Error(), "\n") {
			x.line("  %s", l)
		}
		x.gap()
		x.line("Fix the policy configuration; `govexplain lint --policy FILE` lists the problems.")
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
	x.line("Refused by guardrail %s for session %s until %s (retry in %s).", g.Code, shown(g.SessionID),
		stamp(*g.LiftsAt), durText(time.Duration(g.RetryAfterSeconds)*time.Second))
	x.line("A guardrail cannot be overridden by approval.")
}

// overriddenDecision says what the policies decided before a guardrail
// refused the request.
func (x *explainer) overriddenDecision() {
	d := x.ev.overridden
	x.gap()
	if d.DefaultApplied {
		x.line("Without the guardrail: %s by the default effect.", effectWord(d.Effect))
		return
	}
	x.line("Without the guardrail: %s by policy %q rule %d.", effectWord(d.Effect), d.PolicyName, d.RuleIndex)
}

// guardrailChecks lists each guardrail's check, or why none was made.
func (x *explainer) guardrailChecks() {
	g := x.ev.trace.Guardrails
	if g == nil {
		return
	}
	x.gap()
	if !g.Evaluated {
		x.line("Guardrails: %s.", g.Detail)
		return
	}
	x.line("Guardrails (session %s):", shown(g.SessionID))
	for _, c := range g.Checks {
		mark := "✓"
		if !c.Passed {
			mark = "✗"
		}
		x.line("  %s %s: %s", mark, c.Name, c.Detail)
	}
}

func (x *explainer) done() string { return strings.TrimRight(x.b.String(), "\n") }

func (x *explainer) headline() {
	r := x.req.Resource
	what := r.Name
	if what == "" {
		what = r.Type + " (no name)"
	}
	tags := "none"
	if len(r.Tags) > 0 {
		tags = strings.Join(r.Tags, ", ")
	}
	if x.ev.post {
		x.line("After %s on %s (tags: %s): %s", x.req.Action, what, tags, effectWord(x.d.Effect))
		return
	}
	x.line("Access to %s (tags: %s) for %s: %s", what, tags, x.req.Action, effectWord(x.d.Effect))
}

// blocks writes one block per applying policy, as the seed's examples do,
// and returns the outcomes of the policies that produced one.
func (x *explainer) blocks() []policyResult {
	var results []policyResult
	for i, pt := range x.ev.trace.PoliciesEvaluated {
		if !pt.Matched {
			continue
		}
		p := &x.e.policies[i]
		res := policyResult{index: i, rule: -1}
		mode := ""
		if p.audit {
			mode = " (audit)"
		}
		x.gap()
		x.line("Policy %q%s matched (%s):", p.name, mode, x.matchedBy(p))
		width := 21
		for _, rt := range pt.Rules {
			width = max(width, utf8.RuneCountInString(ruleLabel(rt))+2)
		}
		for _, rt := range pt.Rules {
			label := ruleLabel(rt)
			pad := strings.Repeat(" ", width-utf8.RuneCountInString(label))
			r := &p.rules[rt.Index]
			switch rt.SkipReason {
			case SkipActionMismatch:
				x.line("  Rule %d  %s%sskipped — action is %s", rt.Index, label, pad, x.req.Action)
				continue
			case SkipScheduleInactive:
				x.line("  Rule %d  %s%sskipped — outside its schedule (%s)", rt.Index, label, pad, r.sched.desc)
				x.scheduleSkipped(r)
				continue
			}
			x.line("  Rule %d  %s%smatched", rt.Index, label, pad)
			res.rule = rt.Index
			res.effect, res.failed = ruleOutcome(r, rt)
			x.conditions(r, rt)
			if r.message != "" {
				x.line("    Message: %q", r.message)
			}
		}
		switch {
		case res.rule < 0:
			x.line("  → no rule applies to %s%s", x.req.Action, nowSuffix(pt))
		case i == x.decidingPolicy():
			x.line("  → %s", outcomeWord(res.effect))
		default:
			x.line("  → %s (not the most restrictive outcome)", outcomeWord(res.effect))
		}
		if res.rule >= 0 {
			results = append(results, res)
		}
	}
	return results
}

func nowSuffix(pt PolicyTrace) string {
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
	for i, p := range x.e.policies {
		if p.name == x.d.PolicyName {
			return i
		}
	}
	return -1
}

// ruleLabel is the seed's "read → allow" column.
func ruleLabel(rt RuleTrace) string {
	return strings.Join(rt.Actions, ", ") + " → " + rt.Effect
}

// ruleOutcome re-derives a deciding rule's outcome from its trace.
func ruleOutcome(r *compiledRule, rt RuleTrace) (Effect, []ConditionTrace) {
	var failed []ConditionTrace
	for _, c := range rt.Conditions {
		if !c.Passed {
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
func (x *explainer) matchedBy(p *compiledPolicy) string {
	var parts []string
	for j, pr := range p.principals {
		if principalMatch(pr, &x.sub) {
			parts = append(parts, principalLabel(p.shownPrincipals[j]))
			break
		}
	}
	var sel []string
	if j := p.matchingSelector(&x.sub); j >= 0 {
		rs := p.shownResources[j]
		sel = append(sel, "type="+rs.Type)
		if rs.Name != "" {
			sel = append(sel, "name="+rs.Name)
		}
		if rs.Match != nil {
			switch len(rs.Match.Tags) {
			case 0:
			case 1:
				sel = append(sel, "tag="+rs.Match.Tags[0])
			default:
				sel = append(sel, "tags="+strings.Join(rs.Match.Tags, ","))
			}
		}
	}
	if len(sel) > 0 {
		parts = append(parts, strings.Join(sel, ", "))
	}
	return strings.Join(parts, "; ")
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
		mark := "✓"
		if !c.Passed {
			mark = "✗"
		}
		switch c.Name {
		case "schedule":
			at := x.ev.at.In(r.sched.loc)
			x.line("    %s schedule: %s is inside %s", mark, at.Format("Mon 15:04 MST"), r.sched.desc)
		case "max_rows_affected":
			x.line("    %s max_rows_affected: %s", mark, limitText(ctx.RowsAffected, r.maxRows, "rows", x.ev.post))
		case "max_pods_affected":
			x.line("    %s max_pods_affected: %s", mark, limitText(ctx.PodsAffected, r.maxPods, "pods", x.ev.post))
		case "require_approval":
			x.line("    %s require_approval (quorum: %d)", mark, r.quorum)
		default:
			x.line("    %s %s: %s", mark, c.Name, c.Detail)
		}
	}
}

func limitText(n, limit int, unit string, post bool) string {
	switch {
	case n == 0 && post:
		return fmt.Sprintf("not evaluated (no count of %s affected), limit is %d", unit, limit)
	case n == 0:
		return fmt.Sprintf("not evaluated (%s affected unknown before execution), limit is %d", unit, limit)
	case n < 0:
		return fmt.Sprintf("%d is not a count of %s, limit is %d", n, unit, limit)
	}
	return fmt.Sprintf("%d %s affected, limit is %d", n, unit, limit)
}

// scheduleSkipped says when a skipped rule's window opens.
func (x *explainer) scheduleSkipped(r *compiledRule) {
	at := x.ev.at.In(r.sched.loc)
	if open, ok := r.sched.next(x.ev.at, true); ok {
		x.line("    now %s; the window opens %s", at.Format("Mon 15:04 MST"), open.In(r.sched.loc).Format("Mon 2006-01-02 15:04 MST"))
		return
	}
	x.line("    now %s; the window does not open in the next week", at.Format("Mon 15:04 MST"))
}

// decided closes the text of a decision made by a policy.
func (x *explainer) decided(results []policyResult) {
	var win policyResult
	for _, r := range results {
		if x.e.policies[r.index].name == x.d.PolicyName {
			win = r
			break
		}
	}
	p := &x.e.policies[win.index]
	r := &p.rules[win.rule]
	x.gap()
	if len(results) > 1 {
		x.line("The most restrictive outcome wins: %s from %q rule %d.", string(x.d.Effect), p.name, win.rule)
	}
	if x.ev.post && x.d.Effect != EffectDeny {
		// After execution only a deny withholds the result; an approval
		// was settled before the tool ran.
		x.line("The result may be returned: the operation stayed within its blast-radius limits.")
		return
	}
	switch x.d.Effect {
	case EffectDeny:
		if len(win.failed) > 0 {
			x.blastAdvice(p, r, win.failed)
			return
		}
		x.line("This rule cannot be overridden by approval.")
		x.windowCloses(r)
	case EffectRequireApproval:
		x.line("Requires approval from %s. %s", approvers(x.d.ApprovalQuorum), requestHint(x.req))
		x.postCheckNote(r)
		x.windowCloses(r)
	default:
		x.line("The operation may proceed.")
		x.postCheckNote(r)
	}
}

// requestHint tells a caller that evaluated a request how to ask for the
// approval it needs.
func requestHint(req Request) string {
	return fmt.Sprintf("Request it with `approvals request --resource %s:%s --action %s`.", req.Resource.Type, req.Resource.Name, req.Action)
}

// ApprovalRequested returns t as an enforcement point reports it once it
// has opened the approval request itself (auditd's POST /api/v1/decisions):
// the explanation says the request exists instead of how to make one (seed
// 003 "Human-Readable Explanation": "An approval request has been created.
// Use `approvals list` …"). req is the request t was evaluated for.
func (t DecisionTrace) ApprovalRequested(req Request) DecisionTrace {
	t.Explanation = strings.Replace(t.Explanation, requestHint(shownRequest(req)),
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
		x.line("This rule cannot be overridden by approval.")
		return
	}
	var ifs []string
	ctx := x.req.Context
	for _, c := range failed {
		switch c.Name {
		case "max_rows_affected":
			ifs = append(ifs, fmt.Sprintf("rows_affected ≤ %d (was %d)", r.maxRows, ctx.RowsAffected))
		case "max_pods_affected":
			ifs = append(ifs, fmt.Sprintf("pods_affected ≤ %d (was %d)", r.maxPods, ctx.PodsAffected))
		}
	}
	if x.ev.post {
		x.line("The result must be withheld: the operation exceeded its blast radius; policy %q would %s if %s.", p.name, would, strings.Join(ifs, " and "))
		return
	}
	x.line("To proceed, reduce the scope of the operation: policy %q would %s if %s.", p.name, would, strings.Join(ifs, " and "))
}

// postCheckNote warns that a limit still applies after execution.
func (x *explainer) postCheckNote(r *compiledRule) {
	ctx := x.req.Context
	if x.ev.post {
		return
	}
	if r.maxRows >= 0 && ctx.RowsAffected == 0 {
		x.line("Blast radius is checked after execution: the result is withheld if more than %d rows are affected.", r.maxRows)
	}
	if r.maxPods >= 0 && ctx.PodsAffected == 0 {
		x.line("Blast radius is checked after execution: the result is withheld if more than %d pods are affected.", r.maxPods)
	}
}

// windowCloses says until when a scheduled deciding rule applies.
func (x *explainer) windowCloses(r *compiledRule) {
	if r.sched == nil {
		return
	}
	if end, ok := r.sched.next(x.ev.at, false); ok {
		x.line("The rule applies until its window closes at %s.", end.In(r.sched.loc).Format("Mon 2006-01-02 15:04 MST"))
	}
}

// defaultApplied explains a decision no policy made (seed 003 "No policy
// matched"): why each policy did not apply, and the infra advice for a
// resource without tags.
func (x *explainer) defaultApplied() {
	if actionBit(x.req.Action) == 0 {
		x.gap()
		x.line("Unknown action %s: want %s. The request is denied (fail closed).", quote(string(x.req.Action)), actionNames)
		return
	}
	anyApplied := false
	for _, pt := range x.ev.trace.PoliciesEvaluated {
		anyApplied = anyApplied || pt.Matched
	}
	x.gap()
	if anyApplied {
		x.line("No rule of the matching policies applies to %s — default effect is %s.", x.req.Action, x.e.defaultEffect)
	} else {
		x.line("No policy matched this resource — default effect is %s.", x.e.defaultEffect)
	}
	if len(x.req.Resource.Tags) == 0 && !anyApplied {
		x.gap()
		x.line("This usually means %s is not listed in the infrastructure config and", orType(x.req.Resource))
		x.line("therefore has no tags. Add it to the infra file (--infra) with appropriate")
		x.line("tags so a policy can be applied.")
	}
}

func orType(r RequestResource) string {
	if r.Name == "" {
		return "the " + r.Type
	}
	return r.Name
}

// notApplied lists the policies that did not apply and why (at most 20:
// with a thousand policies the text must stay readable).
func (x *explainer) notApplied() {
	const limit = 20
	var lines []string
	for i, pt := range x.ev.trace.PoliciesEvaluated {
		if pt.Matched {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %q: %s", pt.PolicyName, x.skipDetail(&x.e.policies[i], pt.SkipReason)))
	}
	if len(lines) == 0 {
		return
	}
	x.gap()
	x.line("Policies that did not apply:")
	for i, l := range lines {
		if i == limit {
			x.line("  … and %d more", len(lines)-limit)
			break
		}
		x.line("%s", l)
	}
}

func (x *explainer) skipDetail(p *compiledPolicy, reason string) string {
	switch reason {
	case SkipDisabled:
		return "disabled"
	case SkipPrincipalMismatch:
		var want []string
		for _, pr := range p.shownPrincipals {
			want = append(want, strings.Replace(principalLabel(pr), "=", " ", 1))
		}
		return "principal — needs " + joinOr(want) + " (request: " + requester(x.req.Principal) + ")"
	}
	var why []string
	for j := range p.selectors {
		if w := selectorMiss(&p.shownResources[j], &p.selectors[j], &x.sub, x.req.Resource); !slices.Contains(why, w) {
			why = append(why, w) // two selectors can miss for the same reason
		}
	}
	return "resource — " + strings.Join(why, "; or ")
}

func joinOr(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func requester(rp RequestPrincipal) string {
	var parts []string
	if rp.UserID != "" {
		parts = append(parts, "user "+rp.UserID)
	}
	if rp.Service != "" {
		parts = append(parts, "service "+rp.Service)
	}
	if len(rp.Roles) > 0 {
		parts = append(parts, "roles "+strings.Join(rp.Roles, ", "))
	}
	if len(parts) == 0 {
		return "no user, service or role"
	}
	return strings.Join(parts, "; ")
}

// selectorMiss names what a resource lacks for one selector: the type,
// the name, or the missing tags.
func selectorMiss(rs *ResourceSelector, s *selector, sub *subject, r RequestResource) string {
	if sub.typ != s.typ {
		return fmt.Sprintf("needs type %s (is %s)", rs.Type, orNone(r.Type))
	}
	if !s.nameMatches(sub.name) {
		return fmt.Sprintf("needs name %s (is %s)", rs.Name, orNone(r.Name))
	}
	var missing []string
	for k, t := range s.tags {
		if !slices.Contains(sub.tags, t) {
			missing = append(missing, rs.Match.Tags[k])
		}
	}
	if len(missing) == 1 {
		return "missing tag " + missing[0]
	}
	return "missing tags " + strings.Join(missing, ", ")
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
		x.line("Dry run: decisions are recorded, not enforced — enforced effect: %s.", d.EnforcedEffect)
	case d.DryRun:
		x.gap()
		from := "no enforce policy decided"
		for _, r := range results {
			p := &x.e.policies[r.index]
			if !p.audit && r.effect == d.EnforcedEffect {
				from = fmt.Sprintf("from %q", p.name)
				break
			}
		}
		x.line("Dry run: policy %q is in audit mode, so its %s is only recorded — enforced effect: %s (%s).",
			d.PolicyName, d.Effect, d.EnforcedEffect, from)
	}
}
