package policy

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultCaseTime is when a case without at: is evaluated (a Thursday,
// 00:00 UTC). No passing case's outcome depends on it: see LoadCases.
var DefaultCaseTime = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Case is one case of a policy test file.
type Case struct {
	Name string
	Line int // where the case starts in its file (1-based)
	// Request is what is evaluated. Its Context.Time is zero when the case
	// has no at:; RunCases then uses DefaultCaseTime.
	Request Request
	// TagsGiven is false when the case has no tags: key, so that a caller
	// with an infrastructure file can fill Request.Resource.Tags from it.
	TagsGiven bool
	Expect    Expectation
}

// Expectation is what a case asserts; only Effect is required.
type Expectation struct {
	Effect         Effect
	EnforcedEffect Effect // "" when not asserted
	// Policy is the deciding policy's name, "" for "no policy produced an
	// outcome" (default_applied); nil when not asserted.
	Policy *string
	Rule   *int // deciding rule index; nil when not asserted
	Quorum int  // approvals needed; 0 when not asserted
	// FailedCondition is the name of the deciding rule's failed condition
	// (max_rows_affected, max_pods_affected), "none", or "" when not
	// asserted.
	FailedCondition string
}

// DefaultPolicy is how a case file names "no policy produced an outcome".
const DefaultPolicy = "(default)"

// LoadCases reads a policy test file (`govexplain test --policy FILE
// CASES.yaml`, DESIGN §5): YAML with one key, cases, a list of cases, each
// a request and the decision it must get:
//
//	cases:
//	  - name: dba may write prod outside business hours   # required, unique
//	    request:
//	      resource: database:prod-db   # required: TYPE:NAME
//	      action: write                # required: read | write | destructive
//	      user: alice@example.com      # optional principal: user, roles, service
//	      roles: [dba]                 #   (roles: one role or a list)
//	      service: db-agent
//	      tags: [production]           # optional, one tag or a list; without the
//	                                   #   key govexplain test takes the tags from
//	                                   #   --infra, else the resource has none
//	      rows: 50                     # optional rows affected; 0 or absent = not
//	      pods: 0                      #   known yet (blast-radius limits wait)
//	      at: 2026-03-09T20:00:00-04:00   # optional RFC 3339 time, for schedules
//	    expect:
//	      effect: require_approval     # required: allow | deny | require_approval
//	      enforced_effect: require_approval   # optional (differs under enforcement: audit
//	                                   #   or dry-run)
//	      policy: production-database-protection   # optional; "(default)" (or "")
//	                                   #   means no policy produced an outcome
//	                                   #   (default_applied)
//	      rule: 1                      # optional 0-based rule index; needs policy
//	      quorum: 1                    # optional approvals needed; needs a
//	                                   #   require_approval effect or enforced_effect
//	      failed_condition: none       # optional: the deciding rule's condition that
//	                                   #   failed (max_rows_affected, max_pods_affected:
//	                                   #   the blast radius turned it into deny) or none
//
// A case passes when the decision has every asserted field. The file is read
// with the policy loader's rules and error voice: bounded (1 MiB), one UTF-8
// YAML document, unknown and duplicate keys rejected, and every problem
// reported as name:line: field: message. name (usually the file name)
// prefixes the messages.
//
// Time. A case without at: is evaluated at DefaultCaseTime, never at the
// clock, so that a run is reproducible. But a case without at: whose outcome
// depended on a schedule (in an applying policy, a rule for the request's
// action had a schedule and was skipped by it or decided) fails with an
// "at:" difference: its answer would change with the hour, so the case must
// say which hour it means. Write at: in UTC or with an offset; each schedule
// converts it to its own IANA zone (DESIGN §5, DST-safe).
func LoadCases(name string, r io.Reader) ([]Case, error) {
	if name == "" {
		name = unnamedInput
	}
	root, err := readDocument(name, r, "test case")
	if err != nil {
		return nil, err
	}
	d := newDecoder(name)
	var cases []Case
	listed := false
	d.mapping(root, "", []string{"cases"}, func(_ string, v *yaml.Node, field string) {
		listed = true
		d.sequence(v, field, func(_ int, item *yaml.Node, field string) {
			cases = append(cases, d.caseEntry(item, field))
		})
	})
	if err := d.err(); err != nil {
		return nil, err
	}
	if !listed || len(cases) == 0 {
		d.errorf(root.Line, "cases", "required: a list of test cases")
	}
	first := map[string]int{}
	for i, c := range cases {
		if line, dup := first[c.Name]; dup {
			d.errorf(c.Line, fmt.Sprintf("cases[%d].name", i), "duplicate case name %s (first at line %d)", quote(c.Name), line)
			continue
		}
		first[c.Name] = c.Line
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return cases, nil
}

// caseRequire reports the required keys of a mapping that are missing.
func (d *decoder) caseRequire(n *yaml.Node, field string, seen map[string]bool, keys ...string) {
	if n = d.peek(n); n == nil || (n.Kind != yaml.MappingNode && !isNull(n)) {
		return // the wrong kind was reported already
	}
	for _, k := range keys {
		if !seen[k] {
			d.errorf(n.Line, join(field, k), "required")
		}
	}
}

func (d *decoder) caseEntry(n *yaml.Node, field string) Case {
	var c Case
	if res := d.peek(n); res != nil {
		c.Line = res.Line
	}
	seen := map[string]bool{}
	d.mapping(n, field, []string{"name", "request", "expect"}, func(key string, v *yaml.Node, field string) {
		seen[key] = true
		switch key {
		case "name":
			if c.Name = d.str(v, field); strings.TrimSpace(c.Name) == "" {
				d.errorf(v.Line, field, "must not be empty")
			}
		case "request":
			d.caseRequest(v, field, &c)
		case "expect":
			d.caseExpect(v, field, &c.Expect)
		}
	})
	d.caseRequire(n, field, seen, "name", "request", "expect")
	return c
}

// caseStrings accepts one string or a list, like a rule's action.
func (d *decoder) caseStrings(n *yaml.Node, field string) []string {
	if res := d.peek(n); res != nil && res.Kind == yaml.ScalarNode && !isNull(res) {
		return []string{d.str(n, field)}
	}
	out := []string{} // non-nil: "tags: []" means no tags, unlike no key
	return append(out, d.strings(n, field)...)
}

func (d *decoder) caseCount(n *yaml.Node, field string, min int) int {
	v, ok := d.integer(n, field)
	if ok && v < min {
		d.errorf(n.Line, field, "%d must be at least %d", v, min)
	}
	return v
}

func (d *decoder) caseEffect(n *yaml.Node, field string) Effect {
	switch e := Effect(d.str(n, field)); e {
	case EffectAllow, EffectDeny, EffectRequireApproval:
		return e
	default:
		d.errorf(n.Line, field, "%s is not one of allow, deny, require_approval", quote(string(e)))
		return ""
	}
}

func (d *decoder) caseRequest(n *yaml.Node, field string, c *Case) {
	req := &c.Request
	seen := map[string]bool{}
	keys := []string{"user", "roles", "service", "resource", "tags", "action", "rows", "pods", "at"}
	d.mapping(n, field, keys, func(key string, v *yaml.Node, field string) {
		seen[key] = true
		switch key {
		case "user":
			req.Principal.UserID = d.str(v, field)
		case "roles":
			req.Principal.Roles = d.caseStrings(v, field)
		case "service":
			req.Principal.Service = d.str(v, field)
		case "resource":
			res := d.str(v, field)
			typ, name, ok := strings.Cut(res, ":")
			if !ok || typ == "" || name == "" {
				d.errorf(v.Line, field, "%s is not TYPE:NAME (e.g. database:prod-db)", quote(res))
			}
			req.Resource.Type, req.Resource.Name = typ, name
		case "tags":
			req.Resource.Tags = d.caseStrings(v, field)
			c.TagsGiven = true
		case "action":
			switch req.Action = Action(d.str(v, field)); req.Action {
			case ActionRead, ActionWrite, ActionDestructive:
			default:
				d.errorf(v.Line, field, "%s is not one of read, write, destructive", quote(string(req.Action)))
			}
		case "rows":
			req.Context.RowsAffected = d.caseCount(v, field, 0)
		case "pods":
			req.Context.PodsAffected = d.caseCount(v, field, 0)
		case "at":
			at := d.str(v, field)
			t, err := time.Parse(time.RFC3339Nano, at)
			if err != nil {
				d.errorf(v.Line, field, "%s is not an RFC 3339 time (e.g. 2026-03-09T14:00:00-04:00)", quote(at))
			}
			req.Context.Time = t
		}
	})
	d.caseRequire(n, field, seen, "resource", "action")
}

func (d *decoder) caseExpect(n *yaml.Node, field string, x *Expectation) {
	seen := map[string]bool{}
	lines := map[string]int{}
	keys := []string{"effect", "enforced_effect", "policy", "rule", "quorum", "failed_condition"}
	d.mapping(n, field, keys, func(key string, v *yaml.Node, field string) {
		seen[key] = true
		lines[key] = v.Line
		switch key {
		case "effect":
			x.Effect = d.caseEffect(v, field)
		case "enforced_effect":
			x.EnforcedEffect = d.caseEffect(v, field)
		case "policy":
			name := d.str(v, field)
			if name == DefaultPolicy {
				name = ""
			}
			x.Policy = &name
		case "rule":
			rule := d.caseCount(v, field, 0)
			x.Rule = &rule
		case "quorum":
			x.Quorum = d.caseCount(v, field, 1)
		case "failed_condition":
			switch x.FailedCondition = d.str(v, field); x.FailedCondition {
			case "max_rows_affected", "max_pods_affected", noCondition:
			default:
				d.errorf(v.Line, field, "%s is not one of max_rows_affected, max_pods_affected, none", quote(x.FailedCondition))
			}
		}
	})
	d.caseRequire(n, field, seen, "effect")
	if seen["rule"] && (x.Policy == nil || *x.Policy == "") {
		d.errorf(lines["rule"], join(field, "rule"), "needs policy: naming the policy the rule belongs to")
	}
	if seen["quorum"] && x.Effect != "" && x.Effect != EffectRequireApproval && x.EnforcedEffect != EffectRequireApproval {
		d.errorf(lines["quorum"], join(field, "quorum"), "needs effect or enforced_effect require_approval: only an approval has a quorum")
	}
}

// Report is the result of RunCases: one result per case, in file order, and
// the rule coverage of the policy file.
type Report struct {
	Cases    []CaseResult     `json:"cases"`
	Coverage []PolicyCoverage `json:"coverage"`
}

// CaseResult is how one case fared.
type CaseResult struct {
	Name string `json:"name"`
	Line int    `json:"line"`
	Pass bool   `json:"pass"`
	// Differences say what differed, one per asserted field:
	// "effect: got deny, want allow".
	Differences    []string `json:"differences,omitempty"`
	Decision       Decision `json:"decision"`
	DefaultApplied bool     `json:"default_applied"`
	// Explanation is the engine's explanation, given for failed cases.
	Explanation string `json:"explanation,omitempty"`
}

// PolicyCoverage is how the cases exercised one policy.
type PolicyCoverage struct {
	Policy string `json:"policy"`
	Line   int    `json:"line"`
	// Applied counts the cases in which the policy applied (DESIGN §5 rule
	// 1: enabled, principal and resource matched).
	Applied int `json:"applied"`
	// Why says why the policy never applied, when Applied is 0.
	Why   string         `json:"why,omitempty"`
	Rules []RuleCoverage `json:"rules"`
}

// RuleCoverage is how the cases exercised one rule.
type RuleCoverage struct {
	Index int `json:"index"`
	Line  int `json:"line"`
	// Reached counts the cases in which the rule was the first rule of its
	// applying policy not skipped for action or schedule: it produced the
	// policy's outcome, which then competed for the final decision.
	Reached int `json:"reached"`
	// Decided counts the reached cases in which that outcome won: the
	// decision names this policy and rule.
	Decided int `json:"decided"`
	// ConditionFailed counts the reached cases in which a condition failed
	// (a blast-radius limit exceeded, turning the outcome into deny).
	ConditionFailed int `json:"condition_failed"`
	// ScheduleInactive counts the cases that would have reached the rule
	// but for its schedule.
	ScheduleInactive int `json:"schedule_inactive"`
	// Why says why no case reached the rule, when Reached is 0.
	Why string `json:"why,omitempty"`
}

// Passed reports whether every case passed.
func (r Report) Passed() bool {
	for _, c := range r.Cases {
		if !c.Pass {
			return false
		}
	}
	return true
}

// Unreached lists the rules no case reached, one line each:
// `policy "p" rule 2 (line 30): no case used action destructive on this policy`.
func (r Report) Unreached() []string {
	var out []string
	for _, p := range r.Coverage {
		for _, rc := range p.Rules {
			if rc.Reached == 0 {
				out = append(out, fmt.Sprintf("policy %q rule %d (line %d): %s", p.Policy, rc.Index, rc.Line, rc.Why))
			}
		}
	}
	return out
}

// RunCases evaluates every case with e, which must have been built from cfg,
// and measures how the cases cover cfg's rules. It does no I/O and never
// reads the clock (cases without at: use DefaultCaseTime).
func RunCases(e *Engine, cfg *Config, cases []Case) Report {
	cov := newCoverage(cfg)
	rep := Report{Cases: make([]CaseResult, 0, len(cases))}
	for _, c := range cases {
		req := c.Request
		if req.Context.Time.IsZero() {
			req.Context.Time = DefaultCaseTime
		}
		tr := e.Explain(req)
		defaulted := tr.DefaultApplied || tr.Decision.DefaultApplied
		res := CaseResult{Name: c.Name, Line: c.Line, Decision: tr.Decision, DefaultApplied: defaulted}
		res.Differences = c.Expect.differences(cfg, tr, defaulted)
		if c.Request.Context.Time.IsZero() {
			if p, ri, ok := scheduleConsulted(cfg, tr); ok {
				res.Differences = append(res.Differences, fmt.Sprintf(
					"at: the outcome depends on the schedule of policy %q rule %d; give the case an at: time", p, ri))
			}
		}
		res.Pass = len(res.Differences) == 0
		if !res.Pass {
			res.Explanation = tr.Explanation
		}
		rep.Cases = append(rep.Cases, res)
		cov.add(req, tr, defaulted)
	}
	rep.Coverage = cov.report()
	return rep
}

func (x Expectation) differences(cfg *Config, tr DecisionTrace, defaulted bool) []string {
	d := tr.Decision
	var diffs []string
	if d.Effect != x.Effect {
		diffs = append(diffs, fmt.Sprintf("effect: got %s, want %s", d.Effect, x.Effect))
	}
	if x.EnforcedEffect != "" && d.EnforcedEffect != x.EnforcedEffect {
		diffs = append(diffs, fmt.Sprintf("enforced_effect: got %s, want %s", d.EnforcedEffect, x.EnforcedEffect))
	}
	if x.Policy != nil {
		got, want := d.PolicyName, *x.Policy
		if defaulted {
			got = DefaultPolicy
		}
		if want == "" {
			want = DefaultPolicy
		}
		if got != want {
			diff := fmt.Sprintf("policy: got %s, want %s", got, want)
			if want != DefaultPolicy && !slices.ContainsFunc(cfg.Policies, func(p Policy) bool { return p.Name == want }) {
				diff += " (the policy file has no policy of that name)"
			}
			diffs = append(diffs, diff)
		}
	}
	if x.Rule != nil && !defaulted && d.RuleIndex != *x.Rule {
		diffs = append(diffs, fmt.Sprintf("rule: got %d, want %d", d.RuleIndex, *x.Rule))
	}
	if x.Quorum != 0 && d.ApprovalQuorum != x.Quorum {
		diffs = append(diffs, fmt.Sprintf("quorum: got %d, want %d", d.ApprovalQuorum, x.Quorum))
	}
	if x.FailedCondition != "" {
		if got := failedCondition(tr); got != x.FailedCondition {
			diffs = append(diffs, fmt.Sprintf("failed_condition: got %s, want %s", got, x.FailedCondition))
		}
	}
	return diffs
}

// noCondition is failed_condition's "no condition failed".
const noCondition = "none"

// failedCondition names the first failed condition of the rule that made
// the decision, or "none".
func failedCondition(tr DecisionTrace) string {
	if tr.DefaultApplied {
		return noCondition
	}
	for _, pt := range tr.PoliciesEvaluated {
		if pt.PolicyName != tr.Decision.PolicyName || !pt.Matched {
			continue
		}
		if i := decidingRule(pt); i >= 0 {
			for _, ct := range pt.Rules[i].Conditions {
				if !ct.Passed {
					return ct.Name
				}
			}
		}
	}
	return noCondition
}

// decidingRule returns the index (into pt.Rules) of the rule that produced
// an applying policy's outcome, or -1 when every rule was skipped.
func decidingRule(pt PolicyTrace) int {
	for i, rt := range pt.Rules {
		if rt.Matched {
			return i
		}
	}
	return -1
}

// tracesByName indexes a trace's policies by name (the loader keeps names
// unique).
func tracesByName(tr DecisionTrace) map[string]PolicyTrace {
	m := make(map[string]PolicyTrace, len(tr.PoliciesEvaluated))
	for _, pt := range tr.PoliciesEvaluated {
		m[pt.PolicyName] = pt
	}
	return m
}

// scheduleConsulted finds a rule whose schedule the outcome depended on: in
// an applying policy, a rule skipped as schedule_inactive, or a deciding
// rule with a schedule. (The trace lists rules up to the deciding one.)
func scheduleConsulted(cfg *Config, tr DecisionTrace) (name string, rule int, ok bool) {
	byName := tracesByName(tr)
	for _, p := range cfg.Policies {
		pt, found := byName[p.Name]
		if !found || !pt.Matched {
			continue
		}
		for _, rt := range pt.Rules {
			if rt.Index < 0 || rt.Index >= len(p.Rules) {
				continue
			}
			if rt.SkipReason == SkipScheduleInactive || (rt.Matched && skippableBySchedule(p.Rules[rt.Index])) {
				return p.Name, rt.Index, true
			}
		}
	}
	return "", 0, false
}

// coverage accumulates RuleCoverage over the cases.
type coverage struct {
	cfg      *Config
	policies []policyTally
}

type policyTally struct {
	applied int
	skips   map[string]int // policy skip reason → cases
	rules   []ruleTally
}

type ruleTally struct {
	RuleCoverage
	actionCases  int         // cases in which the policy applied with one of the rule's actions
	earlierRules map[int]int // of those, cases an earlier rule decided, by its index
}

func newCoverage(cfg *Config) *coverage {
	c := &coverage{cfg: cfg, policies: make([]policyTally, len(cfg.Policies))}
	for pi, p := range cfg.Policies {
		c.policies[pi].skips = map[string]int{}
		c.policies[pi].rules = make([]ruleTally, len(p.Rules))
		for ri, r := range p.Rules {
			c.policies[pi].rules[ri] = ruleTally{
				RuleCoverage: RuleCoverage{Index: ri, Line: r.Line},
				earlierRules: map[int]int{},
			}
		}
	}
	return c
}

func (c *coverage) add(req Request, tr DecisionTrace, defaulted bool) {
	byName := tracesByName(tr)
	for pi, p := range c.cfg.Policies {
		pt, found := byName[p.Name]
		tally := &c.policies[pi]
		if !found || !pt.Matched {
			tally.skips[pt.SkipReason]++
			continue
		}
		tally.applied++
		decider := -1
		if i := decidingRule(pt); i >= 0 {
			decider = pt.Rules[i].Index
			rt := pt.Rules[i]
			if decider >= 0 && decider < len(tally.rules) {
				t := &tally.rules[decider]
				t.Reached++
				if !defaulted && tr.Decision.PolicyName == p.Name && tr.Decision.RuleIndex == decider {
					t.Decided++
				}
				if slices.ContainsFunc(rt.Conditions, func(ct ConditionTrace) bool { return !ct.Passed }) {
					t.ConditionFailed++
				}
			}
		}
		for _, rt := range pt.Rules {
			if rt.SkipReason == SkipScheduleInactive && rt.Index >= 0 && rt.Index < len(tally.rules) {
				tally.rules[rt.Index].ScheduleInactive++
			}
		}
		for ri, r := range p.Rules {
			if !slices.Contains(r.Actions, req.Action) {
				continue
			}
			t := &tally.rules[ri]
			t.actionCases++
			if decider >= 0 && decider < ri {
				t.earlierRules[decider]++
			}
		}
	}
}

func (c *coverage) report() []PolicyCoverage {
	out := make([]PolicyCoverage, len(c.cfg.Policies))
	for pi := range c.cfg.Policies {
		p := &c.cfg.Policies[pi]
		tally := c.policies[pi]
		pc := PolicyCoverage{Policy: p.Name, Line: p.Line, Applied: tally.applied, Rules: make([]RuleCoverage, len(p.Rules))}
		if pc.Applied == 0 {
			pc.Why = whyNeverApplied(p, tally.skips)
		}
		for ri := range p.Rules {
			t := tally.rules[ri]
			rc := t.RuleCoverage
			if rc.Reached == 0 {
				rc.Why = whyNeverReached(p, ri, pc, t)
			}
			pc.Rules[ri] = rc
		}
		out[pi] = pc
	}
	return out
}

func whyNeverApplied(p *Policy, skips map[string]int) string {
	if p.Enabled != nil && !*p.Enabled {
		return "the policy is disabled (enabled: false)"
	}
	principal, resource := skips[SkipPrincipalMismatch] > 0, skips[SkipResourceMismatch] > 0
	switch {
	case principal && resource:
		return fmt.Sprintf("no case matched both its principals (%s) and its resources (%s)", principalsText(p), resourcesText(p))
	case principal:
		return fmt.Sprintf("no case matched its principals (%s)", principalsText(p))
	case resource:
		return fmt.Sprintf("no case matched its resources (%s)", resourcesText(p))
	}
	return "no case evaluated it"
}

func whyNeverReached(p *Policy, ri int, pc PolicyCoverage, t ruleTally) string {
	if shadow := shadowedActions(p, ri); len(shadow) > 0 && len(shadow) == len(uniqueActions(p.Rules[ri].Actions)) {
		return "shadowed: " + describeShadowing(shadow)
	}
	if pc.Applied == 0 {
		return "policy never applied: " + pc.Why
	}
	if t.actionCases == 0 {
		return fmt.Sprintf("no case used action %s on this policy", orList(p.Rules[ri].Actions))
	}
	var parts []string
	for _, i := range lintSortedKeys(t.earlierRules) {
		parts = append(parts, fmt.Sprintf("rule %d decided %d", i, t.earlierRules[i]))
	}
	if t.ScheduleInactive > 0 {
		parts = append(parts, fmt.Sprintf("its schedule was inactive in %d", t.ScheduleInactive))
	}
	n := fmt.Sprintf("%d cases", t.actionCases)
	if t.actionCases == 1 {
		n = "1 case"
	}
	return fmt.Sprintf("of the %s that used action %s on this policy, %s",
		n, orList(p.Rules[ri].Actions), strings.Join(parts, ", "))
}

func orList(actions []Action) string {
	s := actionList(actions)
	if i := strings.LastIndex(s, " and "); i >= 0 {
		s = s[:i] + " or " + s[i+len(" and "):]
	}
	return s
}

func principalsText(p *Policy) string {
	var s []string
	for _, pr := range p.Principals {
		switch {
		case pr.Role != "":
			s = append(s, "role "+pr.Role)
		case pr.User != "":
			s = append(s, "user "+pr.User)
		case pr.Service != "":
			s = append(s, "service "+pr.Service)
		}
	}
	return strings.Join(s, " or ")
}

func resourcesText(p *Policy) string {
	s := make([]string, len(p.Resources))
	for i, r := range p.Resources {
		s[i] = selectorText(r)
	}
	return strings.Join(s, " or ")
}

// selectorText describes a resource selector: "type database name prod-*
// tags production,critical".
func selectorText(r ResourceSelector) string {
	d := "type " + r.Type
	if r.Name != "" {
		d += " name " + r.Name
	}
	if r.Match != nil && len(r.Match.Tags) > 0 {
		d += " tags " + strings.Join(r.Match.Tags, ",")
	}
	return d
}
