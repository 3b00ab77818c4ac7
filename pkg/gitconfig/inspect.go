package gitconfig

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// Risk is one risky setting.
type Risk struct {
	Key    string // canonical lower-case key, subsection kept as written: "core.fsmonitor", "diff.foo.textconv", "alias.lg"
	Source string // "path/to/file:LINE" of the line that set it (path as opened)
}

const (
	maxFileSize     = 1 << 20 // bound on every file read
	maxIncludeDepth = 10      // git's MAX_INCLUDE_DEPTH
)

// Inspect finds the repository that git would use when run in dir, reads
// its configuration with all includes, and returns the risky settings in
// file order. Outside a repository it returns (nil, nil). An unreadable or
// malformed config gives an error naming file and line: callers should
// then assume the worst.
//
// The repository is found as git finds it: walking up from dir (with
// symlinks resolved, like git's getcwd), each directory is checked for a
// .git directory, a .git file ("gitdir: PATH", as in linked worktrees and
// submodules) and for being a bare repository itself. Every includeIf is
// read, whatever its condition, since one that might apply must be read.
//
// Inspect reads more than git may (the linked worktree's own config,
// config.worktree without extensions.worktreeConfig, every includeIf) and
// calls each risky entry risky even if a later one overrides it; it only
// over-reports. It ignores the environment (GIT_DIR, GIT_CONFIG_*, ...),
// the user's and system configs, and git's ownership, ceiling and file-system boundary checks.
func Inspect(dir string) ([]Risk, error) {
	gitDir, err := findGitDir(dir)
	if err != nil || gitDir == "" {
		return nil, err
	}
	common, err := commonDir(gitDir)
	if err != nil {
		return nil, err
	}
	// git reads COMMONDIR/config and, with extensions.worktreeConfig,
	// GITDIR/config.worktree. A linked worktree's GITDIR/config is
	// not read by git, but reading it can only over-report.
	files := []string{filepath.Join(common, "config")}
	if common != gitDir {
		files = append(files, filepath.Join(gitDir, "config"))
	}
	files = append(files, filepath.Join(gitDir, "config.worktree"))

	var r reader
	for _, f := range files {
		data, err := readFile(f)
		if missing(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("gitconfig: %w", err)
		}
		if err := r.parse(f, data, 0); err != nil {
			return nil, err
		}
	}
	return append(r.risks, readHooks(common, r.hooksPath)...), nil
}

// readOnlyHooks are the hooks that read-only commands trigger: git status
// and git diff refresh the index, which runs post-index-change.
var readOnlyHooks = []string{"post-index-change"}

// readHooks reports the hooks in the hooks directory (core.hooksPath, or
// COMMONDIR/hooks) that read-only commands would run. Hooks are not config,
// but they run programs all the same.
func readHooks(common, hooksPath string) []Risk {
	dir := filepath.Join(common, "hooks")
	if hooksPath != "" {
		dir = hooksPath
		if strings.HasPrefix(dir, "~/") {
			if home, err := os.UserHomeDir(); err == nil {
				dir = filepath.Join(home, dir[2:])
			}
		} else if !filepath.IsAbs(dir) {
			// A relative core.hooksPath is relative to where hooks run:
			// the top of the work tree, next to the common .git.
			dir = filepath.Join(filepath.Dir(common), dir)
		}
	}
	var risks []Risk
	for _, h := range readOnlyHooks {
		p := filepath.Join(dir, h)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			risks = append(risks, Risk{Key: "hooks." + h, Source: p})
		}
	}
	return risks
}

// reader collects the risks of a config file and the files it includes.
type reader struct {
	risks     []Risk
	hooksPath string // the last core.hooksPath seen
}

// parse handles the contents of the config file at path, which is nested
// depth includes deep.
func (r *reader) parse(path string, data []byte, depth int) error {
	entries, err := Parse(path, data)
	if err != nil {
		return err
	}
	for _, e := range entries {
		at := fmt.Sprintf("%s:%d", path, e.Line)
		if isInclude(e.Key) {
			if err := r.include(at, path, e, depth); err != nil {
				return err
			}
			continue
		}
		value := e.Value
		if e.NoValue {
			value = "true"
		}
		if e.Key == "core.hookspath" {
			r.hooksPath = value
		}
		if Risky(e.Key, value) {
			r.risks = append(r.risks, Risk{Key: e.Key, Source: at})
		}
	}
	return nil
}

// include reads the file named by the include directive e, found at "at"
// in the file from.
func (r *reader) include(at, from string, e Entry, depth int) error {
	if e.NoValue {
		return fmt.Errorf("gitconfig: %s: include path has no value", at)
	}
	if e.Value == "" {
		return nil // git reads nothing for an empty path
	}
	path, err := includePath(from, e.Value)
	if err != nil {
		return fmt.Errorf("gitconfig: %s: include %q: %w", at, e.Value, err)
	}
	data, err := readFile(path)
	if missing(err) {
		return nil // git skips missing includes
	}
	if err != nil {
		return fmt.Errorf("gitconfig: %s: include: %w", at, err)
	}
	// Like git, count only includes that exist; this stops include loops.
	if depth+1 > maxIncludeDepth {
		return fmt.Errorf("gitconfig: %s: includes nested more than %d deep (circular include?)", at, maxIncludeDepth)
	}
	return r.parse(path, data, depth+1)
}

// isInclude reports whether key is include.path or includeIf.<cond>.path.
// git ignores "includeIf.path" (no condition) and "include.<x>.path".
func isInclude(key string) bool {
	section, name, hasSub := splitKey(key)
	if name != "path" {
		return false
	}
	return section == "include" && !hasSub || section == "includeif" && hasSub
}

// includePath resolves an include path as git does: "~/" and "~user/" are
// home directories, and a relative path is relative to the directory of
// the including file. The result is not cleaned, so that ".." is resolved
// by the file system after any symlinks, as it is for git.
func includePath(from, p string) (string, error) {
	if rest, ok := strings.CutPrefix(p, "~"); ok {
		name, tail, _ := strings.Cut(rest, "/")
		var home string
		if name == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			home = h
		} else {
			u, err := user.Lookup(name)
			if err != nil {
				return "", err
			}
			home = u.HomeDir
		}
		p = home + "/" + tail
	} else if strings.HasPrefix(p, "%(prefix)/") {
		// Relative to git's installation, which we cannot know.
		return "", errors.New("cannot expand %(prefix)")
	}
	if !filepath.IsAbs(p) {
		p = from[:strings.LastIndexAny(from, `/`+string(filepath.Separator))+1] + p
	}
	return p, nil
}

// readFile reads a regular file of at most maxFileSize bytes. Anything else
// is an error: a FIFO or device could block or never end.
func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("not a regular file")}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("file larger than 1 MiB")}
	}
	return data, nil
}
