package pgguard

import (
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
	"github.com/govkit/govkit/pkg/termtext"
)

// invocation is what Plan keeps of a psql command line.
type invocation struct {
	sources  []source // -c and -f in the order given (psql runs them so)
	keep     []string // connection and output options, passed on as given
	operands []string // database and user names
	echo     string   // the ECHO the user asked for (-a, -e, -b, -v ECHO=…)
	quiet    bool     // -q, -v QUIET=on
}

// source is one SQL text: a -c value, a -f file, or standard input.
type source struct {
	name string // for errors: "-c", "-c #2", "-f x.sql", "standard input"
	sql  string
	file string // -f's name, read by Plan; "-" is standard input
}

// action is what the guard does with one psql option.
type action uint8

const (
	keep     action = iota // pass it on: connection and output options
	command                // -c: SQL to run
	file                   // -f: a file of SQL to run
	setVar                 // -v NAME=VALUE
	echoAll                // -a: echo input lines
	echoQuer               // -e: echo queries
	echoErrs               // -b: echo failed queries
	quiet                  // -q
	absorb                 // -1: the guard's transaction is the single one
	refuse                 // changes how the script is read, or runs no SQL
)

type psqlOption struct {
	short  string // the short name Plan passes it on as ("" for --csv)
	arg    getopt.Kind
	action action
	why    string // for refuse
}

// psqlOptions is psql's getopt_long table (psql 15: short options
// "aAbc:d:eEf:F:h:HlL:no:p:P:qR:sStT:U:v:VwWxXz?01" and their long names),
// keyed by the name getopt parses: "-c", "--command".
var psqlOptions = func() map[string]psqlOption {
	m := make(map[string]psqlOption)
	add := func(short, long string, o psqlOption) {
		o.short = short
		if short != "" {
			m[short] = o
		}
		m["--"+long] = o
	}
	v := getopt.NeedsValue
	add("-a", "echo-all", psqlOption{action: echoAll})
	add("-A", "no-align", psqlOption{})
	add("-b", "echo-errors", psqlOption{action: echoErrs})
	add("-c", "command", psqlOption{arg: v, action: command})
	add("-d", "dbname", psqlOption{arg: v})
	add("-e", "echo-queries", psqlOption{action: echoQuer})
	add("-E", "echo-hidden", psqlOption{})
	add("-f", "file", psqlOption{arg: v, action: file})
	add("-F", "field-separator", psqlOption{arg: v})
	add("-h", "host", psqlOption{arg: v})
	add("-H", "html", psqlOption{})
	add("-L", "log-file", psqlOption{arg: v})
	add("-n", "no-readline", psqlOption{})
	add("-o", "output", psqlOption{arg: v})
	add("-p", "port", psqlOption{arg: v})
	add("-P", "pset", psqlOption{arg: v})
	add("-q", "quiet", psqlOption{action: quiet})
	add("-R", "record-separator", psqlOption{arg: v})
	add("-t", "tuples-only", psqlOption{})
	add("-T", "table-attr", psqlOption{arg: v})
	add("-U", "username", psqlOption{arg: v})
	add("-v", "set", psqlOption{arg: v, action: setVar})
	add("-v", "variable", psqlOption{arg: v, action: setVar})
	add("-w", "no-password", psqlOption{})
	add("-W", "password", psqlOption{})
	add("-x", "expanded", psqlOption{})
	add("-X", "no-psqlrc", psqlOption{})
	add("-z", "field-separator-zero", psqlOption{})
	add("-0", "record-separator-zero", psqlOption{})
	add("-1", "single-transaction", psqlOption{action: absorb})
	add("", "csv", psqlOption{})
	add("-s", "single-step", psqlOption{action: refuse, why: "asks for confirmation before each statement, from the guard's script"})
	add("-S", "single-line", psqlOption{action: refuse, why: "ends statements at newlines, where the guard does not split them"})
	add("-l", "list", psqlOption{action: refuse, why: "lists databases and runs no sql"})
	add("-V", "version", psqlOption{action: refuse, why: "prints the version and runs no sql"})
	add("-?", "help", psqlOption{action: refuse, why: "prints help and runs no sql"})
	h := m["--help"]
	h.arg = getopt.OptionalValue // --help[=options|commands|variables]
	m["--help"] = h
	return m
}()

