// Package pgguard runs a psql command's SQL inside a transaction that commits only when the rows it changed are within a limit.
//
// Seed 003's blast-radius check reads the rows affected from the output,
// after execution: too late once a DELETE has removed the rows (its
// "rollback problem"). For psql under a policy rule with max_rows_affected
// (DESIGN §5, §12), gate runs the command through a Guard instead: the same
// psql, with the same connection and output options, reading a script on
// its standard input that opens a transaction, runs the user's statements
// one by one so that psql prints its usual output, counts the rows they
// changed, and ends with COMMIT only when the count is within the limit,
// ROLLBACK otherwise. The count is the larger of two: the statements' own
// counts (psql's ROW_COUNT after each INSERT, UPDATE, DELETE, MERGE and
// COPY FROM, what their command tags say) and the server's per-table
// counters for the transaction (pg_stat_xact_user_tables: rows inserted,
// updated and deleted, which also sees what functions, triggers, cascades
// and data-modifying CTEs changed).
//
// Plan fails closed, with the reason, on SQL it cannot guard: transaction
// control (which would end the guard's transaction), statements that cannot
// run in a transaction or remove rows without counting them (TRUNCATE,
// DROP TABLE), psql meta-commands and variables, SQL it cannot split exactly
// as psql does, COPY FROM STDIN, and psql options that change how the
// script is read.
//
// The guard bounds what the transaction changes. Work done outside it
// (dblink, or anything a superuser arranges to escape it) is beyond any
// transaction's reach.
package pgguard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/govkit/govkit/pkg/sqlinspect"
)

// Guard is a psql invocation that runs the user's SQL under a row limit.
type Guard struct {
	// Argv runs psql with the user's connection and output options,
	// without a psqlrc (-X), reading the script from standard input.
	Argv []string
	// Stdin is the script to give psql on its standard input.
	Stdin []byte
	// Limit is the most rows the transaction may change and commit.
	Limit int
	// Statements is how many user statements the script runs.
	Statements int
	// Nonce marks the guard's own lines on psql's standard error, so that
	// a server notice cannot forge an outcome (Outcome).
	Nonce string
}

// maxSQL bounds the SQL a Guard reads from files and standard input, as
// sqlinspect bounds what it inspects.
const maxSQL = 1 << 20

// Plan builds the Guard for argv, a psql command line (argv[0] is psql,
// by name or path), whose standard input holds stdin (read only when argv
// has no -c or -f; see ReadsStdin), under a limit of rows. It reads the
// files given with -f: the script embeds what was read, so psql runs
// exactly the SQL that was checked. An error says why the command cannot
// be guarded; the caller must then refuse to run it (DESIGN §12).
func Plan(argv []string, stdin []byte, limit int) (Guard, error) {
	if limit < 0 {
		return Guard{}, fmt.Errorf("row limit %d is negative", limit)
	}
	if len(argv) == 0 || progName(argv[0]) != "psql" {
		return Guard{}, errors.New("not a psql command")
	}
	inv, err := parseArgs(argv[1:])
	if err != nil {
		return Guard{}, err
	}
	if len(inv.sources) == 0 {
		if len(stdin) == 0 {
			return Guard{}, errors.New("psql has no sql to run (no -c, -f or standard input): an interactive psql cannot be guarded")
		}
		inv.sources = append(inv.sources, source{name: "standard input", sql: string(stdin)})
	}
	total := 0
	var stmts []statement
	for _, src := range inv.sources {
		if src.file != "" {
			b, err := readSQL(src.file, stdin)
			if err != nil {
				return Guard{}, err
			}
			src.sql = string(b)
		}
		if total += len(src.sql); total > maxSQL {
			return Guard{}, errors.New("sql text larger than 1 MiB")
		}
		split, err := sqlinspect.SplitPsql(src.sql)
		if err != nil {
			return Guard{}, fmt.Errorf("%s: %v", src.name, err)
		}
		for i, st := range split {
			counted, why := check(st)
			if why != "" {
				return Guard{}, fmt.Errorf("%s: statement %d %s", src.name, i+1, why)
			}
			stmts = append(stmts, statement{text: st.Text, terminated: st.Terminated, counted: counted})
		}
	}
	if len(stmts) == 0 {
		return Guard{}, errors.New("psql has no sql statement to run")
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return Guard{}, err
	}
	g := Guard{Limit: limit, Statements: len(stmts), Nonce: hex.EncodeToString(nonce[:])}
	g.Argv = append([]string{argv[0], "-X", "-v", "ON_ERROR_STOP=1", "-f", "-"}, inv.keep...)
	if len(inv.operands) > 0 {
		g.Argv = append(g.Argv, "--")
		g.Argv = append(g.Argv, inv.operands...)
	}
	g.Stdin = script(g, stmts, inv.echo, inv.quiet)
	return g, nil
}

