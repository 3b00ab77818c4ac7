package sqlinspect

import (
	"fmt"
	"strings"
)

type stmtClass uint8

const (
	classWrite   stmtClass = iota // not provably read-only; the zero value fails closed
	classRead                     // a query
	classNeutral                  // BEGIN/COMMIT, USE: harmless, but not a read by itself
)

type stmtResult struct {
	class       stmtClass
	why         string
	destructive bool
}

func write(format string, args ...any) stmtResult {
	return stmtResult{why: fmt.Sprintf(format, args...)}
}

// classify decides one statement (n counts from 1 for details).
func classify(d Dialect, toks []token, n int) stmtResult {
	if why := clientCommand(d, toks); why != "" {
		return stmtResult{why: why, destructive: isDestructive(toks)}
	}
	// EXPLAIN only plans, but EXPLAIN ANALYZE (Postgres, MySQL) runs the
	// statement, and planning may already evaluate functions (constant
	// folding; old MySQL materialised derived tables). So the explained
	// statement must itself be read-only; it is destructive only when run.
	executes, under := true, ""
	for depth := 0; depth < 3 && len(toks) > 0 && toks[0].kind == tWord && isExplain(d, toks[0].text); depth++ {
		rest, analyze, other := explainBody(d, toks[1:])
		if other { // EXPLAIN FOR CONNECTION n: another session's plan
			return stmtResult{class: classRead}
		}
		if analyze {
			under = " (under EXPLAIN ANALYZE, which runs it)"
		} else {
			executes = false
			if under == "" {
				under = " (under EXPLAIN)"
			}
		}
		if len(rest) == 0 {
			return write("statement %d is EXPLAIN without a statement", n)
		}
		if !statementKeywords[headWord(rest)] { // MySQL: EXPLAIN tbl, DESCRIBE tbl col
			if why := readChecks(d, rest, n); why != "" {
				return stmtResult{why: why}
			}
			return stmtResult{class: classRead}
		}
		toks = rest
	}
	r := classifyPlain(d, toks, n)
	if r.class == classWrite {
		r.why += under
	}
	r.destructive = executes && isDestructive(toks)
	return r
}

func classifyPlain(d Dialect, toks []token, n int) stmtResult {
	head := headWord(toks)
	switch {
	case readHeads[head]:
		if why := readChecks(d, toks, n); why != "" {
			return stmtResult{why: why}
		}
		return stmtResult{class: classRead}
	case head == "pragma" && d == SQLite:
		return pragma(toks, n)
	case txnHeads[head]:
		return transaction(head, toks, n)
	case head == "use" && d == MySQL:
		// USE db only changes the default database. (The mysql client's
		// own `use` drops the rest of its line, which runs less, not more.)
		if len(toks) == 2 && (toks[1].kind == tWord || toks[1].kind == tQuoted) {
			return stmtResult{class: classNeutral}
		}
		return write("statement %d is USE with extra text", n)
	case head == "":
		return write("statement %d does not start with a keyword", n)
	}
	return write("statement %d is %s", n, strings.ToUpper(head))
}

// headWord is the statement's first word, after any opening parentheses
// ("(SELECT 1) UNION (SELECT 2)"); "" when it does not start with a word.
func headWord(toks []token) string {
	for _, t := range toks {
		switch {
		case t.is(tPunct, "("):
			continue
		case t.kind == tWord:
			return t.text
		}
		break
	}
	return ""
}

func isExplain(d Dialect, head string) bool {
	return head == "explain" || (d == MySQL && (head == "describe" || head == "desc"))
}

