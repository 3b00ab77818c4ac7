package cli

import (
	"os"

	"github.com/govkit/govkit/pkg/atomicfile"
)

// WriteURLFile writes url and a newline to path, a daemon's --url-file:
// replaced atomically (mode 0644), so a script waiting for it reads the
// whole URL or nothing. With port 0 it is how a script learns the address
// that was bound, with no race for a port chosen in advance. remove
// deletes the file, for a clean stop, so nothing points at a dead port;
// flag names the option in the error.
func WriteURLFile(flag, path, url string) (remove func(), err error) {
	if err := atomicfile.Write(path, []byte(url+"\n"), 0o644); err != nil {
		return nil, Failf("%s: %v", flag, err).WithHint("pass a FILE in a directory this process can write")
	}
	return func() { os.Remove(path) }, nil
}
