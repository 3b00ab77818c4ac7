//go:build !unix

package token

import "io/fs"

// unsafeMode is false where permission bits do not say who may write.
func unsafeMode(fs.FileMode) bool { return false }
