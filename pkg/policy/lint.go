package policy

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// Finding is one thing Lint reports about a policy file that loads but does
// not do what it seems to (`govexplain lint`, DESIGN §5).
type Finding struct {
	Kind   string `json:"kind"`
	Policy string `json:"policy"` // "" when about the whole file
	Rule   int    `json:"rule"`   // rule index, or -1 when about the policy or file
	Line   int    `json:"line"`   // 1-based; 0 when about the whole file or unknown
	// Message says what is wrong and what to do about it.
	Message string `json:"message"`
}

// Finding kinds. Each names a configuration the strict loader accepts but
// that an operator almost certainly did not mean.
const (
	// FindingShadowedRule: every action of the rule is taken first by an
	// earlier rule of the same policy that has no schedule, so the rule can
	// never decide (DESIGN §5 rule 2: first remaining rule wins, and only an
	// action mismatch or an inactive schedule skips a rule).
	FindingShadowedRule = "shadowed_rule"
	// FindingShadowedAction: some, not all, of the rule's actions are taken
	// first by an earlier unscheduled rule; listing them here is dead text
	// that misleads readers.
	FindingShadowedAction = "shadowed_action"
	// FindingUnreachablePolicy: the policy can never apply because it is
	// disabled (enabled: false). (The loader rejects the other ways a policy
	// could never apply: no resources, no rules, a malformed name glob.)
	FindingUnreachablePolicy = "unreachable_policy"
	// FindingQuorumWithoutApproval: approval_quorum on a rule that never
	// requires approval (its effect is not require_approval and it lacks
	// require_approval: true), so the quorum is ignored.
	FindingQuorumWithoutApproval = "approval_quorum_without_approval"
	// FindingConditionOnDeny: require_approval, max_rows_affected or
	// max_pods_affected on a deny rule; a deny is final, so they do nothing.
	// (A schedule on a deny rule is meaningful: change-freeze.)
	FindingConditionOnDeny = "condition_on_deny"
	// FindingBlastRadiusOnRead: max_rows_affected or max_pods_affected on a
	// rule that only takes read; the limits count rows and pods changed
	// (seed 003 "Blast Radius"), which a read never does.
	FindingBlastRadiusOnRead = "blast_radius_on_read"
	// FindingAuditFailOpen: an enforcement: audit policy has a rule for
	// requests that no enforce policy is sure to decide. DESIGN §5 rule 5
	// counts an audit outcome as allow and applies default_effect only when
	// no policy at all produced an outcome, so for those requests trialling
	// the audit policy turns the default deny into an enforced allow.
	// Reported only when default_effect is not allow.
	FindingAuditFailOpen = "audit_policy_fails_open"
	// FindingDefaultAllow: default_effect allow makes every request that no
	// policy decides allowed: the file fails open (DESIGN §3 "Fail closed").
	FindingDefaultAllow = "default_allow"
	// FindingGuardrailShortCooldown: a circuit breaker whose cooldown is
	// under a minute barely pauses a session in a failure loop.
	FindingGuardrailShortCooldown = "guardrail_short_cooldown"
	// FindingGuardrailShortWindow: a circuit breaker whose window is under a
	// minute needs its errors so close together that it almost never opens.
	FindingGuardrailShortWindow = "guardrail_short_window"
)

