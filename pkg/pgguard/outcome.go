package pgguard

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// State is how a guarded psql run ended, as its markers on standard error
// tell.
type State int

const (
	// NotStarted: psql never reached the guard's script (it could not
	// connect, or it is older than 13 and has no \warn): nothing ran.
	NotStarted State = iota
	// Stopped: a statement failed, or psql stopped, before the rows were
	// counted: the transaction was never committed. psql's own error is
	// on its standard error and in its exit status.
	Stopped
	// Uncountable: the server's track_counts is off, so the guard could
	// not count the rows; psql quit without committing.
	Uncountable
	// RolledBack: the rows changed exceeded the limit; rolled back.
	RolledBack
	// Committed: the rows were within the limit and COMMIT succeeded.
	Committed
	// CommitUnconfirmed: the rows were within the limit and COMMIT was
	// sent, but its success was not reported. If psql exited with an
	// error, COMMIT failed (a deferred constraint, a serialization
	// failure) and the server rolled back; if psql was killed, the
	// outcome is unknown.
	CommitUnconfirmed
)

var stateNames = [...]string{"not_started", "stopped", "uncountable", "rolled_back", "committed", "commit_unconfirmed"}

// String is the state's name for reports: "rolled_back", "committed", …
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "State(" + strconv.Itoa(int(s)) + ")"
	}
	return stateNames[s]
}

// Result is the outcome of a guarded run.
type Result struct {
	State State
	// Committed is State == Committed: the only state in which the
	// statements' changes are known to be in the database.
	Committed bool
	// Rows is the rows the transaction changed, known once the guard
	// counted (RolledBack, Committed, CommitUnconfirmed): the larger of
	// StatementRows, what the statements' command tags say (psql's
	// ROW_COUNT after each INSERT, UPDATE, DELETE, MERGE and COPY FROM),
	// and TableRows, what the server's per-table counters say
	// (pg_stat_xact_user_tables: also rows changed by functions,
	// triggers, cascades and data-modifying CTEs).
	Rows, StatementRows, TableRows int
	// Counted says Rows is known.
	Counted bool
	// Limit is the Guard's.
	Limit int
}

// String says what happened, for the caller's message on standard error.
func (r Result) String() string {
	switch r.State {
	case NotStarted:
		return "psql did not start the guarded transaction (it could not connect, or it is older than 13): nothing ran"
	case Stopped:
		return "psql stopped before the rows were counted (a statement failed): nothing was committed"
	case Uncountable:
		return "the server's track_counts is off, so the rows changed cannot be counted: nothing was committed"
	case RolledBack:
		return fmt.Sprintf("rolled back: the statements changed %s, over the limit of %d: nothing was committed", rows(r.Rows), r.Limit)
	case Committed:
		return fmt.Sprintf("committed: the statements changed %s, within the limit of %d", rows(r.Rows), r.Limit)
	case CommitUnconfirmed:
		return fmt.Sprintf("COMMIT of %s (within the limit of %d) was not confirmed: if psql reported an error, nothing was committed", rows(r.Rows), r.Limit)
	}
	return r.State.String()
}

func rows(n int) string {
	if n == 1 {
		return "1 row"
	}
	return strconv.Itoa(n) + " rows"
}

// Outcome reads what the guarded psql wrote on its standard error: the
// Result, and stderr without the guard's marker lines, which is what to
// show the user. Only lines starting with this Guard's nonce count, so a
// server notice cannot forge an outcome. An error means a marker line was
// malformed; the Result then says nothing was committed for certain only
// if its State says so.
func (g Guard) Outcome(stderr []byte) (Result, []byte, error) {
	r := Result{Limit: g.Limit}
	prefix := []byte(marker(g.Nonce) + " ")
	var rest bytes.Buffer
	var bad error
	started := false
	for line := range bytes.Lines(stderr) {
		text, ok := bytes.CutPrefix(line, prefix)
		if !ok || len(g.Nonce) == 0 {
			rest.Write(line)
			continue
		}
		fields := strings.Fields(string(text))
		if len(fields) == 0 {
			bad = fmt.Errorf("empty guard marker")
			continue
		}
		switch fields[0] {
		case "start":
			started = true
			r.State = Stopped
		case "error":
			r.State = Uncountable
		case "decided":
			if err := r.decided(fields[1:]); err != nil {
				bad = err
			}
		case "committed":
			if r.State == CommitUnconfirmed {
				r.State = Committed
			} else {
				bad = fmt.Errorf("guard marker committed without a decision to commit")
			}
		case "rolled-back":
		default:
			bad = fmt.Errorf("unknown guard marker %q", clip(fields[0]))
		}
	}
	if !started && r.State != NotStarted {
		bad = fmt.Errorf("guard markers without a start")
	}
	if bad != nil && r.State == Committed {
		r.State = CommitUnconfirmed
	}
	r.Committed = r.State == Committed
	return r, rest.Bytes(), bad
}

// decided reads "commit|rollback rows=N statements=N tables=N".
func (r *Result) decided(f []string) error {
	if len(f) != 4 {
		return fmt.Errorf("malformed guard decision %q", clip(strings.Join(f, " ")))
	}
	var n [3]int
	for i, key := range [...]string{"rows", "statements", "tables"} {
		v, ok := strings.CutPrefix(f[i+1], key+"=")
		c, err := count(v)
		if !ok || err != nil {
			return fmt.Errorf("malformed guard decision %q", clip(f[i+1]))
		}
		n[i] = c
	}
	if f[0] != "commit" && f[0] != "rollback" {
		return fmt.Errorf("malformed guard decision %q", clip(f[0]))
	}
	r.Rows, r.StatementRows, r.TableRows = n[0], n[1], n[2]
	r.Counted = true
	r.State = RolledBack
	if f[0] == "commit" {
		r.State = CommitUnconfirmed // until "committed"
	}
	// The script commits only within the limit; should a marker say
	// otherwise, the commit is not trusted (Outcome: CommitUnconfirmed).
	if r.Rows > r.Limit && f[0] == "commit" {
		return fmt.Errorf("guard decided commit with %d rows over the limit of %d", r.Rows, r.Limit)
	}
	return nil
}

// count reads a non-negative count the server printed (numeric, so
// possibly beyond int64: saturate, more rows can only deny).
func count(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a count: %q", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return int(^uint(0) >> 1), nil
	}
	return n, nil
}
