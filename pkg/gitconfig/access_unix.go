//go:build unix

package gitconfig

import (
	"errors"
	"io/fs"
	"syscall"
)

// searchable reports whether access(path, X_OK) succeeds, which is git's
// test for objects and refs.
func searchable(path string) bool {
	const xOK = 1
	return syscall.Access(path, xOK) == nil
}

// missing reports whether err means the file does not exist, in the two
// ways git accepts for a missing include (ENOENT, ENOTDIR).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
