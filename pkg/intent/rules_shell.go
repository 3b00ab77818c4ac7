package intent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

// Shells and interpreters run code: inline code is write_or_unknown (except
// a literal bash -c script, which is classified recursively), a script file
// cannot be seen, code piped in is PIPE_TO_SHELL, and with nothing to run
// they are REPLs (seed 000 [interactive_repl]).
func registerShellRules() {
	for _, n := range []string{"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish", "tcsh", "csh", "busybox"} {
		rules[n] = shellRule
	}
	for _, n := range []string{"python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun",
		"perl", "ruby", "irb", "php", "lua", "luajit", "R", "Rscript", "tclsh", "wish", "ghci", "julia",
		"scala", "groovy", "pwsh", "powershell", "osascript", "jshell", "erl", "iex", "elixir", "guile",
		"racket", "sbcl", "clisp", "ocaml", "swift"} {
		rules[n] = interpreterRule
	}
	for _, v := range []string{"3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "2.7"} {
		rules["python"+v] = interpreterRule
	}
	for _, n := range []string{"redis-cli", "mongo", "mongosh", "cqlsh", "clickhouse-client", "sqlcmd", "influx"} {
		rules[n] = dbClientRule
	}
}

var shellSpec = getopt.New("abefhiklmnpstuvxBCEHPTc:o:O:", "login", "noprofile", "norc", "posix", "restricted",
	"verbose", "version", "help", "rcfile=", "init-file=", "debugger", "dump-strings", "dump-po-strings",
	"noediting", "pretty-print").StopAtOperand()

func shellRule(c *call) {
	if c.name == "busybox" {
		if len(c.rest()) > 0 {
			c.inner(c.rest(), c.ctx)
		} else {
			c.a.writes(CodeUnknownCommand, RiskMediumWrite, "busybox without an applet")
		}
		return
	}
	p := c.parse(shellSpec)
	if len(p.Dynamic) > 0 {
		c.a.failClosed(CodeInlineCode, fmt.Sprintf("%s gets code computed at run time (%s)", c.name, p.Dynamic[0]))
		return
	}
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-c"); ok {
		script := c.rest()[o.Index]
		if o.SepValue {
			script = c.rest()[o.Index+1]
		}
		if !script.literal() || script.ansiC && !isASCII(script.val) {
			c.a.failClosed(CodeInlineCode, c.name+" -c runs code computed at run time")
			return
		}
		c.w.script(o.Value, c.a, false)
		return
	}
	for _, o := range p.Opts {
		if o.Name == "-i" {
			c.a.never(InteractiveREPL, c.name+" -i is an interactive shell")
		}
		if o.Name == "--rcfile" || o.Name == "--init-file" {
			c.a.writes(CodeRunsProgram, RiskMediumWrite, c.name+" "+o.Name+" runs a file classify cannot see")
		}
	}
	if p.Has("--version", "--help") {
		return
	}
	if len(p.Operands) > 0 && !p.Has("-s") {
		c.a.writes(CodeRunsProgram, RiskMediumWrite, fmt.Sprintf("%s runs the script %s, which classify cannot see", c.name, c.rest()[p.Operands[0]].src))
		return
	}
	if p.Has("-s") {
		explicitStdinCode(c)
		return
	}
	stdinCode(c)
}

// stdinCode handles a shell or interpreter reading its program from stdin.
func stdinCode(c *call) {
	switch c.ctx.stdin {
	case stdinPipe:
		c.a.failClosed(CodePipeToShell, "output piped into "+c.name+" runs as code")
	case stdinFile:
		c.a.writes(CodeRunsProgram, RiskMediumWrite, c.name+" runs a script from a file classify cannot see")
	case stdinHeredoc:
		if isShell(c.name) && c.ctx.heredocOK {
			c.w.script(c.ctx.heredoc, c.a, false)
			return
		}
		c.a.failClosed(CodeInlineCode, c.name+" runs code from a here-document")
	default:
		c.a.never(InteractiveREPL, c.name+" with nothing to run is an interactive session")
	}
}

