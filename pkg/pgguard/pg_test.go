package pgguard_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/pgtest"
	"github.com/govkit/govkit/pkg/pgguard"
)

// run plans argv under limit and runs the guarded psql against c, as the
// gate does: psql's stdout, its stderr without the guard's markers, its
// exit code and the Result.
func run(t *testing.T, c *pgtest.Cluster, argv []string, stdin string, limit int, env ...string) (stdout, stderr string, code int, r pgguard.Result) {
	t.Helper()
	g, err := pgguard.Plan(argv, []byte(stdin), limit)
	if err != nil {
		t.Fatalf("Plan(%q): %v", argv, err)
	}
	cmd := exec.Command(g.Argv[0], g.Argv[1:]...)
	cmd.Env = append(append(os.Environ(), c.Env()...), env...)
	cmd.Stdin = bytes.NewReader(g.Stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	r, rest, err := g.Outcome(errOut.Bytes())
	if err != nil {
		t.Fatalf("Outcome: %v\nstderr:\n%s", err, errOut.Bytes())
	}
	if strings.Contains(string(rest), "pgguard-") {
		t.Errorf("markers left in stderr:\n%s", rest)
	}
	return out.String(), string(rest), code, r
}

// fiveRows (re)creates table t with ids 1–5.
func fiveRows(t *testing.T, c *pgtest.Cluster) {
	t.Helper()
	c.Psql(t, "DROP TABLE IF EXISTS t CASCADE; CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t SELECT g, g FROM generate_series(1, 5) g")
}

func count(t *testing.T, c *pgtest.Cluster) string {
	t.Helper()
	return strings.TrimSpace(c.Psql(t, "SELECT count(*) || ' rows, sum ' || sum(v) FROM t"))
}

func TestGuardPostgres(t *testing.T) {
	c := pgtest.Start(t)

	t.Run("delete over the limit is rolled back", func(t *testing.T) {
		fiveRows(t, c)
		stdout, stderr, code, r := run(t, c, []string{"psql", "-c", "DELETE FROM t"}, "", 2)
		if want := (pgguard.Result{State: pgguard.RolledBack, Rows: 5, StatementRows: 5, TableRows: 5, Counted: true, Limit: 2}); r != want {
			t.Errorf("Result = %#v, want %#v", r, want)
		}
		if got := count(t, c); got != "5 rows, sum 15" {
			t.Errorf("table after rollback: %s", got)
		}
		// psql's own output: the tag says what the statement did before
		// the guard rolled it back (the gate withholds it, §12).
		if stdout != "DELETE 5\n" || stderr != "" || code != 0 {
			t.Errorf("stdout %q, stderr %q, exit %d", stdout, stderr, code)
		}
		if got := r.String(); got != "rolled back: the statements changed 5 rows, over the limit of 2: nothing was committed" {
			t.Errorf("String() = %q", got)
		}
	})

	t.Run("delete within the limit is committed", func(t *testing.T) {
		fiveRows(t, c)
		stdout, _, code, r := run(t, c, []string{"psql", "-c", "DELETE FROM t WHERE id = 1"}, "", 2)
		if want := (pgguard.Result{State: pgguard.Committed, Committed: true, Rows: 1, StatementRows: 1, TableRows: 1, Counted: true, Limit: 2}); r != want {
			t.Errorf("Result = %#v, want %#v", r, want)
		}
		if got := count(t, c); got != "4 rows, sum 14" {
			t.Errorf("table after commit: %s", got)
		}
		if stdout != "DELETE 1\n" || code != 0 {
			t.Errorf("stdout %q, exit %d", stdout, code)
		}
	})

	t.Run("statements' rows add up", func(t *testing.T) {
		sql := "UPDATE t SET v = v * 10 WHERE id <= 2; DELETE FROM t WHERE id = 5"
		fiveRows(t, c)
		_, _, _, r := run(t, c, []string{"psql", "-c", sql}, "", 2)
		if r.State != pgguard.RolledBack || r.Rows != 3 || r.StatementRows != 3 {
			t.Errorf("limit 2: Result = %#v, want rolled back with 3 rows", r)
		}
		if got := count(t, c); got != "5 rows, sum 15" {
			t.Errorf("table after rollback: %s", got)
		}
		_, _, _, r = run(t, c, []string{"psql", "-c", sql}, "", 3)
		if !r.Committed || r.Rows != 3 {
			t.Errorf("limit 3: Result = %#v, want committed with 3 rows", r)
		}
		if got := count(t, c); got != "4 rows, sum 37" {
			t.Errorf("table after commit: %s", got)
		}
	})

	t.Run("an error midway commits nothing", func(t *testing.T) {
		fiveRows(t, c)
		stdout, stderr, code, r := run(t, c, []string{"psql", "-c", "DELETE FROM t WHERE id = 1; SELECT 1 / 0; DELETE FROM t WHERE id = 2"}, "", 100)
		if r.State != pgguard.Stopped || r.Committed || r.Counted {
			t.Errorf("Result = %#v, want stopped", r)
		}
		if got := count(t, c); got != "5 rows, sum 15" {
			t.Errorf("table after the error: %s", got)
		}
		if stdout != "DELETE 1\n" || !strings.Contains(stderr, "ERROR:  division by zero") || code != 3 {
			t.Errorf("stdout %q, stderr %q, exit %d", stdout, stderr, code)
		}
	})

	t.Run("psql's output reaches stdout", func(t *testing.T) {
		fiveRows(t, c)
		stdout, stderr, _, r := run(t, c, []string{"psql", "-c", "SELECT id, v FROM t WHERE id <= 2 ORDER BY id", "-c", "UPDATE t SET v = 0 WHERE id = 2 RETURNING id"}, "", 1)
		want := " id | v \n----+---\n  1 | 1\n  2 | 2\n(2 rows)\n\n id \n----\n  2\n(1 row)\n\nUPDATE 1\n"
		if stdout != want || stderr != "" || !r.Committed {
			t.Errorf("stdout %q, want %q; stderr %q; %#v", stdout, want, stderr, r)
		}
	})

	t.Run("output options, -1 and sql on standard input", func(t *testing.T) {
		fiveRows(t, c)
		stdout, _, _, r := run(t, c, []string{"psql", "-1", "-At", "-v", "ON_ERROR_STOP=0"}, "SELECT v FROM t WHERE id = 3;\nDELETE FROM t WHERE id > 3;\n", 1)
		if stdout != "3\nDELETE 2\n" || r.State != pgguard.RolledBack || r.Rows != 2 {
			t.Errorf("stdout %q, %#v", stdout, r)
		}
	})

	// Quotes, dollar quotes, escapes and comments with ';' in them: psql
	// splits the script where Plan did, or a statement would fail.
	t.Run("psql splits where the guard does", func(t *testing.T) {
		sql := "SELECT ';' AS a; SELECT $x$;$x$ AS b; SELECT E'\\';' AS c; /* ; /* ; */ */ SELECT 'd' -- ;"
		stdout, stderr, code, r := run(t, c, []string{"psql", "-At", "-c", sql}, "", 0)
		if stdout != ";\n;\n';\nd\n" || stderr != "" || code != 0 || !r.Committed {
			t.Errorf("stdout %q, stderr %q, exit %d, %#v", stdout, stderr, code, r)
		}
	})

	t.Run("sql in a file", func(t *testing.T) {
		fiveRows(t, c)
		f := filepath.Join(t.TempDir(), "fix.sql")
		if err := os.WriteFile(f, []byte("-- one row\nUPDATE t SET v = 30 WHERE id = 3;\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, _, r := run(t, c, []string{"psql", "-q", "-f", f}, "", 1)
		if !r.Committed || r.Rows != 1 {
			t.Errorf("Result = %#v", r)
		}
		if got := count(t, c); got != "5 rows, sum 42" {
			t.Errorf("table: %s", got)
		}
	})

	// The tables' counters see what command tags do not: rows a function,
	// a trigger's cascade or a data-modifying CTE changed.
	t.Run("rows changed behind a function, a cascade or a CTE", func(t *testing.T) {
		for _, sql := range []string{
			"SELECT purge()",
			"DELETE FROM parent",
			"WITH d AS (DELETE FROM t RETURNING id) SELECT count(*) FROM d",
		} {
			fiveRows(t, c)
			c.Psql(t, `CREATE OR REPLACE FUNCTION purge() RETURNS void LANGUAGE sql AS 'DELETE FROM t';
DROP TABLE IF EXISTS parent; CREATE TABLE parent (id int PRIMARY KEY);
INSERT INTO parent VALUES (1);
ALTER TABLE t ADD COLUMN p int DEFAULT 1 REFERENCES parent ON DELETE CASCADE`)
			_, _, _, r := run(t, c, []string{"psql", "-c", sql}, "", 2)
			if r.State != pgguard.RolledBack || r.TableRows < 5 {
				t.Errorf("%s: Result = %#v, want rolled back with the 5 rows counted", sql, r)
			}
			if got := count(t, c); got != "5 rows, sum 15" {
				t.Errorf("%s: table: %s", sql, got)
			}
		}
	})

	t.Run("a failed COMMIT commits nothing", func(t *testing.T) {
		fiveRows(t, c)
		c.Psql(t, `DROP TABLE IF EXISTS child; CREATE TABLE child (id int REFERENCES t DEFERRABLE INITIALLY DEFERRED);
INSERT INTO child VALUES (1)`)
		_, stderr, code, r := run(t, c, []string{"psql", "-c", "DELETE FROM t WHERE id = 1"}, "", 5)
		if r.State != pgguard.CommitUnconfirmed || r.Committed || code != 3 || !strings.Contains(stderr, "violates foreign key constraint") {
			t.Errorf("Result = %#v, exit %d, stderr %q", r, code, stderr)
		}
		c.Psql(t, "DROP TABLE child")
		if got := count(t, c); got != "5 rows, sum 15" {
			t.Errorf("table: %s", got)
		}
	})

	t.Run("without track_counts nothing is committed", func(t *testing.T) {
		fiveRows(t, c)
		_, _, code, r := run(t, c, []string{"psql", "-c", "DELETE FROM t WHERE id = 1"}, "", 5, "PGOPTIONS=-c track_counts=off")
		if r.State != pgguard.Uncountable || r.Committed || code != 0 {
			t.Errorf("Result = %#v, exit %d", r, code)
		}
		if got := count(t, c); got != "5 rows, sum 15" {
			t.Errorf("table: %s", got)
		}
	})

	// Objects the user's statements create cannot stand in for the
	// catalog ones the guard counts with.
	t.Run("a shadowing view does not hide rows", func(t *testing.T) {
		fiveRows(t, c)
		_, _, _, r := run(t, c, []string{"psql", "-c", `CREATE TEMP VIEW pg_stat_xact_user_tables AS SELECT 0::bigint AS n_tup_ins, 0::bigint AS n_tup_upd, 0::bigint AS n_tup_del;
SET search_path = pg_temp, public; SELECT purge()`}, "", 2)
		if r.State != pgguard.RolledBack || r.TableRows != 5 {
			t.Errorf("Result = %#v", r)
		}
	})

	t.Run("no connection: nothing ran", func(t *testing.T) {
		_, stderr, code, r := run(t, c, []string{"psql", "-d", "nosuchdb", "-c", "DELETE FROM t"}, "", 2)
		if r.State != pgguard.NotStarted || code != 2 || !strings.Contains(stderr, `database "nosuchdb" does not exist`) {
			t.Errorf("Result = %#v, exit %d, stderr %q", r, code, stderr)
		}
	})
}
