package intent

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// stdinKind says where a command's standard input comes from; it matters for
// shells and interpreters, which run whatever arrives there as code.
type stdinKind uint8

const (
	stdinInherited stdinKind = iota
	stdinPipe                // cmd | sh
	stdinFile                // sh < script.sh
	stdinHeredoc             // sh <<EOF … EOF or sh <<< "…"
)

// stmtCtx is what a simple command inherits from its statement.
type stmtCtx struct {
	stdin     stdinKind
	heredoc   string // literal here-document or here-string text, when stdin is one
	heredocOK bool   // the here-document text is literal (no expansions)
	// finite says the input ends: a file, a here-document, or a pipe or
	// process substitution of bounded commands (a while read loop over it
	// ends). finiteFDs lists other descriptors redirected from such input
	// (read -u 3 … done 3< FILE).
	finite    bool
	finiteFDs []string
	redirs    []*syntax.Redirect
}

// input is what the commands of a compound command ({ …; }, ( … ), loops,
// if and case bodies) inherit from its statement: its standard input, not
// its redirections, which the statement already applied.
func (ctx stmtCtx) input() stmtCtx {
	ctx.redirs = nil
	return ctx
}

// walker visits every command in one parsed script.
type walker struct {
	c        *Classifier
	mem      *scratch // shared with the walkers of nested commands
	src      string
	topLevel bool // src is the command being classified: rewrites may splice into it
	depth    int

	// dir is the directory git commands run in, for RepoConfig; dirKnown is
	// false once a cd, pushd or remote shell makes it unknowable.
	dir      string
	dirKnown bool

	splices []splice
}

// splice replaces src[start:end] with text in the suggested rewrite.
type splice struct {
	start, end int
	text       string
}

func (w *walker) enter(a *assessment) bool {
	w.depth++
	if w.depth > w.c.opts.MaxDepth {
		w.depth--
		a.failClosed(CodeNestingTooDeep, fmt.Sprintf("nesting deeper than %d levels", w.c.opts.MaxDepth))
		return false
	}
	return true
}

func (w *walker) leave() { w.depth-- }

func (w *walker) stmts(ss []*syntax.Stmt, a *assessment) {
	w.stmtsIn(ss, stmtCtx{}, a)
}

// stmtsIn walks statements that share the input in (ctx.input()): a shell
// in { sh; } < x.sh or curl … | (sh) reads its program from it.
func (w *walker) stmtsIn(ss []*syntax.Stmt, in stmtCtx, a *assessment) {
	for _, s := range ss {
		w.stmt(s, in, a)
	}
}

// subshell walks statements that run in a subshell: a cd inside does not
// change the directory later git commands run in.
func (w *walker) subshell(ss []*syntax.Stmt, in stmtCtx, a *assessment) {
	dir, known := w.dir, w.dirKnown
	w.stmtsIn(ss, in, a)
	w.dir, w.dirKnown = dir, known
}

func (w *walker) stmt(s *syntax.Stmt, ctx stmtCtx, a *assessment) {
	if !w.enter(a) {
		return
	}
	defer w.leave()
	ctx.redirs = s.Redirs
	for _, r := range s.Redirs {
		w.redirect(r, &ctx, a)
	}
	if s.Cmd != nil {
		w.command(s.Cmd, ctx, a)
	}
}

