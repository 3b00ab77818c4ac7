//go:build linux || darwin || freebsd

package convstore

import (
	"io/fs"
	"syscall"
)

// canWrite asks the kernel whether this process may write path (access(2)
// with W_OK): false for a file mode that forbids it and for a read-only
// mount, even for root. A copy of pkg/store/sqlite's, which is unexported.
func canWrite(path string) error {
	if err := syscall.Access(path, 0x2); err != nil { // W_OK
		return &fs.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}
