package gate

import "io"

// txGuard runs a psql command's SQL in a transaction that commits only
// within max_rows_affected (seed 003's "rollback problem": after execution
// is too late once the rows are gone).
type txGuard struct{}

func (g *txGuard) argv(args []string) []string             { return args }
func (g *txGuard) stdin() io.Reader                        { return nil }
func (g *txGuard) outcome(stderr *stream, br *BlastRadius) {}

// transactionGuard plans the guard for a psql command under a rows limit;
// false when the command cannot be guarded (refused: fail closed).
func (r *run) transactionGuard() (*txGuard, bool) { return nil, true }
