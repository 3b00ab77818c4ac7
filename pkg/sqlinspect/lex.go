package sqlinspect

import (
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
)

type tokKind uint8

const (
	tWord   tokKind = iota // unquoted identifier or keyword, lowercased
	tNumber                // numeric literal (and MySQL's \N)
	tString                // string literal of any kind
	tQuoted                // quoted identifier: "x", `x`, [x]
	tParam                 // bind parameter or variable: $1, :name, @name
	tPunct                 // one byte of punctuation or operator (:: is one token)
	tMeta                  // client command in backslash form: \! \o \copy
)

type token struct {
	kind      tokKind
	text      string
	lineStart bool // first token on its line (SQLite dot-commands)
}

func (t token) is(kind tokKind, text string) bool { return t.kind == kind && t.text == text }

// lexed is a text split into statements. Lexing stops at the first problem
// (err); the statements read so far, including the unfinished one, are kept
// so that their own findings and destructiveness are still reported.
type lexed struct {
	stmts   [][]token
	err     string
	psqlVar bool
	spans   []span // with lexer.spans: where each statement's text lies
}

// span is a statement's text, s[start:end]; semi: it ends with its ';'.
type span struct {
	start, end int
	semi       bool
}

type lexer struct {
	d         Dialect
	v         variant
	s         string
	i         int
	lineStart bool
	toks      []token
	start     int // first token of the current statement
	out       lexed
	spans     bool // record lexed.spans (SplitPsql)
	cut       int  // where the current statement's text starts
	semi      bool // the statement being ended ends at a ';'
}

func lex(d Dialect, v variant, s string) lexed {
	l := &lexer{d: d, v: v, s: s, lineStart: true, toks: make([]token, 0, 16)}
	l.run()
	return l.out
}

func (l *lexer) fail(format string, args ...any) {
	if l.out.err == "" {
		l.out.err = fmt.Sprintf(format, args...)
	}
}

func (l *lexer) peek(n int) byte {
	if l.i+n < len(l.s) {
		return l.s[l.i+n]
	}
	return 0
}

func (l *lexer) emit(k tokKind, text string) {
	l.toks = append(l.toks, token{kind: k, text: text, lineStart: l.lineStart})
	l.lineStart = false
}

// endStatement closes the current statement; empty statements are dropped.
func (l *lexer) endStatement() {
	if n := len(l.toks); n > l.start {
		l.out.stmts = append(l.out.stmts, l.toks[l.start:n:n])
		if l.spans {
			l.out.spans = append(l.out.spans, span{l.cut, l.i, l.semi})
		}
	}
	l.start = len(l.toks)
	l.cut = l.i
}

