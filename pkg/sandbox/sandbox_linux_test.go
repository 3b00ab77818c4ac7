package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestMain makes the test binary its own sandbox child and its own target:
// MaybeChild applies the plan, and SANDBOX_TEST_OP runs one operation in
// the confined process and prints its result ("ok" or the errno's name).
func TestMain(m *testing.M) {
	AllowSimulation()
	MaybeChild()
	if op, ok := os.LookupEnv("SANDBOX_TEST_OP"); ok {
		fmt.Println(runOp(op))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runOp performs "verb arg…" and says how it went.
func runOp(op string) string {
	f := strings.Fields(op)
	var err error
	switch f[0] {
	case "write":
		err = os.WriteFile(f[1], []byte("x\n"), 0o600)
	case "append": // opens an existing file for writing (no O_TRUNC, no create)
		var fh *os.File
		if fh, err = os.OpenFile(f[1], os.O_WRONLY|os.O_APPEND, 0); err == nil {
			fh.Close()
		}
	case "truncate":
		err = os.Truncate(f[1], 0)
	case "read":
		_, err = os.ReadFile(f[1])
	case "tmpdir": // a temp file where TMPDIR says
		var fh *os.File
		if fh, err = os.CreateTemp("", "op"); err == nil {
			fh.Close()
			return "ok " + filepath.Dir(fh.Name())
		}
	case "tcp":
		var c net.Conn
		if c, err = net.Dial("tcp", f[1]); err == nil {
			c.Close()
		}
	case "udp":
		var c net.Conn
		if c, err = net.Dial("udp", f[1]); err == nil {
			_, err = c.Write([]byte("x"))
			c.Close()
		}
	case "unix":
		var c net.Conn
		if c, err = net.Dial("unix", f[1]); err == nil {
			var line string
			line, err = bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err == nil {
				return "ok " + strings.TrimSpace(line)
			}
		}
	case "socket": // family type protocol, numbers
		var a [3]int
		fmt.Sscan(strings.Join(f[1:], " "), &a[0], &a[1], &a[2])
		var fd int
		if fd, err = unix.Socket(a[0], a[1], a[2]); err == nil {
			unix.Close(fd)
		}
	case "iouring":
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if e == 0 {
			unix.Close(int(fd))
		} else {
			err = e
		}
	case "tiocsti": // cmd with garbage in the upper half, which the kernel ignores
		c := byte('x')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, 0xdead0000_00000000|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			err = e
		}
	case "listen": // listen(2) without bind(2): the kernel picks a port
		var fd int
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0); err == nil {
			err = unix.Listen(fd, 1)
			unix.Close(fd)
		}
	case "fastopen":
		var fd int
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0); err == nil {
			var port int
			fmt.Sscan(f[1], &port)
			err = unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
			unix.Close(fd)
		}
	default:
		return "unknown op " + f[0]
	}
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// needLandlock skips when the running kernel cannot enforce level.
func needLandlock(t testing.TB, level Level) {
	t.Helper()
	if err := probeKernel().Check(level); err != nil {
		t.Skipf("this kernel cannot run the test: %v", err)
	}
}

// sandboxed runs op in the test binary under level and returns its line.
func sandboxed(t *testing.T, level Level, op string) string {
	t.Helper()
	return sandboxedWith(t, Config{Level: level}, op)
}

func sandboxedWith(t *testing.T, cfg Config, op string) string {
	t.Helper()
	level := cfg.Level
	needLandlock(t, level)
	cfg.Env = append(os.Environ(), "SANDBOX_TEST_OP="+op)
	cfg.TempDir = t.TempDir()
	c, err := Command(context.Background(), cfg, os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	c.Cmd.Stdout, c.Cmd.Stderr = &out, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("%s %q: %v (stderr %q)", level, op, err, stderr.String())
	}
	return strings.TrimSpace(out.String())
}