// ReadsStdin reports whether psql would read its SQL from standard input
// (no -c and no -f, or -f -): the caller must then read it and pass it to
// Plan, and refuse when it is a terminal (interactive psql).
func ReadsStdin(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	inv, err := parseArgs(argv[1:])
	if err != nil {
		return false
	}
	if len(inv.sources) == 0 {
		return true
	}
	for _, s := range inv.sources {
		if s.file == "-" {
			return true
		}
	}
	return false
}

func progName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// readSQL reads the SQL of psql -f name: a regular file (a FIFO or device
// could block or change between reading and running), or "-" for stdin.
func readSQL(name string, stdin []byte) ([]byte, error) {
	if name == "-" {
		return stdin, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("cannot read -f %s: %v", name, errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read -f %s: %v", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("cannot read -f %s: not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSQL+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read -f %s: %v", name, err)
	}
	if len(b) > maxSQL {
		return nil, fmt.Errorf("-f %s is larger than 1 MiB", name)
	}
	return b, nil
}

// statement is one user statement of the script.
type statement struct {
	text       string
	terminated bool // text ends with its ';'
	counted    bool // ROW_COUNT after it is rows changed
}

// check decides whether one statement can run under the guard (why is ""
// when it can), and whether psql's ROW_COUNT after it counts rows changed.
func check(st sqlinspect.PsqlStatement) (counted bool, why string) {
	w := st.Words
	head := st.Head()
	second := ""
	if len(w) > 1 {
		second = w[1].Text
	}
	upper := strings.ToUpper(head)
	switch head {
	case "begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release":
		return false, "is " + upper + ": transaction control would end or split the guard's transaction"
	case "prepare":
		if second == "transaction" {
			return false, "is PREPARE TRANSACTION: transaction control would end the guard's transaction"
		}
	case "vacuum":
		return false, "is VACUUM, which cannot run inside a transaction"
	case "create", "drop", "alter":
		switch second {
		case "database", "tablespace", "subscription", "system":
			if head != "alter" || second != "database" {
				return false, "is " + upper + " " + strings.ToUpper(second) + ", which cannot run inside a transaction"
			}
		}
	case "reindex":
		if second == "database" || second == "system" {
			return false, "is REINDEX " + strings.ToUpper(second) + ", which cannot run inside a transaction"
		}
	case "cluster":
		if len(w) == 1 || len(w) == 2 && second == "verbose" {
			return false, "is CLUSTER of every table, which cannot run inside a transaction"
		}
	case "discard":
		if second == "all" {
			return false, "is DISCARD ALL, which cannot run inside a transaction"
		}
	}
	if hasWord(w, "track_counts") {
		// With the server's counters off, rows changed by functions and
		// triggers go uncounted (the guard checks the setting only at
		// the end, so turning it off and on again would hide them).
		return false, "changes track_counts, which the guard counts rows with"
	}
	if head != "refresh" && hasWord(w, "concurrently") {
		return false, "is " + upper + " … CONCURRENTLY, which cannot run inside a transaction"
	}
	// Rows removed without a count: a row limit cannot see them.
	const uncounted = ": it removes rows without counting them, so a row limit cannot guard it"
	switch head {
	case "truncate":
		return false, "is TRUNCATE" + uncounted
	case "drop":
		switch second {
		case "table", "schema", "owned", "extension", "materialized", "foreign", "database":
			return false, "is DROP " + strings.ToUpper(second) + uncounted
		}
		if hasWord(w, "cascade") {
			return false, "is DROP … CASCADE" + uncounted
		}
	case "alter":
		for i, x := range w {
			if x.Depth != 0 || x.Text != "drop" {
				continue
			}
			next := ""
			if i+1 < len(w) {
				next = w[i+1].Text
			}
			switch next {
			case "constraint", "default", "not", "identity", "expression":
			default:
				return false, "is ALTER … DROP " + strings.ToUpper(next) + uncounted
			}
		}
		if hasWord(w, "cascade") {
			return false, "is ALTER … CASCADE" + uncounted
		}
	case "copy":
		from := topFollowed(w, "from")
		if from == "stdin" {
			return false, "is COPY FROM STDIN: the guard gives psql its script on standard input"
		}
		return from != "", ""
	case "insert", "update", "delete", "merge":
		return true, ""
	case "with":
		// The main statement is at the top level; the CTEs' bodies are
		// in parentheses (and counted by the tables' counters).
		for i, x := range w {
			if x.Depth != 0 {
				continue
			}
			switch x.Text {
			case "insert", "delete", "merge":
				return true, ""
			case "update":
				if prev := w[i-1].Text; prev != "for" && prev != "key" && prev != "do" {
					return true, ""
				}
			}
		}
	}
	return false, ""
}

func hasWord(w []sqlinspect.Word, text string) bool {
	for _, x := range w {
		if x.Text == text {
			return true
		}
	}
	return false
}

// topFollowed returns the word after the first top-level word text ("" if
// none, "-" if it ends the statement).
func topFollowed(w []sqlinspect.Word, text string) string {
	for i, x := range w {
		if x.Depth == 0 && x.Text == text {
			if i+1 < len(w) {
				return w[i+1].Text
			}
			return "-"
		}
	}
	return ""
}
