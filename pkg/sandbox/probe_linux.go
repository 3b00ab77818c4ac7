package sandbox

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlock_create_ruleset flags (uapi linux/landlock.h).
const (
	landlockCreateRulesetVersion = 1 << 0
	landlockCreateRulesetErrata  = 1 << 1
	landlockErratumScopeSignal   = 1 << 1 // erratum 2: signal scoping fixed
)

func probeKernel() Support {
	var s Support
	s.LandlockABI, s.LandlockError = probeLandlock()
	if err := probeSeccomp(); err != "" {
		s.SeccompError = err
	} else {
		s.Seccomp = true
	}
	return s
}

// probeLandlock asks the kernel its Landlock ABI with the raw syscall
// rather than through go-landlock, so the sandbox picks the configuration
// for exactly that ABI instead of letting a best-effort mode choose.
func probeLandlock() (int, string) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, landlockCreateRulesetVersion)
	switch e {
	case 0:
	case unix.ENOSYS:
		return 0, "kernel built without landlock (ENOSYS)"
	case unix.EOPNOTSUPP:
		return 0, "landlock disabled at boot (EOPNOTSUPP; add landlock to the lsm= kernel parameter)"
	default:
		return 0, "landlock_create_ruleset: " + e.Error()
	}
	abi := int(v)
	if abi >= 6 {
		errata, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, landlockCreateRulesetErrata)
		if e != 0 || errata&landlockErratumScopeSignal == 0 {
			abi = 5
		}
	}
	return min(abi, maxABI), ""
}

// probeSeccomp checks that filters can return the actions the sandbox
// uses, and that the guard is written for this architecture.
func probeSeccomp() string {
	if _, _, err := nativeArch(runtime.GOARCH); err != nil {
		return err.Error()
	}
	for _, action := range []uint32{unix.SECCOMP_RET_ERRNO, unix.SECCOMP_RET_KILL_PROCESS} {
		_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
		if e != 0 {
			return "seccomp(SECCOMP_GET_ACTION_AVAIL): " + e.Error()
		}
	}
	return ""
}
