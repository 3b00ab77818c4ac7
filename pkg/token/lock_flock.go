//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package token

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive flock(2) on dir, so that two `auditd token`
// commands editing files there do not lose each other's change (each reads,
// edits and renames a new file over the old one, so the file itself cannot
// carry the lock).
func lockDir(dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		d.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}
