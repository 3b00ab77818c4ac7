package policy

import (
	"path"
	"strconv"
	"strings"
)

// Validate checks a Config against DESIGN §5: what LoadFile checks after
// decoding, for configs built in code. Problems name the field and, when
// the config came from a file, the line (Policy.Line, Rule.Line). The
// result is nil or errors joined as LoadFile returns them.
func (c *Config) Validate() error { return c.validate(nil) }

// problems collects validation messages and places each on the line of
// its field, or of the nearest enclosing field the loader saw.
type problems struct {
	file  string
	lines map[string]int // field path → line, from the decoder; nil for hand-built configs
	list  []*LoadError
}

func (p *problems) add(field string, fallback int, msg string) {
	p.list = append(p.list, &LoadError{File: p.file, Line: p.line(field, fallback), Field: field, Msg: msg})
}

func (p *problems) line(field string, fallback int) int {
	for f := field; p.lines != nil; f = parentField(f) {
		if l, ok := p.lines[f]; ok {
			return l
		}
		if f == "" {
			break
		}
	}
	return fallback
}

// parentField strips the last ".key" or "[i]" of a field path.
func parentField(f string) string {
	if i := strings.LastIndexAny(f, ".["); i >= 0 {
		return f[:i]
	}
	return ""
}

var (
	effectNames      = "allow, deny, require_approval"
	actionNames      = "read, write, destructive"
	enforcementNames = "enforce, audit"
)

func validEffect(e Effect) bool {
	return e == EffectAllow || e == EffectDeny || e == EffectRequireApproval
}

func validAction(a Action) bool {
	return a == ActionRead || a == ActionWrite || a == ActionDestructive
}

func (c *Config) validate(lines map[string]int) error {
	p := &problems{file: c.Source, lines: lines}
	switch c.Version {
	case "1":
	case "":
		p.add("version", 1, `required (want "1")`)
	default:
		p.add("version", 1, quote(c.Version)+` is not supported (want "1")`)
	}
	if c.DefaultEffect != "" && !validEffect(c.DefaultEffect) {
		p.add("default_effect", 1, quote(string(c.DefaultEffect))+" is not one of "+effectNames)
	}
	names := map[string]int{} // name → index of first policy with it
	for i := range c.Policies {
		pol := &c.Policies[i]
		base := "policies[" + strconv.Itoa(i) + "]"
		if first, dup := names[pol.Name]; dup && pol.Name != "" {
			p.add(base+".name", pol.Line, "duplicate policy name "+quote(pol.Name)+" (first at "+where(c.Policies[first].Line, first)+")")
		} else {
			names[pol.Name] = i
		}
		validatePolicy(p, pol, base)
	}
	validateGuardrails(p, c.Guardrails)
	return joinErrors(p.list)
}

// where names a policy for a duplicate-name message: its line if known.
func where(line, index int) string {
	if line > 0 {
		return "line " + strconv.Itoa(line)
	}
	return "policies[" + strconv.Itoa(index) + "]"
}

func validatePolicy(p *problems, pol *Policy, base string) {
	if strings.TrimSpace(pol.Name) == "" {
		p.add(base+".name", pol.Line, "required: every policy needs a name (it appears in decisions and the audit log)")
	}
	switch pol.Enforcement {
	case "", "enforce", "audit":
	default:
		p.add(base+".enforcement", pol.Line, quote(pol.Enforcement)+" is not one of "+enforcementNames)
	}
	for j, pr := range pol.Principals {
		field := base + ".principals[" + strconv.Itoa(j) + "]"
		set := 0
		for _, v := range []string{pr.Role, pr.User, pr.Service} {
			if v != "" {
				set++
			}
		}
		if set != 1 {
			p.add(field, pol.Line, "want exactly one of role, user or service, got "+strconv.Itoa(set))
		}
	}
	if len(pol.Resources) == 0 {
		p.add(base+".resources", pol.Line, "required: a policy without resources never applies")
	}
	for j, sel := range pol.Resources {
		field := base + ".resources[" + strconv.Itoa(j) + "]"
		if strings.TrimSpace(sel.Type) == "" {
			p.add(field+".type", pol.Line, "required: a resource selector needs a type (database, kubernetes, …)")
		}
		if sel.Name != "" {
			if _, err := path.Match(sel.Name, ""); err != nil {
				p.add(field+".name", pol.Line, quote(sel.Name)+" is not a valid glob (path.Match syntax: *, ?, [a-z], \\ escapes)")
			}
		}
		if sel.Match != nil {
			for k, tag := range sel.Match.Tags {
				if strings.TrimSpace(tag) == "" {
					p.add(field+".match.tags["+strconv.Itoa(k)+"]", pol.Line, "empty tag")
				}
			}
		}
	}
	if len(pol.Rules) == 0 {
		// A policy without rules can never produce an outcome: almost
		// certainly a mistake, and one that silently weakens a deny.
		p.add(base+".rules", pol.Line, "required: a policy needs at least one rule")
	}
	for j := range pol.Rules {
		validateRule(p, &pol.Rules[j], base+".rules["+strconv.Itoa(j)+"]", pol.Line)
	}
}

func validateRule(p *problems, r *Rule, base string, policyLine int) {
	line := r.Line
	if line == 0 {
		line = policyLine
	}
	if len(r.Actions) == 0 {
		p.add(base+".action", line, "required: one action or a list ("+actionNames+")")
	}
	for k, a := range r.Actions {
		if !validAction(a) {
			field := base + ".action"
			if len(r.Actions) > 1 {
				field += "[" + strconv.Itoa(k) + "]"
			}
			p.add(field, line, quote(string(a))+" is not one of "+actionNames)
		}
	}
	switch {
	case r.Effect == "":
		p.add(base+".effect", line, "required: one of "+effectNames)
	case !validEffect(r.Effect):
		p.add(base+".effect", line, quote(string(r.Effect))+" is not one of "+effectNames)
	}
	c := r.Conditions
	if c == nil {
		return
	}
	cbase := base + ".conditions"
	if c.ApprovalQuorum < 0 {
		p.add(cbase+".approval_quorum", line, strconv.Itoa(c.ApprovalQuorum)+" must be at least 1")
	}
	for _, m := range []struct {
		name  string
		limit *int
	}{{"max_rows_affected", c.MaxRowsAffected}, {"max_pods_affected", c.MaxPodsAffected}} {
		if m.limit != nil && *m.limit < 0 {
			p.add(cbase+"."+m.name, line, strconv.Itoa(*m.limit)+" must be 0 or more")
		}
	}
	if c.Schedule != nil {
		_, probs := compileSchedule(c.Schedule)
		for _, pr := range probs {
			p.add(cbase+".schedule."+pr.field, line, pr.msg)
		}
	}
}