// explainBody skips EXPLAIN's options and reports whether they include
// ANALYZE (any spelling, any value: ANALYZE false is still treated as
// running the statement) and whether this is MySQL's EXPLAIN FOR CONNECTION.
func explainBody(d Dialect, toks []token) (rest []token, analyze, other bool) {
	i := 0
	for i < len(toks) {
		t := toks[i]
		if i == 0 && t.is(tPunct, "(") && i+1 < len(toks) && toks[i+1].kind == tWord && !queryStarts[toks[i+1].text] {
			// Postgres EXPLAIN (ANALYZE, FORMAT JSON) …
			depth := 0
			for ; i < len(toks); i++ {
				switch {
				case toks[i].is(tPunct, "("):
					depth++
				case toks[i].is(tPunct, ")"):
					depth--
				case toks[i].is(tWord, "analyze"), toks[i].is(tWord, "analyse"):
					analyze = true
				}
				if depth == 0 {
					break
				}
			}
			i++
			continue
		}
		if t.kind != tWord {
			break
		}
		switch t.text {
		case "analyze", "analyse":
			analyze = true
		case "verbose", "query", "plan", "extended", "partitions":
		case "format": // MySQL FORMAT=JSON
			if i+2 < len(toks) && toks[i+1].is(tPunct, "=") {
				i += 2
			}
		case "for":
			if d == MySQL && i+1 < len(toks) && toks[i+1].is(tWord, "connection") {
				return nil, false, true
			}
			return toks[i:], analyze, false
		default:
			return toks[i:], analyze, false
		}
		i++
	}
	if i > len(toks) {
		i = len(toks)
	}
	return toks[i:], analyze, false
}

// queryStarts begin a parenthesised statement, as opposed to Postgres'
// EXPLAIN (option, …) list.
var queryStarts = set("select with values table insert update delete merge")

// clientCommand finds what the client, not the server, would run: psql
// backslash meta-commands, mysql client commands (\! anywhere, `system` at
// the start of a statement) and SQLite dot-commands at the start of a line.
func clientCommand(d Dialect, toks []token) string {
	for i, t := range toks {
		switch {
		case t.kind == tMeta && d == Postgres:
			return "backslash meta-command " + t.text + suffix(psqlMeta[t.text])
		case t.kind == tMeta:
			return "client command " + t.text + suffix(mysqlShortCommands[t.text])
		case d == SQLite && t.is(tPunct, ".") && (i == 0 || t.lineStart):
			name := "."
			if i+1 < len(toks) && toks[i+1].kind == tWord {
				name += toks[i+1].text
			}
			return "dot-command " + name
		}
	}
	if d == MySQL && len(toks) > 0 && toks[0].kind == tWord {
		if why, ok := mysqlCommands[toks[0].text]; ok {
			return "client command " + toks[0].text + suffix(why)
		}
	}
	return ""
}

func suffix(why string) string {
	if why == "" {
		return ""
	}
	return " " + why
}

// readChecks finds what makes a query statement write or lock: INTO,
// FOR UPDATE and friends, data-modifying keywords (Postgres CTEs can DELETE)
// and calls of functions that are not known to be side-effect free.
func readChecks(d Dialect, toks []token, n int) string {
	var cte []bool
	for _, t := range toks {
		if t.is(tWord, "with") {
			cte = cteNames(toks)
			break
		}
	}
	for i, t := range toks {
		var next token
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		call := next.is(tPunct, "(")
		switch t.kind {
		case tWord:
			switch t.text {
			case "into":
				return fmt.Sprintf("statement %d has INTO, which writes a table, file or variable", n)
			case "for":
				if next.kind == tWord && lockWords[next.text] {
					return fmt.Sprintf("statement %d locks rows (FOR %s)", n, strings.ToUpper(next.text))
				}
			case "lock":
				return fmt.Sprintf("statement %d locks rows (LOCK IN SHARE MODE)", n)
			}
			if dataModifying[t.text] && !call {
				return fmt.Sprintf("statement %d contains %s", n, strings.ToUpper(t.text))
			}
			if call && (cte == nil || !cte[i]) {
				if why := checkCall(d, toks, i); why != "" {
					return why
				}
			}
		case tQuoted, tString:
			if call {
				return fmt.Sprintf("statement %d calls a function by a quoted name", n)
			}
		}
	}
	return ""
}

var lockWords = set("update share no key")

