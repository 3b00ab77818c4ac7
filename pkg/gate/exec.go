package gate

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DrainGrace is how long gate keeps reading a command's output after its
// process group was killed: only a process that left the group (setsid)
// can still hold the pipes open, and it must not hold gate too.
const DrainGrace = 2 * time.Second

// Execution is how a command's process ended.
type Execution struct {
	ExitCode int // the command's own; 128+N when killed by signal N
	TimedOut bool
	Duration time.Duration
	// Escaped is set when something outside the process group kept the
	// command's output open after it ended (for DrainGrace).
	Escaped bool
}

// Execute runs cmd in a process group of its own, with stdout and stderr
// through pipes into the two streams, and kills the whole group on timeout,
// on ctx's end, and after the command's main process exits: no process the
// command started outlives it (seed 000's "kill the whole process group";
// B-05b). start starts cmd (exec.Cmd.Start, or the sandbox's, which reports
// a confinement failure as its error).
//
// gate run's pipeline calls it, and so does every other place that runs a
// command for an agent outside that pipeline (gate serve's bash).
func Execute(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, stdout, stderr io.Writer, start func(*exec.Cmd) error) (Execution, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// If gate itself dies, its command must not run on ungoverned.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL

	var readers []*os.File
	var copying sync.WaitGroup
	pipe := func(to io.Writer) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		readers = append(readers, r)
		copying.Add(1)
		go func() {
			defer copying.Done()
			_, _ = io.Copy(to, r)
		}()
		return w, nil
	}
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	outW, err := pipe(stdout)
	if err != nil {
		return Execution{}, err
	}
	// One writer for both streams gets one pipe: the command's writes to
	// stdout and stderr then arrive in the order it made them (two pipes
	// copied concurrently would reorder them).
	errW := outW
	if !sameWriter(stdout, stderr) {
		if errW, err = pipe(stderr); err != nil {
			closeAll(outW)
			closeAll(readers...)
			return Execution{}, err
		}
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	began := time.Now()
	err = start(cmd)
	closeAll(outW) // the child holds its own copies
	if errW != outW {
		closeAll(errW)
	}
	if err != nil {
		closeAll(readers...)
		copying.Wait()
		return Execution{}, err
	}
	pgid := cmd.Process.Pid

	var timedOut atomic.Bool
	kill := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() {
			timedOut.Store(true)
			kill()
		})
	}
	stop := context.AfterFunc(ctx, kill)

	waitErr := cmd.Wait()
	ex := Execution{Duration: time.Since(began)}
	if timer != nil {
		timer.Stop()
	}
	stop()
	kill() // what the command left running in its group

	drained := make(chan struct{})
	go func() { copying.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(DrainGrace):
		ex.Escaped = true
	}
	closeAll(readers...) // after a timeout, this ends the copies
	<-drained
	ex.TimedOut = timedOut.Load()
	ex.ExitCode = exitCode(cmd.ProcessState, waitErr)
	return ex, nil
}

// sameWriter reports whether a and b are one writer; a writer of a type
// that cannot be compared is never the same (== would panic on it).
func sameWriter(a, b io.Writer) bool {
	if a == nil || b == nil || !reflect.TypeOf(a).Comparable() || reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	return a == b
}

// exitCode is the shell's way of saying how a process ended: its status,
// or 128+N after signal N.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ps = ee.ProcessState
		}
	}
	if ps == nil {
		return 127
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
