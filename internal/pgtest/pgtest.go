// Package pgtest starts a throwaway real PostgreSQL cluster for tests, listening only on a Unix socket in a temporary directory.
//
// Issue 15 asks for the psql transaction guard (pkg/pgguard) to be tested
// against a real server, not a fake: Debian's postgresql package, a cluster
// the test creates with initdb and starts with pg_ctl. When initdb is
// missing, a test running as root installs the package (CI runs as root on
// a clean machine); any other test skips and says what is missing and how to
// install it. initdb and postgres refuse to run as root, so under root they
// run as the postgres system user (or nobody), and the test connects over
// the socket as the database superuser "postgres" with trust
// authentication: nothing listens on TCP.
package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/debpkg"
)

// Cluster is a running PostgreSQL server and its data directory.
type Cluster struct {
	// Dir holds the data directory ("data"), the server log ("log") and
	// the socket; it is PGHOST.
	Dir string
	// Port names the socket (.s.PGSQL.<Port>); nothing listens on TCP.
	Port int
	// User is the database superuser; Database the database to use.
	User, Database string
	// Bin is the directory of initdb, pg_ctl and postgres.
	Bin string

	cred *syscall.Credential // the server's OS user when we are root
	stop sync.Once
}

// port is fixed: every cluster has its own socket directory.
const port = 5432

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path
// is 108 bytes with its NUL).
const maxSocketPath = 107

// Start creates and starts a cluster for t, stopped and removed when the
// test ends. It skips t, with the reason, when PostgreSQL is not installed
// and cannot be installed; it fails t when a cluster cannot start.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin, err := Find()
	if err != nil {
		var nf *NotFoundError
		if errors.As(err, &nf) {
			t.Skip(err.Error())
		}
		t.Fatal(err)
	}
	// Not t.TempDir: its path is long (socket paths are limited) and
	// may lie under a directory the server's user cannot enter.
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c, err := startDir(bin, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// Options configure StartDir.
type Options struct {
	// Durable keeps the server's crash safety on (fsync, full_page_writes),
	// as a production server runs: a benchmark that compares commit rates
	// with SQLite's synchronous=FULL needs it. Tests do not, and run
	// faster without.
	Durable bool
}

// StartDir creates and starts a cluster in dir, which must be empty or not
// exist yet, be short enough for a socket path, and, when we run as root,
// lie under directories the postgres user may enter (such as /tmp). The
// caller stops it with Stop and removes dir. An error wrapping
// *NotFoundError means PostgreSQL is not installed and cannot be.
func StartDir(dir string, opts Options) (*Cluster, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	return startDir(bin, dir, opts)
}

func startDir(bin, dir string, opts Options) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if sock := filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port)); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("pgtest: socket path %s is longer than %d bytes: use a shorter directory", sock, maxSocketPath)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Port: port, User: "postgres", Database: "postgres", Bin: bin}
	if os.Geteuid() == 0 {
		cred, err := serverUser()
		if err != nil {
			return nil, err
		}
		c.cred = cred
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	// --no-sync and, unless Durable, fsync=off: a throwaway cluster need
	// not survive a crash, and syncing is most of initdb's time.
	if out, err := c.run("initdb", "-D", data, "-U", c.User, "--auth=trust", "--no-sync",
		"--no-instructions", "-E", "UTF8", "--locale=C"); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	conf := fmt.Sprintf(`
listen_addresses = ''
unix_socket_directories = '%s'
port = %d
max_connections = 60
`, strings.ReplaceAll(dir, "'", "''"), port)
	if opts.Durable {
		// PostgreSQL's defaults: fsync at every commit, full pages after a
		// checkpoint. The bigger buffer and WAL keep a write benchmark from
		// measuring checkpoints of a 16 MB cache instead of commits.
		conf += "shared_buffers = 128MB\nmax_wal_size = 1GB\n"
	} else {
		conf += "shared_buffers = 16MB\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
	}
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if out, err := c.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return nil, fmt.Errorf("pgtest: pg_ctl start: %v\n%s\nserver log:\n%s", err, out, log)
	}
	return c, nil
}

// Stop stops the server at once (pg_ctl -m immediate: nothing in it is
// worth a clean shutdown). Calling it again does nothing.
func (c *Cluster) Stop() error {
	var err error
	c.stop.Do(func() {
		if out, e := c.run("pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-m", "immediate", "-w", "stop"); e != nil {
			err = fmt.Errorf("pgtest: pg_ctl stop: %v\n%s", e, out)
		}
	})
	return err
}

// Env is what a client needs to connect, as NAME=value: append it to
// os.Environ() and a plain `psql -c …` reaches this cluster.
func (c *Cluster) Env() []string {
	return []string{
		"PGHOST=" + c.Dir,
		"PGPORT=" + strconv.Itoa(c.Port),
		"PGUSER=" + c.User,
		"PGDATABASE=" + c.Database,
	}
}

// Psql runs sql with psql (no psqlrc, stop at the first error, unaligned
// tuples only) and returns its standard output; it fails t on an error.
func (c *Cluster) Psql(t testing.TB, sql string) string {
	t.Helper()
	cmd := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-A", "-t", "-c", sql)
	cmd.Env = append(os.Environ(), c.Env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("psql -c %q: %v\n%s", sql, err, stderr.Bytes())
	}
	return stdout.String()
}