func isShell(name string) bool {
	switch name {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh":
		return true
	}
	return false
}

// interp describes an interpreter's options (issue 14: on the one option
// parser, so an option classify does not know fails closed and -m is not
// "inline code").
type interp struct {
	opts *getopt.Spec
	// inline options take the program as their value (python -c, node -e,
	// perl -e, php -r): INLINE_CODE.
	inline []string
	// load options run code before or instead of a program: modules,
	// preloads, loaders, extensions (python -m, node --require/--import/
	// --loader, perl -M, ruby -r, php -d/-z).
	load []string
	// info options print and exit when they are the only option and no
	// program is given (python -V, perl -v, php -v, php -m).
	info []string
	// edits options rewrite the files they are given (perl -i, ruby -i).
	edits []string
	// serves options run a server until stopped (php -S).
	serves []string
	// check options only parse the program without running it (node
	// --check, php -l); with nothing that loads code, they read.
	check []string
}

func interpSpec(short string, longs ...string) *getopt.Spec {
	// The first operand is the program, the rest are its arguments; CPython,
	// node, perl, php and ruby match long options exactly.
	return getopt.New(short, longs...).StopAtOperand().NoAbbreviations()
}

var pythonInterp = &interp{
	opts: interpSpec("bBc:dEhiIm:OPqsSuvVW:xX:?", "help", "help-env", "help-xoptions", "help-all",
		"version", "check-hash-based-pycs="),
	inline: []string{"-c"},
	load:   []string{"-m"},
	info:   []string{"-h", "-?", "--help", "--help-env", "--help-xoptions", "--help-all", "-V", "--version"},
}

var interps = map[string]*interp{
	"node": {
		opts: interpSpec("e:p:r:hvicC:", "eval=", "print=", "require=", "import=", "loader=",
			"experimental-loader=", "env-file=", "env-file-if-exists=", "run=", "test", "watch", "watch-path=",
			"interactive", "check", "help", "version", "v8-options", "completion-bash", "inspect?", "inspect-brk?",
			"inspect-port=", "no-warnings", "trace-warnings", "no-deprecation", "trace-deprecation",
			"enable-source-maps", "stack-trace-limit=", "max-old-space-size=", "experimental-vm-modules",
			"experimental-strip-types", "experimental-default-type=", "input-type=", "conditions=", "title=",
			"unhandled-rejections=", "preserve-symlinks", "abort-on-uncaught-exception"),
		inline: []string{"-e", "--eval", "-p", "--print"},
		load: []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file",
			"--env-file-if-exists", "--run", "--test", "--watch", "--watch-path"},
		info:  []string{"-v", "--version", "-h", "--help", "--v8-options", "--completion-bash"},
		check: []string{"-c", "--check"},
	},
	// perl -l and -0 take only digits, attached; as plain flags a cluster
	// such as -lane still finds its -e.
	"perl": {
		opts:   interpSpec("0aC::cd::D::e:E:fF::hi::I:lm:M:npsStTuUvV::wWx::X", "help", "version"),
		inline: []string{"-e", "-E"},
		load:   []string{"-m", "-M", "-d"},
		edits:  []string{"-i"},
		info:   []string{"-v", "-V", "-h", "--help", "--version"},
	},
	"php": {
		opts: interpSpec("aB:c:d:eE:F:f:hHilmnqR:r:sS:t:vwz:", "interactive", "php-ini=", "no-php-ini",
			"define=", "profile-info", "file=", "help", "hide-args", "info", "lint", "modules", "run=",
			"process-begin=", "process-code=", "process-file=", "process-end=", "server=", "docroot=",
			"syntax-highlight", "syntax-highlighting", "version", "no-header", "strip", "zend-extension=",
			"rfunction=", "rclass=", "rextension=", "rzendextension=", "rextinfo=", "rf=", "rc=", "re=", "rz=",
			"ri=", "ini"),
		inline: []string{"-r", "--run", "-B", "--process-begin", "-R", "--process-code", "-E", "--process-end"},
		load: []string{"-d", "--define", "-c", "--php-ini", "-z", "--zend-extension", "-F", "--process-file",
			"-S", "--server", "-f", "--file"},
		info: []string{"-v", "--version", "-h", "--help", "-i", "--info", "-m", "--modules", "--ini",
			"--rf", "--rfunction", "--rc", "--rclass", "--re", "--rextension", "--rz", "--rzendextension",
			"--ri", "--rextinfo"},
		serves: []string{"-S", "--server"},
		check:  []string{"-l", "--lint"},
	},
	"ruby": {
		opts: interpSpec("0::aC:cde:E:F::i::I:lnpr:sSvwW::x::h", "copyright", "enable=", "disable=",
			"dump=", "external-encoding=", "internal-encoding=", "encoding=", "verbose", "version", "help",
			"yjit", "jit", "backtrace-limit=", "crash-report=", "parser="),
		inline: []string{"-e"},
		load:   []string{"-r"},
		edits:  []string{"-i"},
		info:   []string{"-v", "--version", "-h", "--help", "--copyright"},
	},
	"lua": {
		opts:   interpSpec("e:il:vEW"),
		inline: []string{"-e"},
		load:   []string{"-l"},
		info:   []string{"-v"},
	},
}

