package intent

import "strings"

// Package managers change the system (P-52: high_write) except for their
// query subcommands.
func registerPackageRules() {
	queries := map[string][]string{
		"apt":        {"list", "show", "search", "policy", "depends", "rdepends", "showsrc", "changelog", "--version", "-v", "help"},
		"apt-get":    {"--version", "-v", "help", "changelog", "check", "-s", "--simulate", "--dry-run"},
		"apt-cache":  {"*"},
		"aptitude":   {"search", "show", "why", "why-not", "versions"},
		"yum":        {"list", "info", "search", "repolist", "provides", "whatprovides", "deplist", "history", "check-update", "--version"},
		"dnf":        {"list", "info", "search", "repolist", "repoquery", "provides", "history", "check-update", "--version", "deplist"},
		"zypper":     {"search", "se", "info", "if", "list-updates", "lu", "repos", "lr", "packages", "pa", "--version"},
		"apk":        {"info", "search", "list", "policy", "version", "--version", "dot", "stats"},
		"brew":       {"list", "ls", "info", "search", "outdated", "deps", "uses", "leaves", "config", "doctor", "--version", "desc", "home"},
		"snap":       {"list", "info", "find", "version", "services", "connections", "changes"},
		"flatpak":    {"list", "info", "search", "remotes", "remote-ls", "--version"},
		"pip":        {"list", "show", "freeze", "check", "search", "index", "--version", "-V", "help", "debug"},
		"pip3":       {"list", "show", "freeze", "check", "search", "index", "--version", "-V", "help", "debug"},
		"npm":        {"ls", "list", "ll", "la", "view", "info", "show", "v", "outdated", "search", "--version", "-v", "help", "explain", "why", "doctor", "config", "root", "prefix", "bin", "query", "audit"},
		"yarn":       {"list", "info", "why", "outdated", "--version", "-v", "help", "audit"},
		"pnpm":       {"list", "ls", "outdated", "why", "--version", "-v", "help", "audit"},
		"gem":        {"list", "search", "info", "specification", "contents", "environment", "query", "outdated", "--version", "help"},
		"go":         {"version", "env", "list", "doc", "help"},
		"dpkg":       {"-l", "--list", "-L", "--listfiles", "-s", "--status", "-S", "--search", "--get-selections", "-p", "--print-avail", "--version", "--print-architecture", "--audit", "-C"},
		"dpkg-query": {"*"},
		"pacman":     {"-Q", "-Qi", "-Ql", "-Qs", "-Qo", "-Qe", "-Qm", "-Qdt", "-Ss", "-Si", "-Sl", "-Sg", "-F", "-Fl", "-Fs", "--query", "--version", "-V"},
	}
	for name, q := range queries {
		allowed := map[string]bool{}
		for _, v := range q {
			allowed[v] = true
		}
		rules[name] = packageRule(allowed)
	}
	rules["rpm"] = rpmRule
}

// rpmSpec is rpm 4.19's query, verify and general options (popt: no
// abbreviations). In query mode -i is --info, not --install.
var rpmSpec = spec("qaf:g:pcdilRsLVKvrE:D:", "query", "all", "file", "group", "package", "querytags",
	"whatprovides", "whatrequires", "whatrecommends", "whatsuggests", "whatsupplements",
	"whatenhances", "whatconflicts", "whatobsoletes", "triggeredby", "pkgid", "hdrid", "tid",
	"path", "configfiles", "docfiles", "dump", "changelog", "changes", "conflicts", "enhances",
	"info", "list", "filesbypkg", "obsoletes", "provides", "requires", "recommends", "suggests",
	"supplements", "state", "scripts", "triggers", "triggerscripts", "xml", "qf=",
	"queryformat=", "licensefiles", "artifactfiles", "noartifact", "noghost", "noconfig",
	"nodigest", "nosignature", "nofiles", "fileclass", "filecolor", "fileprovide",
	"filerequire", "filecaps", "filetriggers", "last", "verbose", "quiet", "root=", "dbpath=",
	"rcfile=", "macros=", "load=", "define=", "undefine=", "eval=", "pipe=", "version", "help",
	"usage", "showrc", "target=", "verify", "checksig", "nofiledigest", "nosize", "nolinkto",
	"nouser", "nogroup", "nomtime", "nomode", "nordev", "nocaps", "nodeps", "noscripts").noAbbreviations()

