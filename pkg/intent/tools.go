package intent

import "github.com/govkit/govkit/pkg/getopt"

// tool describes a read-only program by its options (issue 14): the parser
// knows every option and its arity, so an option it does not know fails
// closed instead of passing as harmless, and the few options that make the
// program write a file, run a program or run until killed say so. A
// GNU-style abbreviation is expanded first (getopt.Spec.Lookup), so
// --index-f is --index-file.
//
// A word that may expand into an option (cat "$f") is harmless for a
// program none of whose options writes, runs or never ends: the expansion
// can only be an option that reads, or one the program rejects. Programs
// with such an option fail closed on it, unless their check judges
// expansions itself (expansionsOK: seq $n, jq "$prog").
type tool struct {
	opts *getopt.Spec
	// writes, runs and forever map an option (as the parser names it: "-o",
	// "--output") to what it does: sdiff -o writes the merged file, diff3
	// --diff-program runs a program, netstat -c repeats until killed.
	writes  map[string]string
	runs    map[string]string
	forever map[string]string
	// reads: the program reads the contents of its file operands and of
	// its standard input, so an endless device there never ends.
	reads bool
	// bound reports options that cap how much is read from an endless
	// device (head -c N, od -N N); zeroOK is false when the cap counts
	// lines, which /dev/zero never ends.
	bound func(p *getopt.Parsed) (ok, zeroOK bool)
	// operands: the operands that name files (jq's first is its program,
	// grep's first its pattern); nil means all of them.
	operands func(c *call, p *getopt.Parsed) []*arg
	// parse replaces c.parse where the program reads its arguments
	// differently (seq takes -1 as a number).
	parse func(c *call, s *getopt.Spec) *getopt.Parsed
	// check judges what the options cannot: seq's last number, jq's
	// program, sysctl NAME=VALUE.
	check        func(c *call, p *getopt.Parsed)
	expansionsOK bool
	// argSafe: nothing xargs appends can change what it does. Without it,
	// a tool is argSafe when it has no writing, running, endless or
	// checked option and reads no files.
	argSafe bool
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

// readOnlyTool registers t as the rule of names.
func readOnlyTool(t *tool, names ...string) {
	safe := t.argSafe || len(t.writes) == 0 && len(t.runs) == 0 && len(t.forever) == 0 && t.check == nil && !t.reads
	safe = safe && len(t.writes) == 0 && len(t.runs) == 0
	for _, n := range names {
		tools[n] = t
		rules[n] = t.rule
		argSafe[n] = safe
	}
}

func (t *tool) rule(c *call) {
	var p *getopt.Parsed
	if t.parse != nil {
		p = t.parse(c, t.opts)
	} else {
		p = c.parse(t.opts)
	}
	risky := len(t.writes) > 0 || len(t.runs) > 0 || len(t.forever) > 0 || t.check != nil && !t.expansionsOK
	if len(p.Unknown) > 0 || len(p.Dynamic) > 0 && risky {
		c.strict(p)
		return
	}
	for _, o := range p.Opts {
		if what, ok := t.writes[o.Name]; ok && !isSinkPath(o.Value) {
			c.a.writes(CodeWriteOption, RiskMediumWrite, c.name+" "+o.Name+" "+what)
		}
		if what, ok := t.runs[o.Name]; ok {
			c.a.writes(CodeRunsProgram, RiskHighWrite, c.name+" "+o.Name+" "+what)
		}
		if why, ok := t.forever[o.Name]; ok {
			c.a.never(UnboundedStream, c.name+" "+o.Name+" "+why)
		}
		if t.reads && o.HasValue && endlessDevice(o.Value) {
			c.a.never(UnboundedStream, c.name+" "+o.Name+" "+o.Value+" reads a device that never ends")
		}
	}
	if t.reads {
		t.endless(c, p)
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
