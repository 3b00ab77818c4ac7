package pgguard

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// What Plan guards: the psql it builds and the statements the script runs.
func TestPlanGuards(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fix.sql")
	if err := os.WriteFile(file, []byte("-- fix the typo\nUPDATE t SET v = 2 WHERE id = 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		argv    []string
		stdin   string
		argvOut []string // after psql -X -v ON_ERROR_STOP=1 -f -
		stmts   []string // user statements in the script, in order
		counted []int    // statements (from 1) whose ROW_COUNT counts
		echo    string   // ECHO around the user's statements
		quiet   bool
	}{
		{
			name:  "one delete",
			argv:  []string{"psql", "-c", "DELETE FROM t"},
			stmts: []string{"DELETE FROM t\n;"}, counted: []int{1}, echo: "none",
		},
		{
			name:    "connection options kept, -1 absorbed, quiet",
			argv:    []string{"/usr/bin/psql", "-h", "db", "-Uapp", "--dbname=prod", "-1", "-q", "-c", "UPDATE t SET v = 1; DELETE FROM t WHERE id = 2;"},
			argvOut: []string{"-h", "db", "-U", "app", "-d", "prod"},
			stmts:   []string{"UPDATE t SET v = 1;", " DELETE FROM t WHERE id = 2;"}, counted: []int{1, 2}, echo: "none", quiet: true,
		},
		{
			name:    "database and user operands",
			argv:    []string{"psql", "--host=db", "--command=DELETE FROM t WHERE id = 1", "mydb", "alice"},
			argvOut: []string{"-h", "db", "--", "mydb", "alice"},
			stmts:   []string{"DELETE FROM t WHERE id = 1\n;"}, counted: []int{1}, echo: "none",
		},
		{
			name:  "sql on standard input",
			argv:  []string{"psql"},
			stdin: "SELECT 1;\nINSERT INTO t VALUES (9, 9);\n",
			stmts: []string{"SELECT 1;", "\nINSERT INTO t VALUES (9, 9);"}, counted: []int{2}, echo: "none",
		},
		{
			name:  "-c and -f in the order given",
			argv:  []string{"psql", "-f", file, "-c", "SELECT count(*) FROM t"},
			stmts: []string{"-- fix the typo\nUPDATE t SET v = 2 WHERE id = 1;", "SELECT count(*) FROM t\n;"}, counted: []int{1}, echo: "none",
		},
		{
			name:  "-f - reads standard input",
			argv:  []string{"psql", "-f", "-"},
			stdin: "DELETE FROM t WHERE id = 3",
			stmts: []string{"DELETE FROM t WHERE id = 3\n;"}, counted: []int{1}, echo: "none",
		},
		{
			name:    "psql variables: the guard's own dropped, others kept, ECHO honoured",
			argv:    []string{"psql", "-v", "ON_ERROR_STOP=0", "-v", "AUTOCOMMIT=off", "-v", "FETCH_COUNT=10", "--set=ECHO=all", "-c", "SELECT 1"},
			argvOut: []string{"-v", "FETCH_COUNT=10"},
			stmts:   []string{"SELECT 1\n;"}, echo: "queries",
		},
		{
			name:    "output options kept, echo options become ECHO",
			argv:    []string{"psql", "-At", "--csv", "-X", "-e", "-o", "out.txt", "-c", "SELECT 1"},
			argvOut: []string{"-A", "-t", "--csv", "-o", "out.txt"},
			stmts:   []string{"SELECT 1\n;"}, echo: "queries",
		},
		{
			name:  "a trailing comment does not swallow the terminator",
			argv:  []string{"psql", "-c", "DELETE FROM t WHERE id = 1 -- one row;"},
			stmts: []string{"DELETE FROM t WHERE id = 1 -- one row;\n;"}, counted: []int{1}, echo: "none",
		},
		{
			name: "what ROW_COUNT counts",
			argv: []string{"psql", "-c", `WITH d AS (DELETE FROM t RETURNING id) SELECT count(*) FROM d;
WITH s AS (SELECT id FROM t) UPDATE u SET x = 1 FROM s WHERE u.id = s.id;
WITH s AS (SELECT 1) SELECT * FROM t FOR UPDATE;
COPY t FROM '/tmp/rows.csv' (FORMAT csv);
COPY t TO STDOUT;
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE;
SELECT purge_old_rows();
ALTER TABLE t DROP CONSTRAINT t_v_check;`},
			stmts:   []string{"WITH", "\nWITH", "\nWITH", "\nCOPY", "\nCOPY", "\nMERGE", "\nSELECT", "\nALTER"},
			counted: []int{2, 4, 6}, echo: "none",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Plan(tt.argv, []byte(tt.stdin), 3)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			want := append([]string{tt.argv[0], "-X", "-v", "ON_ERROR_STOP=1", "-f", "-"}, tt.argvOut...)
			if !slices.Equal(g.Argv, want) {
				t.Errorf("Argv = %q, want %q", g.Argv, want)
			}
			if g.Statements != len(tt.stmts) || g.Limit != 3 || len(g.Nonce) != 32 {
				t.Errorf("Statements, Limit, Nonce = %d, %d, %q", g.Statements, g.Limit, g.Nonce)
			}
			body := scriptBody(t, g)
			if !strings.HasPrefix(body, "\\set ECHO "+tt.echo+"\n\\set QUIET "+onOff(tt.quiet)+"\n") {
				t.Errorf("body does not set ECHO %s, QUIET %v:\n%s", tt.echo, tt.quiet, body)
			}
			rest := body
			for i, s := range tt.stmts {
				j := strings.Index(rest, s)
				if j < 0 {
					t.Fatalf("statement %d %q not in order in:\n%s", i+1, s, body)
				}
				rest = rest[j+len(s):]
			}
			var counted []int
			for i := range len(tt.stmts) {
				if strings.Contains(body, "\\set pgguard_r"+strconv.Itoa(i+1)+" :ROW_COUNT\n") {
					counted = append(counted, i+1)
				}
			}
			if !slices.Equal(counted, tt.counted) {
				t.Errorf("counted statements %v, want %v", counted, tt.counted)
			}
		})
	}
}