// Lint reports what is suspicious in cfg (`govexplain lint`), sorted by
// line. It assumes cfg came from the strict loader or passed Validate, and
// looks only for what those accept: duplicate policy names, policies without
// resources or rules, bad globs, effects, actions, schedules and quorums are
// load errors, not findings.
func Lint(cfg *Config) []Finding {
	var out []Finding
	if cfg.DefaultEffect == EffectAllow {
		out = append(out, Finding{Kind: FindingDefaultAllow, Rule: -1, Line: cfg.DefaultEffectLine,
			Message: "default_effect allow lets every request that no policy decides through (fail-open); use deny and write allow rules for what should pass"})
	}
	for pi := range cfg.Policies {
		out = append(out, lintPolicy(&cfg.Policies[pi])...)
		if cfg.DefaultEffect != EffectAllow {
			out = append(out, lintAuditFailOpen(cfg, pi)...)
		}
	}
	out = append(out, lintGuardrails(cfg.Guardrails)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

func lintPolicy(p *Policy) []Finding {
	finding := func(kind string, rule int, format string, args ...any) Finding {
		line := p.Line
		if rule >= 0 {
			line = p.Rules[rule].Line
		}
		return Finding{Kind: kind, Policy: p.Name, Rule: rule, Line: line, Message: fmt.Sprintf(format, args...)}
	}
	if why := policyNeverApplies(p); why != "" {
		// Its rules cannot matter either; one finding says it all.
		return []Finding{finding(FindingUnreachablePolicy, -1, "%s", why)}
	}
	var out []Finding
	for ri, r := range p.Rules {
		shadowed := shadowedActions(p, ri)
		switch {
		case len(shadowed) > 0 && len(shadowed) == len(uniqueActions(r.Actions)):
			out = append(out, finding(FindingShadowedRule, ri,
				"rule %d can never decide: %s; delete it, or move it above %s", ri, describeShadowing(shadowed), ruleList(shadowed)))
			continue // its conditions cannot matter either
		case len(shadowed) > 0:
			out = append(out, finding(FindingShadowedAction, ri,
				"%s never reaches rule %d: %s; remove %s from this rule or move it up",
				actionList(lintSortedKeys(shadowed)), ri, describeShadowing(shadowed), actionList(lintSortedKeys(shadowed))))
		}
		c := r.Conditions
		if c == nil {
			continue
		}
		if c.ApprovalQuorum > 0 && r.Effect != EffectRequireApproval && !c.RequireApproval {
			out = append(out, finding(FindingQuorumWithoutApproval, ri,
				"approval_quorum %d is ignored: the rule's effect is %s and it lacks require_approval: true; add require_approval: true or remove approval_quorum",
				c.ApprovalQuorum, r.Effect))
		}
		if r.Effect == EffectDeny {
			if set := denyOnlyConditions(c); len(set) > 0 {
				out = append(out, finding(FindingConditionOnDeny, ri,
					"a deny is final, so this rule's %s cannot change anything; remove %s or change the effect",
					andList(set), itOrThem(len(set))))
			}
		}
		if (c.MaxRowsAffected != nil || c.MaxPodsAffected != nil) && readOnlyRule(r.Actions) {
			out = append(out, finding(FindingBlastRadiusOnRead, ri,
				"a read changes no rows or pods, so the blast-radius limit on this read-only rule never applies; move it to the write or destructive rule"))
		}
	}
	return out
}

// policyNeverApplies says why p can never produce an outcome, or "" if it
// can. The loader already rejects the other ways (no resources, no rules, a
// malformed name glob, a principal entry that sets no field), so what is
// left is a policy that is switched off.
func policyNeverApplies(p *Policy) string {
	if p.Enabled != nil && !*p.Enabled {
		return "policy is disabled (enabled: false), so every request skips it; delete it, or remove enabled: false (enforcement: audit trials a policy without enforcing it)"
	}
	return ""
}

// lintAuditFailOpen reports the rules of an audit policy whose requests an
// enforce policy might not decide. It is conservative: a request is safe
// only when one enforce policy certainly applies to everything the audit
// selector and principals match, and has an unscheduled rule for the
// action (then it always produces an outcome, DESIGN §5 rule 2).
func lintAuditFailOpen(cfg *Config, pi int) []Finding {
	p := &cfg.Policies[pi]
	if p.Enforcement != "audit" || policyNeverApplies(p) != "" {
		return nil
	}
	var out []Finding
	for ri, r := range p.Rules {
		shadowed := shadowedActions(p, ri)
		var open []Action
		var where string
		for _, a := range uniqueActions(r.Actions) {
			if _, ok := shadowed[a]; ok {
				continue
			}
			for _, sel := range p.Resources {
				if !enforcedElsewhere(cfg, pi, sel, a) {
					open = append(open, a)
					where = selectorText(sel)
					break
				}
			}
		}
		if len(open) == 0 {
			continue
		}
		out = append(out, Finding{Kind: FindingAuditFailOpen, Policy: p.Name, Rule: ri, Line: r.Line, Message: fmt.Sprintf(
			"a %s request on %s that no enforce policy decides gets this audit rule's outcome, which is enforced as allow instead of default_effect %s (DESIGN §5: an audit outcome counts as allow; the default applies only when no policy produced an outcome); add an enforce policy with the same resources and an unscheduled rule for %s",
			actionList(open), where, orDeny(cfg.DefaultEffect), actionList(open))})
	}
	return out
}

func orDeny(e Effect) Effect {
	if e == "" {
		return EffectDeny
	}
	return e
}

// enforcedElsewhere reports whether an enabled enforce policy other than
// cfg.Policies[pi] always produces an outcome for action a on every request
// that sel and cfg.Policies[pi]'s principals match.
func enforcedElsewhere(cfg *Config, pi int, sel ResourceSelector, a Action) bool {
	audit := &cfg.Policies[pi]
	for qi := range cfg.Policies {
		q := &cfg.Policies[qi]
		if qi == pi || q.Enforcement == "audit" || policyNeverApplies(q) != "" || !principalsCover(q.Principals, audit.Principals) {
			continue
		}
		if !slices.ContainsFunc(q.Resources, func(qs ResourceSelector) bool { return selectorCovers(qs, sel) }) {
			continue
		}
		if slices.ContainsFunc(q.Rules, func(r Rule) bool { return !skippableBySchedule(r) && slices.Contains(r.Actions, a) }) {
			return true
		}
	}
	return false
}

// principalsCover reports whether every principal the inner list matches
// is matched by outer (empty means anyone).
func principalsCover(outer, inner []Principal) bool {
	if len(outer) == 0 {
		return true
	}
	if len(inner) == 0 {
		return false
	}
	for _, in := range inner {
		if !slices.ContainsFunc(outer, func(o Principal) bool {
			return strings.EqualFold(o.Role, in.Role) && strings.EqualFold(o.User, in.User) && strings.EqualFold(o.Service, in.Service)
		}) {
			return false
		}
	}
	return true
}

// selectorCovers reports whether every resource inner matches is matched by
// outer: same type, a name glob at least as wide, and no extra tags.
func selectorCovers(outer, inner ResourceSelector) bool {
	if !strings.EqualFold(outer.Type, inner.Type) {
		return false
	}
	if outer.Name != "" && !strings.EqualFold(outer.Name, inner.Name) {
		literal := inner.Name != "" && !strings.ContainsAny(inner.Name, `*?[\`)
		if ok, _ := path.Match(strings.ToLower(outer.Name), strings.ToLower(inner.Name)); !literal || !ok {
			return false
		}
	}
	if outer.Match == nil {
		return true
	}
	var innerTags []string
	if inner.Match != nil {
		innerTags = inner.Match.Tags
	}
	for _, t := range outer.Match.Tags {
		if !slices.ContainsFunc(innerTags, func(x string) bool { return strings.EqualFold(x, t) }) {
			return false
		}
	}
	return true
}

// shadowedActions maps each action of rule j that an earlier unscheduled rule of
// p always takes first to the index of that earlier rule. DESIGN §5 rule 2:
// only action_mismatch and schedule_inactive skip a rule, so an earlier rule
// without a schedule that lists the action always decides first (failed
// max_* conditions still decide, as deny).
func shadowedActions(p *Policy, j int) map[Action]int {
	m := map[Action]int{}
	for _, a := range p.Rules[j].Actions {
		for i := 0; i < j; i++ {
			if r := p.Rules[i]; !skippableBySchedule(r) && slices.Contains(r.Actions, a) {
				m[a] = i
				break
			}
		}
	}
	return m
}

// skippableBySchedule reports whether r can be skipped by schedule_inactive. A
// schedule that covers every day and hour never skips, so it does not count.
func skippableBySchedule(r Rule) bool {
	if r.Conditions == nil || r.Conditions.Schedule == nil {
		return false
	}
	s := r.Conditions.Schedule
	days := map[string]bool{}
	for _, d := range s.Days {
		days[strings.ToLower(d)] = true
	}
	hours := map[int]bool{}
	for _, h := range s.Hours {
		hours[h] = true
	}
	allDays := len(s.Days) == 0 || len(days) == 7
	allHours := len(s.Hours) == 0 || len(hours) == 24
	return !allDays || !allHours
}

// describeShadow says which earlier rules take which actions:
// "rule 0 already takes write and destructive".
func describeShadowing(m map[Action]int) string {
	byRule := map[int][]Action{}
	for a, i := range m {
		byRule[i] = append(byRule[i], a)
	}
	rules := lintSortedKeys(byRule)
	parts := make([]string, 0, len(rules))
	for _, i := range rules {
		parts = append(parts, fmt.Sprintf("rule %d already takes %s", i, actionList(byRule[i])))
	}
	return strings.Join(parts, ", ")
}

// ruleList names the rules of a shadowedActions map: "rule 0", "rules 0 and 1".
func ruleList(m map[Action]int) string {
	seen := map[int]bool{}
	for _, i := range m {
		seen[i] = true
	}
	var names []string
	for _, i := range lintSortedKeys(seen) {
		names = append(names, fmt.Sprint(i))
	}
	if len(names) == 1 {
		return "rule " + names[0]
	}
	return "rules " + andList(names)
}

func denyOnlyConditions(c *Conditions) []string {
	var set []string
	if c.RequireApproval {
		set = append(set, "require_approval")
	}
	if c.MaxRowsAffected != nil {
		set = append(set, "max_rows_affected")
	}
	if c.MaxPodsAffected != nil {
		set = append(set, "max_pods_affected")
	}
	return set
}

func readOnlyRule(actions []Action) bool {
	for _, a := range actions {
		if a != ActionRead {
			return false
		}
	}
	return len(actions) > 0
}

func uniqueActions(actions []Action) []Action {
	var out []Action
	for _, a := range actions {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// actionList writes actions in seed order (read, write, destructive):
// "write and destructive".
func actionList(actions []Action) string {
	order := map[Action]int{ActionRead: 0, ActionWrite: 1, ActionDestructive: 2}
	s := slices.Clone(actions)
	slices.SortFunc(s, func(a, b Action) int { return order[a] - order[b] })
	names := make([]string, len(s))
	for i, a := range s {
		names[i] = string(a)
	}
	return andList(names)
}

func andList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func itOrThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// lintSortedKeys returns m's keys sorted.
func lintSortedKeys[K interface{ ~int | ~string }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
