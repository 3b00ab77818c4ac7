// Package auditdproc runs a real auditd process for tests, benchmarks and the
// demo: it starts the binary, learns its address from the "listening on"
// line, and stops it with a signal.
package auditdproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a running auditd.
type Proc struct {
	Cmd  *exec.Cmd
	Addr string // host:port from "auditd: listening on …"
	URL  string // http://Addr, or https://Addr when auditd serves TLS

	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

// Start runs bin with args (add --addr 127.0.0.1:0 for a free port) and
// waits up to 30 seconds for it to listen.
func Start(bin string, args ...string) (*Proc, error) {
	return StartCmd(exec.Command(bin, args...))
}

// StartCmd is Start for a prepared command (auditd run through a wrapper,
// say); it sets cmd.Stderr.
func StartCmd(cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	r, w := io.Pipe()
	p.Cmd.Stderr = w
	if err := p.Cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.Cmd.Wait()
		w.Close()
		close(p.done)
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if a, ok := strings.CutPrefix(line, "auditd: listening on "); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
		io.Copy(io.Discard, r)
	}()
	select {
	case a := <-addr:
		p.Addr, p.URL = a, "http://"+a
		if host, ok := strings.CutPrefix(a, "https://"); ok { // auditd --tls-cert
			p.Addr, p.URL = host, a
		}
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("auditd exited before listening: %v\n%s", p.err, p.Stderr())
	case <-time.After(30 * time.Second):
		p.Kill()
		return nil, fmt.Errorf("auditd did not listen within 30s\n%s", p.Stderr())
	}
}

// Stderr returns what auditd printed on standard error so far.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Stop sends SIGTERM and waits up to 30 seconds for auditd to exit; it
// returns the exit error (nil for status 0).
func (p *Proc) Stop() error {
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(30 * time.Second):
		p.Kill()
		return fmt.Errorf("auditd did not stop within 30s of SIGTERM\n%s", p.Stderr())
	}
}

// Kill sends SIGKILL (a crash) and waits for the process to end.
func (p *Proc) Kill() {
	p.Cmd.Process.Kill()
	<-p.done
}

// RSS returns the process's resident set size and its peak (VmRSS, VmHWM
// of /proc/PID/status) in bytes.
func (p *Proc) RSS() (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc status %s: %q", name, v)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, nil
}