// What Plan refuses, and the reason it gives (the gate prints it).
func TestPlanRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		argv  []string
		stdin string
		limit int
		want  string
	}{
		{argv: []string{"psql"}, want: "psql has no sql to run (no -c, -f or standard input): an interactive psql cannot be guarded"},
		{argv: []string{"psql", "-d", "prod"}, want: "interactive psql"},
		{argv: []string{"psql", "-c", "DELETE FROM t; COMMIT; DELETE FROM u"}, want: "-c: statement 2 is COMMIT: transaction control would end or split the guard's transaction"},
		{argv: []string{"psql", "-c", "BEGIN; DELETE FROM t"}, want: "statement 1 is BEGIN: transaction control"},
		{argv: []string{"psql", "-c", "START TRANSACTION"}, want: "is START: transaction control"},
		{argv: []string{"psql", "-c", "SAVEPOINT a; DELETE FROM t; ROLLBACK TO a"}, want: "statement 1 is SAVEPOINT"},
		{argv: []string{"psql", "-c", "delete from t; end"}, want: "statement 2 is END"},
		{argv: []string{"psql", "-c", "ABORT"}, want: "is ABORT"},
		{argv: []string{"psql", "-c", "PREPARE TRANSACTION 'x'"}, want: "is PREPARE TRANSACTION"},
		{argv: []string{"psql", "-c", "VACUUM t"}, want: "is VACUUM, which cannot run inside a transaction"},
		{argv: []string{"psql", "-c", "CREATE DATABASE x"}, want: "is CREATE DATABASE, which cannot run inside a transaction"},
		{argv: []string{"psql", "-c", "ALTER SYSTEM SET work_mem = 1"}, want: "is ALTER SYSTEM"},
		{argv: []string{"psql", "-c", "CREATE INDEX CONCURRENTLY i ON t (v)"}, want: "is CREATE … CONCURRENTLY, which cannot run inside a transaction"},
		{argv: []string{"psql", "-c", "REINDEX DATABASE x"}, want: "is REINDEX DATABASE"},
		{argv: []string{"psql", "-c", "TRUNCATE t"}, want: "is TRUNCATE: it removes rows without counting them, so a row limit cannot guard it"},
		{argv: []string{"psql", "-c", "DROP TABLE t"}, want: "is DROP TABLE: it removes rows without counting them"},
		{argv: []string{"psql", "-c", "DROP TYPE mood CASCADE"}, want: "is DROP … CASCADE"},
		{argv: []string{"psql", "-c", "ALTER TABLE t DROP COLUMN v"}, want: "is ALTER … DROP COLUMN"},
		{argv: []string{"psql", "-c", "ALTER TABLE t DROP v"}, want: "is ALTER … DROP V"},
		{argv: []string{"psql", "-c", "SET track_counts = off; SELECT purge(); RESET track_counts"}, want: "statement 1 changes track_counts"},
		{argv: []string{"psql", "-c", "COPY t FROM STDIN"}, want: "is COPY FROM STDIN: the guard gives psql its script on standard input"},
		{argv: []string{"psql", "-c", "SELECT 1; \\i other.sql"}, want: `-c: statement 2 has backslash meta-command \i`},
		{argv: []string{"psql", "-c", "DELETE FROM t WHERE id = :id"}, want: "-c: psql variable interpolation (:name) outside quotes"},
		{argv: []string{"psql", "-c", "SELECT (1; DELETE FROM t)"}, want: "leaves a parenthesis open"},
		{argv: []string{"psql", "-c", "SELECT 'a", "-c", "b'"}, want: "-c: unterminated string"},
		{argv: []string{"psql", "-c", "SELECT 1", "-c", "VACUUM"}, want: "-c #2: statement 1 is VACUUM"},
		{argv: []string{"psql", "-c", " -- nothing\n;"}, want: "psql has no sql statement to run"},
		{argv: []string{"psql", "-f", filepath.Join(dir, "missing.sql")}, want: "cannot read -f " + filepath.Join(dir, "missing.sql") + ": no such file or directory"},
		{argv: []string{"psql", "-f", dir}, want: "not a regular file"},
		{argv: []string{"psql", "-f", "-", "-f", "-"}, stdin: "SELECT 1", want: "more than once"},
		{argv: []string{"psql", "-s", "-c", "DELETE FROM t"}, want: "psql option -s asks for confirmation before each statement"},
		{argv: []string{"psql", "--single-line", "-c", "DELETE FROM t"}, want: "psql option --single-line ends statements at newlines"},
		{argv: []string{"psql", "-l"}, want: "psql option -l lists databases and runs no sql"},
		{argv: []string{"psql", "--version"}, want: "prints the version"},
		{argv: []string{"psql", "--bogus", "-c", "SELECT 1"}, want: "unknown psql option --bogus"},
		{argv: []string{"psql", "-c"}, want: "psql option -c needs a value"},
		{argv: []string{"psql", "-c", "SELECT 1", "db", "user", "extra"}, want: "not 3 arguments"},
		{argv: []string{"psql", "-v", "pgguard_ok=true", "-c", "SELECT 1"}, want: "psql variable pgguard_ok is reserved for the guard"},
		{argv: []string{"psql", "-v", "ECHO=loud", "-c", "SELECT 1"}, want: "ECHO=loud is not none, errors, queries or all"},
		{argv: []string{"psql", "-c", "SELECT 1"}, limit: -1, want: "row limit -1 is negative"},
		{argv: []string{"mysql", "-e", "SELECT 1"}, want: "not a psql command"},
		{argv: nil, want: "not a psql command"},
	}
	for _, tt := range tests {
		_, err := Plan(tt.argv, []byte(tt.stdin), tt.limit)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Plan(%q) error = %v, want %q", tt.argv, err, tt.want)
		}
	}
}

