package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData lays out struct seccomp_data for x/net/bpf's interpreter,
// which loads 32-bit words big-endian: each word the program reads is put
// where a little-endian kernel would have it, in the interpreter's order.
func seccompData(auditArch uint32, nr int, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[dataNR:], uint32(nr))
	binary.BigEndian.PutUint32(b[dataArch:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))       // low half
		binary.BigEndian.PutUint32(b[16+8*i+4:], uint32(a>>32)) // high half
	}
	return b
}

// verdict runs every program on one call and returns the action the kernel
// would take: the lowest-valued (most restrictive) of all.
func verdict(t *testing.T, progs [][]bpf.Instruction, in []byte) string {
	t.Helper()
	worst := uint32(unix.SECCOMP_RET_ALLOW)
	for _, p := range progs {
		vm, err := bpf.NewVM(p)
		if err != nil {
			t.Fatal(err)
		}
		v, err := vm.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		// Actions are ordered by the signed value of the top bits (KILL_PROCESS is negative).
		if int32(uint32(v)&unix.SECCOMP_RET_ACTION_FULL) < int32(worst&unix.SECCOMP_RET_ACTION_FULL) {
			worst = uint32(v)
		}
	}
	switch {
	case worst == unix.SECCOMP_RET_ALLOW:
		return "allow"
	case worst == unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM):
		return "EPERM"
	case worst == unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS):
		return "ENOSYS"
	case worst == unix.SECCOMP_RET_KILL_PROCESS:
		return "kill"
	}
	return fmt.Sprintf("%#x", worst)
}

