package gate

import (
	"fmt"
	"io"
	"regexp"

	"github.com/govkit/govkit/pkg/pgguard"
)

// maxGuardStdin bounds the SQL gate reads from standard input for the
// transaction guard (pgguard reads at most this much itself).
const maxGuardStdin = 1 << 20

// psqlWord finds psql in a shell command line, for -c commands that the
// guard cannot see into.
var psqlWord = regexp.MustCompile(`(^|[\s;&|(/])psql(\s|$)`)

// transactionGuard plans seed 003's answer to the rollback problem for a
// psql command under max_rows_affected: the SQL runs inside a transaction
// that commits only within the limit (pkg/pgguard). It returns nil for a
// command that needs no guard, and false after refusing one that cannot be
// guarded: when the rows would be gone before they are counted, gate does
// not run it (fail closed).
func (r *run) transactionGuard() (*pgguard.Guard, bool) {
	if r.limits.rows == 0 {
		return nil, true
	}
	refuse := func(why string) (*pgguard.Guard, bool) {
		r.res.refuse(ExitRefused, CodeTransactionGuard,
			fmt.Sprintf("cannot guard this psql command under max_rows_affected %d: %s", r.limits.rows, why),
			"give psql its SQL with -c or -f, one plain statement after another, without transaction control")
		return nil, false
	}
	if r.req.Shell != "" || r.res.Rewrite != nil {
		if psqlWord.MatchString(r.command) {
			return refuse("the command is a shell command line; pass psql's arguments after -- so that gate can guard them")
		}
		return nil, true
	}
	if toolName(r.argv[0]) != "psql" {
		return nil, true
	}
	var stdin []byte
	if pgguard.ReadsStdin(r.argv) {
		if r.req.StdinIsTerminal {
			return refuse("psql would read its SQL from the terminal: an interactive psql cannot be guarded")
		}
		if r.req.Stdin != nil {
			b, err := io.ReadAll(io.LimitReader(r.req.Stdin, maxGuardStdin+1))
			if err != nil {
				return refuse("reading the SQL from standard input: " + err.Error())
			}
			if len(b) > maxGuardStdin {
				return refuse(fmt.Sprintf("more than %d bytes of SQL on standard input", maxGuardStdin))
			}
			stdin = b
		}
	}
	g, err := pgguard.Plan(r.argv, stdin, r.limits.rows)
	if err != nil {
		return refuse(err.Error())
	}
	r.argv = g.Argv
	return &g, true
}

// guardOutcome reads the guard's markers from psql's held stderr, removes
// them from what the caller will see, and fills in the blast radius.
func (r *run) guardOutcome(g *pgguard.Guard, stderr *stream, br *BlastRadius) {
	text, _ := stderr.heldText()
	res, rest, err := g.Outcome([]byte(text))
	stderr.replaceHeld(rest)
	br.Transaction = res.State.String()
	if res.Counted {
		n := res.Rows
		br.Rows = &n
	}
	br.Note = res.String()
	if err != nil {
		br.Note += " (" + err.Error() + ")"
	}
	if !res.Committed {
		r.notef("transaction guard: %s", res)
	}
}
