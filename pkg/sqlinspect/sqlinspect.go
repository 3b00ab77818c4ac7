// Package sqlinspect decides whether the SQL a database client is asked to run is provably read-only.
//
// It is seed 000's ContentInspector for SQL clients (DESIGN §4): `sqlite3 DB
// "SQL"`, `psql -c "SQL"` and `mysql -e "SQL"` are read_only_conditional only
// when every statement is a query and nothing in the text or the options can
// write, run a program or read a file. The package is pure: it lexes the text
// (it never parses SQL fully) and fails closed on anything it does not
// recognise.
//
// "Conditional" is meant literally. Lexical inspection cannot see what the
// database itself attaches to a query: a view or a user-defined operator that
// calls a writing function, a Postgres attribute-notation call (t.func), a
// startup file the client reads (~/.sqliterc, ~/.psqlrc, my.cnf). The caller
// reports these commands as read_only_conditional, never read_only_certain.
package sqlinspect

import (
	"fmt"
	"strings"
)

// Dialect is the SQL dialect a text is written in.
type Dialect int

const (
	SQLite Dialect = iota
	Postgres
	MySQL // also MariaDB
)

var dialectNames = [...]string{"sqlite", "postgres", "mysql"}

func (d Dialect) String() string {
	if !d.valid() {
		return fmt.Sprintf("Dialect(%d)", int(d))
	}
	return dialectNames[d]
}

func (d Dialect) valid() bool { return d >= SQLite && d <= MySQL }

// Verdict of inspecting SQL text or a client invocation.
type Verdict struct {
	ReadOnly    bool   // every statement provably read-only
	Destructive bool   // drops/truncates/deletes-or-updates-without-WHERE
	REPL        bool   // client with nothing to run: interactive
	Detail      string // human reason, lowercase, e.g. `statement 2 is DELETE`
}

// maxSQL bounds the text inspected, like the classifier's own 1 MiB command
// limit: bigger inputs are not read-only rather than slow.
const maxSQL = 1 << 20

// InspectSQL inspects SQL text in a dialect.
func InspectSQL(d Dialect, sql string) Verdict {
	if !d.valid() {
		return Verdict{Detail: "unknown sql dialect"}
	}
	if len(sql) > maxSQL {
		return Verdict{Detail: "sql text too large"}
	}
	return analyze(d, sql).verdict()
}

// analysis is what inspecting one text found.
type analysis struct {
	why         string // first reason the text is not read-only; "" if none
	destructive bool
	reads       int  // read statements
	neutral     int  // transaction control and USE: harmless, but not reads
	psqlVar     bool // psql :name interpolation syntax outside strings
}

func (a analysis) verdict() Verdict {
	v := Verdict{Destructive: a.destructive}
	switch {
	case a.why != "":
		v.Detail = a.why
	case a.reads == 0 && a.neutral > 0:
		v.Detail = "only transaction control, no statement that reads"
	case a.reads == 0:
		v.Detail = "no statement"
	default:
		v.ReadOnly = true
		v.Detail = countStatements(a.reads)
	}
	return v
}

func countStatements(n int) string {
	if n == 1 {
		return "1 read-only statement"
	}
	return fmt.Sprintf("%d read-only statements", n)
}

// variant is one way the server or the client may read quotes. The server's
// settings are invisible to us (sql_mode NO_BACKSLASH_ESCAPES and
// ANSI_QUOTES, standard_conforming_strings), and the mysql client splits
// statements with its own rules before the server sees them. A string that
// hides `'; DELETE …` under one reading exposes it under another, so the text
// is read-only only if it is read-only under every reading.
type variant struct {
	note        string // appended to details found only under this reading
	escSingle   bool   // backslash escapes inside '…'
	escDouble   bool   // backslash escapes inside "…" (MySQL strings)
	escBacktick bool   // backslash escapes inside `…` (older mysql clients)
	ansiQuotes  bool   // MySQL "…" is an identifier
}

var variants = [...][]variant{
	SQLite: {{}},
	Postgres: {
		{},
		{note: "with standard_conforming_strings off", escSingle: true},
	},
	MySQL: {
		{escSingle: true, escDouble: true},
		{note: "with NO_BACKSLASH_ESCAPES"},
		{note: "with ANSI_QUOTES", escSingle: true, ansiQuotes: true},
		{note: "as older mysql clients split it", escSingle: true, escDouble: true, escBacktick: true},
	},
}

// analyze inspects text under every quote reading of the dialect.
func analyze(d Dialect, sql string) analysis {
	vs := variants[d]
	if !strings.Contains(sql, `\`) {
		vs = vs[:1] // the readings differ only in how they treat backslashes
	}
	a := analyzeVariant(d, vs[0], sql)
	for _, v := range vs[1:] {
		b := analyzeVariant(d, v, sql)
		a.destructive = a.destructive || b.destructive
		a.psqlVar = a.psqlVar || b.psqlVar
		if a.why == "" && b.why != "" {
			a.why = b.why + " (" + v.note + ")"
		}
	}
	return a
}

func analyzeVariant(d Dialect, v variant, sql string) analysis {
	lx := lex(d, v, sql)
	a := analysis{psqlVar: lx.psqlVar}
	for i, st := range lx.stmts {
		r := classify(d, st, i+1)
		a.destructive = a.destructive || r.destructive
		switch r.class {
		case classRead:
			a.reads++
		case classNeutral:
			a.neutral++
		default:
			if a.why == "" {
				a.why = r.why
			}
		}
	}
	if a.why == "" {
		a.why = lx.err
	}
	return a
}
