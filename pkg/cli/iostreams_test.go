package cli

import (
	"os"
	"testing"
)

func TestTestStreams(t *testing.T) {
	s, in, out, errOut := Test()
	in.WriteString("ls\n")
	buf := make([]byte, 3)
	if n, _ := s.In.Read(buf); string(buf[:n]) != "ls\n" {
		t.Errorf("In reads %q, want the in buffer's contents", buf[:n])
	}
	s.Out.Write([]byte("o"))
	s.ErrOut.Write([]byte("e"))
	if out.String() != "o" || errOut.String() != "e" {
		t.Errorf("out=%q errOut=%q, want the writes to land in the returned buffers", out, errOut)
	}
	if s.IsStdinTTY() || s.IsStdoutTTY() {
		t.Error("test streams are terminals by default; want neither")
	}
	s.SetStdinTTY(true)
	s.SetStdoutTTY(true)
	if !s.IsStdinTTY() || !s.IsStdoutTTY() {
		t.Error("SetStdinTTY/SetStdoutTTY(true) did not take")
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is reported as a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(r) || isTerminal(w) {
		t.Error("a pipe is reported as a terminal")
	}
	closed, _ := os.CreateTemp(t.TempDir(), "closed")
	closed.Close()
	if isTerminal(closed) {
		t.Error("a closed file (stat fails) is reported as a terminal")
	}
}

func TestSystemStreams(t *testing.T) {
	s := System()
	if s.In != os.Stdin || s.Out != os.Stdout || s.ErrOut != os.Stderr {
		t.Error("System() does not use the process's standard streams")
	}
}

func TestIsTerminalDevNull(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("/dev/null is reported as a terminal; want it treated as empty input")
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			b.Write([]byte("x"))
		}
	}()
	for range 100 {
		_ = b.String() // concurrent reads: go test -race checks them
	}
	<-done
	if got := b.String(); len(got) != 100 {
		t.Errorf("%d bytes, want 100", len(got))
	}
}
