// Package cli is the plumbing every govkit binary shares: injectable standard
// streams, the --output flag, the one place where errors become exit codes and
// stderr lines, and configuration loading (the only package that uses viper).
package cli

import (
	"bytes"
	"io"
	"os"
	"sync"
)

// IOStreams are a command's standard streams. Commands write to Out and
// ErrOut and read In; they never touch os.Stdout or os.Stdin, so tests can
// run them against buffers (gh's pkg/iostreams).
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
}

// System returns the process's streams, with terminal detection for stdin and
// stdout (one fstat each: start-up stays cheap).
func System() *IOStreams {
	return &IOStreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: isTerminal(os.Stdout),
	}
}

// Test returns streams backed by buffers, plus the buffers: stdin, stdout,
// stderr. Neither stream is a terminal until a test says so.
func Test() (streams *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = new(bytes.Buffer), new(bytes.Buffer), new(bytes.Buffer)
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// SyncBuffer is a buffer safe for concurrent use: the Out or ErrOut of a
// command that a test runs in the background, reading what it has written
// so far.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// IsStdinTTY reports whether standard input is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether standard output is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// SetStdinTTY overrides terminal detection for standard input (tests).
func (s *IOStreams) SetStdinTTY(tty bool) { s.stdinTTY = tty }

// SetStdoutTTY overrides terminal detection for standard output (tests).
func (s *IOStreams) SetStdoutTTY(tty bool) { s.stdoutTTY = tty }

// isTerminal reports whether f is a terminal: a character device other than
// /dev/null (stdin redirected from /dev/null is empty input, not a person at
// a keyboard). It needs no dependency beyond os; the second stat happens only
// for character devices.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
