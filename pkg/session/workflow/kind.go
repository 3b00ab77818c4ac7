// Package workflow is seed 000's session FSM (RESOLVING → READING →
// VERIFYING), the tool table that classifies every call, Gates 1 and 2, and
// the pending-recovery bookkeeping behind the auto-recovery metrics.
package workflow

import (
	"errors"
	"strconv"
)

// Kind is what a tool call does to the world, the one input of the FSM's
// transitions (seed 000 §2 Invariant 6: the tool's kind, never the
// command's content).
type Kind uint8

// The kinds of session_start.tools. The zero Kind is not one of them, so
// a tool declared without a kind is refused by NewTable rather than read as
// a harmless resolve; the FSM treats any kind it does not know as a write
// (fail closed, seed 000 §10 "DO NOT: Change Unknown Tool Default to Read").
const (
	KindResolve Kind = iota + 1 // discovery: finds resources
	KindRead                    // read-only: logs, status, files
	KindWrite                   // mutating
	KindSearch                  // seed 004's search; a read to the FSM
)

var kindNames = [...]string{KindResolve: "resolve", KindRead: "read", KindWrite: "write", KindSearch: "search"}

// ParseKind reads a kind as session_start spells it.
func ParseKind(s string) (Kind, bool) {
	for k := KindResolve; k <= KindSearch; k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return 0, false
}

func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return "unknown"
}

func (k Kind) valid() bool { return k >= KindResolve && k <= KindSearch }

// verifies reports whether a successful call of kind k counts as the
// read/status check a write awaits: resolve and read do (seed 000 §7),
// search is a read to the FSM.
func (k Kind) verifies() bool { return k == KindResolve || k == KindRead || k == KindSearch }

// MarshalText writes the kind as session_start spells it.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind as session_start spells it.
func (k *Kind) UnmarshalText(b []byte) error {
	v, ok := ParseKind(string(b))
	if !ok {
		return &kindError{string(b)}
	}
	*k = v
	return nil
}

type kindError struct{ s string }

func (e *kindError) Error() string {
	return "kind " + strconv.Quote(e.s) + " is not one of resolve, read, write, search"
}

// State is the FSM's state (seed 000 §7 States). The zero State is
// RESOLVING, the initial one.
type State uint8

const (
	Resolving State = iota // no validated target yet: resolve, read
	Reading                // resources discovered: resolve, read, write
	Verifying              // a write ran and awaits a read: resolve, read
)

var stateNames = [...]string{Resolving: "RESOLVING", Reading: "READING", Verifying: "VERIFYING"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "UNKNOWN"
}

// MarshalText writes the state as the seed's metrics label it.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state as MarshalText writes it.
func (s *State) UnmarshalText(b []byte) error {
	for v, name := range stateNames {
		if string(b) == name {
			*s = State(v)
			return nil
		}
	}
	return errors.New("state " + strconv.Quote(string(b)) + " is not one of RESOLVING, READING, VERIFYING")
}