// checkCall decides the word at toks[i], which is followed by "(".
func checkCall(d Dialect, toks []token, i int) string {
	name := toks[i].text
	if isSyntax(d, toks, i) {
		return ""
	}
	if i > 0 && toks[i-1].is(tPunct, ".") {
		q := "?"
		if i > 1 {
			q = toks[i-2].text
		}
		if d == Postgres && q == "pg_catalog" && safeFunction(d, name) && !(i > 2 && toks[i-3].is(tPunct, ".")) {
			return ""
		}
		return fmt.Sprintf("function %s.%s() is not known to be side-effect free", q, name)
	}
	if why := dangerousFunction(d, name); why != "" {
		return fmt.Sprintf("function %s() %s", name, why)
	}
	if safeFunction(d, name) {
		return ""
	}
	if p, ok := strings.CutPrefix(name, "pragma_"); ok && d == SQLite && sqlitePragmas[p] != pragmaUnknown {
		return "" // table-valued pragmas exist only for side-effect-free pragmas
	}
	return fmt.Sprintf("function %s() is not known to be side-effect free", name)
}

// cteNames marks the names in WITH name(col, …) AS (…) lists so that their
// column lists are not taken for function calls. It walks the list
// structurally (jumping over each body) so that a "name(…) AS (…)" elsewhere,
// such as Postgres' FROM f() AS (a int), is still checked as a call.
func cteNames(toks []token) []bool {
	match := matchParens(toks)
	marks := make([]bool, len(toks))
	for w, t := range toks {
		if !t.is(tWord, "with") {
			continue
		}
		j := w + 1
		if j < len(toks) && toks[j].is(tWord, "recursive") {
			j++
		}
		for j < len(toks) && (toks[j].kind == tWord || toks[j].kind == tQuoted) {
			name := j
			j++
			if j < len(toks) && toks[j].is(tPunct, "(") && match[j] > 0 {
				if c := match[j]; c+1 < len(toks) && toks[c+1].is(tWord, "as") {
					marks[name] = true
					j = c + 1
				}
			}
			if j >= len(toks) || !toks[j].is(tWord, "as") {
				break
			}
			j++
			for j < len(toks) && (toks[j].is(tWord, "not") || toks[j].is(tWord, "materialized")) {
				j++
			}
			if j >= len(toks) || !toks[j].is(tPunct, "(") || match[j] < 0 {
				break
			}
			j = match[j] + 1
			if j < len(toks) && toks[j].is(tPunct, ",") {
				j++
				continue
			}
			break
		}
	}
	return marks
}

// matchParens maps each "(" to its ")" (-1 when unmatched), without recursion.
func matchParens(toks []token) []int {
	match := make([]int, len(toks))
	var stack []int
	for i, t := range toks {
		match[i] = -1
		switch {
		case t.is(tPunct, "("):
			stack = append(stack, i)
		case t.is(tPunct, ")") && len(stack) > 0:
			match[stack[len(stack)-1]] = i
			stack = stack[:len(stack)-1]
		}
	}
	return match
}

// isDestructive is the audit action class "destructive" (DESIGN §4): DROP,
// TRUNCATE, ALTER … DROP, and DELETE or UPDATE without a WHERE, including
// inside a Postgres CTE (… AS (DELETE FROM t RETURNING *)).
func isDestructive(toks []token) bool {
	switch headWord(toks) {
	case "drop", "truncate":
		return true
	case "alter":
		depth := 0
		for _, t := range toks {
			switch {
			case t.is(tPunct, "("):
				depth++
			case t.is(tPunct, ")"):
				depth--
			case depth == 0 && t.is(tWord, "drop"):
				return true
			}
		}
	}
	// One pass, whatever the nesting: waiting[d] is set by a DELETE or
	// UPDATE that starts a statement at depth d and cleared by a WHERE at
	// that depth; the statement is destructive if its depth closes first.
	var waiting []bool
	depth := 0
	for i, t := range toks {
		for len(waiting) <= depth {
			waiting = append(waiting, false)
		}
		switch {
		case t.is(tPunct, "("):
			depth++
			if depth < len(waiting) {
				waiting[depth] = false
			}
		case t.is(tPunct, ")"):
			if waiting[depth] {
				return true
			}
			depth = max(depth-1, 0)
		case t.is(tWord, "where"):
			waiting[depth] = false
		case t.is(tWord, "delete"), t.is(tWord, "update"):
			// Only where a statement can start: first, in a CTE body "(…",
			// or after the CTE list "…)". FOR UPDATE, DO UPDATE, ON
			// DUPLICATE KEY UPDATE are not statements.
			if i == 0 || toks[i-1].is(tPunct, "(") || toks[i-1].is(tPunct, ")") {
				if waiting[depth] {
					return true
				}
				waiting[depth] = true
			}
		}
	}
	for _, w := range waiting[:min(depth+1, len(waiting))] {
		if w {
			return true
		}
	}
	return false
}

// pragma accepts SQLite PRAGMA [schema.]name [(arg)] for pragmas that only
// report: query pragmas with any argument, settings only without one
// (PRAGMA user_version(5) sets, like PRAGMA user_version = 5).
func pragma(toks []token, n int) stmtResult {
	i := 1
	if i+1 < len(toks) && toks[i+1].is(tPunct, ".") {
		i += 2
	}
	if i >= len(toks) || toks[i].kind != tWord {
		return write("statement %d is a PRAGMA without a plain name", n)
	}
	name, rest := toks[i].text, toks[i+1:]
	for _, t := range rest {
		if t.is(tPunct, "=") {
			return write("pragma %s with = changes a setting", name)
		}
	}
	hasArg := len(rest) > 0
	if hasArg && !pragmaArgument(rest) {
		return write("statement %d is a malformed PRAGMA %s", n, name)
	}
	switch sqlitePragmas[name] {
	case pragmaQuery:
	case pragmaSetting:
		if hasArg {
			return write("pragma %s(…) changes a setting", name)
		}
	default:
		return write("pragma %s is not known to be read-only", name)
	}
	return stmtResult{class: classRead}
}

// pragmaArgument accepts "( value )" and "( -number )".
func pragmaArgument(t []token) bool {
	value := func(t token) bool {
		return t.kind == tWord || t.kind == tString || t.kind == tNumber || t.kind == tQuoted
	}
	switch len(t) {
	case 3:
		return t[0].is(tPunct, "(") && value(t[1]) && t[2].is(tPunct, ")")
	case 4:
		return t[0].is(tPunct, "(") && (t[1].is(tPunct, "-") || t[1].is(tPunct, "+")) && t[2].kind == tNumber && t[3].is(tPunct, ")")
	}
	return false
}

var txnHeads = set("begin start commit end rollback")

// txnWords may follow BEGIN or START TRANSACTION. SQLite's IMMEDIATE and
// EXCLUSIVE take write locks, MariaDB's BEGIN NOT ATOMIC opens a compound
// statement, READ WRITE asks for writes: all fail closed.
var txnWords = set("transaction work deferred read only isolation level serializable repeatable committed uncommitted with consistent snapshot")

// transaction accepts plain transaction control. Such statements are
// classNeutral: harmless next to reads (BEGIN; SELECT …; COMMIT), but a text
// made only of them is not a read (see analysis.verdict).
func transaction(head string, toks []token, n int) stmtResult {
	rest := toks[1:]
	if head == "start" {
		if len(rest) == 0 || !rest[0].is(tWord, "transaction") {
			return write("statement %d is START without TRANSACTION", n)
		}
	}
	for _, t := range rest {
		switch {
		case head == "begin" || head == "start":
			if (t.kind == tWord && txnWords[t.text]) || t.is(tPunct, ",") {
				continue
			}
		case t.is(tWord, "transaction"), t.is(tWord, "work"):
			continue
		}
		return write("statement %d is %s with %s, not plain transaction control", n, strings.ToUpper(head), strings.ToUpper(clip(t.text)))
	}
	return stmtResult{class: classNeutral}
}