// redirect applies DESIGN §4's redirect rules: /dev/null targets, fd
// duplication and closing, and input redirects are not writes (seed 000
// Failure Mode 3); every other output redirect, <> and >| is.
func (w *walker) redirect(r *syntax.Redirect, ctx *stmtCtx, a *assessment) {
	// An input redirect from a process substitution is finite when the
	// commands in it are bounded: walk them on their own to know.
	inputFinite := false
	if r.Word != nil {
		if ps, ok := soleProcSubst(r.Word); ok && r.Op == syntax.RdrIn {
			sub := &assessment{}
			w.wordPart(ps, sub)
			inputFinite = !sub.unbounded
			a.merge(sub)
		} else {
			w.word(r.Word, a)
		}
	}
	if r.Hdoc != nil {
		w.word(r.Hdoc, a)
	}
	target, targetSrc, literal := "", "", true
	if r.Word != nil {
		t := newArg(w.src, r.Word)
		target, targetSrc, literal = t.val, t.src, t.literal()
	}
	switch r.Op {
	case syntax.RdrIn, syntax.DplIn:
		finite := inputFinite || literal && finiteFile(target)
		switch {
		case r.Op == syntax.RdrIn && (r.N == nil || r.N.Value == "0"):
			ctx.stdin, ctx.finite = stdinFile, finite
		case r.Op == syntax.RdrIn && finite:
			ctx.finiteFDs = append(ctx.finiteFDs[:len(ctx.finiteFDs):len(ctx.finiteFDs)], r.N.Value)
		}
	case syntax.Hdoc, syntax.DashHdoc:
		ctx.stdin, ctx.heredoc, ctx.heredocOK, ctx.finite = stdinHeredoc, "", true, true
		if r.Hdoc != nil {
			h := newArg(w.src, r.Hdoc)
			ctx.heredoc, ctx.heredocOK = h.val, !h.expands
			if r.Op == syntax.DashHdoc {
				ctx.heredoc = trimHeredocTabs(ctx.heredoc)
			}
		}
	case syntax.WordHdoc:
		h := newArg(w.src, r.Word)
		ctx.stdin, ctx.heredoc, ctx.heredocOK, ctx.finite = stdinHeredoc, h.val+"\n", h.literal(), true
	case syntax.DplOut:
		// >&WORD duplicates or closes a descriptor when WORD is digits or
		// "-"; any other WORD makes it &>WORD, a write of the file (issue
		// 14). A quoted "/dev/null" is still /dev/null.
		switch {
		case !literal:
			a.writes(CodeOutputRedirect, RiskHighWrite, fmt.Sprintf(">& %s: the target is computed at run time and may name a file", targetSrc))
		case isFD(target), isSinkPath(target):
		default:
			a.writes(CodeOutputRedirect, RiskHighWrite, fmt.Sprintf(">& %s writes the file %s", target, target))
			if isDiskDevice(target) {
				a.destroys(fmt.Sprintf(">& %s overwrites a device", target))
			}
		}
	case syntax.RdrInOut:
		a.writes(CodeOutputRedirect, RiskHighWrite, "<> "+target+" opens the file for writing")
	default: // > >> >| &> &>>
		if r.Op != syntax.RdrClob && isSinkPath(target) && literal {
			return
		}
		a.writes(CodeOutputRedirect, RiskHighWrite, r.Op.String()+" "+target+" writes a file")
		if isDiskDevice(target) {
			a.destroys(fmt.Sprintf("%s %s overwrites a device", r.Op, target))
		}
	}
}

// soleProcSubst returns the process substitution that is the whole word.
func soleProcSubst(wd *syntax.Word) (*syntax.ProcSubst, bool) {
	if len(wd.Parts) != 1 {
		return nil, false
	}
	ps, ok := wd.Parts[0].(*syntax.ProcSubst)
	return ps, ok
}

// finiteFile reports an input file that ends: a path outside /dev, /proc
// and /sys (where /dev/zero, /dev/urandom, FIFOs and /proc/kmsg never do),
// or /dev/null.
func finiteFile(p string) bool {
	if p == "/dev/null" {
		return true
	}
	return p != "" && !hasPrefixAny(p, "/dev/", "/proc/", "/sys/")
}

func trimHeredocTabs(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "\n")
}