func (l *lexer) run() {
	for l.i < len(l.s) && l.out.err == "" {
		c := l.s[l.i]
		switch {
		case c == '\n':
			l.i++
			l.lineStart = true
		case c == ' ' || c == '\t' || c == '\r':
			l.i++
		case c < 0x20 || c == 0x7f:
			// NUL ends C strings early and clients and servers disagree on
			// whether control bytes are spaces (mysql: "--\x01" is a comment
			// for the server, not for the client). Refuse them outright.
			l.fail("control character in sql text")
		case c == ';':
			l.i++
			l.semi = true
			l.endStatement()
			l.semi = false
		case c == '-' && l.peek(1) == '-':
			l.dashComment()
		case c == '#' && l.d == MySQL:
			l.lineComment()
		case c == '/' && l.peek(1) == '*':
			l.blockComment()
		case c == '\'':
			e := l.eString()
			l.quoted(tString, '\'', l.v.escSingle || e, e)
		case c == '"' && l.d == MySQL && !l.v.ansiQuotes:
			l.quoted(tString, '"', l.v.escDouble, false)
		case c == '"':
			l.quoted(tQuoted, '"', false, false)
		case c == '`' && l.d != Postgres:
			l.quoted(tQuoted, '`', l.v.escBacktick, false)
		case c == '[' && l.d == SQLite:
			l.bracket()
		case c == '\\' && l.d != SQLite:
			l.meta()
		case c == '$' && l.d == Postgres:
			l.dollar()
		case l.d == SQLite && (c == '$' || c == '@' || c == ':' || c == '#'):
			l.sqliteVar()
		case c == ':' && l.d == Postgres:
			l.colon()
		case isDigit(c) || (c == '.' && isDigit(l.peek(1)) && !l.afterName()):
			l.number()
		case isIdentStart(c) || (c == '$' && l.d == MySQL):
			l.word()
		default:
			l.i++
			l.emit(tPunct, l.s[l.i-1:l.i])
		}
	}
	l.endStatement()
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c >= 0x80 || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) || c == '$' }
func isSpace(c byte) bool      { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// afterName reports whether the byte before the cursor ends a name, so that
// ".5" there is a qualifier dot ("t.5col" in MySQL), not a number.
func (l *lexer) afterName() bool {
	if l.i == 0 {
		return false
	}
	c := l.s[l.i-1]
	return isIdentChar(c) || c == '"' || c == '`' || c == ']' || c == ')'
}

// eString reports whether the quote at the cursor opens a Postgres E'…'
// string, where backslash escapes apply whatever the server settings.
func (l *lexer) eString() bool {
	if l.d != Postgres || len(l.toks) <= l.start || l.i == 0 {
		return false
	}
	last := l.toks[len(l.toks)-1]
	return last.is(tWord, "e") && (l.s[l.i-1] == 'e' || l.s[l.i-1] == 'E')
}

func (l *lexer) dashComment() {
	if l.d == MySQL {
		// MySQL needs whitespace after "--" ("1--1" is arithmetic), and
		// MariaDB's client also drops "--x" lines: the readings disagree.
		if c := l.peek(2); c != 0 && !isSpace(c) {
			l.fail("ambiguous -- without a following space")
			return
		}
	}
	l.lineComment()
}

func (l *lexer) lineComment() {
	if j := strings.IndexByte(l.s[l.i:], '\n'); j >= 0 {
		l.i += j
	} else {
		l.i = len(l.s)
	}
}

func (l *lexer) blockComment() {
	body := l.i + 2
	if l.d == MySQL {
		switch {
		case l.peek(2) == '!' || (l.peek(2) == 'M' && l.peek(3) == '!'):
			// /*! … */ is code for MySQL (and /*M! … */ for MariaDB) unless
			// its version gate is false: we cannot know which, fail closed.
			l.fail("mysql executable comment /*! … */")
			return
		case l.peek(2) == '+':
			l.hint()
			return
		}
	}
	if l.d == Postgres { // Postgres block comments nest
		depth := 1
		j := body
		for j < len(l.s)-1 && depth > 0 {
			switch {
			case l.s[j] == '/' && l.s[j+1] == '*':
				depth++
				j += 2
			case l.s[j] == '*' && l.s[j+1] == '/':
				depth--
				j += 2
			default:
				j++
			}
		}
		if depth > 0 {
			l.fail("unterminated comment")
			return
		}
		l.i = j
		return
	}
	end := strings.Index(l.s[body:], "*/")
	if end < 0 {
		l.fail("unterminated comment")
		return
	}
	l.i = body + end + 2
}

// hint skips a MySQL optimizer hint /*+ … */. The mysql client runs backslash
// commands inside hints, does not split on ';' there and treats '#' as a
// comment, while the server hands the hint to a separate parser; rather than
// model both, only plain hint text is accepted.
func (l *lexer) hint() {
	body := l.i + 3
	end := strings.Index(l.s[body:], "*/")
	if end < 0 {
		l.fail("unterminated comment")
		return
	}
	for _, c := range []byte(l.s[body : body+end]) {
		if !(isIdentChar(c) || strings.IndexByte(" \t(),=@.", c) >= 0) {
			l.fail("optimizer hint with unexpected character %q", c)
			return
		}
	}
	l.i = body + end + 2
}

// quoted reads a string or quoted identifier closed by q, where a doubled q
// stands for itself and, if esc, a backslash escapes the next byte. estr
// marks a Postgres E'…' string.
func (l *lexer) quoted(kind tokKind, q byte, esc, estr bool) {
	j := l.i + 1
	for j < len(l.s) {
		c := l.s[j]
		if esc && c == '\\' {
			j += 2
			continue
		}
		if c == q {
			if j+1 < len(l.s) && l.s[j+1] == q {
				j += 2
				continue
			}
			break
		}
		j++
	}
	if j >= len(l.s) {
		if kind == tString {
			l.fail("unterminated string")
		} else {
			l.fail("unterminated quoted identifier")
		}
		return
	}
	text := l.s[l.i : j+1]
	l.i = j + 1
	if estr && l.continued() {
		// Postgres continues an E'…' string across a newline in the same
		// escape mode: E'a'<newline>'b' is one literal whose second part
		// still has escapes. Not worth modelling: fail closed.
		l.fail("escaped string continued on another line")
		return
	}
	l.emit(kind, text)
}

// continued reports whether only whitespace (with a newline) or comments lie
// between the cursor and the next quote.
func (l *lexer) continued() bool {
	j := l.i
	for j < len(l.s) {
		switch c := l.s[j]; {
		case isSpace(c):
			j++
		case c == '-' && j+1 < len(l.s) && l.s[j+1] == '-':
			k := strings.IndexByte(l.s[j:], '\n')
			if k < 0 {
				return false
			}
			j += k
		default:
			return c == '\''
		}
	}
	return false
}

func (l *lexer) bracket() {
	end := strings.IndexByte(l.s[l.i:], ']')
	if end < 0 {
		l.fail("unterminated quoted identifier")
		return
	}
	l.emit(tQuoted, l.s[l.i:l.i+end+1])
	l.i += end + 1
}

// meta reads a backslash outside strings: a psql meta-command, or a mysql
// client command (\g and \G only end the statement; \N is NULL).
func (l *lexer) meta() {
	if l.d == MySQL {
		switch c := l.peek(1); c {
		case 'g', 'G':
			l.i += 2
			l.endStatement()
		case 'N':
			l.i += 2
			l.emit(tNumber, `\N`)
		case 0:
			l.i++
			l.emit(tMeta, `\`)
		default:
			l.emit(tMeta, l.s[l.i:l.i+2])
			l.i += 2
		}
		return
	}
	j := l.i + 1
	for j < len(l.s) && (l.s[j]|0x20 >= 'a' && l.s[j]|0x20 <= 'z' || l.s[j] == '_') {
		j++
	}
	if j == l.i+1 && j < len(l.s) && !isSpace(l.s[j]) {
		j++ // one-character commands: \! \? \;
	}
	l.emit(tMeta, l.s[l.i:j])
	l.i = j
}

// dollar reads a Postgres $1 parameter or a $tag$…$tag$ string.
func (l *lexer) dollar() {
	j := l.i + 1
	if isDigit(l.peek(1)) {
		for j < len(l.s) && isDigit(l.s[j]) {
			j++
		}
		l.emit(tParam, l.s[l.i:j])
		l.i = j
		return
	}
	if j < len(l.s) && isIdentStart(l.s[j]) {
		for j < len(l.s) && (isIdentStart(l.s[j]) || isDigit(l.s[j])) {
			j++
		}
	}
	if j >= len(l.s) || l.s[j] != '$' {
		l.i++
		l.emit(tPunct, "$")
		return
	}
	delim := l.s[l.i : j+1]
	end := strings.Index(l.s[j+1:], delim)
	if end < 0 {
		l.fail("unterminated dollar-quoted string")
		return
	}
	stop := j + 1 + end + len(delim)
	l.emit(tString, l.s[l.i:stop])
	l.i = stop
}

// colon reads ':' or '::' in Postgres and notes psql's :name, :'name',
// :"name" and :{?name} interpolation syntax.
func (l *lexer) colon() {
	if l.peek(1) == ':' {
		l.i += 2
		l.emit(tPunct, "::")
		return
	}
	if c := l.peek(1); isIdentStart(c) || c == '\'' || c == '"' || c == '{' {
		l.out.psqlVar = true
	}
	l.i++
	l.emit(tPunct, ":")
}

// sqliteVar reads a SQLite variable the way its tokenizer does, including
// the Tcl forms $a::b and $a(anything-but-space-or-paren).
func (l *lexer) sqliteVar() {
	j, n := l.i+1, 0
scan:
	for j < len(l.s) {
		c := l.s[j]
		switch {
		case isIdentChar(c):
			n++
			j++
		case c == '(' && n > 0:
			j++
			for j < len(l.s) && !isSpace(l.s[j]) && l.s[j] != ')' {
				j++
			}
			if j >= len(l.s) || l.s[j] != ')' {
				l.fail("malformed sqlite variable")
				return
			}
			j++
			break scan
		case c == ':' && j+1 < len(l.s) && l.s[j+1] == ':':
			j += 2
		default:
			break scan
		}
	}
	if n == 0 {
		l.i++
		l.emit(tPunct, l.s[l.i-1:l.i])
		return
	}
	l.emit(tParam, l.s[l.i:j])
	l.i = j
}

func (l *lexer) number() {
	j := l.i
	digits := func() {
		for j < len(l.s) && isDigit(l.s[j]) {
			j++
		}
	}
	digits()
	plain := true // digits only so far
	if j < len(l.s) && l.s[j] == '.' && j+1 < len(l.s) && isDigit(l.s[j+1]) {
		j++
		digits()
		plain = false
	}
	if j < len(l.s) && (l.s[j] == 'e' || l.s[j] == 'E') {
		k := j + 1
		if k < len(l.s) && (l.s[k] == '+' || l.s[k] == '-') {
			k++
		}
		if k < len(l.s) && isDigit(l.s[k]) {
			j = k
			digits()
			plain = false
		}
	}
	if l.d == MySQL && plain && j < len(l.s) && isIdentChar(l.s[j]) {
		// MySQL names may start with digits ("1into" is one name where
		// Postgres reads "1 into"); hex and bit literals are the exception.
		k := j
		for k < len(l.s) && isIdentChar(l.s[k]) {
			k++
		}
		text := l.s[l.i:k]
		if !mysqlRadixLiteral(text) {
			l.fail("ambiguous token %s (number or name)", clip(text))
			return
		}
		j = k
	}
	l.emit(tNumber, l.s[l.i:j])
	l.i = j
}

func mysqlRadixLiteral(s string) bool {
	if len(s) < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'b') {
		return false
	}
	for _, c := range []byte(s[2:]) {
		hex := isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
		if (s[1] == 'x' && !hex) || (s[1] == 'b' && c != '0' && c != '1') {
			return false
		}
	}
	return true
}

func (l *lexer) word() {
	j := l.i + 1
	for j < len(l.s) && isIdentChar(l.s[j]) {
		j++
	}
	l.emit(tWord, lower(l.s[l.i:j]))
	l.i = j
}

// lower lowercases ASCII letters, allocating only when there are any.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// clip shortens text quoted in a detail: details never echo long input.
// The cut is on a character boundary: a byte cut could leave half of one
// (a client name, an option, a token), and the detail invalid UTF-8.
func clip(s string) string { return termtext.Truncate(s, 24) }
