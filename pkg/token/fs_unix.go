//go:build unix

package token

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// unsafeMode reports whether group or others may write a file with mode m.
func unsafeMode(m fs.FileMode) bool { return m.Perm()&0o022 != 0 }

// keepOwner gives tmp, the file about to replace old, old's owner and group:
// a tokens file that root rewrites for the user auditd runs as must stay
// readable by that user.
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
		return fmt.Errorf("cannot give the new file the owner of the old one (uid %d, gid %d): %w", was.Uid, was.Gid, unwrapPathError(err))
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