// isFD matches the targets of fd duplication and closing: 1, 2, -, 2-.
func isFD(s string) bool {
	s = strings.TrimSuffix(s, "-")
	if s == "" {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isSinkPath reports paths whose writes change nothing on disk.
func isSinkPath(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2":
		return true
	}
	return false
}

func (w *walker) command(cmd syntax.Command, ctx stmtCtx, a *assessment) {
	switch c := cmd.(type) {
	case *syntax.CallExpr:
		w.callExpr(c, ctx, a)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			// Each side of a pipeline runs in a subshell: a cd does not carry.
			// The right side's input is finite when the left side is bounded.
			dir, known := w.dir, w.dirKnown
			left := &assessment{}
			w.stmt(c.X, ctx.input(), left)
			a.merge(left)
			w.dir, w.dirKnown = dir, known
			w.stmt(c.Y, stmtCtx{stdin: stdinPipe, finite: !left.unbounded}, a)
			w.dir, w.dirKnown = dir, known
		default:
			w.stmt(c.X, ctx, a)
			w.stmt(c.Y, ctx, a)
		}
	case *syntax.Subshell:
		w.subshell(c.Stmts, ctx.input(), a)
	case *syntax.Block:
		w.stmtsIn(c.Stmts, ctx.input(), a)
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			w.stmtsIn(c.Cond, ctx.input(), a)
			w.stmtsIn(c.Then, ctx.input(), a)
		}
	case *syntax.WhileClause:
		w.stmtsIn(c.Cond, ctx.input(), a)
		w.stmtsIn(c.Do, ctx.input(), a)
		if why := w.loopUnbounded(c, ctx); why != "" {
			a.never(UnboundedStream, why)
		}
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, wd := range l.Items {
				w.word(wd, a)
			}
		case *syntax.CStyleLoop:
			a.failClosed(CodeArithmetic, "for ((…)) evaluates arithmetic")
		}
		w.stmtsIn(c.Do, ctx.input(), a)
		if c.Select && !ctx.finite {
			a.never(InteractiveREPL, "select reads choices from its input until it ends")
		}
	case *syntax.CaseClause:
		w.word(c.Word, a)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				w.word(p, a)
			}
			w.stmtsIn(it.Stmts, ctx.input(), a)
		}
	case *syntax.FuncDecl:
		// The body runs whenever the function is called; a definition that
		// shadows a read-only name (ls() { rm -rf /; }) is judged by its body.
		w.stmt(c.Body, stmtCtx{}, a)
	case *syntax.ArithmCmd:
		a.failClosed(CodeArithmetic, "((…)) evaluates arithmetic, which can run a[$(cmd)] subscripts")
	case *syntax.LetClause:
		a.failClosed(CodeArithmetic, "let evaluates arithmetic, which can run a[$(cmd)] subscripts")
	case *syntax.TestClause:
		w.test(c.X, a)
	case *syntax.DeclClause:
		w.decl(c, a)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			w.stmt(c.Stmt, ctx, a)
		}
	case *syntax.CoprocClause:
		w.stmt(c.Stmt, stmtCtx{}, a)
	case *syntax.TestDecl:
		w.word(c.Description, a)
		w.stmt(c.Body, stmtCtx{}, a)
	default:
		a.failClosed(CodeUnknownCommand, fmt.Sprintf("unsupported shell construct %T", cmd))
	}
}

// loopUnbounded says why a while or until loop may never end, or "" when
// it ends (issue 14): a loop ends only when its condition reads a finite
// input, while read … done < FILE (or <<EOF, or cmd | while read … with
// cmd bounded). Whatever else the condition tests, classify cannot prove
// the body ever makes it fail.
func (w *walker) loopUnbounded(c *syntax.WhileClause, ctx stmtCtx) string {
	if foreverCondition(c) {
		return "the loop condition is always true"
	}
	if c.Until {
		return "an until loop runs until its condition succeeds, which classify cannot prove"
	}
	fd, ok := w.readsInput(c.Cond)
	switch {
	case !ok:
		return "a while loop runs until its condition fails, which classify cannot prove (only a while read loop over a finite input ends)"
	case fd == "0" && ctx.finite:
		return ""
	case fd != "0" && slices.Contains(ctx.finiteFDs, fd):
		return ""
	}
	return "the while read loop reads an input that may not end (a terminal, a device, or an unbounded command)"
}

// readsInput reports a loop condition that ends when read meets the end of
// its input, and the descriptor read reads: read …, read … && cmd, or the
// idiom read -r line || [[ -n $line ]] (after the end, read empties line).
func (w *walker) readsInput(cond []*syntax.Stmt) (string, bool) {
	if len(cond) == 0 {
		return "", false
	}
	s := cond[len(cond)-1]
	if s.Negated || len(s.Redirs) > 0 {
		return "", false
	}
	var names []string
	fd, ok := "", false
	switch x := s.Cmd.(type) {
	case *syntax.CallExpr:
		fd, names, ok = w.readCall(x)
	case *syntax.BinaryCmd:
		l, isCall := x.X.Cmd.(*syntax.CallExpr)
		if !isCall || x.X.Negated || len(x.X.Redirs) > 0 {
			return "", false
		}
		fd, names, ok = w.readCall(l)
		if ok && x.Op == syntax.OrStmt {
			ok = testsNonEmpty(x.Y, names)
		} else if x.Op != syntax.AndStmt {
			ok = false
		}
	}
	return fd, ok
}

