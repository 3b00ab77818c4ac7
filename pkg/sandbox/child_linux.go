package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// MaybeChild must be the first thing main does. In a process Command
// started, it confines the process, then execs the command and never
// returns; on failure it reports on the setup pipe and exits 127. In any
// other process it returns at once.
func MaybeChild() {
	v, ok := os.LookupEnv(planEnv)
	if !ok {
		return
	}
	// One OS thread from here to execve: the rules are applied to it (and,
	// by go-landlock and TSYNC, to the others), and execve runs on it.
	runtime.LockOSThread()
	stage, err := runChild(v)
	if stage == "parent" {
		// Not started by Command: there is no setup pipe to trust.
		fmt.Fprintf(os.Stderr, "govkit sandbox: %v\n", err)
		os.Exit(127)
	}
	msg, _ := json.Marshal(SetupError{Stage: stage, Err: err.Error()})
	_, _ = unix.Write(setupFD, msg)
	os.Exit(127)
}

// runChild applies the plan and execs; it returns only on failure.
func runChild(planJSON string) (stage string, err error) {
	// The plan variable is a way into gate's internals (it execs argv
	// without classify or policy): honour it only from our own binary, so
	// `GOVKIT_SANDBOX_CHILD=… gate rm -rf /` from a shell does nothing.
	if err := checkParent(); err != nil {
		return "parent", err
	}
	var p plan
	if err := json.Unmarshal([]byte(planJSON), &p); err != nil {
		return "plan", fmt.Errorf("bad plan: %w", err)
	}
	if p.FD != setupFD || (p.Level != ReadOnly && p.Level != Isolated) {
		return "plan", fmt.Errorf("bad plan: level %q, fd %d", p.Level, p.FD)
	}
	syscall.CloseOnExec(setupFD)
	if len(os.Args) < 2 {
		return "plan", errors.New("no command")
	}
	argv := os.Args[1:]
	env := withoutVars(os.Environ(), planEnv)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return "lookup", err
	}
	rules := buildLandlock(p.Level, p.LandlockABI, p.TempDir, terminals(), p.NoUnix)
	if err := applyLandlock(rules); err != nil {
		return "landlock", err
	}
	if err := applySeccomp(p.Level, p.NoUnix); err != nil {
		return "seccomp", err
	}
	err = syscall.Exec(path, argv, env)
	return "exec", fmt.Errorf("exec %s: %w", path, err)
}

// checkParent reports whether the parent process runs the same executable.
func checkParent() error {
	var self, parent unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &self); err != nil {
		return fmt.Errorf("%s is set but /proc/self/exe: %w", planEnv, err)
	}
	if err := unix.Stat(fmt.Sprintf("/proc/%d/exe", os.Getppid()), &parent); err != nil || self.Dev != parent.Dev || self.Ino != parent.Ino {
		return fmt.Errorf("%s is set but this process was not started by the sandbox; refusing to run", planEnv)
	}
	return nil
}

// terminals are the terminal devices behind fds 0–2: the command may
// reopen them (a pager, a password prompt), and needs ioctls on them.
func terminals() []string {
	var ttys []string
	for fd := 0; fd <= 2; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			continue
		}
		p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		if err != nil || !strings.HasPrefix(p, "/dev/") {
			continue
		}
		ttys = append(ttys, p)
	}
	return ttys
}

// applyLandlock enforces rules with go-landlock, never in BestEffort mode:
// the access sets are exactly those of the probed ABI, so a kernel that
// cannot take them is an error, not a silent downgrade.
func applyLandlock(r landlockRules) error {
	cfg, err := landlock.NewConfig(landlock.AccessFSSet(r.fs), landlock.AccessNetSet(r.net), landlock.ScopedSet(r.scoped))
	if err != nil {
		return err
	}
	var rules []landlock.Rule
	for _, p := range r.paths {
		rule := landlock.PathAccess(landlock.AccessFSSet(p.access), p.paths...)
		if p.optional {
			rule = rule.IgnoreIfMissing()
		}
		rules = append(rules, rule)
	}
	return cfg.Restrict(rules...)
}

// applySeccomp loads the guard (both levels) and, for isolated, the socket
// policy (with noUnix, unix sockets' too), on all threads.
func applySeccomp(level Level, noUnix bool) error {
	native, ioctlNR, err := nativeArch(runtime.GOARCH)
	if err != nil {
		return err
	}
	if err := loadProgram(guardProgram(native, ioctlNR)); err != nil {
		return fmt.Errorf("guard filter: %w", err)
	}
	if level != Isolated {
		return nil
	}
	policies := isolatedPolicies()
	if noUnix {
		policies = append(policies, noUnixPolicy())
	}
	for _, p := range policies {
		if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: p}); err != nil {
			return err
		}
	}
	return nil
}

// loadProgram installs a hand-written BPF program with TSYNC.
func loadProgram(insts []bpf.Instruction) error {
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if e != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", e)
	}
	return nil
}
