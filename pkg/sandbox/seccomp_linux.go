//go:build linux

package sandbox

import (
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// isolatedPolicies are isolated's seccomp filters, loaded one on top of
// the other; each refuses with EPERM and allows everything else:
//
//   - io_uring_setup/enter/register (io_uring would do socket work behind
//     seccomp's back), and socket(2) unless it is AF_UNIX, or AF_INET or
//     AF_INET6 with SOCK_STREAM (plus SOCK_NONBLOCK/SOCK_CLOEXEC, the only
//     other bits the kernel accepts) and protocol 0 or IPPROTO_TCP: so UDP,
//     raw, packet, netlink, SCTP and MPTCP are refused;
//   - socketpair(2) unless AF_UNIX;
//   - listen(2): a listen without bind makes the kernel pick a port, which
//     Landlock's bind rule does not see (tested on Linux 6.18, ABI 7), and
//     at listen seccomp cannot tell a TCP socket from a unix one; so no
//     server of any kind runs isolated;
//   - sendto, sendmsg and sendmmsg with MSG_FASTOPEN, which connect a TCP
//     socket without connect(2): on Linux 6.18 (Landlock ABI 7) such a
//     sendto to a loopback listener got through Landlock's TCP rule.
//
// The conditions compare whole 64-bit arguments, so a value with garbage in
// the upper half (which the kernel would drop) never counts as allowed.
//
// Why several filters: go-seccomp-bpf v1.6.0 does not reload the syscall
// number after an argument check, so any syscall comparison that follows
// a failed argument check in the same filter compares an argument instead.
// Each policy here therefore has at most one syscall with conditions, last,
// so a failed check falls through to the default action; a test holds
// every policy to that and runs them in a BPF interpreter.
func isolatedPolicies() []seccomp.Policy {
	const (
		unixFamily = unix.AF_UNIX
		inet       = unix.AF_INET
		inet6      = unix.AF_INET6
	)
	notEq := func(arg uint32, v uint64) seccomp.Condition {
		return seccomp.Condition{Argument: arg, Operation: seccomp.NotEqual, Value: v}
	}
	// socket(2) is refused when no allowed form matches:
	// an unknown family, or an inet family with another type or protocol.
	otherFamily := seccomp.ArgumentConditions{notEq(0, unixFamily), notEq(0, inet), notEq(0, inet6)}
	otherType := seccomp.ArgumentConditions{notEq(0, unixFamily)}
	for _, t := range []uint64{
		unix.SOCK_STREAM,
		unix.SOCK_STREAM | unix.SOCK_NONBLOCK,
		unix.SOCK_STREAM | unix.SOCK_CLOEXEC,
		unix.SOCK_STREAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC,
	} {
		otherType = append(otherType, notEq(1, t))
	}
	otherProtocol := seccomp.ArgumentConditions{notEq(0, unixFamily), notEq(2, 0), notEq(2, unix.IPPROTO_TCP)}
	refuse := func(groups ...seccomp.SyscallGroup) seccomp.Policy {
		return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
	}
	when := func(name string, conds ...seccomp.ArgumentConditions) seccomp.SyscallGroup {
		g := seccomp.SyscallGroup{Action: seccomp.ActionErrno}
		for _, c := range conds {
			g.NamesWithCondtions = append(g.NamesWithCondtions, seccomp.NameWithConditions{Name: name, Conditions: c})
		}
		return g
	}
	fastOpen := func(arg uint32) seccomp.ArgumentConditions {
		return seccomp.ArgumentConditions{{Argument: arg, Operation: seccomp.BitsSet, Value: unix.MSG_FASTOPEN}}
	}
	return []seccomp.Policy{
		refuse(
			seccomp.SyscallGroup{Action: seccomp.ActionErrno, Names: []string{"io_uring_setup", "io_uring_enter", "io_uring_register", "listen"}},
			when("socket", otherFamily, otherType, otherProtocol),
		),
		refuse(when("socketpair", seccomp.ArgumentConditions{notEq(0, unixFamily)})),
		refuse(when("sendto", fastOpen(3))),
		refuse(when("sendmsg", fastOpen(2))),
		refuse(when("sendmmsg", fastOpen(3))),
	}
}

// noUnixPolicy refuses socket(2) of AF_UNIX with EPERM
// (Config.NoUnixSockets), one more filter on top of isolated's.
func noUnixPolicy() seccomp.Policy {
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{{
		Action: seccomp.ActionErrno,
		NamesWithCondtions: []seccomp.NameWithConditions{{Name: "socket",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}}}},
	}}}
}

// seccomp_data layout (linux/seccomp.h) on the little-endian machines the
// guard supports: nr, arch, instruction pointer, then six 64-bit args.
const (
	dataNR      = 0
	dataArch    = 4
	dataArgLow1 = 16 + 8*1 // low half of args[1]
)

// guardProgram is the hand-written part of the filter, for both sandboxed
// levels. It kills the process on any call of another architecture than
// native, and refuses x32 calls (numbers with bit 30 set; no arm64 call has
// it) with ENOSYS, as go-seccomp-bpf does (a tracer's "skip" number -1 is
// one of them): that filter allows foreign calls, and either kind is a way
// around rules written with native numbers. And it refuses ioctl(TIOCSTI) and
// ioctl(TIOCLINUX) by the low 32 bits of the command, which is all the
// kernel reads. ioctlNR is the native ioctl number.
func guardProgram(native, ioctlNR uint32) []bpf.Instruction {
	const (
		retAllow  = unix.SECCOMP_RET_ALLOW
		retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		retKill   = unix.SECCOMP_RET_KILL_PROCESS
		retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		x32Bit    = 0x40000000
	)
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: dataArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: native, SkipTrue: 3},
		bpf.LoadAbsolute{Off: dataNR, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpLessThan, Val: x32Bit, SkipTrue: 2},
		bpf.RetConstant{Val: retENOSYS},
		bpf.RetConstant{Val: retKill},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: ioctlNR, SkipFalse: 4},
		bpf.LoadAbsolute{Off: dataArgLow1, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCLINUX, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	}
}

// nativeArch is the audit arch and ioctl number of the running
// architecture, from go-seccomp-bpf's tables; the guard's argument offsets
// are written for the little-endian amd64 and arm64.
func nativeArch(goarch string) (auditArch, ioctlNR uint32, err error) {
	if goarch != "amd64" && goarch != "arm64" {
		return 0, 0, fmt.Errorf("the seccomp filter is written for amd64 and arm64, not %s", goarch)
	}
	info, err := arch.GetInfo(goarch)
	if err != nil {
		return 0, 0, err
	}
	return uint32(info.ID), uint32(info.SyscallNames["ioctl"]), nil
}
