package sqlinspect

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// PsqlStatement is one statement of a text psql reads, as psql sends it to
// the server.
type PsqlStatement struct {
	// Text is the statement's source: from the end of the previous
	// statement (so with the comments before it) through its ';', which
	// the last statement of a text may lack.
	Text string
	// Terminated: Text ends with the ';' that ends the statement (not
	// with one in a trailing comment).
	Terminated bool
	// Words are its unquoted words, lowercase, with how deep in
	// parentheses each one is.
	Words []Word
}

// Word is an unquoted word of a statement (a keyword or a name).
type Word struct {
	Text  string // lowercase
	Depth int    // parentheses around it; 0 at the statement's top level
}

// Head is the statement's first word ("" when it starts otherwise).
func (s PsqlStatement) Head() string {
	if len(s.Words) == 0 {
		return ""
	}
	return s.Words[0].Text
}

// SplitPsql splits SQL text into the statements psql sends to the server
// one by one, for pkg/pgguard, which runs each inside its own transaction
// and must know exactly where psql ends each one. It fails, rather than
// guess, when psql itself would act on the text (a backslash meta-command,
// :name variable interpolation), when the text does not lex (an unterminated
// string or comment, a control character, more than 1 MiB), and when psql
// might end a statement elsewhere than at the ';' seen here: psql does not
// end a statement inside parentheses or a BEGIN ATOMIC body, and it reads
// backslashes in strings as the server's standard_conforming_strings says,
// so the text must split the same way under both settings.
func SplitPsql(sql string) ([]PsqlStatement, error) {
	if len(sql) > maxSQL {
		return nil, errors.New("sql text too large")
	}
	vs := variants[Postgres]
	lx := lexSpans(vs[0], sql)
	if lx.err != "" {
		return nil, errors.New(lx.err)
	}
	if lx.psqlVar {
		return nil, errors.New("psql variable interpolation (:name) outside quotes")
	}
	if !strings.Contains(sql, `\`) {
		vs = vs[:1] // the readings differ only in how they treat backslashes
	}
	for _, v := range vs[1:] {
		other := lexSpans(v, sql)
		if other.err != "" {
			return nil, fmt.Errorf("%s (%s)", other.err, v.note)
		}
		if !slices.Equal(other.spans, lx.spans) {
			return nil, fmt.Errorf("statements split differently %s", v.note)
		}
	}
	out := make([]PsqlStatement, 0, len(lx.stmts))
	for i, toks := range lx.stmts {
		sp := lx.spans[i]
		st := PsqlStatement{Text: sql[sp.start:sp.end], Terminated: sp.semi}
		depth := 0
		for _, t := range toks {
			switch {
			case t.kind == tMeta:
				return nil, fmt.Errorf("statement %d has backslash meta-command %s%s", i+1, t.text, suffix(psqlMeta[t.text]))
			case t.is(tPunct, "("), t.is(tPunct, "["):
				depth++
			case t.is(tPunct, ")"), t.is(tPunct, "]"):
				depth--
				if depth < 0 {
					return nil, fmt.Errorf("statement %d closes a parenthesis it did not open", i+1)
				}
			case t.kind == tWord:
				if t.text == "begin" && len(st.Words) > 0 {
					// CREATE FUNCTION … BEGIN ATOMIC …; …; END: psql does
					// not end the statement at those ';'.
					return nil, fmt.Errorf("statement %d has BEGIN inside it (a BEGIN ATOMIC body)", i+1)
				}
				st.Words = append(st.Words, Word{Text: t.text, Depth: depth})
			}
		}
		if depth != 0 {
			// psql does not end a statement at a ';' inside parentheses.
			return nil, fmt.Errorf("statement %d leaves a parenthesis open", i+1)
		}
		out = append(out, st)
	}
	return out, nil
}

// lexSpans lexes Postgres text recording where each statement's text lies.
func lexSpans(v variant, s string) lexed {
	l := &lexer{d: Postgres, v: v, s: s, lineStart: true, toks: make([]token, 0, 16), spans: true}
	l.run()
	return l.out
}
