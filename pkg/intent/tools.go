package intent

import "fmt"

// tool describes a read-only program by its options (issue 14): the parser
// knows every option and its arity, so an option it does not know fails
// closed instead of passing as harmless, and the few options that make the
// program write a file or run until killed say so. A GNU-style
// abbreviation is expanded first (optSpec.lookupLong), so --index-f is
// --index-file.
type tool struct {
	opts *optSpec
	// writes maps an option (as the parser names it: "-o", "--output") to
	// what it does: sdiff -o writes the merged file.
	writes map[string]string
	// forever maps an option to why it makes the program run until killed:
	// netstat -c, lsof -r, shuf -r.
	forever map[string]string
	// check judges what the options alone cannot: seq inf, head -c of
	// /dev/zero.
	check func(c *call, p *parsedArgs)
}

// tools holds the read-only programs described by their options.
var tools = map[string]*tool{}

// toolSets register tools; init runs them after the other rules, which
// they replace. A file describing tools adds its set with
// var _ = describeTools(func() { readOnlyTool(…) }).
var toolSets []func()

func describeTools(register func()) bool {
	toolSets = append(toolSets, register)
	return true
}

// readOnlyTool registers t as the rule of names. A tool without writing or
// never-ending options stays argSafe: nothing appended (xargs) can make it
// write, and an option it does not know only makes it fail.
func readOnlyTool(t *tool, names ...string) {
	for _, n := range names {
		tools[n] = t
		rules[n] = t.rule
		argSafe[n] = len(t.writes) == 0 && len(t.forever) == 0 && t.check == nil
	}
}

func (t *tool) rule(c *call) {
	p := c.parse(t.opts)
	if !c.strict(p) {
		return
	}
	for _, o := range p.opts {
		if what, ok := t.writes[o.name]; ok {
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("%s %s %s", c.name, o.name, what))
		}
		if why, ok := t.forever[o.name]; ok {
			c.a.never(UnboundedStream, fmt.Sprintf("%s %s %s", c.name, o.name, why))
		}
	}
	if t.check != nil {
		t.check(c, p)
	}
}

// helpOrVersion reports a call whose only argument is a literal --help or
// --version: every program govkit knows prints and exits, so it reads only
// (issue 14), whatever its other options would do.
func helpOrVersion(c *call) bool {
	if len(c.args) != 2 || !c.args[1].literal() {
		return false
	}
	v := c.args[1].val
	return v == "--help" || v == "--version"
}