func isolatedPrograms(t *testing.T) (native uint32, progs [][]bpf.Instruction) {
	t.Helper()
	native, ioctlNR, err := nativeArch(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	progs = append(progs, guardProgram(native, ioctlNR))
	for _, p := range isolatedPolicies() {
		insts, err := p.Assemble()
		if err != nil {
			t.Fatal(err)
		}
		progs = append(progs, insts)
	}
	return native, progs
}

// TestIsolatedPolicies runs the assembled filters in a BPF interpreter.
func TestIsolatedPolicies(t *testing.T) {
	native, progs := isolatedPrograms(t)
	info, _ := arch.GetInfo(runtime.GOARCH)
	nr := func(name string) int {
		n, ok := info.SyscallNames[name]
		if !ok {
			t.Fatalf("no syscall %s", name)
		}
		return n
	}
	const garbage = 0xdead_0000_0000_0000
	stream, dgram := uint64(unix.SOCK_STREAM), uint64(unix.SOCK_DGRAM)
	for _, tc := range []struct {
		name string
		call string
		args []uint64
		want string
	}{
		{"tcp", "socket", []uint64{unix.AF_INET, stream, 0}, "allow"},
		{"tcp6 nonblock cloexec", "socket", []uint64{unix.AF_INET6, stream | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, unix.IPPROTO_TCP}, "allow"},
		{"unix dgram", "socket", []uint64{unix.AF_UNIX, dgram, 0}, "allow"},
		{"udp", "socket", []uint64{unix.AF_INET, dgram, 0}, "EPERM"},
		{"udp6 cloexec", "socket", []uint64{unix.AF_INET6, dgram | unix.SOCK_CLOEXEC, unix.IPPROTO_UDP}, "EPERM"},
		{"raw", "socket", []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, "EPERM"},
		{"mptcp", "socket", []uint64{unix.AF_INET, stream, unix.IPPROTO_MPTCP}, "EPERM"},
		{"sctp stream", "socket", []uint64{unix.AF_INET6, stream, unix.IPPROTO_SCTP}, "EPERM"},
		{"packet", "socket", []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0x0300}, "EPERM"},
		{"netlink", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, 0}, "EPERM"},
		{"vsock", "socket", []uint64{unix.AF_VSOCK, stream, 0}, "EPERM"},
		{"tcp, garbage family high bits", "socket", []uint64{garbage | unix.AF_INET, stream, 0}, "EPERM"},
		{"tcp, garbage type high bits", "socket", []uint64{unix.AF_INET, garbage | stream, 0}, "EPERM"},
		{"socketpair unix", "socketpair", []uint64{unix.AF_UNIX, stream, 0}, "allow"},
		{"socketpair inet", "socketpair", []uint64{unix.AF_INET, stream, 0}, "EPERM"},
		{"io_uring_setup", "io_uring_setup", []uint64{1, 0}, "EPERM"},
		{"io_uring_enter", "io_uring_enter", nil, "EPERM"},
		{"io_uring_register", "io_uring_register", nil, "EPERM"},
		{"sendto", "sendto", []uint64{3, 0, 1, 0}, "allow"},
		{"sendto fastopen", "sendto", []uint64{3, 0, 1, unix.MSG_FASTOPEN | unix.MSG_NOSIGNAL}, "EPERM"},
		{"sendmsg fastopen", "sendmsg", []uint64{3, 0, unix.MSG_FASTOPEN}, "EPERM"},
		{"sendmmsg fastopen", "sendmmsg", []uint64{3, 0, 1, unix.MSG_FASTOPEN}, "EPERM"},
		{"listen", "listen", []uint64{3, 1}, "EPERM"},
		{"connect", "connect", []uint64{3, 0, 16}, "allow"},
		{"read", "read", []uint64{0, 0, 1}, "allow"},
		{"ioctl TCGETS", "ioctl", []uint64{0, unix.TCGETS}, "allow"},
		{"ioctl TIOCSTI", "ioctl", []uint64{0, unix.TIOCSTI}, "EPERM"},
		{"ioctl TIOCSTI, garbage high bits", "ioctl", []uint64{0, garbage | unix.TIOCSTI}, "EPERM"},
		{"ioctl TIOCLINUX", "ioctl", []uint64{0, unix.TIOCLINUX}, "EPERM"},
	} {
		if got := verdict(t, progs, seccompData(native, nr(tc.call), tc.args...)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// A call of another architecture (i386 socketcall by int 0x80) kills,
	// and an x32 call (ioctl is 514 there) is refused, readonly too.
	ro := progs[:1]
	if got := verdict(t, progs, seccompData(uint32(arch.I386.ID), arch.I386.SyscallNames["socketcall"], 1)); got != "kill" {
		t.Errorf("i386 socketcall: %s, want kill", got)
	}
	if got := verdict(t, ro, seccompData(uint32(arch.I386.ID), arch.I386.SyscallNames["ioctl"], 0, unix.TIOCSTI)); got != "kill" {
		t.Errorf("readonly i386 ioctl: %s, want kill", got)
	}
	if got := verdict(t, ro, seccompData(native, 0x40000000|514, 0, unix.TIOCSTI)); got != "ENOSYS" {
		t.Errorf("readonly x32 ioctl: %s, want ENOSYS", got)
	}
	if got := verdict(t, ro, seccompData(native, nr("ioctl"), 0, unix.TIOCSTI)); got != "EPERM" {
		t.Errorf("readonly ioctl TIOCSTI: %s, want EPERM", got)
	}
	if got := verdict(t, ro, seccompData(native, nr("socket"), unix.AF_INET, dgram, 0)); got != "allow" {
		t.Errorf("readonly udp socket: %s, want allow", got)
	}
}

// TestIsolatedPoliciesShape holds each policy to the rule that works around
// go-seccomp-bpf v1.6.0 not reloading the syscall number after an argument
// check: at most one syscall with conditions per policy, and it comes last.
func TestIsolatedPoliciesShape(t *testing.T) {
	for i, p := range append(isolatedPolicies(), noUnixPolicy()) {
		var conditional []string
		for g, group := range p.Syscalls {
			for _, nc := range group.NamesWithCondtions {
				if g != len(p.Syscalls)-1 || len(group.Names) > 0 {
					t.Errorf("policy %d: conditional %s is not in the last group alone", i, nc.Name)
				}
				if len(conditional) == 0 || conditional[len(conditional)-1] != nc.Name {
					conditional = append(conditional, nc.Name)
				}
			}
		}
		if len(conditional) > 1 {
			t.Errorf("policy %d has conditions on %v; one syscall at most", i, conditional)
		}
	}
}
