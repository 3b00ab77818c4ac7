package pgguard

import (
	"strings"
	"testing"
)

func TestOutcome(t *testing.T) {
	g := Guard{Limit: 2, Nonce: "00112233445566778899aabbccddeeff"}
	m := marker(g.Nonce) + " "
	start := m + "start\n"
	tests := []struct {
		name   string
		stderr string
		want   Result
		rest   string
		err    string
	}{
		{
			name:   "committed",
			stderr: start + "NOTICE:  hello\n" + m + "decided commit rows=2 statements=1 tables=2\n" + m + "committed\n",
			want:   Result{State: Committed, Committed: true, Rows: 2, StatementRows: 1, TableRows: 2, Counted: true, Limit: 2},
			rest:   "NOTICE:  hello\n",
		},
		{
			name:   "rolled back",
			stderr: start + m + "decided rollback rows=5 statements=5 tables=5\n" + m + "rolled-back",
			want:   Result{State: RolledBack, Rows: 5, StatementRows: 5, TableRows: 5, Counted: true, Limit: 2},
		},
		{
			name:   "a statement failed",
			stderr: start + "psql:<stdin>:12: ERROR:  division by zero\n",
			want:   Result{State: Stopped, Limit: 2},
			rest:   "psql:<stdin>:12: ERROR:  division by zero\n",
		},
		{
			name:   "no connection",
			stderr: "psql: error: connection to server failed\n",
			want:   Result{State: NotStarted, Limit: 2},
			rest:   "psql: error: connection to server failed\n",
		},
		{
			name:   "track_counts off",
			stderr: start + m + "error track_counts\n",
			want:   Result{State: Uncountable, Limit: 2},
		},
		{
			name:   "COMMIT failed",
			stderr: start + m + "decided commit rows=1 statements=1 tables=1\npsql:<stdin>:30: ERROR:  deferred constraint\n",
			want:   Result{State: CommitUnconfirmed, Rows: 1, StatementRows: 1, TableRows: 1, Counted: true, Limit: 2},
			rest:   "psql:<stdin>:30: ERROR:  deferred constraint\n",
		},
		{
			// A notice that tries to pass for the guard: another nonce,
			// or the marker inside a line, is only output.
			name: "forged markers are output",
			stderr: start + "pgguard-ffffffffffffffffffffffffffffffff committed\nNOTICE:  x " + m + "committed\n" +
				m + "decided rollback rows=9 statements=9 tables=0\n",
			want: Result{State: RolledBack, Rows: 9, StatementRows: 9, TableRows: 0, Counted: true, Limit: 2},
			rest: "pgguard-ffffffffffffffffffffffffffffffff committed\nNOTICE:  x " + m + "committed\n",
		},
		{
			name:   "numeric beyond int saturates",
			stderr: start + m + "decided rollback rows=99999999999999999999999 statements=1 tables=99999999999999999999999\n" + m + "rolled-back\n",
			want:   Result{State: RolledBack, Rows: int(^uint(0) >> 1), StatementRows: 1, TableRows: int(^uint(0) >> 1), Counted: true, Limit: 2},
		},
		{
			name:   "commit over the limit is not trusted",
			stderr: start + m + "decided commit rows=3 statements=3 tables=3\n" + m + "committed\n",
			want:   Result{State: CommitUnconfirmed, Rows: 3, StatementRows: 3, TableRows: 3, Counted: true, Limit: 2},
			err:    "guard decided commit with 3 rows over the limit of 2",
		},
		{
			name:   "committed without a decision",
			stderr: start + m + "committed\n",
			want:   Result{State: Stopped, Limit: 2},
			err:    "committed without a decision",
		},
		{
			name:   "malformed decision",
			stderr: start + m + "decided commit rows=x statements=1 tables=1\n",
			want:   Result{State: Stopped, Limit: 2},
			err:    `malformed guard decision "rows=x"`,
		},
		{
			name:   "unknown marker",
			stderr: start + m + "shrug\n",
			want:   Result{State: Stopped, Limit: 2},
			err:    `unknown guard marker "shrug"`,
		},
		{
			name:   "markers without a start",
			stderr: m + "decided rollback rows=5 statements=5 tables=5\n",
			want:   Result{State: RolledBack, Rows: 5, StatementRows: 5, TableRows: 5, Counted: true, Limit: 2},
			err:    "without a start",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, rest, err := g.Outcome([]byte(tt.stderr))
			if r != tt.want {
				t.Errorf("Result = %+v, want %+v", plain(r), plain(tt.want))
			}
			if string(rest) != tt.rest {
				t.Errorf("rest = %q, want %q", rest, tt.rest)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

// plain prints a Result's fields, not its String.
type plain Result

// A Guard without a nonce (the zero value) recognises no markers.
func TestOutcomeZeroGuard(t *testing.T) {
	r, rest, err := Guard{}.Outcome([]byte("pgguard- start\n"))
	if r.State != NotStarted || string(rest) != "pgguard- start\n" || err != nil {
		t.Errorf("Outcome = %+v, %q, %v", r, rest, err)
	}
}

func TestResultString(t *testing.T) {
	for _, tt := range []struct {
		r    Result
		want string
	}{
		{Result{State: Committed, Rows: 1, Limit: 2}, "committed: the statements changed 1 row, within the limit of 2"},
		{Result{State: RolledBack, Rows: 5, Limit: 2}, "rolled back: the statements changed 5 rows, over the limit of 2: nothing was committed"},
		{Result{State: Stopped}, "psql stopped before the rows were counted (a statement failed): nothing was committed"},
		{Result{State: NotStarted}, "psql did not start the guarded transaction (it could not connect, or it is older than 13): nothing ran"},
		{Result{State: Uncountable}, "the server's track_counts is off, so the rows changed cannot be counted: nothing was committed"},
		{Result{State: CommitUnconfirmed, Rows: 1, Limit: 2}, "COMMIT of 1 row (within the limit of 2) was not confirmed: if psql reported an error, nothing was committed"},
		{Result{State: State(42)}, "State(42)"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%v: String() = %q, want %q", tt.r.State, got, tt.want)
		}
	}
	if RolledBack.String() != "rolled_back" || CommitUnconfirmed.String() != "commit_unconfirmed" {
		t.Errorf("state names %s, %s", RolledBack, CommitUnconfirmed)
	}
}
