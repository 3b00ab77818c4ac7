// Package sandbox confines a command with Landlock and seccomp, applied in a re-executed child just before exec (DESIGN §12, issue 15).
//
// # How it runs
//
// [Command] builds an *exec.Cmd that re-executes the current binary
// (/proc/self/exe, argv[0] kept as os.Args[0] so testscript's argv[0]
// dispatch still works) with the plan in the environment variable
// GOVKIT_SANDBOX_CHILD and one extra pipe (fd 3). The child is the same
// program: its main calls [MaybeChild] first thing, which applies the rules
// to itself and then execve(2)s the target, so the rules hold from the
// target's first instruction and nothing of the parent (gate) is confined.
// When the child cannot apply a rule, find the target or exec it, it writes
// the reason on fd 3 and exits 127; [Cmd.Start] reads fd 3 until EOF (the
// pipe is close-on-exec, so EOF with nothing read means exec succeeded) and
// returns a *[SetupError] instead of letting a setup failure pass for the
// command's own exit code.
//
// # Levels
//
//   - off: nothing; the command is started directly.
//   - readonly: Landlock handles every filesystem right the kernel's ABI
//     has (ABI ≥ 3, so truncate(2) is covered) and grants read, execute
//     and list everywhere; write only to /dev/null, the terminal (the tty
//     behind fds 0–2 as the child finds them, and /dev/tty) and the private
//     temp dir (Config.TempDir, also exported as TMPDIR), where everything
//     but creating device nodes is allowed (as root, a device node made in
//     the temp dir would open the raw disk). With ABI ≥ 5 device ioctls are
//     denied except on /dev/null and the terminal. With ABI ≥ 9 connecting
//     to pathname unix sockets stays allowed (psql reaches its server that
//     way). A seccomp filter refuses TIOCSTI/TIOCLINUX (typing into the
//     terminal is a way out of any sandbox; dev.tty.legacy_tiocsti is on
//     by default), kills the process on any system call of a foreign
//     architecture (32-bit int 0x80 would bypass the filter) and refuses
//     x32 calls.
//   - isolated: readonly, plus Landlock denies TCP connect and bind to
//     every port (ABI ≥ 4; with ABI ≥ 10 UDP too) and, with ABI ≥ 6, scopes
//     abstract unix sockets and signals to the sandbox; and seccomp refuses
//     with EPERM: socket(2)/socketpair(2) of every family but AF_UNIX, and
//     of AF_INET/AF_INET6 all but SOCK_STREAM with protocol 0 or
//     IPPROTO_TCP (so UDP, raw, packet, netlink, SCTP and MPTCP);
//     io_uring_setup/enter/register (io_uring would do socket work behind
//     seccomp's back); and two ways around Landlock's TCP rules seen on
//     Linux 6.18 (ABI 7): sendto/sendmsg/sendmmsg with MSG_FASTOPEN, which
//     connects without connect(2), and listen(2), which without bind(2)
//     gets a port from the kernel (seccomp cannot tell a TCP socket from a
//     unix one there, so no server of any kind runs isolated).
//
// no_new_privs is set for every sandboxed level (Landlock and seccomp both
// need it; it also keeps a setuid binary from gaining privileges).
//
// # Never degrade silently
//
// The Landlock configuration is chosen for the exact ABI [Probe] reads with
// the raw landlock_create_ruleset(NULL, 0, VERSION) syscall; go-landlock's
// BestEffort mode is never used (some versions of it silently dropped the
// network rules). When the kernel lacks what a level needs, [Support.Check]
// and [Command] return an *[UnavailableError] naming what is missing, and the
// caller (gate) exits 127. The [Report] says what was actually enforced, for
// the gate report and the audit event.
//
// # Dependencies
//
// github.com/landlock-lsm/go-landlock v0.11.0 (pinned): the Landlock
// reference Go library, maintained by the Landlock authors; used only with
// explicit per-ABI access sets. Below ABI 8 it applies the ruleset to every
// thread through kernel.org/.../libcap/psx (C when cgo is on, Go's
// AllThreadsSyscall otherwise); the child execs from the thread it locked,
// so the target is confined either way. github.com/elastic/go-seccomp-bpf v1.6.0:
// pure Go (no cgo, no libseccomp), maintained by Elastic for Beats,
// syscall tables up to Linux 6.15 and argument filtering, which the socket
// rules need. Two things it cannot say are written by hand as a second,
// tiny BPF program (guardProgram): its filter allows every call of a
// foreign architecture, and it compares 64-bit arguments, while ioctl's
// command is a 32-bit int whose upper register half the kernel ignores.
// v1.6.0 also does not reload the syscall number after an argument check,
// so the socket rules are split into filters that each check arguments of
// one syscall only, last (see isolatedPolicies; a test holds them to it).
//
// # Simulating an older kernel in tests
//
// Probe honours GOVKIT_SANDBOX_SIMULATE only after [AllowSimulation] was
// called, which test binaries do in TestMain and production mains never do.
// Its value is a comma-separated list of: no-landlock, no-seccomp,
// landlock-abi=N (pretend the kernel has ABI N; the child then really
// applies the ABI-N configuration, which a newer kernel accepts).
package sandbox
