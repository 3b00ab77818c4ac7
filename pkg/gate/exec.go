package gate

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// drainGrace is how long gate keeps reading a command's output after its
// process group was killed: only a process that left the group (setsid)
// can still hold the pipes open, and it must not hold gate too.
const drainGrace = 2 * time.Second

// execution is how a command's process ended.
type execution struct {
	exitCode int // the command's own; 128+N when killed by signal N
	timedOut bool
	duration time.Duration
	// escaped is set when something outside the process group kept the
	// command's output open after it ended.
	escaped bool
}

// execute runs cmd in a process group of its own, with stdout and stderr
// through pipes into the two streams, and kills the whole group on timeout,
// on ctx's end, and after the command's main process exits: no process the
// command started outlives it (seed 000's "kill the whole process group";
// B-05b). start starts cmd (exec.Cmd.Start, or the sandbox's, which reports
// a confinement failure as its error).
func execute(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, stdout, stderr io.Writer, start func(*exec.Cmd) error) (execution, error) {
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
		return execution{}, err
	}
	errW, err := pipe(stderr)
	if err != nil {
		closeAll(outW)
		closeAll(readers...)
		return execution{}, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	began := time.Now()
	err = start(cmd)
	closeAll(outW, errW) // the child holds its own copies
	if err != nil {
		closeAll(readers...)
		copying.Wait()
		return execution{}, err
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
	ex := execution{duration: time.Since(began)}
	if timer != nil {
		timer.Stop()
	}
	stop()
	kill() // what the command left running in its group

	drained := make(chan struct{})
	go func() { copying.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		ex.escaped = true
	}
	closeAll(readers...) // after a timeout, this ends the copies
	<-drained
	ex.timedOut = timedOut.Load()
	ex.exitCode = exitCode(cmd.ProcessState, waitErr)
	return ex, nil
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
