package gitconfig

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// findGitDir returns the git directory that git would use when run in dir,
// or "" when dir is not inside a repository. It follows git's discovery
// (setup.c): the first directory on the way up that has a .git directory
// that is a valid git directory, has a .git file, or is itself a valid git
// directory (a bare repository, or the inside of a .git directory).
//
// Getting this exactly right matters: a look-alike .git that git would pass
// over must not hide the repository that git does use.
func findGitDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("gitconfig: %w", err)
	}
	// git walks up from its physical working directory (getcwd), so
	// "link/.." is the parent of the link's target.
	d, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("gitconfig: %w", err)
	}
	for {
		gitDir, err := gitDirAt(d)
		if err != nil || gitDir != "" {
			return gitDir, err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", nil
		}
		d = parent
	}
}

// gitDirAt checks one directory on the way up.
func gitDirAt(dir string) (string, error) {
	dotGit := filepath.Join(dir, ".git")
	// Like git, treat any failure to stat .git as its absence.
	if fi, err := os.Stat(dotGit); err == nil {
		if fi.Mode().IsRegular() {
			return readGitFile(dotGit)
		}
		if ok, err := isGitDir(dotGit); ok || err != nil {
			return dotGit, err
		}
	}
	if ok, err := isGitDir(dir); ok || err != nil {
		return dir, err
	}
	return "", nil
}

// readGitFile follows a .git file. Unlike a bad .git directory, which git
// passes over, a bad .git file makes git stop with an error.
func readGitFile(path string) (string, error) {
	data, err := readFile(path)
	if err != nil {
		return "", fmt.Errorf("gitconfig: %w", err)
	}
	rest, ok := bytes.CutPrefix(data, []byte("gitdir: "))
	if !ok {
		return "", fmt.Errorf("gitconfig: %s: invalid gitfile format", path)
	}
	target := strings.TrimRight(string(rest), "\r\n")
	if target == "" {
		return "", fmt.Errorf("gitconfig: %s: no path in gitfile", path)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Dir(path) + string(filepath.Separator) + target
	}
	// Resolve symlinks and ".." as git does (realpath), which also
	// makes the result safe to filepath.Join.
	gitDir, err := filepath.EvalSymlinks(target)
	if err != nil {
		return "", fmt.Errorf("gitconfig: %s: %w", path, err)
	}
	ok, err = isGitDir(gitDir)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("gitconfig: %s: %s is not a git repository", path, target)
	}
	return gitDir, nil
}

// isGitDir mirrors git's is_git_directory: a valid HEAD, and objects and
// refs that git can search in the common directory.
func isGitDir(dir string) (bool, error) {
	if !validHead(filepath.Join(dir, "HEAD")) {
		return false, nil
	}
	common, err := commonDir(dir)
	if err != nil {
		return false, err
	}
	return searchable(filepath.Join(common, "objects")) && searchable(filepath.Join(common, "refs")), nil
}

// validHead mirrors git's validate_headref: HEAD is a symlink into refs/,
// a symbolic ref "ref: refs/...", or a detached object name.
func validHead(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		return err == nil && strings.HasPrefix(target, "refs/")
	}
	// git would open a FIFO too, and hang; read only regular files.
	if !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 255) // git reads no more
	n, _ := io.ReadFull(f, buf)
	buf = buf[:n]
	if rest, ok := bytes.CutPrefix(buf, []byte("ref:")); ok {
		if bytes.HasPrefix(bytes.TrimLeft(rest, " \t\n\r"), []byte("refs/")) {
			return true
		}
	}
	return len(buf) >= 40 && isHex(buf[:40])
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// commonDir returns the directory holding the shared config, objects and
// refs: gitDir itself, or for a linked worktree the directory named by
// gitDir/commondir (relative to gitDir).
func commonDir(gitDir string) (string, error) {
	path := filepath.Join(gitDir, "commondir")
	if _, err := os.Lstat(path); err != nil {
		return gitDir, nil
	}
	data, err := readFile(path)
	if err != nil {
		return "", fmt.Errorf("gitconfig: %w", err)
	}
	if len(data) == 0 {
		return "", fmt.Errorf("gitconfig: %s: empty", path)
	}
	common := strings.TrimRight(string(data), "\r\n")
	if !filepath.IsAbs(common) {
		common = gitDir + string(filepath.Separator) + common
	}
	common, err = filepath.EvalSymlinks(common)
	if err != nil {
		return "", fmt.Errorf("gitconfig: %s: %w", path, err)
	}
	return common, nil
}
