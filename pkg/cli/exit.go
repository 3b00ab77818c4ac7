package cli

import (
	"errors"
	"fmt"
	"io"
)

// ExitFailure is the exit code every govkit binary uses for a usage error,
// unreadable input or an internal failure (DESIGN §3). Other codes are per
// binary.
const ExitFailure = 3

// ExitError ends the program with Code. With a nil Err nothing is printed:
// that is how a command reports a verdict (classify's 1 and 2) rather than a
// failure. Hint, when set, tells the user what to do next and names the
// exact flag involved.
type ExitError struct {
	Code int
	Err  error
	Hint string
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// WithHint returns e with its hint set.
func (e *ExitError) WithHint(hint string) *ExitError {
	e.Hint = hint
	return e
}

// Silent returns an error that makes the program exit with code and print
// nothing.
func Silent(code int) error { return &ExitError{Code: code} }

// Failf returns an exit-3 error with a lowercase message (a usage error,
// unreadable input, or a failure the command cannot handle).
func Failf(format string, args ...any) *ExitError {
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf(format, args...)}
}

// Fail wraps err as an exit-3 error with a hint.
func Fail(err error, hint string) *ExitError {
	return &ExitError{Code: ExitFailure, Err: err, Hint: hint}
}

// report prints err in the one stderr voice of DESIGN §3 and returns the
// exit code for it. It is the only place where an error becomes an exit code.
//
//	prog: error: <lowercase message>
//	prog: hint: <what to do, naming the exact flag>
//
// usageHint is used for errors that carry no hint of their own when they come
// from cobra's argument checks (empty otherwise).
func report(w io.Writer, prog string, err error, usageHint string) int {
	if err == nil {
		return 0
	}
	code, hint := ExitFailure, usageHint
	var ee *ExitError
	if errors.As(err, &ee) {
		code, hint = ee.Code, ee.Hint
		if ee.Err == nil {
			return code
		}
		if code == 0 {
			// A binary never exits 0 after an error (DESIGN §3).
			code = ExitFailure
		}
	}
	fmt.Fprintf(w, "%s: error: %s\n", prog, err)
	if hint != "" {
		fmt.Fprintf(w, "%s: hint: %s\n", prog, hint)
	}
	return code
}
