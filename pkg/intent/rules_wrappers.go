package intent

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

// Wrappers run another command; they classify it and add their own
// properties (DESIGN §4: wrappers never launder).
func registerWrapperRules() {
	rules["env"] = envRule
	rules["nice"] = wrapper(getopt.New("n:", "adjustment="))
	rules["ionice"] = ioniceRule
	rules["nohup"] = wrapper(getopt.New(""))
	rules["stdbuf"] = wrapper(getopt.New("i:o:e:", "input=", "output=", "error="))
	rules["builtin"] = wrapper(getopt.New(""))
	rules["exec"] = wrapper(getopt.New("cla:"))
	rules["command"] = commandRule
	rules["time"] = timeRule
	rules["timeout"] = timeoutRule
	rules["xargs"] = xargsRule
	rules["watch"] = watchRule
	for _, n := range []string{"cd", "pushd", "popd"} {
		rules[n] = cdRule
	}
	// Builtins that assign variables named by their arguments (issue 14):
	// the names follow DESIGN §4's assignment rules, as NAME=value does.
	rules["read"] = readRule
	rules["mapfile"] = mapfileRule
	rules["readarray"] = mapfileRule
	rules["printf"] = printfRule
	rules["getopts"] = getoptsRule
	rules["wait"] = waitRule
	rules["unset"] = unsetRule
	rules["test"] = testRule
	rules["["] = testRule
	rules["set"] = setRule
	// What xargs appends to printf and getopts stays an operand (after
	// printf's format). Not so for test: an appended -v 'a[$(cmd)]' would
	// evaluate its subscript.
	argSafe["printf"], argSafe["getopts"] = true, true
}

// wrapper classifies the command after the wrapper's own options.
func wrapper(s *getopt.Spec) rule {
	s.StopAtOperand()
	return func(c *call) {
		p := c.parse(s)
		if !c.strict(p) {
			return
		}
		c.inner(c.fromOperand(p, 0), c.ctx)
	}
}

var ioniceSpec = getopt.New("c:n:p:P:u:thV", "class=", "classdata=", "pid=", "pgid=", "uid=", "ignore", "help", "version").StopAtOperand()

// ioniceRule: ionice -p/-P/-u names processes already running; with -c or
// -n it changes their I/O scheduling (issue 14), without it prints it.
// Otherwise it runs a command, classified as such.
func ioniceRule(c *call) {
	p := c.parse(ioniceSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-p", "--pid", "-P", "--pgid", "-u", "--uid"); ok {
		if p.Has("-c", "--class", "-n", "--classdata") {
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("ionice %s with a class changes the I/O scheduling of running processes", o.Name))
		}
		return
	}
	c.inner(c.fromOperand(p, 0), c.ctx)
}

var envSpec = getopt.New("0iu:C:S:vP:", "null", "ignore-environment", "unset=", "chdir=", "split-string=",
	"debug", "block-signal?", "default-signal?", "ignore-signal?", "list-signal-handling",
	"help", "version", "argv0=", "file=").StopAtOperand()

// envRule: env NAME=VALUE… CMD applies DESIGN §4's assignment rules to
// each NAME; -S splits a string into a command line nobody parsed.
func envRule(c *call) {
	p := c.parse(envSpec)
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		switch o.Name {
		case "-S", "--split-string":
			c.a.failClosed(CodeInlineCode, "env -S splits a string into a command")
			return
		case "-C", "--chdir":
			c.w.dirKnown = false
		}
	}
	rest := c.fromOperand(p, 0)
	for len(rest) > 0 {
		name, _, ok := strings.Cut(rest[0].val, "=")
		if !ok || name == "" || strings.ContainsAny(name, "/ ") {
			break
		}
		val := &arg{val: rest[0].val[len(name)+1:], expands: rest[0].expands}
		if !safeAssignment(name, val, true) {
			c.a.writes(CodeUnsafeAssignment, RiskHighWrite, fmt.Sprintf("env %s= can change what runs", name))
		}
		rest = rest[1:]
	}
	c.inner(rest, c.ctx)
}

var commandSpec = getopt.New("pvV").StopAtOperand()

// commandRule: command -v/-V only looks a name up; otherwise it runs it.
func commandRule(c *call) {
	p := c.parse(commandSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("-v", "-V") {
		return
	}
	c.inner(c.fromOperand(p, 0), c.ctx)
}

var timeSpec = getopt.New("pvqo:f:a", "portability", "verbose", "quiet", "output=", "format=", "append", "help", "version").StopAtOperand()

// timeRule: GNU time -o FILE writes its report to a file.
func timeRule(c *call) {
	p := c.parse(timeSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-o", "--output"); ok && !isSinkPath(o.Value) {
		c.a.writes(CodeWriteOption, RiskMediumWrite, "time -o "+o.Value+" writes a file")
	}
	c.inner(c.fromOperand(p, 0), c.ctx)
}

var timeoutSpec = getopt.New("k:s:v", "kill-after=", "signal=", "foreground", "preserve-status", "verbose", "help", "version").StopAtOperand()

// timeoutRule: timeout DURATION CMD bounds CMD (DESIGN §4: the one explicit
// bound for a follow) when DURATION is a finite, non-zero time of at most
// a day (0 disables the timeout; inf, infinity and 1e100 never fire: issue
// 14), and the signal it sends ends a process: -s CONT, STOP, CHLD or 0
// leave CMD running, unless -k sends KILL after a bounded delay.
func timeoutRule(c *call) {
	p := c.parse(timeoutSpec)
	if !c.strict(p) || len(p.Operands) < 1 {
		return
	}
	dur := c.rest()[p.Operands[0]]
	sub := c.innerAssessed(c.rest()[p.Operands[0]+1:], c.ctx)
	ends := true
	if o, ok := p.Get("-s", "--signal"); ok && !terminatingSignal(o.Value) {
		k, ok := p.Get("-k", "--kill-after")
		ends = ok && boundedDuration(k.Value)
	}
	switch {
	case dur.literal() && boundedDuration(dur.val) && ends:
		sub.bound()
	case sub.unbounded && !ends:
		sub.never(UnboundedStream, "timeout: the signal it sends does not end the command")
	case sub.unbounded:
		sub.never(UnboundedStream, fmt.Sprintf("timeout %s is not a limit that fires within a day", dur.src))
	}
	c.a.merge(sub)
}

// maxTimeout is the longest timeout that counts as a bound: an agent does
// not wait a day for a command.
const maxTimeout = 24 * 60 * 60

// boundedDuration parses GNU timeout's DURATION (a floating-point number
// with an optional s, m, h or d suffix) and reports a limit that fires:
// finite, above zero and at most maxTimeout seconds. Anything it cannot
// parse does not bound.
func boundedDuration(s string) bool {
	mult := 1.0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 's':
			s = s[:n-1]
		case 'm':
			s, mult = s[:n-1], 60
		case 'h':
			s, mult = s[:n-1], 3600
		case 'd':
			s, mult = s[:n-1], 86400
		}
	}
	if s == "" || strings.ContainsAny(s, "xXpP_") { // no hex floats or Go-only spellings
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return false
	}
	secs := f * mult
	return secs > 0 && secs <= maxTimeout
}

// terminatingSignal reports a signal whose default action ends a process
// (1–15 on Linux: HUP … TERM); timeout sends TERM unless told otherwise.
func terminatingSignal(s string) bool {
	s = strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if n, err := strconv.Atoi(s); err == nil {
		return n >= 1 && n <= 15
	}
	switch s {
	case "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "IOT", "BUS", "FPE", "KILL", "USR1", "SEGV",
		"USR2", "PIPE", "ALRM", "TERM":
		return true
	}
	return false
}

var xargsSpec = getopt.New("0a:d:E:e::I:i::L:l::n:oP:prs:tx", "null", "arg-file=", "delimiter=", "eof?",
	"replace?", "max-lines?", "max-args=", "open-tty", "max-procs=", "interactive",
	"process-slot-var=", "no-run-if-empty", "max-chars=", "show-limits", "verbose", "exit",
	"help", "version").StopAtOperand()