// rpmRuns are options that run code: macros can run shell commands
// (%(…)) and Lua (%{lua:…}), --pipe runs a shell command, and macro and rc
// files or definitions can hold either (issue 14).
var rpmRuns = map[string]string{
	"--pipe": "runs a shell command on the output", "-D": "defines a macro, which can run commands when rpm expands it",
	"--define": "defines a macro, which can run commands when rpm expands it",
	"--rcfile": "reads an rc file, which can define macros that run commands",
	"--macros": "reads macro files, which can define macros that run commands",
	"--load":   "reads a macro file, which can define macros that run commands",
}

// rpmRule: rpm queries, verifies, checks signatures and evaluates plain
// macros; everything else installs, erases or changes the database.
func rpmRule(c *call) {
	p := c.parse(rpmSpec)
	if !c.strict(p) {
		return
	}
	read := false
	for _, o := range p.opts {
		if why, ok := rpmRuns[o.name]; ok {
			c.a.writes(CodeRunsProgram, RiskHighWrite, "rpm "+o.name+" "+why)
			return
		}
		switch o.name {
		case "-q", "--query", "-V", "--verify", "-K", "--checksig", "--querytags", "--showrc", "--version", "--help", "--usage":
			read = true
		case "-E", "--eval":
			if why := rpmMacroRuns(o.value); why != "" {
				c.a.writes(CodeRunsProgram, RiskHighWrite, "rpm "+o.name+" "+why)
				return
			}
			read = true
		}
	}
	if !read {
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "rpm without a query, verify or eval mode installs, erases or changes packages")
		if p.has("-e") {
			c.a.destroys("rpm -e removes packages")
		}
	}
}

// rpmMacroRuns reports why expanding expr may run code: %(…) runs a shell
// command, %{lua:…} Lua, and %{expand:…} and friends build such macros
// from pieces. Only references to plain macro names are read-only.
func rpmMacroRuns(expr string) string {
	for i := 0; i < len(expr); i++ {
		if expr[i] != '%' {
			continue
		}
		if i+1 < len(expr) && expr[i+1] == '%' {
			i++
			continue
		}
		rest := expr[i+1:]
		if strings.HasPrefix(rest, "(") {
			return "expands %(…), which runs a shell command"
		}
		if strings.HasPrefix(rest, "[") {
			return "expands %[…], an expression that can call macros"
		}
		if strings.HasPrefix(rest, "{") {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return "has an unterminated macro"
			}
			name := strings.TrimLeft(rest[1:end], "?!")
			if !isMacroName(name) {
				return "expands %{" + rest[1:end] + "}, which can run code (%{lua:…}, %{expand:…})"
			}
		}
	}
	return ""
}

func isMacroName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func packageRule(allowed map[string]bool) rule {
	return func(c *call) {
		verb := ""
		for _, a := range c.rest() {
			if !a.literal() {
				c.a.writes(CodeDynamicCommand, RiskHighWrite, c.name+": argument "+a.src+" is computed at run time")
				return
			}
			if c.name == "dpkg" || c.name == "rpm" || c.name == "pacman" || !strings.HasPrefix(a.val, "-") || allowed[a.val] {
				verb = a.val
				break
			}
		}
		if allowed["*"] || allowed[verb] {
			if c.name == "go" && verb == "env" && hasAnyArg(c, "-w", "-u") {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "go env -w changes the Go configuration")
			}
			if c.name == "npm" && (verb == "config" && !hasAnyArg(c, "get", "list", "ls") || verb == "audit" && hasAnyArg(c, "fix")) {
				c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "npm "+verb+" changes configuration or packages")
			}
			return
		}
		risk := RiskHighWrite
		if c.name == "go" {
			risk = RiskMediumWrite
		}
		c.a.writes(CodeWriteSubcommand, risk, strings.TrimSpace(c.name+" "+verb)+" installs, removes or changes packages")
		switch verb {
		case "remove", "purge", "autoremove", "erase", "uninstall", "-r", "-P", "--remove", "--purge", "-e", "--erase", "-R", "-Rs", "-Rns", "rm":
			c.a.destroys(c.name + " " + verb + " removes packages")
		}
	}
}
