package sessionloop

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Realpath canonicalizes a session's workspace root as seed 004 "Session
// Identity" asks before hashing it into the session key: ~ expanded,
// relative to dir (the working directory when empty), symlinks resolved,
// cleaned, slashes normalized, so that two spellings of one directory give
// one key (S-03). An empty root is dir itself. Like the seed's Python
// realpath (non-strict), a path that does not exist (yet) is resolved as
// far as it exists and the rest appended: a session is not refused for
// naming a workspace this machine cannot see.
func Realpath(root, dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("finding the working directory for workspace_root: %w", err)
		}
		dir = wd
	}
	p := root
	switch {
	case p == "":
		p = dir
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expanding ~ in workspace_root: %w", err)
		}
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	return filepath.ToSlash(resolveExisting(p)), nil
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// the clean, absolute path p and appends the rest.
func resolveExisting(p string) string {
	rest := ""
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(r, rest)
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrPermission) {
			// ENOTDIR, a loop: nothing sensible to resolve.
			return filepath.Join(p, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