// genericInterp is every other interpreter: only its version and help
// flags are known, and any other option fails closed.
var genericInterp = &interp{
	opts: func() *getopt.Spec {
		return interpSpec("hvV", "help", "version").SingleDashLongs() // jshell -version, scala -version
	}(),
	info: []string{"-h", "-v", "-V", "--help", "--version"},
}

func interpOf(name string) *interp {
	if strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy") {
		return pythonInterp
	}
	switch name {
	case "nodejs":
		name = "node"
	case "luajit":
		name = "lua"
	case "ghci", "erl", "iex", "guile", "sbcl", "clisp", "racket", "ocaml":
		// -v and friends start a verbose session here, not a version.
		return &interp{opts: interpSpec("")}
	}
	if it, ok := interps[name]; ok {
		return it
	}
	return genericInterp
}

// interpreterRule: inline code is INLINE_CODE; loading a module, preload or
// extension runs code (RUNS_PROGRAM); a script is unseen; "-" or no
// program reads the program from standard input (stdinCode); a lone
// version or help option reads; any option not in the interpreter's spec
// fails closed.
func interpreterRule(c *call) {
	it := interpOf(c.name)
	p := c.parse(it.opts)
	if len(p.Dynamic) > 0 {
		c.a.failClosed(CodeInlineCode, fmt.Sprintf("%s gets options or code computed at run time (%s)", c.name, p.Dynamic[0]))
		return
	}
	if o, ok := p.Get(it.inline...); ok {
		c.a.failClosed(CodeInlineCode, fmt.Sprintf("%s %s runs inline code", c.name, o.Name))
		return
	}
	if o, ok := p.Get(it.serves...); ok {
		c.a.never(UnboundedStream, fmt.Sprintf("%s %s serves requests until stopped", c.name, o.Name))
	}
	if o, ok := p.Get(it.edits...); ok {
		c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("%s %s edits the files it is given in place", c.name, o.Name))
	}
	if o, ok := p.Get(it.load...); ok {
		what := "loads and runs code classify cannot see"
		if o.HasValue {
			what = fmt.Sprintf("%s %s", shellQuote(o.Value), what)
		}
		c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("%s %s %s", c.name, o.Name, what))
		return
	}
	if !c.strict(p) {
		return
	}
	if len(p.Operands) == 0 && len(p.Opts) == 1 && slices.Contains(it.info, p.Opts[0].Name) {
		return
	}
	if p.Has(it.check...) && len(p.Operands) > 0 && c.rest()[p.Operands[0]].val != "-" {
		return // parses the files without running them
	}
	if len(p.Operands) > 0 {
		if a := c.rest()[p.Operands[0]]; a.val != "-" || !a.literal() {
			c.a.writes(CodeRunsProgram, RiskMediumWrite, fmt.Sprintf("%s runs the script %s, which classify cannot see", c.name, a.src))
			return
		}
		explicitStdinCode(c)
		return
	}
	stdinCode(c)
}

