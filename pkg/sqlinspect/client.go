package sqlinspect

import (
	"fmt"
	"strings"
)

// Client reports whether prog (a bare program name) is a supported client and its dialect:
// sqlite3 → SQLite; psql → Postgres; mysql, mariadb → MySQL.
func Client(prog string) (Dialect, bool) {
	switch prog {
	case "sqlite3":
		return SQLite, true
	case "psql":
		return Postgres, true
	case "mysql", "mariadb":
		return MySQL, true
	}
	return 0, false
}

// InspectClient inspects a whole client invocation; argv[0] is the program name.
//
// ReadOnly means everything the invocation runs is known and read-only. REPL
// means it waits for the terminal: no SQL argument (stdin would be read
// interactively), a password prompt (psql -W, mysql -p), or an interactive
// mode (sqlite3 -interactive, psql -s). A bare client is REPL and not
// ReadOnly, since what it will read is unknown. REPL is never reported
// together with a write finding (sqlite3 -init f db): the write wins.
func InspectClient(argv []string) Verdict {
	if len(argv) == 0 {
		return Verdict{Detail: "empty command"}
	}
	d, ok := Client(argv[0])
	if !ok {
		return Verdict{Detail: fmt.Sprintf("%s is not a supported sql client", clip(argv[0]))}
	}
	iv := &invocation{prog: argv[0], d: d}
	switch d {
	case SQLite:
		iv.sqlite(argv[1:])
	case Postgres:
		iv.psql(argv[1:])
	default:
		iv.mysql(argv[1:])
	}
	return iv.verdict()
}

// invocation accumulates what one client command line does.
type invocation struct {
	prog    string
	d       Dialect
	why     string // first reason it is not read-only
	repl    string // first reason it waits for the terminal
	exits   string // it only prints something (-version, -l) and exits
	runs    bool   // it has something to run without the terminal
	stopped bool   // parsing stopped at an option it cannot read
	size    int
	vars    bool // psql -v
	a       analysis
	queries int // SQL texts that are the work to run (not -cmd, --init-command)
}

func (iv *invocation) fail(format string, args ...any) {
	if iv.why == "" {
		iv.why = fmt.Sprintf(format, args...)
	}
}

// stop records a command line that cannot be read further.
func (iv *invocation) stop(format string, args ...any) {
	iv.fail(format, args...)
	iv.stopped = true
}

func (iv *invocation) interactive(why string) {
	if iv.repl == "" {
		iv.repl = why
	}
}

// sql inspects one SQL argument. work marks the statements the invocation
// exists to run; -cmd and --init-command run before the terminal is read.
func (iv *invocation) sql(text string, work bool) {
	iv.size += len(text)
	if iv.size > maxSQL {
		iv.fail("sql text too large")
		return
	}
	if work {
		iv.runs = true
		iv.queries++
	}
	a := analyze(iv.d, text)
	if a.why != "" {
		iv.fail("%s", a.why)
	}
	iv.a.destructive = iv.a.destructive || a.destructive
	iv.a.psqlVar = iv.a.psqlVar || a.psqlVar
	if work {
		iv.a.reads += a.reads
		iv.a.neutral += a.neutral
	}
}

func (iv *invocation) verdict() Verdict {
	if iv.vars && iv.a.psqlVar {
		iv.fail("psql variables set with -v may be interpolated into the sql (:name)")
	}
	noWork := !iv.runs && iv.exits == "" && !iv.stopped
	if noWork {
		iv.interactive(iv.prog + " has no sql to run and would read statements interactively")
	}
	// A write finding is the worse verdict (DESIGN §4: worst of its parts)
	// and takes precedence: REPL is reported only when nothing else is wrong,
	// so a caller that branches on REPL first cannot lose a write.
	v := Verdict{Destructive: iv.a.destructive, REPL: iv.repl != "" && iv.why == ""}
	switch {
	case iv.why != "":
		v.Detail = iv.why
	case v.REPL && noWork:
		v.Detail = iv.repl
	case iv.queries > 0 && iv.exits == "":
		a := iv.a
		a.why = ""
		v = a.verdict()
		if v.ReadOnly && iv.repl != "" {
			v.REPL, v.Detail = true, iv.repl
		}
	default:
		v.ReadOnly = true
		v.Detail = iv.exits
		if v.REPL {
			v.Detail = iv.repl
		}
	}
	return v
}

// option is one entry of a client's option table.
type option struct {
	arg    argKind
	effect effect
	why    string // what a write, interactive or exits option does
	work   bool   // it runs something without the terminal (psql -f, sqlite3 -A)
}

type argKind uint8

const (
	noArg    argKind = iota
	needsArg         // attached (-cX, --x=X) or the next argument
	optArg           // optional, attached only: mysql -pSECRET, --password=SECRET
	twoArgs          // sqlite3 -lookaside SIZE N
	restArgs         // sqlite3 -A: every later argument belongs to it
)

type effect uint8

const (
	harmless    effect = iota
	runsSQL            // the value is SQL to run: psql -c, mysql -e
	setupSQL           // SQL run before the terminal: sqlite3 -cmd, mysql --init-command
	writes             // not read-only
	prompts            // waits for the terminal
	promptsBare        // waits for the terminal when given without a value (-p)
	exits              // prints and exits without running SQL
	setsVar            // psql -v
)

func (iv *invocation) apply(written string, o option, value string, hasValue bool) {
	switch o.effect {
	case runsSQL, setupSQL:
		iv.sql(value, o.effect == runsSQL)
	case writes:
		iv.runs = iv.runs || o.work
		iv.fail("option %s %s", written, o.why)
	case prompts:
		iv.interactive("option " + written + " " + o.why)
	case promptsBare:
		if !hasValue { // --password= is an empty password, not a prompt
			iv.interactive("option " + written + " " + o.why)
		}
	case exits:
		if iv.exits == "" {
			iv.exits = "option " + written + " " + o.why
		}
	case setsVar:
		iv.vars = true
	}
}

// sqlite3 [OPTIONS] [FILENAME [SQL...]]: options anywhere, -opt or --opt, one
// per argument; the first non-option is the database, the rest are SQL.
var sqliteOptions = func() map[string]option {
	m := make(map[string]option)
	for n := range set(`ascii box column csv html json line list markdown quote table tabs
		header noheader batch bail echo readonly safe nofollow memtrace pcachetrace stats
		deserialize multiplex utf8 no-utf8 no-rowid-in-view`) {
		m[n] = option{}
	}
	for n := range set("separator newline nullvalue escape mmap vfs heap maxsize nonce sorterref threadsafe screenwidth") {
		m[n] = option{arg: needsArg}
	}
	m["lookaside"] = option{arg: twoArgs}
	m["pagecache"] = option{arg: twoArgs}
	m["cmd"] = option{arg: needsArg, effect: setupSQL}
	m["init"] = option{arg: needsArg, effect: writes, why: "runs a file that cannot be inspected"}
	m["unsafe-testing"] = option{effect: writes, why: "disables the shell's safety checks"}
	m["A"] = option{arg: restArgs, effect: writes, why: "runs an archive command", work: true}
	m["append"] = option{effect: writes, why: "opens the database in append mode"}
	m["zip"] = option{effect: writes, why: "opens the database as a zip archive"}
	m["interactive"] = option{effect: prompts, why: "forces interactive mode"}
	m["version"] = option{effect: exits, why: "prints the version"}
	m["help"] = option{effect: exits, why: "prints help"}
	return m
}()

func (iv *invocation) sqlite(args []string) {
	filename, optsEnd := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if optsEnd || !strings.HasPrefix(a, "-") {
			switch {
			case !filename:
				filename = true
			case strings.HasPrefix(a, "."):
				// The shell runs an argument that starts with "." as one
				// dot-command (.shell, .output, .import, .load, …).
				iv.runs = true
				iv.fail("dot-command %s", dotName(a))
			default:
				iv.sql(a, true)
			}
			continue
		}
		if a == "--" {
			optsEnd = true
			continue
		}
		name := strings.TrimPrefix(a[1:], "-")
		o, ok := sqliteOptions[name]
		if !ok {
			iv.stop("unknown option %s", clip(a)) // its arity is unknown: nothing after it can be read
			return
		}
		var value string
		switch o.arg {
		case needsArg, twoArgs:
			n := 1
			if o.arg == twoArgs {
				n = 2
			}
			if i+n >= len(args) {
				iv.stop("option %s needs a value", a)
				return
			}
			value = args[i+1]
			i += n
		case restArgs:
			i = len(args)
		}
		if o.effect == setupSQL && strings.HasPrefix(value, ".") {
			iv.fail("dot-command %s", dotName(value))
			continue
		}
		iv.apply(a, o, value, o.arg != noArg)
	}
}

func dotName(s string) string {
	if i := strings.IndexAny(s, " \t\r\n"); i >= 0 {
		s = s[:i]
	}
	return clip(s)
}

// getopt describes a getopt_long-style command line (psql) or MySQL's
// my_getopt, which adds --skip-/--disable-/--enable-/--loose- prefixes,
// treats _ and - alike in names and accepts --bool=0|1.
type getopt struct {
	short       map[byte]option
	long        map[string]option
	mysql       bool
	positionals int    // how many non-option arguments are accepted
	positional  string // what they are, for details
}

