package pgguard

import (
	"regexp"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/sqlinspect"
)

// FuzzPlan: Plan never panics, and a plan never runs a user statement
// outside the guard's transaction. The script must be the fixed prelude
// (ending with BEGIN), a body and the fixed epilogue (the only COMMIT);
// and the body, without the guard's own ROW_COUNT lines, must split, as
// psql reads it, into exactly the statements Plan counted, none of them
// transaction control or a meta-command.
func FuzzPlan(f *testing.F) {
	for _, s := range []string{
		"DELETE FROM t",
		"UPDATE t SET v = 1; DELETE FROM t WHERE id = 2;",
		"DELETE FROM t -- trailing;",
		"SELECT ';'; SELECT $a$;COMMIT;$a$; SELECT E'\\';'",
		"INSERT INTO t VALUES (1); COMMIT; DELETE FROM t",
		"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
		"SELECT (1; ROLLBACK; SELECT 2)",
		"SELECT '\\'; COMMIT; --'",
		"/* a /* nested */ ; */ DELETE FROM t",
		"COPY t FROM STDIN",
		"SELECT 1 \\g",
		"CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END",
		"SELECT :'x'",
	} {
		f.Add(s, "-q", uint8(0))
	}
	f.Add("DELETE FROM t", "-1", uint8(1))
	f.Add("SELECT 1", "--set=ECHO=all", uint8(2))
	f.Fuzz(func(t *testing.T, sql, opt string, form uint8) {
		var argv []string
		var stdin []byte
		switch form % 3 {
		case 0:
			argv = []string{"psql", opt, "-c", sql}
		case 1:
			argv = []string{"psql", "-c", sql, opt, "-c", sql}
		default:
			argv, stdin = []string{"psql", opt}, []byte(sql)
		}
		g, err := Plan(argv, stdin, 3)
		if err != nil {
			return
		}
		body := scriptBody(t, g) // the prelude and epilogue are fixed
		body = rowCountLine.ReplaceAllString(body, "")
		_, body, ok := strings.Cut(body, "\n\\set QUIET ")
		if !ok {
			t.Fatalf("body without ECHO and QUIET:\n%s", g.Stdin)
		}
		_, body, _ = strings.Cut(body, "\n")
		stmts, err := sqlinspect.SplitPsql(body)
		if err != nil {
			t.Fatalf("the script's body does not split as psql reads it: %v\n%s", err, body)
		}
		if len(stmts) != g.Statements {
			t.Fatalf("body splits into %d statements, Plan counted %d:\n%s", len(stmts), g.Statements, body)
		}
		for i, st := range stmts {
			switch st.Head() {
			case "begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release":
				t.Fatalf("statement %d is transaction control: %q", i+1, st.Text)
			}
			if !st.Terminated {
				t.Fatalf("statement %d is not terminated: %q", i+1, st.Text)
			}
		}
	})
}

var rowCountLine = regexp.MustCompile(`(?m)^\\set pgguard_r[0-9]+ :ROW_COUNT\n`)
