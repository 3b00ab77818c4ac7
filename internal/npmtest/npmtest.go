// Package npmtest installs pinned npm packages into a cache directory for tests that run a real program from the npm registry (gate mcp's MCP servers).
//
// Issue 17 asks for gate mcp to be tested against a real MCP server,
// @modelcontextprotocol/server-filesystem, installed with the machine's
// node and npm. Like internal/pgtest for PostgreSQL: when node or npm is
// missing, a test running as root installs Debian's nodejs and npm packages
// (CI runs as root on a clean machine); any other test skips and says what
// is missing and how to install it. Packages are installed once per version
// and reused: $GOVKIT_NPMTEST_CACHE, else the user's cache directory.
package npmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/govkit/govkit/internal/debpkg"
)

// NotFoundError says that node or npm is not installed and why it was not
// installed for the test.
type NotFoundError struct{ Why string }

func (e *NotFoundError) Error() string { return "npmtest: node and npm not found: " + e.Why }

var (
	findOnce          sync.Once
	findNode, findNPM string
	findErr           error
)

// Find returns the paths of node and npm. When either is missing and we run
// as root, it installs Debian's nodejs and npm packages with apt-get once
// per process; otherwise the error is a *NotFoundError saying how to
// install them.
func Find() (node, npm string, err error) {
	findOnce.Do(func() {
		if findNode, findNPM = lookup(); findNode != "" && findNPM != "" {
			return
		}
		err := debpkg.Install("npmtest", []string{"nodejs", "npm"}, func() bool { n, p := lookup(); return n != "" && p != "" })
		switch {
		case errors.Is(err, debpkg.ErrNotRoot):
			findErr = &NotFoundError{Why: "not root, so not installing them; install them " +
				"(Debian/Ubuntu: sudo apt-get install nodejs npm) or put node and npm in PATH"}
			return
		case errors.Is(err, debpkg.ErrNoAptGet):
			findErr = &NotFoundError{Why: "no apt-get to install the nodejs and npm packages with; install them and put node and npm in PATH"}
			return
		case err != nil:
			findErr = fmt.Errorf("npmtest: node or npm not found, and %w", err)
			return
		}
		if findNode, findNPM = lookup(); findNode == "" || findNPM == "" {
			findErr = errors.New("npmtest: apt-get installed nodejs and npm but node or npm is still not found")
		}
	})
	return findNode, findNPM, findErr
}

func lookup() (node, npm string) {
	for _, name := range []string{"node", "nodejs"} {
		if p, err := exec.LookPath(name); err == nil {
			node = p
			break
		}
	}
	npm, _ = exec.LookPath("npm")
	return node, npm
}

// CacheDir is where packages are installed: $GOVKIT_NPMTEST_CACHE, else
// govkit/npmtest in the user's cache directory, else in the temporary
// directory.
func CacheDir() string {
	if d := os.Getenv("GOVKIT_NPMTEST_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "govkit", "npmtest")
	}
	return filepath.Join(os.TempDir(), "govkit-npmtest")
}

// pinned is an exact package version: name@1.2.3 (a scope allowed). A
// range would make the test depend on what the registry published last.
var pinned = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*@[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// Bin installs spec (name@version, exact) into the cache, once, and returns
// the path of its program bin (node_modules/.bin/BIN). An error wrapping
// *NotFoundError means node or npm is missing and could not be installed.
func Bin(spec, bin string) (string, error) {
	if !pinned.MatchString(spec) {
		return "", fmt.Errorf("npmtest: %q is not name@version with an exact version", spec)
	}
	_, npm, err := Find()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(CacheDir(), strings.NewReplacer("/", "+", "@", "_").Replace(spec))
	path := filepath.Join(dir, "node_modules", ".bin", bin)
	if err := installPackage(npm, spec, dir); err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("npmtest: %s installed, but it has no program %s: %v", spec, bin, err)
	}
	return path, nil
}

// installPackage runs npm install into dir unless an earlier run finished
// there (its marker file exists); concurrent test processes take turns.
func installPackage(npm, spec, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	marker := filepath.Join(dir, ".installed")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	// --ignore-scripts: nothing from the registry runs at install time;
	// --no-save with a prefix: nothing outside dir changes.
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--no-save", "--ignore-scripts",
		"--prefix", dir, spec)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(CacheDir(), ".npm"), "npm_config_update_notifier=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npmtest: npm install %s: %v\n%s", spec, err, debpkg.Tail(out))
	}
	return os.WriteFile(marker, []byte(spec+"\n"), 0o644)
}

// Skip skips t when err says node or npm is missing, and fails it on any
// other error.
func Skip(t testing.TB, err error) {
	t.Helper()
	var nf *NotFoundError
	if errors.As(err, &nf) {
		t.Skip(err.Error())
	}
	t.Fatal(err)
}
