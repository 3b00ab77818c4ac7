// Package statedir names the directory where govkit keeps its local state
// (the incident spool, the receipt key): $XDG_STATE_HOME/govkit, or
// ~/.local/state/govkit.
package statedir

import (
	"errors"
	"os"
	"path/filepath"
)

// Dir is $XDG_STATE_HOME/govkit when XDG_STATE_HOME is an absolute path
// (the XDG spec ignores a relative one), else ~/.local/state/govkit.
func Dir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "govkit"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("no home directory: set XDG_STATE_HOME")
	}
	return filepath.Join(home, ".local", "state", "govkit"), nil
}
