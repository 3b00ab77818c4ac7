package intent

import (
	"fmt"
	"strings"
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

var shellSpec = func() *optSpec {
	s := spec("abefhiklmnpstuvxBCEHPTc:o:O:", "login", "noprofile", "norc", "posix", "restricted",
		"verbose", "version", "help", "rcfile=", "init-file=", "debugger", "dump-strings", "dump-po-strings",
		"noediting", "pretty-print")
	s.posixStop = true
	return s
}()

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
	if len(p.dynamic) > 0 {
		c.a.failClosed(CodeInlineCode, fmt.Sprintf("%s gets code computed at run time (%s)", c.name, p.dynamic[0]))
		return
	}
	if o, ok := p.get("-c"); ok {
		script := c.rest()[o.index]
		if o.sepValue {
			script = c.rest()[o.index+1]
		}
		if !script.literal() || script.ansiC && !isASCII(script.val) {
			c.a.failClosed(CodeInlineCode, c.name+" -c runs code computed at run time")
			return
		}
		c.w.script(o.value, c.a, false)
		return
	}
	for _, o := range p.opts {
		if o.name == "-i" {
			c.a.never(InteractiveREPL, c.name+" -i is an interactive shell")
		}
		if o.name == "--rcfile" || o.name == "--init-file" {
			c.a.writes(CodeRunsProgram, RiskMediumWrite, c.name+" "+o.name+" runs a file classify cannot see")
		}
	}
	if p.has("--version", "--help") {
		return
	}
	if len(p.operands) > 0 && !p.has("-s") {
		c.a.writes(CodeRunsProgram, RiskMediumWrite, fmt.Sprintf("%s runs the script %s, which classify cannot see", c.name, c.rest()[p.operands[0]].src))
		return
	}
	stdinCode(c)
}

// stdinCode handles a shell or interpreter reading its program from stdin.
func stdinCode(c *call) {
	switch c.ctx.stdin {
	case stdinPipe:
		c.a.failClosed(CodePipeToShell, fmt.Sprintf("output piped into %s runs as code", c.name))
	case stdinFile:
		c.a.writes(CodeRunsProgram, RiskMediumWrite, fmt.Sprintf("%s runs a script from a file classify cannot see", c.name))
	case stdinHeredoc:
		if isShell(c.name) && c.ctx.heredocOK {
			c.w.script(c.ctx.heredoc, c.a, false)
			return
		}
		c.a.failClosed(CodeInlineCode, fmt.Sprintf("%s runs code from a here-document", c.name))
	default:
		c.a.never(InteractiveREPL, fmt.Sprintf("%s with nothing to run is an interactive session", c.name))
	}
}

func isShell(name string) bool {
	switch name {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh":
		return true
	}
	return false
}

// interpreterRule: version and help flags read; inline code (-c, -e, -r, -m,
// --eval …) is INLINE_CODE; a script is unseen; no program is a REPL.
func interpreterRule(c *call) {
	args := c.rest()
	for _, a := range args {
		v := a.val
		switch {
		case v == "--version" || v == "-V" || v == "-v" && c.name != "perl" && c.name != "php" || v == "--help" || v == "-h" || v == "-version":
			if len(args) == 1 {
				return
			}
		case v == "-c" || v == "-e" || v == "-E" || v == "-r" || v == "-m" || v == "-p" && c.name == "node" ||
			v == "--eval" || v == "--print" || v == "--command" || v == "-Command" || v == "-command" ||
			isCluster(v) && strings.ContainsAny(v[1:], "eE") && (c.name == "perl" || c.name == "ruby") ||
			strings.HasPrefix(v, "-c") && strings.HasPrefix(c.name, "python") ||
			strings.HasPrefix(v, "-m") && strings.HasPrefix(c.name, "python") ||
			strings.HasPrefix(v, "--eval=") || strings.HasPrefix(v, "--print="):
			c.a.failClosed(CodeInlineCode, fmt.Sprintf("%s %s runs inline code", c.name, v))
			return
		case v == "-" || v == "-i":
			continue
		case !strings.HasPrefix(v, "-"):
			c.a.writes(CodeRunsProgram, RiskMediumWrite, fmt.Sprintf("%s runs the script %s, which classify cannot see", c.name, a.src))
			return
		}
	}
	stdinCode(c)
}

// isCluster reports a short-option word such as -ne.
func isCluster(v string) bool {
	return len(v) > 1 && v[0] == '-' && v[1] != '-'
}

// dbClientRule: other database shells are REPLs without a command, and
// writes with one (their command languages are not inspected).
func dbClientRule(c *call) {
	if len(c.rest()) == 0 {
		c.a.never(InteractiveREPL, c.name+" with no command is an interactive session")
		return
	}
	c.a.writes(CodeUnknownCommand, RiskMediumWrite, c.name+" commands are not inspected")
}