func TestReadsStdin(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want bool
	}{
		{[]string{"psql"}, true},
		{[]string{"psql", "-d", "x", "-q"}, true},
		{[]string{"psql", "-f", "-"}, true},
		{[]string{"psql", "-c", "SELECT 1"}, false},
		{[]string{"psql", "-f", "x.sql"}, false},
		{[]string{"psql", "--bogus"}, false},
		{nil, false},
	} {
		if got := ReadsStdin(tt.argv); got != tt.want {
			t.Errorf("ReadsStdin(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

// Each Plan has its own nonce: another guard's markers are not its own.
func TestPlanNonce(t *testing.T) {
	a, err := Plan([]string{"psql", "-c", "SELECT 1"}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Plan([]string{"psql", "-c", "SELECT 1"}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a.Nonce == b.Nonce {
		t.Errorf("two plans share nonce %s", a.Nonce)
	}
}

// scriptBody checks that g's script is the fixed prelude, a body, and the
// fixed epilogue, and returns the body: the only part holding user text.
func scriptBody(t testing.TB, g Guard) string {
	t.Helper()
	s := string(g.Stdin)
	head := "\\set ON_ERROR_STOP on\n\\warn " + marker(g.Nonce) + " start\n" + prelude
	body, ok := strings.CutPrefix(s, head)
	if !ok {
		t.Fatalf("script does not start with the prelude:\n%s", s)
	}
	i := strings.LastIndex(body, "\\set ECHO none\n\\set QUIET on\nSET LOCAL search_path")
	if i < 0 {
		t.Fatalf("script has no epilogue:\n%s", s)
	}
	tail := body[i+len("\\set ECHO none\n\\set QUIET on\n"):]
	sum := "CAST(0 AS pg_catalog.numeric)"
	for n := 1; n <= g.Statements; n++ {
		if strings.Contains(body[:i], "\\set pgguard_r"+strconv.Itoa(n)+" :ROW_COUNT\n") {
			sum += " OPERATOR(pg_catalog.+) :pgguard_r" + strconv.Itoa(n)
		}
	}
	want := strings.NewReplacer("MARKER", marker(g.Nonce), "SUM", sum, "LIMIT", strconv.Itoa(g.Limit)).Replace(epilogue)
	if tail != want {
		t.Fatalf("script epilogue = %q, want %q", tail, want)
	}
	return body[:i]
}
