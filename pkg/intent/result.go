// Package intent decides, from a shell command's syntax tree alone, whether the
// command is read-only, whether it terminates, and how risky it is (seed 000:
// ExecutionIntent, Command Risk Classification, NonInteractiveOnly).
package intent

import (
	"fmt"
)

// Intent is seed 000's ExecutionIntent.
type Intent string

const (
	// ReadOnlyCertain: non-mutating by construction (cat, grep, ls).
	ReadOnlyCertain Intent = "read_only_certain"
	// ReadOnlyConditional: read-only as far as content inspection or
	// configuration can prove it (sqlite3 db "SELECT …", git log).
	ReadOnlyConditional Intent = "read_only_conditional"
	// WriteOrUnknown: cannot be proven non-mutating.
	WriteOrUnknown Intent = "write_or_unknown"
)

func (i Intent) rank() int {
	switch i {
	case ReadOnlyCertain:
		return 0
	case ReadOnlyConditional:
		return 1
	}
	return 2
}

// Interactive is seed 000's NonInteractiveOnly category: why a command may
// never terminate on its own.
type Interactive string

const (
	NotInteractive  Interactive = ""
	TTYFlag         Interactive = "tty_flag"
	Pager           Interactive = "pager"
	UnboundedStream Interactive = "unbounded_stream"
	InteractiveREPL Interactive = "interactive_repl"
)

// rank orders the categories for a command that has several: the one most
// specific to what blocks (a -t flag on docker exec beats the shell inside).
func (i Interactive) rank() int {
	switch i {
	case TTYFlag:
		return 4
	case InteractiveREPL:
		return 3
	case Pager:
		return 2
	case UnboundedStream:
		return 1
	}
	return 0
}

// Risk is seed 000's CommandRisk level.
type Risk int

const (
	RiskReadOnly Risk = iota
	RiskLowWrite
	RiskMediumWrite
	RiskHighWrite
)

var riskNames = [...]string{"read_only", "low_write", "medium_write", "high_write"}

func (r Risk) String() string {
	if r < 0 || int(r) >= len(riskNames) {
		return fmt.Sprintf("Risk(%d)", int(r))
	}
	return riskNames[r]
}

// MarshalText makes a Risk serialize by name, as the JSON contract requires.
func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText accepts the names MarshalText produces.
func (r *Risk) UnmarshalText(b []byte) error {
	for i, n := range riskNames {
		if n == string(b) {
			*r = Risk(i)
			return nil
		}
	}
	return fmt.Errorf("unknown risk %q", b)
}

// ActionClass is the audit log's action class (seed 003 "Action
// Classification"); destructive means it deletes or overwrites data or takes a
// service down.
type ActionClass string

const (
	ActionRead        ActionClass = "read"
	ActionWrite       ActionClass = "write"
	ActionDestructive ActionClass = "destructive"
)

func (a ActionClass) rank() int {
	switch a {
	case ActionWrite:
		return 1
	case ActionDestructive:
		return 2
	}
	return 0
}

// Reason is one finding behind a result: a stable code to branch on and a
// human detail to read.
type Reason struct {
	Code   Code   `json:"code"`
	Detail string `json:"detail"`
}

// Verdict is the exit-code summary of a result (DESIGN §4).
type Verdict int

const (
	// VerdictReadOnly: read-only and bounded (exit 0).
	VerdictReadOnly Verdict = 0
	// VerdictWrite: write_or_unknown (exit 1).
	VerdictWrite Verdict = 1
	// VerdictUnbounded: no write, but may not terminate (exit 2).
	VerdictUnbounded Verdict = 2
)

// Worse reports whether v is a worse verdict than w: write > unbounded > read-only.
func (v Verdict) Worse(w Verdict) bool { return v.severity() > w.severity() }

func (v Verdict) severity() int {
	switch v {
	case VerdictWrite:
		return 2
	case VerdictUnbounded:
		return 1
	}
	return 0
}

// Result is the classification of one command; its JSON form is the contract
// of DESIGN §4.
type Result struct {
	Command          string      `json:"command"`
	Intent           Intent      `json:"intent"`
	Bounded          bool        `json:"bounded"`
	Interactive      Interactive `json:"interactive"`
	Risk             Risk        `json:"risk"`
	ActionClass      ActionClass `json:"action_class"`
	Reasons          []Reason    `json:"reasons"`
	SuggestedRewrite string      `json:"suggested_rewrite"`
	AutoRecoverable  bool        `json:"auto_recoverable"`
}

// Verdict summarizes the result as DESIGN §4's exit code.
func (r Result) Verdict() Verdict {
	switch {
	case r.Intent == WriteOrUnknown:
		return VerdictWrite
	case !r.Bounded:
		return VerdictUnbounded
	}
	return VerdictReadOnly
}

// ReadOnly reports whether the command is read-only (certain or conditional).
func (r Result) ReadOnly() bool { return r.Intent != WriteOrUnknown }

// HasReason reports whether the result carries the given code.
func (r Result) HasReason(c Code) bool {
	for _, x := range r.Reasons {
		if x.Code == c {
			return true
		}
	}
	return false
}

// MarshalJSON adds schema_version, never writes a null reasons list, and
// leaves & < > unescaped: commands are full of them (AppendJSON).
func (r Result) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }
