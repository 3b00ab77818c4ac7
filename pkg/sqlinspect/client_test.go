package sqlinspect

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/getopt"
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
	// Options are whole words read by pkg/getopt (issue 14): no =VALUE, no lone "-".
	{argv("sqlite3", "--cmd=SELECT 1", "app.db", "SELECT 1"), false, false, false, "unknown option --cmd=SELECT 1"},
	{argv("sqlite3", "-", "app.db", "SELECT 1"), false, false, false, "unknown option -"},
	{argv("sqlite3", "-lookaside", "64"), false, false, false, "option -lookaside needs a value"},
	{argv("sqlite3", "app.db", "SELECT 1", "-A", "x"), false, false, false, "option -A runs an archive command"},
	{argv("sqlite3", "-js", "app.db", "SELECT 1"), false, false, false, "unknown option -js"},

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
	{argv("psql", "--no", "-c", "SELECT 1"), false, false, false, "ambiguous option --no (--no-align, --no-password, --no-psqlrc, --no-readline)"},
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
	// my_getopt's prefixes, read by pkg/getopt's MyGetopt mode (issue 14).
	{argv("mysql", "--skip-local-infile", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--skip-local-infile=0", "-e", "SELECT 1"), false, false, false, "lets LOAD DATA read local files"}, // =0 reverses --skip-
	{argv("mysql", "--disable-local_infile=1", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--loose-skip-pager", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--skip-loose-pager", "-e", "SELECT 1"), false, false, false, "runs a program"}, // the last prefix decides
	{argv("mysql", "--enable-pager", "-e", "SELECT 1"), false, false, false, "runs a program"},
	{argv("mysql", "--skip-tee", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--skip-password", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--skip-plugin-dir", "-e", "SELECT 1"), false, false, false, "loads a plugin"}, // plugin_dir "0"
	{argv("mysql", "--skip-execute"), false, false, false, "statement 1"},                         // runs the SQL "0"
	{argv("mysql", "--local_infile=ON", "-e", "SELECT 1"), false, false, false, "lets LOAD DATA read local files"},
	{argv("mysql", "--local-infile=off", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--ho", "db", "-e", "SELECT 1"), true, false, false, ""},
	{argv("mysql", "--h", "db", "-e", "SELECT 1"), false, false, false, "ambiguous option --h (--help, --histignore, --host, --html)"},
	{argv("mysql", "--loose-bogus", "-e", "SELECT 1"), false, false, false, "unknown option --loose-bogus"},
	{argv("mysql", "--maximum-host=1", "-e", "SELECT 1"), false, false, false, "unknown option --maximum-host"},
	{argv("mysql", "--", "db"), false, true, false, "interactively"},
	{argv("mysql", "-e", "SELECT 1", "--", "-e"), true, false, false, ""}, // a database named -e
	{argv("mysql", "-e", "SELECT 1", "--", "db", "-e"), false, false, false, "unexpected argument -e"},
	{argv("mysql", "--", "db", "x"), false, false, false, "unexpected argument x"},

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

// Every option in the tables is accepted in its plain form, with the
// values its kind takes, and none is an abbreviation of another: the
// tables are what the parser reads, so a typo there would fail closed.
func TestOptionTablesParse(t *testing.T) {
	for _, g := range []struct {
		prog string
		c    *client
	}{{"sqlite3", sqliteClient}, {"psql", psqlClient}, {"mysql", mysqlClient}} {
		for name, o := range g.c.opts {
			written := name
			if g.c == sqliteClient {
				written = name[1:] // sqlite3 -cmd
			}
			args := []string{g.prog, written}
			switch o.arg {
			case getopt.NeedsValue:
				args = append(args, "v")
			case getopt.TwoValues:
				args = append(args, "1", "2")
			}
			p := getopt.Parse(getopt.Strings(args[1:]), g.c.spec)
			if len(p.Unknown) > 0 || len(p.Opts) != 1 || p.Opts[0].Name != name {
				t.Errorf("%s %s: parsed as %+v, unknown %q", g.prog, written, p.Opts, p.Unknown)
			}
			if v := InspectClient(args); strings.Contains(v.Detail, "unknown option") || strings.Contains(v.Detail, "ambiguous") {
				t.Errorf("%s %s: %s", g.prog, written, v.Detail)
			}
		}
	}
}

// TestClippedDetailsStayUTF8: a long name echoed in a detail is cut on a
// character boundary; the byte cut it replaced left half a character.
func TestClippedDetailsStayUTF8(t *testing.T) {
	long := strings.Repeat("é", 20) // 40 bytes, the 24-byte cut inside none
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{argv("x" + long), "x" + strings.Repeat("é", 11) + "… is not a supported sql client"},
		{argv("psql", "--"+long), "unknown option --" + strings.Repeat("é", 11) + "…"},
		{argv("pg_dump"), "pg_dump is not a supported sql client"},
	} {
		got := InspectClient(tc.argv).Detail
		if !strings.Contains(got, tc.want) || !utf8.ValidString(got) {
			t.Errorf("InspectClient(%q).Detail = %q, want ~ %q", tc.argv, got, tc.want)
		}
	}
}
