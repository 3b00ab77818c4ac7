//go:build unix

package token

import "io/fs"

// unsafeMode reports whether group or others may write a file with mode m.
func unsafeMode(m fs.FileMode) bool { return m.Perm()&0o022 != 0 }
