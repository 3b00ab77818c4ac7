//go:build !linux

package sandbox

import (
	"fmt"
	"os"
)

func probeKernel() Support {
	return Support{LandlockError: "landlock is linux-only", SeccompError: "the seccomp filter is linux-only"}
}

// MaybeChild refuses a plan: Command never starts a child off Linux.
func MaybeChild() {
	if _, ok := os.LookupEnv(planEnv); ok {
		fmt.Fprintf(os.Stderr, "govkit sandbox: %s is set, but the sandbox is linux-only\n", planEnv)
		os.Exit(127)
	}
}