func TestReadOnly(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside")
	existing := filepath.Join(t.TempDir(), "existing")
	if err := os.WriteFile(existing, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ op, want string }{
		{"write " + outside, "EACCES"},
		{"append " + existing, "EACCES"},
		{"truncate " + existing, "EACCES"},
		{"read /etc/hostname", "ok"},
		{"read " + existing, "ok"},
		{"write /dev/null", "ok"},
		{"tiocsti", "EPERM"},
	} {
		if got := sandboxed(t, ReadOnly, tc.op); got != tc.want {
			t.Errorf("readonly %s = %q, want %q", tc.op, got, tc.want)
		}
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created: %v", outside, err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep\n" {
		t.Errorf("%s changed: %q", existing, b)
	}
}

func TestReadOnlyPrivateTempDir(t *testing.T) {
	needLandlock(t, ReadOnly)
	tmp := t.TempDir()
	env := append(os.Environ(), "SANDBOX_TEST_OP=tmpdir")
	c, err := Command(context.Background(), Config{Level: ReadOnly, TempDir: tmp, Env: env}, os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	c.Cmd.Stdout = &buf
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(buf.String()), "ok "+tmp; got != want {
		t.Errorf("temp file in the private dir: %q, want %q", got, want)
	}
}

func TestIsolated(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	sock := filepath.Join(t.TempDir(), "s")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, "hello")
			c.Close()
		}
	}()
	tcpAddr, udpAddr := ln.Addr().String(), udp.LocalAddr().String()
	tcpPort := ln.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		level    Level
		op, want string
	}{
		{ReadOnly, "tcp " + tcpAddr, "ok"},
		{ReadOnly, "udp " + udpAddr, "ok"},
		{Isolated, "tcp " + tcpAddr, "EACCES"},
		{Isolated, "udp " + udpAddr, "EPERM"},
		{Isolated, "unix " + sock, "ok hello"},
		{Isolated, fmt.Sprintf("fastopen %d", tcpPort), "EPERM"},
		{Isolated, "socket 2 1 262", "EPERM"},  // MPTCP
		{Isolated, "socket 2 1 132", "EPERM"},  // SCTP over a stream socket
		{Isolated, "socket 2 3 1", "EPERM"},    // raw ICMP
		{Isolated, "socket 17 3 768", "EPERM"}, // AF_PACKET
		{Isolated, "socket 16 3 0", "EPERM"},   // netlink
		{Isolated, "socket 10 1 6", "ok"},      // TCP over IPv6 may be created (Landlock denies connect)
		{Isolated, "socket 1 2 0", "ok"},       // AF_UNIX datagram
		{Isolated, "iouring", "EPERM"},
		{Isolated, "listen", "EPERM"},
		{ReadOnly, "listen", "ok"},
		{Isolated, "write /dev/null", "ok"},
		{Isolated, "write " + filepath.Join(t.TempDir(), "x"), "EACCES"},
	} {
		if got := sandboxed(t, tc.level, tc.op); got != tc.want {
			t.Errorf("%s %s = %q, want %q", tc.level, tc.op, got, tc.want)
		}
	}
	// NoUnixSockets: the local server the isolated command could reach
	// above is out of reach too (gate serve's restricted mode).
	noUnix := Config{Level: Isolated, NoUnixSockets: true}
	for _, tc := range []struct{ op, want string }{
		{"unix " + sock, "EPERM"},
		{"socket 1 1 0", "EPERM"}, // AF_UNIX stream
		{"socket 1 2 0", "EPERM"}, // AF_UNIX datagram
		{"tcp " + tcpAddr, "EACCES"},
		{"socket 10 1 6", "ok"}, // isolated's own rules still apply
	} {
		if got := sandboxedWith(t, noUnix, tc.op); got != tc.want {
			t.Errorf("isolated, no unix sockets: %s = %q, want %q", tc.op, got, tc.want)
		}
	}
	if _, err := Command(context.Background(), Config{Level: ReadOnly, TempDir: t.TempDir(), NoUnixSockets: true}, "true"); err == nil {
		t.Error("NoUnixSockets at readonly: no error")
	}
}

// TestSimulatedABI runs the real kernel with an older ABI's configuration.
func TestSimulatedABI(t *testing.T) {
	needLandlock(t, Isolated)
	t.Setenv("GOVKIT_SANDBOX_SIMULATE", "landlock-abi=4")
	c, err := Command(context.Background(), Config{Level: Isolated, TempDir: t.TempDir()}, "/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Report.String(), "landlock abi 4: fs read-only (device ioctls not covered), tcp denied; seccomp: sockets denied, io_uring denied, tiocsti denied"; got != want {
		t.Errorf("report %q, want %q", got, want)
	}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "x")
	if got := sandboxed(t, ReadOnly, "write "+outside); got != "EACCES" {
		t.Errorf("abi 4 readonly write = %q", got)
	}
}