// parse walks args, applying each option; it stops at an unknown option
// because the arity of what follows is then unknown (fail closed).
func (g *getopt) parse(iv *invocation, args []string) {
	seen, optsEnd := 0, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if optsEnd || a == "-" || !strings.HasPrefix(a, "-") {
			if seen++; seen > g.positionals {
				iv.stop("unexpected argument %s after the %s", clip(a), g.positional)
				return
			}
			continue
		}
		if a == "--" {
			optsEnd = true
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, value, hasValue := strings.Cut(a[2:], "=")
			o, n := g.lookup(name)
			written := "--" + name
			if n != 1 {
				if n == 0 {
					iv.stop("unknown option %s", clip(written))
				} else {
					iv.stop("ambiguous option %s", clip(written))
				}
				return
			}
			switch o.arg {
			case noArg:
				if hasValue {
					on, isBool := mysqlBool(value)
					if !g.mysql || !isBool {
						iv.stop("option %s takes no value", written)
						return
					}
					if !on {
						o = option{} // --local-infile=0 turns it off
					}
				}
			case needsArg:
				if !hasValue {
					if i+1 >= len(args) {
						iv.stop("option %s needs a value", written)
						return
					}
					i++
					value = args[i]
				}
			}
			iv.apply(written, o, value, hasValue || o.arg == needsArg)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			o, ok := g.short[c]
			written := "-" + string(c)
			if !ok {
				iv.stop("unknown option %s", written)
				return
			}
			var value string
			switch o.arg {
			case noArg:
				iv.apply(written, o, "", false)
				continue
			case needsArg:
				value = a[j+1:]
				if value == "" {
					if i+1 >= len(args) {
						iv.stop("option %s needs a value", written)
						return
					}
					i++
					value = args[i]
				}
			case optArg:
				value = a[j+1:]
			}
			iv.apply(written, o, value, value != "" || o.arg == needsArg)
			break
		}
	}
}

// lookup finds a long option by its name or, as getopt_long and my_getopt
// allow, by an unambiguous prefix; n is the number of options that match.
// Every table entry is a real option, so a prefix that is unique here and
// unique for the client names the same option.
func (g *getopt) lookup(name string) (o option, n int) {
	if g.mysql {
		name = strings.ReplaceAll(name, "_", "-")
		name = strings.TrimPrefix(name, "loose-")
		if o, ok := g.long[name]; ok {
			return o, 1
		}
		for _, p := range []string{"skip-", "disable-"} {
			if base, ok := strings.CutPrefix(name, p); ok {
				if _, n := g.byPrefix(base); n == 1 {
					return option{}, 1 // turning an option off is harmless
				}
			}
		}
		if base, ok := strings.CutPrefix(name, "enable-"); ok {
			name = base
		}
	}
	return g.byPrefix(name)
}

func (g *getopt) byPrefix(name string) (found option, n int) {
	if o, ok := g.long[name]; ok {
		return o, 1
	}
	if name == "" {
		return option{}, 0
	}
	for k, o := range g.long {
		if strings.HasPrefix(k, name) {
			found = o
			n++
		}
	}
	return found, n
}

func mysqlBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "1", "on", "true":
		return true, true
	case "0", "off", "false":
		return false, true
	}
	return false, false
}

// psql [OPTION]... [DBNAME [USERNAME]]
var psqlOptions = func() *getopt {
	var (
		ok     = option{}
		value  = option{arg: needsArg}
		cmd    = option{arg: needsArg, effect: runsSQL}
		file   = option{arg: needsArg, effect: writes, why: "runs a file that cannot be inspected", work: true}
		output = option{arg: needsArg, effect: writes, why: "writes a file"}
		vars   = option{arg: needsArg, effect: setsVar}
		step   = option{effect: prompts, why: "asks for confirmation before each statement"}
		passwd = option{effect: prompts, why: "prompts for a password"}
		list   = option{effect: exits, why: "lists databases"}
		vers   = option{effect: exits, why: "prints the version"}
		help   = option{arg: optArg, effect: exits, why: "prints help"}
	)
	g := &getopt{positionals: 2, positional: "database and user names", short: map[byte]option{
		'a': ok, 'A': ok, 'b': ok, 'e': ok, 'E': ok, 'H': ok, 'n': ok, 'q': ok, 'S': ok,
		't': ok, 'w': ok, 'x': ok, 'X': ok, 'z': ok, '0': ok, '1': ok,
		'd': value, 'F': value, 'h': value, 'p': value, 'P': value, 'R': value, 'T': value, 'U': value,
		'c': cmd, 'f': file, 'o': output, 'L': output, 'v': vars,
		's': step, 'W': passwd, 'l': list, 'V': vers, '?': {effect: exits, why: "prints help"},
	}}
	g.long = map[string]option{
		"command": cmd, "dbname": value, "file": file, "list": list, "set": vars,
		"variable": vars, "version": vers, "no-psqlrc": ok, "single-transaction": ok,
		"help": help, "echo-all": ok, "echo-errors": ok, "echo-queries": ok,
		"echo-hidden": ok, "log-file": output, "no-readline": ok, "output": output,
		"quiet": ok, "single-step": step, "single-line": ok, "no-align": ok, "csv": ok,
		"field-separator": value, "html": ok, "pset": value, "record-separator": value,
		"tuples-only": ok, "table-attr": value, "expanded": ok,
		"field-separator-zero": ok, "record-separator-zero": ok, "host": value,
		"port": value, "username": value, "no-password": ok, "password": passwd,
	}
	return g
}()

