//go:build linux || darwin || freebsd

package sqlitefile

import (
	"io/fs"
	"syscall"
)

// CanWrite asks the kernel whether this process may write path (access(2)
// with W_OK): false for a file mode that forbids it and for a read-only
// mount, even for root. The error is a *fs.PathError.
func CanWrite(path string) error {
	if err := syscall.Access(path, 0x2); err != nil { // W_OK
		return &fs.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}
