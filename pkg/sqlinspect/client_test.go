package sqlinspect

import (
	"strings"
	"testing"
)

type clientCase struct {
	argv        []string
	readOnly    bool
	repl        bool
	destructive bool
	detail      string // substring of Detail
}

func argv(s ...string) []string { return s }

var clientCases = []clientCase{
	// sqlite3
	{argv("sqlite3", "app.db", "SELECT count(*) FROM users"), true, false, false, "1 read-only statement"},
	{argv("sqlite3", "app.db"), false, true, false, "sqlite3 has no sql to run"},
	{argv("sqlite3"), false, true, false, "interactively"},
	{argv("sqlite3", "app.db", ".shell rm -rf /"), false, false, false, "dot-command .shell"},
	{argv("sqlite3", "app.db", ".tables"), false, false, false, "dot-command .tables"},
	{argv("sqlite3", "app.db", "SELECT writefile('/tmp/x','y')"), false, false, false, "writefile"},
	{argv("sqlite3", "-cmd", ".shell x", "app.db", "SELECT 1"), false, false, false, "dot-command .shell"},
	{argv("sqlite3", "-cmd", "PRAGMA foreign_keys", "app.db", "SELECT 1"), true, false, false, ""},
	{argv("sqlite3", "-cmd", "DELETE FROM t", "app.db", "SELECT 1"), false, false, true, "DELETE"},
	{argv("sqlite3", "-cmd", "SELECT 1", "app.db"), false, true, false, "interactively"},
	{argv("sqlite3", "app.db", "SELECT 1", "SELECT 2; SELECT 3"), true, false, false, "3 read-only statements"},
	{argv("sqlite3", "app.db", "BEGIN", "SELECT 1", "COMMIT"), true, false, false, ""},
	{argv("sqlite3", "app.db", "DELETE FROM users"), false, false, true, "statement 1 is DELETE"},
	{argv("sqlite3", "app.db", ""), false, false, false, "no statement"},
	{argv("sqlite3", "-readonly", "-json", "--header", "-separator", "|", "app.db", "SELECT 1", "-bail"), true, false, false, ""},
	{argv("sqlite3", "-lookaside", "64", "128", "app.db", "SELECT 1"), true, false, false, ""},
	{argv("sqlite3", "-init", "x.sql", "app.db", "SELECT 1"), false, false, false, "option -init runs a file"},
	{argv("sqlite3", "-init", "x.sql", "app.db"), false, false, false, "option -init runs a file"},
	{argv("mysql", "--tee=f"), false, false, false, "option --tee writes a file"},
	{argv("psql", "-o", "out", "-W"), false, false, false, "option -o writes a file"},
	{argv("sqlite3", "-unsafe-testing", "app.db", "SELECT 1"), false, false, false, "-unsafe-testing"},
	{argv("sqlite3", "-A", "-c", "x.zip"), false, false, false, "option -A runs an archive command"},
	{argv("sqlite3", "-append", "app.db", "SELECT 1"), false, false, false, "-append"},
	{argv("sqlite3", "-interactive", "app.db", "SELECT 1"), true, true, false, "forces interactive mode"},
	{argv("sqlite3", "-version"), true, false, false, "prints the version"},
	{argv("sqlite3", "--help"), true, false, false, "prints help"},
	{argv("sqlite3", "-bogus", "app.db", "SELECT 1"), false, false, false, "unknown option -bogus"},
	{argv("sqlite3", "-separator"), false, false, false, "needs a value"},
	{argv("sqlite3", "--", "app.db", "-- x\nSELECT 1"), true, false, false, ""},
	{argv("sqlite3", "app.db", "-- x\nSELECT 1"), false, false, false, "unknown option"},

	// psql
	{argv("psql", "-c", "SELECT 1"), true, false, false, ""},
	{argv("psql"), false, true, false, "psql has no sql to run"},
	{argv("psql", "mydb", "me"), false, true, false, "interactively"},
	{argv("psql", "-c", "\\! rm x"), false, false, false, "backslash meta-command \\!"},
	{argv("psql", "-c", "\\dt"), false, false, false, "\\dt"},
	{argv("psql", "-o", "out", "-c", "SELECT 1"), false, false, false, "option -o writes a file"},
	{argv("psql", "--output=out", "-c", "SELECT 1"), false, false, false, "option --output writes a file"},
	{argv("psql", "-L", "log", "-c", "SELECT 1"), false, false, false, "-L"},
	{argv("psql", "-f", "x.sql"), false, false, false, "option -f runs a file"},
	{argv("psql", "-c", "DELETE FROM users"), false, false, true, "DELETE"},
	{argv("psql", "-c", "SELECT 1", "-c", "DROP TABLE t"), false, false, true, "DROP"},
	{argv("psql", "-tAc", "SELECT 1", "-h", "db", "-U", "me", "-d", "postgres://x/y", "-X", "-1", "--csv"), true, false, false, ""},
	{argv("psql", "-cSELECT 1"), true, false, false, ""},
	{argv("psql", "--command", "SELECT 1", "--no-psqlrc", "--set=ON_ERROR_STOP=1"), true, false, false, ""},
	{argv("psql", "--comm=SELECT 1"), true, false, false, ""},
	{argv("psql", "--o=x", "-c", "SELECT 1"), false, false, false, "option --o writes a file"},
	{argv("psql", "--no", "-c", "SELECT 1"), false, false, false, "ambiguous option --no"},
	{argv("psql", "-v", "t=users", "-c", "SELECT * FROM :t"), false, false, false, "-v"},
	{argv("psql", "-c", "SELECT * FROM :t"), true, false, false, ""},
	{argv("psql", "-v", "x=1", "-c", "SELECT 1::int, a[1:2] FROM t"), true, false, false, ""},
	{argv("psql", "-s", "-c", "SELECT 1"), true, true, false, "asks for confirmation"},
	{argv("psql", "-W", "-c", "SELECT 1"), true, true, false, "prompts for a password"},
	{argv("psql", "-l"), true, false, false, "lists databases"},
	{argv("psql", "-V"), true, false, false, "prints the version"},
	{argv("psql", "--help=commands"), true, false, false, "help"},
	{argv("psql", "-Z", "-c", "SELECT 1"), false, false, false, "unknown option -Z"},
	{argv("psql", "-c"), false, false, false, "needs a value"},
	{argv("psql", "-c", "SELECT 1", "db", "user", "extra"), false, false, false, "unexpected argument extra"},
	{argv("psql", "-c", ""), false, false, false, "no statement"},
	{argv("psql", "-W", "-c", ""), false, false, false, "no statement"},

	// mysql / mariadb
	{argv("mysql", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mariadb", "--execute=SELECT 1"), true, false, false, ""},
	{argv("mysql"), false, true, false, "mysql has no sql to run"},
	{argv("mysql", "mydb"), false, true, false, "interactively"},
	{argv("mysql", "-e", "system rm x"), false, false, false, "client command system"},
	{argv("mysql", "-e", "SELECT 1; \\! rm x"), false, false, false, "client command \\!"},
	{argv("mysql", "-e", "DROP TABLE t"), false, false, true, "DROP"},
	{argv("mysql", "--tee=f", "-e", "SELECT 1"), false, false, false, "option --tee writes a file"},
	{argv("mysql", "--pager=less", "-e", "SELECT 1"), false, false, false, "--pager"},
	{argv("mysql", "--skip-pager", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--local-infile", "-e", "SELECT 1"), false, false, false, "--local-infile"},
	{argv("mysql", "--local-infile=0", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--enable-local-infile", "-e", "SELECT 1"), false, false, false, "local-infile"},
	{argv("mysql", "--loose-tee=x", "-e", "SELECT 1"), false, false, false, "writes a file"},
	{argv("mysql", "--defaults-file=x.cnf", "-e", "SELECT 1"), false, false, false, "--defaults-file"},
	{argv("mysql", "--defaults-extra-file", "x.cnf", "-e", "SELECT 1"), false, false, false, "--defaults-extra-file"},
	{argv("mysql", "--delimiter=//", "-e", "SELECT 1"), false, false, false, "--delimiter"},
	{argv("mysql", "-G", "-e", "SELECT 1"), false, false, false, "-G"},
	{argv("mysql", "--init-command=SET NAMES utf8", "-e", "SELECT 1"), false, false, false, "SET"},
	{argv("mysql", "--init-command=SELECT 1"), false, true, false, "interactively"},
	{argv("mysql", "-uroot", "-psecret", "-h", "db", "-P3306", "-D", "app", "-NBe", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "-u", "root", "-p", "-e", "SELECT 1"), true, true, false, "prompts for a password"},
	{argv("mysql", "--password", "-e", "SELECT 1"), true, true, false, "prompts for a password"},
	{argv("mysql", "--password=", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--password=x", "--skip_column_names", "--default-character-set=utf8mb4", "--ssl-mode", "REQUIRED", "-e", "SELECT 1", "app"), true, false, false, ""},
	{argv("mysql", "-V"), true, false, false, "prints the version"},
	{argv("mysql", "--help"), true, false, false, "prints help"},
	{argv("mysql", "--bogus", "-e", "SELECT 1"), false, false, false, "unknown option --bogus"},
	{argv("mysql", "-e", "SELECT 1", "db", "extra"), false, false, false, "unexpected argument extra"},
	{argv("mysql", "--batch=2", "-e", "SELECT 1"), false, false, false, "takes no value"},

	{argv("pg_dump", "x"), false, false, false, "not a supported sql client"},
	{argv(), false, false, false, "empty command"},
}

func TestInspectClient(t *testing.T) {
	for _, c := range clientCases {
		got := InspectClient(c.argv)
		if got.ReadOnly != c.readOnly || got.REPL != c.repl || got.Destructive != c.destructive ||
			!strings.Contains(got.Detail, c.detail) || got.Detail == "" {
			t.Errorf("InspectClient(%q) = %+v; want read-only %v, repl %v, destructive %v, detail ~ %q",
				c.argv, got, c.readOnly, c.repl, c.destructive, c.detail)
		}
	}
}

// Every option in the tables is accepted in at least its plain form: the
// tables are what the parser reads, so a typo there would fail closed.
func TestOptionTablesParse(t *testing.T) {
	for name, o := range sqliteOptions {
		args := []string{"sqlite3", "-" + name}
		switch o.arg {
		case needsArg:
			args = append(args, "v")
		case twoArgs:
			args = append(args, "1", "2")
		}
		if v := InspectClient(append(args, "app.db", "SELECT 1")); strings.Contains(v.Detail, "unknown option") {
			t.Errorf("sqlite3 -%s: %s", name, v.Detail)
		}
	}
	for _, g := range []struct {
		prog string
		opts *getopt
	}{{"psql", psqlOptions}, {"mysql", mysqlOptions}} {
		for name := range g.opts.long {
			if v := InspectClient([]string{g.prog, "--" + name + "=1"}); strings.Contains(v.Detail, "unknown option") {
				t.Errorf("%s --%s: %s", g.prog, name, v.Detail)
			}
		}
	}
}
