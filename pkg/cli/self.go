package cli

import (
	"os"
	"path/filepath"
)

// SelfPath is this binary's absolute path with symlinks resolved, for
// commands that print a command line to register elsewhere (an agent's hook
// settings): the agent then does not depend on its PATH. name when unknown.
func SelfPath(name string) string {
	p, err := os.Executable()
	if err != nil {
		return name
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}