// readCall recognizes read [options] [NAME…] and returns the descriptor
// it reads (-u FD, else 0) and the names it sets.
func (w *walker) readCall(ce *syntax.CallExpr) (string, []string, bool) {
	if len(ce.Args) == 0 || ce.Args[0].Lit() != "read" {
		return "", nil, false
	}
	args := make([]*arg, len(ce.Args)-1)
	for i, wd := range ce.Args[1:] {
		args[i] = newArg(w.src, wd)
	}
	p := parseArgs(args, readSpec)
	if len(p.Unknown) > 0 || len(p.Dynamic) > 0 {
		return "", nil, false
	}
	fd := "0"
	if o, ok := p.Get("-u"); ok {
		fd = o.Value
	}
	names := []string{"REPLY"}
	if len(p.Operands) > 0 {
		names = names[:0]
		for _, i := range p.Operands {
			names = append(names, args[i].val)
		}
	}
	if o, ok := p.Get("-a"); ok {
		names = []string{o.Value}
	}
	return fd, names, true
}

// testsNonEmpty recognizes [[ -n $v ]], [ -n "$v" ] and test -n "$v" for v
// one of names.
func testsNonEmpty(s *syntax.Stmt, names []string) bool {
	if s.Negated || len(s.Redirs) > 0 {
		return false
	}
	var wd *syntax.Word
	switch x := s.Cmd.(type) {
	case *syntax.TestClause:
		var ok bool
		if wd, ok = x.X.(*syntax.Word); ok { // [[ $line ]]
			break
		}
		u, ok := x.X.(*syntax.UnaryTest)
		if !ok || u.Op != syntax.TsNempStr {
			return false
		}
		if wd, ok = u.X.(*syntax.Word); !ok {
			return false
		}
	case *syntax.CallExpr:
		a := x.Args
		switch {
		case len(a) == 3 && a[0].Lit() == "test" && a[1].Lit() == "-n":
		case len(a) == 4 && a[0].Lit() == "[" && a[1].Lit() == "-n" && a[3].Lit() == "]":
		default:
			return false
		}
		wd = a[2]
	default:
		return false
	}
	if len(wd.Parts) == 1 {
		if q, ok := wd.Parts[0].(*syntax.DblQuoted); ok && len(q.Parts) == 1 {
			return isParamOf(q.Parts[0], names)
		}
		return isParamOf(wd.Parts[0], names)
	}
	return false
}

func isParamOf(p syntax.WordPart, names []string) bool {
	pe, ok := p.(*syntax.ParamExp)
	return ok && pe.Param != nil && pe.Index == nil && pe.Exp == nil && pe.Repl == nil && pe.Slice == nil &&
		!pe.Excl && !pe.Length && slices.Contains(names, pe.Param.Value)
}

// foreverCondition reports `while true`, `while :` and `until false`.
func foreverCondition(c *syntax.WhileClause) bool {
	if len(c.Cond) != 1 {
		return false
	}
	ce, ok := c.Cond[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) != 1 || len(ce.Assigns) > 0 || c.Cond[0].Negated {
		return false
	}
	switch ce.Args[0].Lit() {
	case "true", ":":
		return !c.Until
	case "false":
		return c.Until
	}
	return false
}

// test walks a [[ … ]] expression. Its arithmetic operators evaluate their
// operands as arithmetic, so x -eq 'a[$(cmd)]' runs cmd.
func (w *walker) test(x syntax.TestExpr, a *assessment) {
	switch x := x.(type) {
	case *syntax.Word:
		w.word(x, a)
	case *syntax.UnaryTest:
		w.test(x.X, a)
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			if wd, ok := x.X.(*syntax.Word); ok && strings.Contains(newArg(w.src, wd).val, "[") {
				a.failClosed(CodeArithmetic, "-v with an array subscript evaluates arithmetic")
			}
		}
	case *syntax.BinaryTest:
		w.test(x.X, a)
		w.test(x.Y, a)
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, side := range []syntax.TestExpr{x.X, x.Y} {
				if wd, ok := side.(*syntax.Word); !ok || !isInteger(newArg(w.src, wd)) {
					a.failClosed(CodeArithmetic, fmt.Sprintf("[[ … %s … ]] evaluates its operands as arithmetic", x.Op))
					return
				}
			}
		}
	case *syntax.ParenTest:
		w.test(x.X, a)
	}
}