func (iv *invocation) psql(args []string) {
	psqlOptions.parse(iv, args)
}

// mysql [OPTIONS] [DATABASE]. Judgment calls: --pager fails closed although
// the client pages only interactively (its value is a shell command, and
// nothing is lost by refusing it); a bare -p/--password prompts for a
// password, so it waits for the terminal like psql -W.
var mysqlOptions = func() *getopt {
	var (
		ok       = option{}
		value    = option{arg: needsArg}
		execute  = option{arg: needsArg, effect: runsSQL}
		init     = option{arg: needsArg, effect: setupSQL}
		password = option{arg: optArg, effect: promptsBare, why: "prompts for a password"}
		help     = option{effect: exits, why: "prints help"}
		vers     = option{effect: exits, why: "prints the version"}
		tee      = option{arg: needsArg, effect: writes, why: "writes a file"}
		defaults = option{arg: needsArg, effect: writes, why: "reads options that cannot be inspected"}
		plugin   = option{arg: needsArg, effect: writes, why: "loads a plugin"}
		debug    = option{arg: optArg, effect: writes, why: "writes a debug trace file"}
		named    = option{effect: writes, why: "recognises client commands on every line"}
	)
	g := &getopt{mysql: true, positionals: 1, positional: "database name", short: map[byte]option{
		'A': ok, 'B': ok, 'N': ok, 's': ok, 'r': ok, 't': ok, 'E': ok, 'H': ok, 'X': ok,
		'U': ok, 'C': ok, 'c': ok, 'f': ok, 'i': ok, 'b': ok, 'L': ok, 'n': ok, 'o': ok,
		'q': ok, 'v': ok, 'w': ok, 'T': ok,
		'D': value, 'h': value, 'P': value, 'u': value, 'S': value,
		'e': execute, 'p': password, '?': help, 'I': help, 'V': vers,
		'G': named, '#': debug,
	}}
	g.long = map[string]option{
		"help": help, "version": vers, "print-defaults": {effect: exits, why: "prints its options"},
		"execute": execute, "init-command": init,
		"password": password, "password1": password, "password2": password, "password3": password,
		"tee":                 tee,
		"pager":               {arg: optArg, effect: writes, why: "runs a program"},
		"local-infile":        {effect: writes, why: "lets LOAD DATA read local files"},
		"load-data-local-dir": {arg: needsArg, effect: writes, why: "lets LOAD DATA read local files"},
		"defaults-file":       defaults, "defaults-extra-file": defaults,
		"named-commands": named, "debug": debug,
		"delimiter":    {arg: needsArg, effect: writes, why: "changes how statements are split"},
		"plugin-dir":   plugin,
		"default-auth": plugin,
	}
	for n := range set(`no-auto-rehash auto-rehash auto-vertical-output batch binary-as-hex
		column-type-info comments compress column-names skip-column-names vertical force
		ignore-spaces no-beep html xml line-numbers skip-line-numbers unbuffered
		sigint-ignore one-database quick raw reconnect silent table safe-updates
		i-am-a-dummy verbose wait show-warnings get-server-public-key ssl
		ssl-verify-server-cert binary-mode no-defaults enable-cleartext-plugin
		debug-check debug-info`) {
		g.long[n] = ok
	}
	for n := range set(`database host port user socket protocol default-character-set
		connect-timeout max-allowed-packet net-buffer-length select-limit max-join-size
		bind-address character-sets-dir compression-algorithms zstd-compression-level
		histignore prompt server-public-key-path login-path defaults-group-suffix
		ssl-mode ssl-ca ssl-capath ssl-cert ssl-cipher ssl-key ssl-crl ssl-crlpath
		tls-version ssl-fips-mode tls-ciphersuites tls-sni-servername dns-srv-name
		network-namespace`) {
		g.long[n] = value
	}
	return g
}()

func (iv *invocation) mysql(args []string) {
	mysqlOptions.parse(iv, args)
}
