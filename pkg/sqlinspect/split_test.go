package sqlinspect

import (
	"strings"
	"testing"
)

func TestSplitPsql(t *testing.T) {
	tests := []struct {
		sql   string
		texts []string // each statement's Text
		heads string   // their heads, space-separated
		err   string   // substring of the error
	}{
		{sql: "DELETE FROM t", texts: []string{"DELETE FROM t"}, heads: "delete"},
		{sql: "UPDATE t SET a = 1; DELETE FROM t WHERE id = 2;", texts: []string{"UPDATE t SET a = 1;", " DELETE FROM t WHERE id = 2;"}, heads: "update delete"},
		{sql: ";; -- only comments\n/* and ; */", texts: nil},
		{sql: "-- lead\nSELECT ';' FROM t; SELECT $x$;$x$", texts: []string{"-- lead\nSELECT ';' FROM t;", " SELECT $x$;$x$"}, heads: "select select"},
		{sql: "INSERT INTO t VALUES (1, 'a;b'), (2, E'c\\'d;');", texts: []string{"INSERT INTO t VALUES (1, 'a;b'), (2, E'c\\'d;');"}, heads: "insert"},
		{sql: `SELECT "a;b" FROM t /* x; /* nested; */ y; */`, texts: []string{`SELECT "a;b" FROM t /* x; /* nested; */ y; */`}, heads: "select"},

		{sql: "SELECT 1; \\gexec", err: `statement 2 has backslash meta-command \gexec`},
		{sql: "DELETE FROM t WHERE id = :id", err: "psql variable interpolation"},
		{sql: "DELETE FROM t WHERE name = :'name'", err: "psql variable interpolation"},
		{sql: "SELECT 'abc", err: "unterminated string"},
		{sql: "SELECT 1 /* open", err: "unterminated comment"},
		{sql: "SELECT (1; DELETE FROM t)", err: "statement 1 leaves a parenthesis open"},
		{sql: "SELECT 1); DELETE FROM t", err: "statement 1 closes a parenthesis"},
		{sql: "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END", err: "BEGIN ATOMIC"},
		// One string under standard_conforming_strings on, an
		// unterminated one when it is off.
		{sql: `SELECT 'a\'; DELETE FROM t; --'`, err: "standard_conforming_strings off"},
		{sql: "SELECT 1\x00", err: "control character"},
	}
	for _, tt := range tests {
		got, err := SplitPsql(tt.sql)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("SplitPsql(%q) error = %v, want %q", tt.sql, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("SplitPsql(%q): %v", tt.sql, err)
			continue
		}
		var texts, heads []string
		for _, s := range got {
			texts = append(texts, s.Text)
			heads = append(heads, s.Head())
		}
		if strings.Join(texts, "|") != strings.Join(tt.texts, "|") || strings.Join(heads, " ") != tt.heads {
			t.Errorf("SplitPsql(%q) = %q heads %q, want %q heads %q", tt.sql, texts, heads, tt.texts, tt.heads)
		}
	}
}

// Terminated: the statement's text ends with its own ';', not with one in
// a trailing comment.
func TestSplitPsqlTerminated(t *testing.T) {
	for sql, want := range map[string]string{
		"SELECT 1; SELECT 2;":    "true true",
		"SELECT 1; SELECT 2":     "true false",
		"SELECT 1 -- comment;":   "false",
		"SELECT 1; -- trailing;": "true",
	} {
		got, err := SplitPsql(sql)
		if err != nil {
			t.Fatal(err)
		}
		var b []string
		for _, s := range got {
			b = append(b, map[bool]string{true: "true", false: "false"}[s.Terminated])
		}
		if strings.Join(b, " ") != want {
			t.Errorf("SplitPsql(%q) terminated %v, want %s", sql, b, want)
		}
	}
}

// Words carry their depth: the CTE's DELETE is inside, the main one is not.
func TestSplitPsqlDepth(t *testing.T) {
	got, err := SplitPsql("WITH d AS (DELETE FROM t RETURNING id) DELETE FROM u")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, w := range got[0].Words {
		b.WriteString(w.Text + "/" + string(rune('0'+w.Depth)) + " ")
	}
	if want := "with/0 d/0 as/0 delete/1 from/1 t/1 returning/1 id/1 delete/0 from/0 u/0 "; b.String() != want {
		t.Errorf("words = %q, want %q", b.String(), want)
	}
}