func isInteger(a *arg) bool {
	if !a.literal() || a.val == "" {
		return false
	}
	s := strings.TrimPrefix(a.val, "-")
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// word walks a word for substitutions, and fails closed on constructs that
// evaluate arithmetic or hide line continuations.
func (w *walker) word(wd *syntax.Word, a *assessment) {
	if wd == nil {
		return
	}
	for _, p := range wd.Parts {
		w.wordPart(p, a)
	}
}

func (w *walker) wordPart(p syntax.WordPart, a *assessment) {
	switch p := p.(type) {
	case *syntax.DblQuoted:
		if w.continuationIn(p) {
			a.failClosed(CodeQuotedContinue, "a backslash-newline inside double quotes joins lines unseen")
		}
		for _, q := range p.Parts {
			w.wordPart(q, a)
		}
	case *syntax.CmdSubst:
		if w.enter(a) {
			w.subshell(p.Stmts, stmtCtx{}, a)
			w.leave()
		}
	case *syntax.ProcSubst:
		if w.enter(a) {
			w.subshell(p.Stmts, stmtCtx{}, a)
			w.leave()
		}
	case *syntax.ArithmExp:
		a.failClosed(CodeArithmetic, "$((…)) evaluates arithmetic, which can run a[$(cmd)] subscripts")
	case *syntax.ParamExp:
		w.paramExp(p, a)
	}
}

func (w *walker) paramExp(p *syntax.ParamExp, a *assessment) {
	if p.Slice != nil {
		a.failClosed(CodeArithmetic, "${var:offset:length} evaluates arithmetic")
	}
	if p.Index != nil && !safeIndex(p.Index) {
		a.failClosed(CodeArithmetic, "an array subscript is evaluated as arithmetic")
	}
	if p.NestedParam != nil {
		w.wordPart(p.NestedParam, a)
	}
	if p.Repl != nil {
		w.word(p.Repl.Orig, a)
		w.word(p.Repl.With, a)
	}
	if p.Exp != nil {
		w.word(p.Exp.Word, a)
		if p.Exp.Op == syntax.OtherParamOps && !harmlessTransform(p.Exp.Word.Lit()) {
			what := "expands the value as a prompt string, which runs the command substitutions in it"
			if op := p.Exp.Word.Lit(); op != "P" {
				what = "is not known to leave the value unevaluated"
			}
			a.failClosed(CodeEval, fmt.Sprintf("${…@%s} %s", p.Exp.Word.Lit(), what))
		}
	}
	// ${!name} uses the value of name as a variable name, and a value such
	// as a[$(cmd)] evaluates its subscript (issue 14). ${!prefix*} and
	// ${!array[@]} only list names.
	if p.Excl && p.Names == 0 && !allKeys(p.Index) {
		a.failClosed(CodeArithmetic, "${!…} expands a variable named by a value, which can evaluate a[$(cmd)] subscripts")
	}
}

// allKeys reports the subscript of ${!a[@]} and ${!a[*]}.
func allKeys(x syntax.ArithmExpr) bool {
	wd, ok := x.(*syntax.Word)
	return ok && (wd.Lit() == "@" || wd.Lit() == "*")
}

// harmlessTransform reports the ${var@op} operators that only transform
// the value as a string (issue 14): Q quotes, E expands backslash escapes
// the way $'…' does, A and K/k print assignments and key-value pairs, a
// prints attributes, U/u/L change case. P expands the value as a prompt
// string, which (with promptvars, bash's default) runs $(…) and `…` found
// in it: it is the one that evaluates, and any operator not listed here
// fails closed too.
func harmlessTransform(op string) bool {
	switch op {
	case "Q", "E", "A", "K", "k", "a", "U", "u", "L":
		return true
	}
	return false
}

// safeIndex allows ${a[0]}, ${a[@]} and ${a[*]}: nothing left to evaluate.
func safeIndex(x syntax.ArithmExpr) bool {
	wd, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	l := wd.Lit()
	if l == "@" || l == "*" {
		return true
	}
	return isInteger(&arg{val: l})
}

// continuationIn finds a backslash-newline inside double quotes, which the
// parser removes silently (DESIGN §4 fails closed on it).
func (w *walker) continuationIn(q *syntax.DblQuoted) bool {
	s, e := int(q.Pos().Offset()), int(q.End().Offset())
	if s < 0 || e > len(w.src) || s >= e {
		return false
	}
	body := w.src[s:e]
	for i := 0; i+1 < len(body); i++ {
		if body[i] == '\\' {
			if body[i+1] == '\n' {
				return true
			}
			i++
		}
	}
	return false
}

// assignment checks one NAME=value: the value's substitutions run, array
// subscripts are arithmetic, and only some names are harmless.
func (w *walker) assignment(as *syntax.Assign, prefix bool, a *assessment) {
	if as.Index != nil {
		a.failClosed(CodeArithmetic, "an array subscript in an assignment is evaluated as arithmetic")
	}
	if as.Array != nil {
		for _, el := range as.Array.Elems {
			if el.Index != nil {
				a.failClosed(CodeArithmetic, "an array subscript in an assignment is evaluated as arithmetic")
			}
			w.word(el.Value, a)
		}
	}
	w.word(as.Value, a)
	if as.Name == nil {
		return
	}
	name := as.Name.Value
	var val *arg
	if as.Value != nil {
		val = newArg(w.src, as.Value)
		if val.expands && hasSubstitution(as.Value) {
			a.failClosed(CodeUnsafeAssignment, name+"= takes its value from a command substitution")
			return
		}
	} else {
		val = &arg{}
	}
	if safeAssignment(name, val, prefix) {
		return
	}
	a.writes(CodeUnsafeAssignment, RiskHighWrite, fmt.Sprintf("%s= can change what runs", name))
}

// splitsOnly reports IFS=… in front of read, mapfile or readarray (IFS=
// read -r line): it only sets how that builtin splits its input, for that
// command alone.
func splitsOnly(ce *syntax.CallExpr, as *syntax.Assign) bool {
	if as.Name == nil || as.Name.Value != "IFS" || as.Index != nil || as.Array != nil || as.Append || len(ce.Args) == 0 {
		return false
	}
	switch ce.Args[0].Lit() {
	case "read", "mapfile", "readarray":
		return as.Value == nil || !hasSubstitution(as.Value)
	}
	return false
}

func hasSubstitution(wd *syntax.Word) bool {
	found := false
	syntax.Walk(wd, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			found = true
		}
		return !found
	})
	return found
}

