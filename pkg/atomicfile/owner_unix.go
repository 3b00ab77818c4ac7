//go:build unix

package atomicfile

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives tmp, the file about to replace old, old's owner and
// group, calling chown only when they differ: a user rewriting a file that
// is already theirs needs no chown, which may ask for privilege.
func keepOwner(tmp *os.File, old fs.FileInfo) error {
	was, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	fi, err := tmp.Stat()
	if err != nil {
		return err
	}
	if now, ok := fi.Sys().(*syscall.Stat_t); ok && now.Uid == was.Uid && now.Gid == was.Gid {
		return nil
	}
	if err := tmp.Chown(int(was.Uid), int(was.Gid)); err != nil {
		return ownerError(was.Uid, was.Gid, err)
	}
	return nil
}