// explicitStdinCode: python3 - or bash -s read their program from standard
// input even when it is not redirected: that runs code, not a REPL (issue 14).
func explicitStdinCode(c *call) {
	if c.ctx.stdin == stdinInherited {
		c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("%s runs a program read from standard input, which classify cannot see", c.name))
		return
	}
	stdinCode(c)
}

// dbClient is a database shell other than sqlite3, psql and mysql (those
// are inspected by pkg/sqlinspect): its options by spec (issue 14), the
// ones that give it commands to run (not inspected: writes), the ones that
// write files, and the ones that print and exit.
type dbClient struct {
	opts     *getopt.Spec
	commands map[string]bool   // options whose value (or file) holds commands
	writes   map[string]string // options that write files or change the server
	exits    map[string]bool   // options that print something and exit
	// operands reports whether the operands hold commands or scripts.
	operands func(ops []*arg) bool
}

var dbClients = map[string]*dbClient{
	// mongosh [options] [address] [file.js …] (yargs: exact names); mongo
	// is the legacy shell with the same command-line shape.
	"mongosh": {opts: mongoSpec, commands: wordSet("--eval -f --file"), exits: wordSet("--version --build-info --help -h --smokeTests"),
		operands: func(ops []*arg) bool {
			return len(ops) > 1 || len(ops) == 1 && strings.HasSuffix(ops[0].val, ".js")
		}},
	"mongo": {opts: mongoSpec, commands: wordSet("--eval -f --file"), exits: wordSet("--version --build-info --help -h"),
		operands: func(ops []*arg) bool {
			return len(ops) > 1 || len(ops) == 1 && strings.HasSuffix(ops[0].val, ".js")
		}},
	// cqlsh [options] [host [port]] (optparse: unique abbreviations).
	"cqlsh": {opts: getopt.New("hCu:p:k:f:e:tb:", "help", "version", "color", "no-color", "browser=", "ssl", "no-file-io",
		"username=", "password=", "keyspace=", "file=", "debug", "coverage", "encoding=", "cqlshrc=",
		"credentials=", "cqlversion=", "protocol-version=", "execute=", "connect-timeout=",
		"request-timeout=", "tty", "secure-connect-bundle="),
		commands: wordSet("-e --execute -f --file"), exits: wordSet("--version --help -h"),
		operands: func(ops []*arg) bool { return len(ops) > 2 }},
	// clickhouse-client (boost program_options; a server setting may be
	// given as --name=value, and is unknown here: fails closed).
	"clickhouse-client": {opts: getopt.New("h:u:d:q:nmf:EtC:sV", "host=", "port=", "user=", "password=", "ask-password",
		"database=", "query=", "queries-file=", "multiquery", "multiline", "format=", "vertical", "time",
		"stacktrace", "config-file=", "secure", "history_file=", "log-level=", "send_logs_level=",
		"hardware-utilization", "print-profile-events", "progress?", "echo", "no-warnings",
		"output-format=", "input-format=", "interactive", "compression?", "connection=", "ssh-key-file=",
		"jwt=", "help", "version", "query_id=", "highlight?", "max_threads=").NoAbbreviations(),
		commands: wordSet("-q --query --queries-file"), exits: wordSet("--version -V --help"),
		writes:   map[string]string{"--history_file": "writes the query history to a file"},
		operands: func(ops []*arg) bool { return len(ops) > 0 }},
	// sqlcmd (mssql-tools: one-letter options).
	"sqlcmd": {opts: getopt.New("S:U:P:d:EQ:q:i:o:h:s:Ww:CNl:t:bv:xXeIk::y:Y:a:c:Lp::r::Ruf:z:Z:m:V:H:K:MGAF:?"),
		commands: wordSet("-Q -q -i"), exits: wordSet("-? -L"),
		writes: map[string]string{"-o": "writes the results to a file", "-z": "changes the login's password",
			"-Z": "changes the login's password"},
		operands: func(ops []*arg) bool { return len(ops) > 0 }},
	// influx: the 1.x shell's Go flags; 2.x subcommands (influx query,
	// influx write) are not inspected.
	"influx": {opts: getopt.New("", "host=", "port=", "socket=", "username=", "password=", "database=", "type=",
		"ssl", "unsafeSsl", "pretty", "format=", "execute=", "import", "path=", "compressed", "pps=",
		"precision=", "consistency=", "version", "help").SingleDashLongs().NoAbbreviations(),
		commands: wordSet("--execute"), exits: wordSet("--version --help"),
		writes:   map[string]string{"--import": "writes the imported points to the database"},
		operands: func(ops []*arg) bool { return len(ops) > 0 }},
}

