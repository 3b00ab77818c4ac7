//go:build unix

package receiptkey

import (
	"io/fs"
	"os"
	"syscall"
)

// permsMatter: on Unix the mode bits say who may read the key.
const permsMatter = true

// owner reports the file's owner and whether it is the current user.
func owner(fi fs.FileInfo) (uid int, mine bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, true
	}
	return int(st.Uid), int(st.Uid) == os.Getuid()
}

// syncDir makes the new key's link durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