var psqlSpec = func() *getopt.Spec {
	var short strings.Builder
	var longs []string
	for name, o := range psqlOptions {
		suffix := map[getopt.Kind][2]string{getopt.NoValue: {"", ""}, getopt.NeedsValue: {":", "="}, getopt.OptionalValue: {"::", "?"}}[o.arg]
		if l, ok := strings.CutPrefix(name, "--"); ok {
			longs = append(longs, l+suffix[1])
		} else {
			short.WriteString(name[1:] + suffix[0])
		}
	}
	return getopt.New(short.String(), longs...)
}()

// guardVars are the psql variables the script sets itself; ECHO and QUIET
// from -v are honoured around the user's statements.
var guardVars = map[string]bool{
	"ON_ERROR_STOP": true, "ON_ERROR_ROLLBACK": true, "AUTOCOMMIT": true,
	"SINGLESTEP": true, "SINGLELINE": true, "ECHO": true, "QUIET": true,
}

func parseArgs(args []string) (*invocation, error) {
	p := getopt.Parse(getopt.Strings(args), psqlSpec)
	if len(p.Unknown) > 0 {
		return nil, fmt.Errorf("unknown psql option %s", clip(p.Unknown[0]))
	}
	inv := &invocation{echo: "none"}
	commands := 0
	stdinFiles := 0
	for _, o := range p.Opts {
		po := psqlOptions[o.Name]
		if po.arg == getopt.NeedsValue && !o.HasValue {
			return nil, fmt.Errorf("psql option %s needs a value", o.Name)
		}
		switch po.action {
		case keep:
			if o.Name == "-X" || o.Name == "--no-psqlrc" {
				continue // the guard always passes -X
			}
			if po.short == "" {
				inv.keep = append(inv.keep, o.Name)
			} else {
				inv.keep = append(inv.keep, po.short)
			}
			if po.arg == getopt.NeedsValue {
				inv.keep = append(inv.keep, o.Value)
			}
		case command:
			commands++
			name := "-c"
			if commands > 1 {
				name = fmt.Sprintf("-c #%d", commands)
			}
			inv.sources = append(inv.sources, source{name: name, sql: o.Value})
		case file:
			if o.Value == "-" {
				if stdinFiles++; stdinFiles > 1 {
					return nil, fmt.Errorf("psql reads standard input (-f -) more than once")
				}
			}
			inv.sources = append(inv.sources, source{name: "-f " + clip(o.Value), file: o.Value})
		case setVar:
			name, value, _ := strings.Cut(o.Value, "=")
			switch {
			case strings.HasPrefix(strings.ToLower(name), "pgguard"):
				return nil, fmt.Errorf("psql variable %s is reserved for the guard", clip(name))
			case name == "ECHO":
				e, ok := map[string]string{"none": "none", "errors": "errors", "queries": "queries", "all": "queries"}[value]
				if !ok {
					return nil, fmt.Errorf("psql variable ECHO=%s is not none, errors, queries or all", clip(value))
				}
				inv.echo = e
			case name == "QUIET":
				on, ok := psqlBool(value)
				if !ok {
					return nil, fmt.Errorf("psql variable QUIET=%s is not a boolean", clip(value))
				}
				inv.quiet = on
			case guardVars[name]:
				// The guard's script sets it.
			default:
				inv.keep = append(inv.keep, "-v", o.Value)
			}
		case echoAll, echoQuer:
			// -a would also echo the guard's own lines: the user's
			// statements are echoed as the queries psql sends.
			inv.echo = "queries"
		case echoErrs:
			inv.echo = "errors"
		case quiet:
			inv.quiet = true
		case absorb:
		case refuse:
			return nil, fmt.Errorf("psql option %s %s", o.Name, po.why)
		}
	}
	if len(p.Operands) > 2 {
		return nil, fmt.Errorf("psql takes a database and a user name, not %d arguments", len(p.Operands))
	}
	for _, i := range p.Operands {
		inv.operands = append(inv.operands, args[i])
	}
	return inv, nil
}

// psqlBool reads a psql boolean the way the guard accepts one: the whole
// words psql documents, in any case.
func psqlBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "on", "true", "yes", "1":
		return true, true
	case "off", "false", "no", "0":
		return false, true
	}
	return false, false
}

// clip shortens user text quoted in an error.
func clip(s string) string { return termtext.Truncate(s, 40) }