func TestCheckSimulated(t *testing.T) {
	for _, tc := range []struct {
		simulate string
		level    Level
		want     string // "" = available
	}{
		{"no-landlock", Off, ""},
		{"no-landlock", ReadOnly, "sandbox readonly cannot be enforced: landlock is not available: kernel has no landlock (simulated by GOVKIT_SANDBOX_SIMULATE)"},
		{"no-landlock", Isolated, "sandbox isolated cannot be enforced: landlock is not available: kernel has no landlock (simulated by GOVKIT_SANDBOX_SIMULATE)"},
		{"landlock-abi=3", ReadOnly, ""},
		{"landlock-abi=3", Isolated, "sandbox isolated cannot be enforced: landlock abi 3 has no network rules; isolated needs abi >= 4 (linux 6.7)"},
		{"landlock-abi=2", ReadOnly, "sandbox readonly cannot be enforced: landlock abi 2 does not cover truncate(2); readonly needs abi >= 3 (linux 6.2)"},
		{"no-seccomp", Isolated, "sandbox isolated cannot be enforced: seccomp is not available: kernel has no seccomp (simulated by GOVKIT_SANDBOX_SIMULATE)"},
		{"no-seccomp", Off, ""},
	} {
		t.Run(tc.simulate+"/"+string(tc.level), func(t *testing.T) {
			needLandlock(t, Isolated) // the simulation only takes away
			t.Setenv("GOVKIT_SANDBOX_SIMULATE", tc.simulate)
			err := Probe().Check(tc.level)
			_, cerr := Command(context.Background(), Config{Level: tc.level, TempDir: t.TempDir()}, "/bin/true")
			if tc.want == "" {
				if err != nil || cerr != nil {
					t.Fatalf("Check: %v, Command: %v", err, cerr)
				}
				return
			}
			var u *UnavailableError
			if !errors.As(err, &u) || err.Error() != tc.want {
				t.Errorf("Check = %v, want %s", err, tc.want)
			}
			if !errors.As(cerr, &u) || u.Level != tc.level {
				t.Errorf("Command = %v, want an *UnavailableError", cerr)
			}
		})
	}
}

// TestSimulationNeedsAllowSimulation: without the test-only switch the
// variable does nothing.
func TestSimulationNeedsAllowSimulation(t *testing.T) {
	needLandlock(t, Isolated)
	t.Setenv("GOVKIT_SANDBOX_SIMULATE", "no-landlock,no-seccomp")
	simulationAllowed.Store(false)
	defer simulationAllowed.Store(true)
	if err := Probe().Check(Isolated); err != nil {
		t.Fatal(err)
	}
}

func TestSetupError(t *testing.T) {
	needLandlock(t, ReadOnly)
	c, err := Command(context.Background(), Config{Level: ReadOnly, TempDir: t.TempDir()}, "no-such-command-govkit")
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Cmd.Stderr = &stderr
	err = c.Start()
	var se *SetupError
	if !errors.As(err, &se) || se.Stage != "lookup" || !strings.Contains(se.Err, "executable file not found") {
		t.Fatalf("Start = %v, want a lookup *SetupError", err)
	}
	if c.Cmd.ProcessState == nil || c.Cmd.ProcessState.ExitCode() != 127 {
		t.Errorf("child not reaped with 127: %v", c.Cmd.ProcessState)
	}
	if stderr.Len() != 0 {
		t.Errorf("child wrote to the command's stderr: %q", stderr.String())
	}
	// A command that runs and fails is the command's own exit code.
	c, _ = Command(context.Background(), Config{Level: ReadOnly, TempDir: t.TempDir()}, "/bin/sh", "-c", "exit 3")
	err = c.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("Run = %v, want exit 3", err)
	}
}

// TestForgedPlan: the plan variable set from a shell does not turn gate
// into a launcher that skips the pipeline.
func TestForgedPlan(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", `"$0" /bin/echo escaped; echo "rc=$?"`, os.Args[0])
	cmd.Env = append(os.Environ(), planEnv+`={"level":"readonly","landlock_abi":7,"fd":3}`)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); strings.Contains(got, "escaped") || !strings.Contains(got, "rc=127") || !strings.Contains(got, "not started by the sandbox") {
		t.Errorf("forged plan: %q", got)
	}
}

func TestDirAndEnv(t *testing.T) {
	needLandlock(t, ReadOnly)
	dir, tmp := t.TempDir(), t.TempDir()
	c, err := Command(context.Background(), Config{Level: ReadOnly, TempDir: tmp, Dir: dir, Env: []string{"PATH=/usr/bin:/bin", "TMPDIR=/elsewhere", "A=b"}},
		"sh", "-c", `echo "$PWD $TMPDIR $A ${GOVKIT_SANDBOX_CHILD-unset}"`)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Cmd.Stdout = &out
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(out.String()), dir+" "+tmp+" b unset"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func BenchmarkPlainTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSandboxedTrue(b *testing.B) { benchmarkSandboxed(b, ReadOnly) }

func BenchmarkSandboxedTrueIsolated(b *testing.B) { benchmarkSandboxed(b, Isolated) }

func benchmarkSandboxed(b *testing.B, level Level) {
	needLandlock(b, level)
	tmp := b.TempDir()
	for b.Loop() {
		c, err := Command(context.Background(), Config{Level: level, TempDir: tmp}, "/bin/true")
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