// safeAssignment is DESIGN §4's list of variables that cannot change what
// runs. A bare shell variable (no command follows) with a lower-case name is
// also harmless: it is not exported, and using it as a command is caught as
// DYNAMIC_COMMAND.
func safeAssignment(name string, val *arg, prefix bool) bool {
	switch {
	case strings.HasPrefix(name, "LC_"), name == "LANG", name == "TZ", name == "TERM",
		name == "COLUMNS", name == "NO_COLOR":
		return true
	case name == "PAGER", name == "GIT_PAGER", name == "SYSTEMD_PAGER":
		return val.literal() && val.val == "cat"
	}
	if prefix || strings.HasSuffix(name, "_proxy") {
		return false
	}
	return strings.ToLower(name) == name
}

// decl checks declare, typeset, local, export and readonly: their
// assignments follow DESIGN §4's rules like plain ones, and so does a bare
// unsafe NAME (issue 14): inside a function declare and local make it a
// new, empty variable (local PATH empties PATH). With -p the names are
// only printed.
func (w *walker) decl(d *syntax.DeclClause, a *assessment) {
	printOnly := false
	for _, as := range d.Args {
		if as.Naked && as.Name == nil && as.Value != nil {
			if v := newArg(w.src, as.Value); v.literal() && strings.HasPrefix(v.val, "-") && strings.Contains(v.val, "p") {
				printOnly = true
			}
		}
	}
	for _, as := range d.Args {
		if printOnly && as.Naked && as.Name != nil && as.Index == nil {
			continue
		}
		if as.Naked && as.Name == nil && as.Value != nil {
			w.word(as.Value, a)
			v := newArg(w.src, as.Value)
			switch {
			case !v.literal():
				a.failClosed(CodeDynamicCommand, d.Variant.Value+" with an expanded argument can assign anything")
			case strings.HasPrefix(v.val, "-") && strings.ContainsAny(v.val, "inf"):
				a.failClosed(CodeArithmetic, fmt.Sprintf("%s %s: integer, nameref or function attributes", d.Variant.Value, v.val))
			case strings.Contains(v.val, "["):
				a.failClosed(CodeArithmetic, "an array subscript is evaluated as arithmetic")
			}
			continue
		}
		w.assignment(as, false, a)
	}
}

func (w *walker) callExpr(ce *syntax.CallExpr, ctx stmtCtx, a *assessment) {
	for _, as := range ce.Assigns {
		if splitsOnly(ce, as) {
			w.word(as.Value, a)
			continue
		}
		w.assignment(as, len(ce.Args) > 0, a)
	}
	if len(ce.Args) == 0 {
		return
	}
	args, mark := w.mem.takeWords(len(ce.Args))
	defer w.mem.releaseWords(mark)
	for i, wd := range ce.Args {
		w.word(wd, a)
		args[i].fill(w.src, wd)
	}
	w.program(args, ctx, a)
}

// program classifies argv[0] with its arguments; wrappers call it again on
// their inner command (DESIGN §4: wrappers never launder). Its checks and
// dispatch are functions of their own so that its two defers stay
// open-coded (a defer on a function with many returns is pushed on a list
// at run time, and program runs for every command).
func (w *walker) program(args []*arg, ctx stmtCtx, a *assessment) {
	if !w.enter(a) {
		return
	}
	defer w.leave()
	name := args[0]
	if !commandName(name, a) {
		return
	}
	c, mark := w.mem.takeCall(call{w: w, a: a, ctx: ctx, name: name.val, args: args})
	defer w.mem.releaseCall(mark)
	dispatch(c)
}

// commandName fails closed on a command word that does not name a trusted
// program by itself, and reports whether it does.
func commandName(name *arg, a *assessment) bool {
	switch {
	case name.ansiC:
		a.failClosed(CodeANSICQuoting, fmt.Sprintf("the command word %s uses $'…' quoting", name.src))
	case !name.literal() || name.val == "":
		a.failClosed(CodeDynamicCommand, fmt.Sprintf("the command name %s is computed at run time", name.src))
	case !isASCII(name.val):
		a.failClosed(CodeNonASCIICommand, fmt.Sprintf("the command name %q has non-ASCII characters", name.val))
	case strings.Contains(name.val, "/"):
		a.failClosed(CodePathCommand, fmt.Sprintf("%s is run by path, not the trusted %s", name.val, path.Base(name.val)))
	default:
		return true
	}
	return false
}

// dispatch classifies a call with its program's rule, an inspector, or as
// an unknown program.
func dispatch(c *call) {
	if r, ok := rules[c.name]; ok {
		if helpOrVersion(c) {
			return
		}
		r(c)
		return
	}
	for _, in := range inspectors {
		if in.Applies(c.name) {
			inspect(c, in)
			return
		}
	}
	c.a.writes(CodeUnknownCommand, RiskMediumWrite, c.name+" is not a known read-only command")
}

// script classifies text that a shell will run (bash -c, ssh host CMD,
// watch CMD) as a nested command.
func (w *walker) script(text string, a *assessment, remote bool) {
	if !w.enter(a) {
		return
	}
	defer w.leave()
	if bad, ok := badRune(text); ok {
		a.failClosed(CodeControlCharacter, "nested command contains "+bad)
		return
	}
	inner := &walker{c: w.c, mem: w.mem, src: text, depth: w.depth, dir: w.dir, dirKnown: w.dirKnown && !remote}
	if n, ok := plainCommand(text); ok && !w.c.parseAlways {
		inner.plainStmt(n, a) // plain.go: the walk of the parse, without it
		return
	}
	f, err := w.mem.parse(text)
	if err != nil {
		a.failClosed(CodeParseError, "nested command: "+err.Error())
		return
	}
	inner.stmts(f.Stmts, a)
}
