//go:build !unix

package gitconfig

import (
	"errors"
	"io/fs"
	"os"
)

// searchable approximates git's access(path, X_OK) test for objects and
// refs where there is no access(2).
func searchable(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// missing reports whether err means the file does not exist.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist)
}