// xargsRule: xargs appends words from its input to the command, and those
// words can be options ("-delete", "-i"): only argument-safe programs, or a
// command that ended its options with "--", stay read-only.
func xargsRule(c *call) {
	p := c.parse(xargsSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("-o", "--open-tty", "-p", "--interactive") {
		c.a.never(TTYFlag, "xargs "+"-p/-o reads answers from the terminal")
	}
	if len(p.Operands) == 0 {
		return // runs echo
	}
	inner := c.rest()[p.Operands[0]:]
	c.inner(inner, stmtCtx{})
	name := inner[0].val
	if argSafe[name] {
		return
	}
	for _, a := range inner[1:] {
		if a.val == "--" {
			return
		}
	}
	if _, known := rules[name]; known {
		c.a.writes(CodeDynamicCommand, RiskMediumWrite, fmt.Sprintf("xargs appends input words to %s, and they can be options", name))
	}
}

var watchSpec = getopt.New("bCcdegn:ptwx", "beep", "no-color", "color", "differences?", "errexit", "chgexit",
	"interval=", "precise", "no-title", "no-wrap", "exec", "equexit=", "no-linewrap", "help", "version", "quiet").StopAtOperand()

// watchRule: watch reruns its command forever (seed 000 [unbounded_stream]);
// the command is joined and run by sh -c unless -x. Rewrite: watch X → X.
func watchRule(c *call) {
	p := c.parse(watchSpec)
	if !c.strict(p) {
		return
	}
	c.a.never(UnboundedStream, "watch reruns its command until stopped")
	if len(p.Operands) == 0 {
		return
	}
	inner := c.rest()[p.Operands[0]:]
	if p.Has("-x", "--exec") {
		c.inner(inner, stmtCtx{})
	} else {
		c.w.script(joined(inner), c.a, false)
	}
	words := make([]string, len(inner))
	for i, a := range inner {
		words[i] = a.src
	}
	if len(inner) == 1 && !p.Has("-x", "--exec") {
		words[0] = inner[0].val // watch 'df -h' runs the text as a command line
	}
	c.rewrite(words...)
}

// cd [-L|-P [-e]] [-@] DIR; pushd [-n] DIR.
var cdSpec = builtinSpec("LPe@n")

// cdRule: changing directory is harmless, but it changes which repository's
// git config applies; track a literal path, forget anything else.
func cdRule(c *call) {
	if c.name != "cd" && c.name != "pushd" {
		c.w.dirKnown = false
		return
	}
	p := c.parse(cdSpec)
	if len(p.Unknown) > 0 || len(p.Dynamic) > 0 {
		c.w.dirKnown = false // bash refuses the option, or it is unknowable
		return
	}
	target, _ := c.operand(p, 0)
	if target == nil || !target.literal() || target.val == "-" || strings.HasPrefix(target.val, "~") || strings.HasPrefix(target.val, "+") {
		c.w.dirKnown = false
		return
	}
	if path.IsAbs(target.val) {
		c.w.dir = path.Clean(target.val)
	} else {
		c.w.dir = path.Join(c.w.dir, target.val)
	}
}

// assignsName judges a variable name that builtin how assigns (read NAME,
// printf -v NAME, mapfile NAME, getopts OPTS NAME, wait -p NAME): a
// subscript is evaluated as arithmetic (a[$(cmd)] runs cmd), a name
// computed at run time can be anything, and names that change what runs
// (PATH, LD_PRELOAD, BASH_ENV, IFS, PS4, …) are writes, the same as
// NAME=value (issue 14).
func assignsName(c *call, how string, name *arg) {
	switch {
	case !name.literal():
		c.a.failClosed(CodeDynamicCommand, fmt.Sprintf("%s assigns the variable %s, named at run time", how, name.src))
	case strings.Contains(name.val, "["):
		c.a.failClosed(CodeArithmetic, how+": an array subscript is evaluated as arithmetic")
	case !safeAssignment(name.val, &arg{expands: true}, false):
		c.a.writes(CodeUnsafeAssignment, RiskHighWrite, fmt.Sprintf("%s assigns %s, which can change what runs", how, name.val))
	}
}

// assignsOperands judges every operand from the i-th on as a name.
func assignsOperands(c *call, p *getopt.Parsed, from int) {
	for _, i := range p.Operands[min(from, len(p.Operands)):] {
		assignsName(c, c.name, c.rest()[i])
	}
}

// assignsOption judges the value of option name as a variable name.
func assignsOption(c *call, p *getopt.Parsed, name string) {
	for _, o := range p.Opts {
		if o.Name == name {
			v := &arg{val: o.Value, src: o.Value}
			if o.SepValue {
				v = c.rest()[o.Index+1]
			} else if a := c.rest()[o.Index]; !a.literal() {
				v = a
			}
			assignsName(c, c.name+" "+name, v)
		}
	}
}

// Bash builtins stop at the first operand (internal_getopt).
func builtinSpec(short string) *getopt.Spec {
	return getopt.New(short).StopAtOperand()
}

var (
	readSpec    = builtinSpec("Eersa:d:i:n:N:p:t:u:")
	mapfileSpec = builtinSpec("d:n:O:s:tu:C:c:")
	printfSpec  = builtinSpec("v:")
	waitSpec    = builtinSpec("fnp:")
	unsetSpec   = builtinSpec("fvn")
	noOptions   = builtinSpec("")
)

// readRule: read [-a ARRAY] [NAME…] assigns the names.
func readRule(c *call) {
	p := c.parse(readSpec)
	if !c.strict(p) {
		return
	}
	assignsOption(c, p, "-a")
	assignsOperands(c, p, 0)
}

// mapfileRule: mapfile [ARRAY] assigns the array; -C runs a callback.
func mapfileRule(c *call) {
	p := c.parse(mapfileSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-C"); ok {
		c.a.failClosed(CodeEval, fmt.Sprintf("%s -C %s runs the callback as shell code", c.name, o.Value))
		return
	}
	assignsOperands(c, p, 0)
}

// printfRule: printf -v NAME assigns NAME; the format and arguments are
// data (bash's printf does not evaluate %d arguments as arithmetic).
func printfRule(c *call) {
	p := c.parse(printfSpec)
	if !c.strict(p) {
		return
	}
	assignsOption(c, p, "-v")
}

// getoptsRule: getopts OPTSTRING NAME [ARG…] assigns NAME.
func getoptsRule(c *call) {
	p := c.parse(noOptions)
	if !c.strict(p) {
		return
	}
	if len(p.Operands) > 1 {
		assignsName(c, c.name, c.rest()[p.Operands[1]])
	}
}

// waitRule: wait -p NAME assigns NAME.
func waitRule(c *call) {
	p := c.parse(waitSpec)
	if !c.strict(p) {
		return
	}
	assignsOption(c, p, "-p")
}

// unsetRule: unsetting a variable that changes what runs (PATH, IFS, …) or
// a function changes what later commands do.
func unsetRule(c *call) {
	p := c.parse(unsetSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("-f") {
		c.a.writes(CodeUnsafeAssignment, RiskMediumWrite, "unset -f changes what later commands run")
		return
	}
	for _, i := range p.Operands {
		a := c.rest()[i]
		switch {
		case !a.literal():
			c.a.writes(CodeUnsafeAssignment, RiskMediumWrite, "unset "+a.src+" is computed at run time")
		case strings.Contains(a.val, "["):
			c.a.failClosed(CodeArithmetic, "unset: an array subscript is evaluated as arithmetic")
		case !safeAssignment(a.val, &arg{expands: true}, false):
			c.a.writes(CodeUnsafeAssignment, RiskMediumWrite, "unset "+a.val+" changes what later commands run")
		default:
			continue
		}
		return
	}
}

// testRule: test and [ take an expression, not options; its only unary
// operators that name a variable are -v and -R, and -v 'a[$(cmd)]'
// evaluates the subscript. (-eq and friends do not evaluate arithmetic in
// the builtin test, unlike [[ ]].)
func testRule(c *call) {
	args := c.rest()
	for i := 1; i < len(args); i++ {
		if op := args[i-1]; op.literal() && (op.val == "-v" || op.val == "-R") && strings.Contains(args[i].val, "[") {
			c.a.failClosed(CodeArithmetic, c.name+" "+op.val+": an array subscript is evaluated as arithmetic")
			return
		}
	}
}

// setRule: shell options and positional parameters change nothing outside
// the shell.
func setRule(c *call) {
	for _, a := range c.rest() {
		if !a.literal() {
			c.a.writes(CodeDynamicCommand, RiskMediumWrite, "set "+a.src+" is computed at run time")
			return
		}
	}
}