var mongoSpec = getopt.New("u:p:hf:", "host=", "port=", "username=", "password=", "authenticationDatabase=",
	"authenticationMechanism=", "awsIamSessionToken=", "gssapiServiceName=", "sspiHostnameCanonicalization=",
	"sspiRealmOverride=", "tls", "tlsCertificateKeyFile=", "tlsCertificateKeyFilePassword=", "tlsCAFile=",
	"tlsAllowInvalidHostnames", "tlsAllowInvalidCertificates", "tlsCertificateSelector=", "tlsCRLFile=",
	"tlsDisabledProtocols=", "tlsUseSystemCA", "tlsFIPSMode", "apiVersion=", "apiStrict",
	"apiDeprecationErrors", "nodb", "norc", "quiet", "verbose", "shell", "eval=", "file=", "json?",
	"retryWrites?", "oidcFlows=", "oidcRedirectUri=", "oidcTrustedEndpoint", "oidcIdTokenAsAccessToken",
	"oidcNoNonce", "help", "version", "build-info", "ipv6", "smokeTests", "ssl", "sslPEMKeyFile=",
	"sslCAFile=", "sslAllowInvalidCertificates", "sslAllowInvalidHostnames", "disableImplicitSessions",
	"jsHeapLimitMB=", "networkMessageCompressors=").NoAbbreviations()

// dbClientRule: a database shell with commands (options or script files)
// writes, since its command language is not inspected; with none it is an
// interactive session, or runs whatever arrives on its redirected input.
func dbClientRule(c *call) {
	cl := dbClients[c.name]
	p := c.parse(cl.opts)
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		if what, ok := cl.writes[o.Name]; ok {
			c.a.writes(CodeWriteOption, RiskMediumWrite, c.name+" "+o.Name+" "+what)
			return
		}
		if cl.commands[o.Name] {
			c.a.writes(CodeUnknownCommand, RiskMediumWrite, c.name+" "+o.Name+": its commands are not inspected")
			return
		}
	}
	for _, o := range p.Opts {
		if cl.exits[o.Name] {
			return // prints help, a version or a list, and exits
		}
	}
	ops := make([]*arg, len(p.Operands))
	for i, j := range p.Operands {
		ops[i] = c.rest()[j]
	}
	if cl.operands(ops) {
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, c.name+" "+joined(ops)+": its commands or scripts are not inspected")
		return
	}
	if c.ctx.stdin != stdinInherited {
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, c.name+" runs the commands on its standard input, which are not inspected")
		return
	}
	c.a.never(InteractiveREPL, c.name+" with no command is an interactive session")
}
