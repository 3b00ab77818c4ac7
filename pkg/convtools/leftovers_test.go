package convtools

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestKillMarked: processes carrying the mark die, with their group;
// one carrying another server's mark, or none, is left alone (REQ-BED-007).
func TestKillMarked(t *testing.T) {
	start := func(env ...string) *exec.Cmd {
		c := exec.Command("sleep", "30")
		c.Env = append(os.Environ(), env...)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	mine := start(MarkEnv + "=m1")
	other := start(MarkEnv + "=m12")
	plain := start()

	if n := KillMarked("m1"); n != 1 {
		t.Fatalf("KillMarked found %d processes, want 1", n)
	}
	done := make(chan error, 1)
	go func() { done <- mine.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the marked process is still running")
	}
	for _, c := range []*exec.Cmd{other, plain} {
		if err := c.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("%v: %v, want it left running", c.Env[len(c.Env)-1:], err)
		}
	}
	if n := KillMarked(""); n != 0 {
		t.Fatalf("an empty mark found %d processes", n)
	}
}
