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
		"rpm":        {"-q", "-qa", "-qi", "-ql", "-qf", "-qc", "-qd", "-qR", "--query", "-V", "--verify", "--version", "--eval", "-qp", "-qpl", "-qpi"},
		"pacman":     {"-Q", "-Qi", "-Ql", "-Qs", "-Qo", "-Qe", "-Qm", "-Qdt", "-Ss", "-Si", "-Sl", "-Sg", "-F", "-Fl", "-Fs", "--query", "--version", "-V"},
	}
	for name, q := range queries {
		allowed := map[string]bool{}
		for _, v := range q {
			allowed[v] = true
		}
		rules[name] = packageRule(allowed)
	}
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