// run runs one of the server programs as the server's user.
func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.Bin, prog), args...)
	cmd.Dir = c.Dir
	cmd.Env = []string{"PATH=" + c.Bin + ":/usr/bin:/bin", "LC_ALL=C", "HOME=" + c.Dir}
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	// The server pg_ctl starts writes to the log file, not to our pipe,
	// but never wait on a pipe a daemon might still hold.
	cmd.WaitDelay = 5 * time.Second
	return cmd.CombinedOutput()
}

// serverUser is the OS user the server runs as under root: postgres when
// the package created it, else nobody.
func serverUser() (*syscall.Credential, error) {
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
	}
	return nil, fmt.Errorf("pgtest: running as root and no unprivileged user (postgres, nobody) to run the server: %w", errors.Join(errs...))
}

// NotFoundError says that PostgreSQL's server programs are not installed
// and why they were not installed for the test.
type NotFoundError struct{ Why string }

func (e *NotFoundError) Error() string {
	return "pgtest: PostgreSQL server programs (initdb, pg_ctl) not found: " + e.Why
}

var (
	findOnce sync.Once
	findBin  string
	findErr  error
)

// Find returns the directory of initdb and pg_ctl: in PATH, else Debian's
// /usr/lib/postgresql/<newest version>/bin. When neither has them and we run
// as root, it installs the postgresql package with apt-get once per
// process; otherwise the error is a *NotFoundError saying how to install.
func Find() (string, error) {
	findOnce.Do(func() {
		if findBin = lookup(); findBin != "" {
			return
		}
		err := debpkg.Install("pgtest", []string{"postgresql"}, func() bool { return lookup() != "" })
		switch {
		case errors.Is(err, debpkg.ErrNotRoot):
			findErr = &NotFoundError{Why: "not root, so not installing them; install them " +
				"(Debian/Ubuntu: sudo apt-get install postgresql) or put initdb and pg_ctl in PATH"}
			return
		case errors.Is(err, debpkg.ErrNoAptGet):
			findErr = &NotFoundError{Why: "no apt-get to install the postgresql package with; install PostgreSQL and put initdb and pg_ctl in PATH"}
			return
		case err != nil:
			findErr = fmt.Errorf("pgtest: initdb not found, and %w", err)
			return
		}
		if findBin = lookup(); findBin == "" {
			findErr = errors.New("pgtest: apt-get installed postgresql but initdb is still not found")
		}
	})
	return findBin, findErr
}

// lookup finds a directory holding both initdb and pg_ctl.
func lookup() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	// Newest major version first: 15 before 9.6.
	slices.SortFunc(matches, func(a, b string) int { return version(b) - version(a) })
	for _, m := range matches {
		dir := filepath.Dir(m)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir
		}
	}
	return ""
}

// version reads the major version of /usr/lib/postgresql/<v>/bin/initdb,
// ×100 so that 9.6 sorts below 10.
func version(path string) int {
	v := filepath.Base(filepath.Dir(filepath.Dir(path)))
	major, minor, _ := strings.Cut(v, ".")
	n, _ := strconv.Atoi(major)
	m, _ := strconv.Atoi(minor)
	return n*100 + m
}

var (
	shared    *Cluster
	sharedErr error
	databases atomic.Int64
)

// RunShared runs a package's tests (call it from TestMain: os.Exit(pgtest.RunShared(m)))
// with one cluster for all of them, which Shared returns: initdb and a
// start cost about a second, a database of its own per test
// (NewDatabase) a few milliseconds.
func RunShared(m *testing.M) int {
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		sharedErr = err
		return m.Run()
	}
	defer os.RemoveAll(dir)
	shared, sharedErr = StartDir(dir, Options{})
	if shared != nil {
		defer shared.Stop()
	}
	return m.Run()
}

// Shared returns the cluster RunShared started. It skips t when PostgreSQL
// is not installed and cannot be, and fails it when the cluster did not
// start.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	var nf *NotFoundError
	switch {
	case errors.As(sharedErr, &nf):
		t.Skip(sharedErr.Error())
	case sharedErr != nil:
		t.Fatal(sharedErr)
	case shared == nil:
		t.Fatal("pgtest: Shared without RunShared in TestMain")
	}
	return shared
}

// NewDatabase creates an empty database for t and returns its connection
// string (key=value, over the socket); it is dropped when t ends.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), databases.Add(1))
	if _, err := c.CreateDatabase(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd := exec.Command("psql", "-X", "-q", "-c", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		cmd.Env = append(os.Environ(), c.Env()...)
		cmd.Run() // best effort: the cluster goes at the end anyway
	})
	return c.DSN(name)
}

// CreateDatabase creates an empty database called name (letters, digits
// and underscores) and returns its connection string, for a caller that is
// not a test (a benchmark); it lives as long as the cluster.
func (c *Cluster) CreateDatabase(name string) (string, error) {
	cmd := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE "+name)
	cmd.Env = append(os.Environ(), c.Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("pgtest: CREATE DATABASE %s: %v\n%s", name, err, out)
	}
	return c.DSN(name), nil
}

// DSN is the key=value connection string of database on c's socket.
func (c *Cluster) DSN(database string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", c.Dir, c.Port, c.User, database)
}

// Restart stops the server at once (pg_ctl -m immediate, as a crash or a
// failover would), waits down, and starts it again on the same data
// directory and socket. Clients lose their connections meanwhile.
func (c *Cluster) Restart(down time.Duration) error {
	data := filepath.Join(c.Dir, "data")
	if out, err := c.run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
	time.Sleep(down)
	if out, err := c.run("pg_ctl", "-D", data, "-l", filepath.Join(c.Dir, "log"), "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pgtest: pg_ctl start: %v\n%s", err, out)
	}
	return nil
}
