package pgguard

import (
	"strconv"
	"strings"
)

// The script psql reads (DESIGN §12, the rollback problem):
//
//	\set ON_ERROR_STOP on            stop at the first error: the transaction
//	\warn pgguard-NONCE start        is then never committed (needs psql ≥ 13)
//	…psql settings the guard needs…
//	BEGIN;
//	<statement 1>;                   the user's statements, psql's own output
//	\set pgguard_r1 :ROW_COUNT       after each INSERT/UPDATE/DELETE/MERGE/COPY FROM
//	…
//	SET LOCAL search_path = pg_catalog, pg_temp;
//	…count: the statements' ROW_COUNTs and pg_stat_xact_user_tables…
//	\if :pgguard_ok  COMMIT;  \else  ROLLBACK;  \endif   with markers on stderr
//
// Everything after the user's statements is written so that it cannot
// commit if psql were to read those statements differently than
// sqlinspect.SplitPsql (a client encoding whose multibyte characters hide
// a backslash, say): it has no quotes, comments or dollar signs (inside an
// unfinished string or comment all of it is inert text, and the leftover
// query fails at the end of input), and its first SQL ends with ';' (a
// statement left open in parentheses fails on it). Its SQL names only
// pg_catalog objects, after setting search_path, so that objects the user's
// statements create cannot stand in for them.

// script builds the text Plan gives psql on standard input.
func script(g Guard, stmts []statement, echo string, quiet bool) []byte {
	var b strings.Builder
	m := marker(g.Nonce)
	b.WriteString("\\set ON_ERROR_STOP on\n")
	b.WriteString("\\warn " + m + " start\n")
	b.WriteString(prelude)
	b.WriteString("\\set ECHO " + echo + "\n")
	b.WriteString("\\set QUIET " + onOff(quiet) + "\n")
	sum := "CAST(0 AS pg_catalog.numeric)"
	for i, st := range stmts {
		b.WriteString(st.text)
		if !st.terminated {
			// On its own line: the text may end in a -- comment.
			b.WriteString("\n;")
		}
		b.WriteString("\n")
		if st.counted {
			// Right after the statement: psql sets ROW_COUNT after every
			// query, even an empty one.
			v := "pgguard_r" + strconv.Itoa(i+1)
			b.WriteString("\\set " + v + " :ROW_COUNT\n")
			sum += " OPERATOR(pg_catalog.+) :" + v
		}
	}
	b.WriteString("\\set ECHO none\n\\set QUIET on\n")
	b.WriteString(strings.NewReplacer("MARKER", m, "SUM", sum, "LIMIT", strconv.Itoa(g.Limit)).Replace(epilogue))
	return []byte(b.String())
}

// prelude settles the psql variables that change how the script runs,
// whatever the user's -v said, and opens the transaction.
const prelude = `\set ON_ERROR_ROLLBACK off
\set AUTOCOMMIT on
\set SINGLESTEP off
\set SINGLELINE off
\set ECHO none
\set QUIET on
BEGIN;
`

// epilogue counts and decides. pgguard_tables is the rows the transaction
// inserted, updated and deleted by the server's counters, which count
// nothing with track_counts off: then the guard cannot count and stops
// (\q ends psql, and its connection's transaction rolls back).
const epilogue = `SET LOCAL search_path = pg_catalog, pg_temp;
SHOW track_counts \gset pgguard_
\if :pgguard_track_counts
\else
\warn MARKER error track_counts
\q
\endif
SELECT COALESCE(pg_catalog.sum(n_tup_ins OPERATOR(pg_catalog.+) n_tup_upd OPERATOR(pg_catalog.+) n_tup_del), 0) AS pgguard_tables FROM pg_catalog.pg_stat_xact_user_tables \gset
SELECT SUM AS pgguard_statements \gset
SELECT GREATEST(:pgguard_tables, :pgguard_statements) AS pgguard_rows \gset
SELECT :pgguard_rows OPERATOR(pg_catalog.<=) LIMIT AS pgguard_ok \gset
\if :pgguard_ok
\warn MARKER decided commit rows=:pgguard_rows statements=:pgguard_statements tables=:pgguard_tables
COMMIT;
\warn MARKER committed
\else
\warn MARKER decided rollback rows=:pgguard_rows statements=:pgguard_statements tables=:pgguard_tables
ROLLBACK;
\warn MARKER rolled-back
\endif
`

// marker starts the guard's lines on psql's standard error. A dash, not
// a colon: psql would read ":NONCE" in \warn as a variable.
func marker(nonce string) string { return "pgguard-" + nonce }

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
