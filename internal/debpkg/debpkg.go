// Package debpkg installs the Debian packages a test needs with apt-get,
// once across parallel test processes, when the tests run as root; otherwise
// it says why it did not, so that the caller can skip with a reason.
package debpkg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Why a package was not installed: the caller turns these into its own
// "not found" error saying how to install it by hand.
var (
	ErrNotRoot  = errors.New("not root")
	ErrNoAptGet = errors.New("no apt-get")
)

// Install runs `apt-get update` and `apt-get install` for packages unless
// found reports them present. Test packages run in parallel processes: one
// installs while the others wait on a lock file named after lock, then find
// them installed (apt-get update fails, rather than waits, on its lists
// lock). A failed apt-get step is an error ending with apt-get's last
// output.
func Install(lock string, packages []string, found func() bool) error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return ErrNoAptGet
	}
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "govkit-"+lock+"-install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if found() {
		return nil // another test process installed them
	}
	for _, args := range [][]string{
		{"update"},
		append([]string{"install", "-y", "--no-install-recommends"}, packages...),
	} {
		cmd := exec.Command("apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300", "-q"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get %s failed: %v\n%s", args[0], err, Tail(out))
		}
	}
	return nil
}

// Tail is the end of a long output, where a tool (apt-get, npm) says what
// went wrong.
func Tail(b []byte) []byte {
	const max = 4 << 10
	if len(b) > max {
		return b[len(b)-max:]
	}
	return b
}
