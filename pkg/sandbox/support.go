package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// Support is what the running kernel offers the sandbox.
type Support struct {
	// LandlockABI is the ABI the sandbox drives: the kernel's, lowered to 5
	// when an ABI ≥ 6 kernel lacks the signal-scoping fix (erratum 2; as
	// go-landlock does), and capped at the newest ABI go-landlock knows.
	// 0 when Landlock is unavailable (LandlockError says why).
	LandlockABI   int    `json:"landlock_abi"`
	LandlockError string `json:"landlock_error,omitempty"`
	Seccomp       bool   `json:"seccomp"`
	SeccompError  string `json:"seccomp_error,omitempty"`
}

// Check says whether l can be enforced; the *UnavailableError says exactly
// what the kernel lacks.
func (s Support) Check(l Level) error {
	var min int
	switch l {
	case Off:
		return nil
	case ReadOnly:
		min = minABIReadOnly
	case Isolated:
		min = minABIIsolated
	default:
		_, err := ParseLevel(string(l))
		return err
	}
	unavailable := func(format string, a ...any) error {
		return &UnavailableError{Level: l, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case s.LandlockABI == 0:
		return unavailable("landlock is not available: %s", s.LandlockError)
	case s.LandlockABI < min && l == ReadOnly:
		return unavailable("landlock abi %d does not cover truncate(2); readonly needs abi >= %d (linux 6.2)", s.LandlockABI, min)
	case s.LandlockABI < min:
		return unavailable("landlock abi %d has no network rules; isolated needs abi >= %d (linux 6.7)", s.LandlockABI, min)
	case !s.Seccomp:
		return unavailable("seccomp is not available: %s", s.SeccompError)
	}
	return nil
}

// String is one line for gate doctor, e.g. "landlock abi 7, seccomp".
func (s Support) String() string {
	var parts []string
	if s.LandlockABI > 0 {
		parts = append(parts, fmt.Sprintf("landlock abi %d", s.LandlockABI))
	} else {
		parts = append(parts, "no landlock ("+s.LandlockError+")")
	}
	if s.Seccomp {
		parts = append(parts, "seccomp")
	} else {
		parts = append(parts, "no seccomp ("+s.SeccompError+")")
	}
	return strings.Join(parts, ", ")
}

// simulationAllowed is set by AllowSimulation, in test binaries only.
var simulationAllowed atomic.Bool

// AllowSimulation makes Probe honour GOVKIT_SANDBOX_SIMULATE. Only test
// binaries call it (in TestMain, before MaybeChild); production mains never
// do, so the variable has no effect on a real gate.
func AllowSimulation() { simulationAllowed.Store(true) }

// Probe reads what the kernel offers, with a few cheap system calls.
func Probe() Support {
	s := probeKernel()
	if !simulationAllowed.Load() {
		return s
	}
	for _, w := range strings.Split(os.Getenv("GOVKIT_SANDBOX_SIMULATE"), ",") {
		switch w = strings.TrimSpace(w); {
		case w == "no-landlock":
			s.LandlockABI, s.LandlockError = 0, "kernel has no landlock ("+errSimulated.Error()+")"
		case w == "no-seccomp":
			s.Seccomp, s.SeccompError = false, "kernel has no seccomp ("+errSimulated.Error()+")"
		case strings.HasPrefix(w, "landlock-abi="):
			if n, err := strconv.Atoi(strings.TrimPrefix(w, "landlock-abi=")); err == nil && n >= 0 && n <= s.LandlockABI {
				s.LandlockABI = n
			}
		}
	}
	return s
}
