package intent

// A suggested rewrite is built by our own rules from the tokens they chose
// (tail -f x → tail -n 200 x), and it is offered only if it is itself
// read-only and bounded. Checking it used to mean a second parse and walk
// for about a tenth of a batch; the parse alone (mvdan.cc/sh allocates its
// node batches afresh for every Parse) was most of that (issue 14: batch
// mode at ≤ 2× parsing alone). Almost every rewrite is a simple command of
// plain words, whose syntax tree is known without parsing: one statement,
// one call, each word one literal. plainCommand recognizes exactly those,
// and classifyPlain walks them as the walker walks that tree, so the
// result is the same.
//
// So are most commands agents run (118 of the public corpus's 182: ls -la,
// git status, kubectl get pods -n x) and many scripts given to bash -c,
// ssh or watch: classify and walker.script take the same path, and parse
// only what is not plain. A false read-only here would be a
// bypass, so the fast path must give exactly the parse's result, every
// field of it: TestPlainFastPathMatchesParse compares the JSON of both
// classifiers on every corpus and testscript command, and
// FuzzPlainFastPath on random ones.

// plainCommand reports whether command is a simple command of plain words
// separated by blanks, and how many words it has. A plain word holds only
// letters, digits and _ . / , : @ % + = -: nothing the shell quotes,
// expands, globs, redirects, comments or splits on. The first word must not
// be an assignment (no =) nor a word the parser gives a syntax of its own
// (if, time, declare, …), so the parse is one call expression.
func plainCommand(command string) (words int, ok bool) {
	first := true
	start := -1
	for i := 0; i <= len(command); i++ {
		if i == len(command) || command[i] == ' ' || command[i] == '\t' {
			if start >= 0 {
				if first && reservedFirst(command[start:i]) {
					return 0, false
				}
				first = false
				words++
				start = -1
			}
			continue
		}
		c := command[i]
		if !plainByte[c] || c == '=' && first {
			return 0, false
		}
		if start < 0 {
			start = i
		}
	}
	return words, words > 0
}

// plainByte marks the bytes a plain word may hold.
var plainByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "_./,:@%+=-" {
		t[c] = true
	}
	return t
}()

// reservedFirst reports the first words that mvdan.cc/sh parses as
// something other than a call in bash (keywords, declaration builtins,
// let, time, coproc, select): gotStmtPipe's list.
func reservedFirst(w string) bool {
	switch w {
	case "if", "then", "elif", "else", "fi", "while", "until", "for", "do", "done",
		"case", "esac", "in", "function", "select", "time", "coproc", "let",
		"declare", "local", "export", "readonly", "typeset", "nameref", "@test":
		return true
	}
	return false
}

// classifyPlain classifies a command that plainCommand accepted, with the
// given number of words, without parsing it.
func (c *Classifier) classifyPlain(command string, n int) Result {
	s := c.scratches.Get().(*scratch)
	defer c.scratches.Put(s)
	a := s.start()
	w := &s.walker
	*w = walker{c: c, mem: s, src: command, topLevel: true, dir: c.opts.Dir, dirKnown: true, splices: w.splices[:0]}
	w.plainStmt(n, a)
	r := a.result(command)
	r.SuggestedRewrite = applySplices(command, w.splices)
	return r
}

// plainStmt walks w.src, which plainCommand accepted with n words, as
// w.stmts walks its parse: one statement (w.stmt) holding one call
// (w.callExpr) without assignments or redirections, each word one literal
// that is its own value, at the offsets the parser gives it.
func (w *walker) plainStmt(n int, a *assessment) {
	if !w.enter(a) { // the statement
		return
	}
	src := w.src
	args, mark := w.mem.takeWords(n)
	i, start := 0, -1
	for j := 0; j <= len(src); j++ {
		if j < len(src) && src[j] != ' ' && src[j] != '\t' {
			if start < 0 {
				start = j
			}
			continue
		}
		if start >= 0 {
			word := src[start:j]
			*args[i] = arg{val: word, src: word, start: start, end: j}
			i++
			start = -1
		}
	}
	w.program(args, stmtCtx{}, a)
	w.mem.releaseWords(mark)
	w.leave()
}
