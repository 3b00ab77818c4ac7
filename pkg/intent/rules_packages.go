package intent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

// Package managers change the system (P-52: high_write) except for their
// query subcommands. Each one's command line is described by option specs
// (pkgManager, issue 14): the verb is found after the options that may
// precede it, so apt-get -o Foo=bar install x is an install and pip
// --isolated list a listing, and an option a spec does not know fails
// closed.
func registerPackageRules() {
	for name, m := range pkgManagers {
		rules[name] = m.rule
	}
	rules["rpm"] = rpmRule
	rules["dpkg"] = dpkgRule
	rules["dpkg-query"] = dpkgQueryRule
	rules["pacman"] = pacmanRule
}

// rpmSpec is rpm 4.19's query, verify and general options (popt: no
// abbreviations). In query mode -i is --info, not --install.
var rpmSpec = getopt.New("qaf:g:pcdilRsLVKvrE:D:", "query", "all", "file", "group", "package", "querytags",
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
	"nouser", "nogroup", "nomtime", "nomode", "nordev", "nocaps", "nodeps", "noscripts").NoAbbreviations()

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
	for _, o := range p.Opts {
		if why, ok := rpmRuns[o.Name]; ok {
			c.a.writes(CodeRunsProgram, RiskHighWrite, "rpm "+o.Name+" "+why)
			return
		}
		switch o.Name {
		case "-q", "--query", "-V", "--verify", "-K", "--checksig", "--querytags", "--showrc", "--version", "--help", "--usage":
			read = true
		case "-E", "--eval":
			if why := rpmMacroRuns(o.Value); why != "" {
				c.a.writes(CodeRunsProgram, RiskHighWrite, "rpm "+o.Name+" "+why)
				return
			}
			read = true
		}
	}
	if !read {
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "rpm without a query, verify or eval mode installs, erases or changes packages")
		if p.Has("-e") {
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

// pkgManager is one package manager's command line: the options that may
// come before its verb, its read-only verbs with their options, and the
// options that run a program or write a file. Every other verb installs,
// removes or changes packages (or runs a project's scripts).
type pkgManager struct {
	lead  *getopt.Spec            // options before the verb (options end at the verb)
	reads map[string]*getopt.Spec // read-only verbs and the options they take after the verb
	// runs and writes map options (in lead or after a read verb) to what
	// they do.
	runs, writes map[string]string
	// check judges a read verb's forms that still write (apt-get
	// changelog -d, npm config set): it returns what they do, or "".
	check   func(verb string, p *getopt.Parsed, ops []*arg) string
	risk    Risk
	removes map[string]bool // verbs that remove packages (destructive)
	// verbWrites says what a writing verb does where the general reason
	// would be wrong (apt-cache gencaches, npm run); other replaces the
	// general reason (yarn NAME runs the script NAME).
	verbWrites map[string]string
	other      string
}

// verbs maps each of names to s.
func verbs(s *getopt.Spec, names ...string) map[string]*getopt.Spec {
	m := map[string]*getopt.Spec{}
	for _, n := range names {
		m[n] = s
	}
	return m
}

func merge(ms ...map[string]*getopt.Spec) map[string]*getopt.Spec {
	out := map[string]*getopt.Spec{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func (m *pkgManager) rule(c *call) {
	args := c.rest()
	// brew --prefix, brew --cache …: option-spelled read commands.
	if len(args) > 0 && args[0].literal() && strings.HasPrefix(args[0].val, "-") && m.reads[args[0].val] != nil {
		m.read(c, args[0].val, &getopt.Parsed{DashDash: -1}, args[1:])
		return
	}
	p := c.parse(m.lead)
	if len(p.Operands) == 0 || p.DashDash >= 0 && p.Operands[0] > p.DashDash {
		// No verb: usage, --version or --help; an unknown option or
		// expansion fails closed.
		if c.strict(p) {
			m.options(c, "", p)
		}
		return
	}
	vi := p.Operands[0]
	// An unknown option before the verb might take it as its value.
	if !c.strict(c.parseWords(args[:vi], m.lead)) {
		return
	}
	if !args[vi].literal() {
		c.a.failClosed(CodeDynamicCommand, c.name+" command "+args[vi].src+" is computed at run time")
		return
	}
	verb := args[vi].val
	if m.reads[verb] != nil {
		m.read(c, verb, p, args[vi+1:])
		return
	}
	risk := m.writeRisk()
	what := c.name + " " + verb + " installs, removes or changes packages"
	if m.other != "" {
		what = c.name + " " + verb + " " + m.other
	}
	if w, ok := m.verbWrites[verb]; ok {
		what = c.name + " " + verb + " " + w
	}
	c.a.writes(CodeWriteSubcommand, risk, what)
	if m.removes[verb] {
		c.a.destroys(c.name + " " + verb + " removes packages")
	}
}

// writeRisk: package managers change the system (P-52: high_write),
// unless they say otherwise (go).
func (m *pkgManager) writeRisk() Risk {
	if m.risk == 0 {
		return RiskHighWrite
	}
	return m.risk
}

// read judges a read verb: its options must all be known, and none may
// run a program or write a file.
func (m *pkgManager) read(c *call, verb string, lead *getopt.Parsed, rest []*arg) {
	q := c.parseWords(rest, m.reads[verb])
	if !c.strict(q) {
		return
	}
	all := &getopt.Parsed{Opts: append(append([]getopt.Opt{}, lead.Opts...), q.Opts...), DashDash: -1}
	if m.check != nil {
		ops := make([]*arg, len(q.Operands))
		for i, j := range q.Operands {
			ops[i] = rest[j]
		}
		if what := m.check(verb, all, ops); what != "" {
			c.a.writes(CodeWriteSubcommand, m.writeRisk(), c.name+" "+what)
			if m.removes[verb] {
				c.a.destroys(c.name + " " + verb + " removes packages")
			}
		}
	}
	m.options(c, verb, all)
}

// options reports the options that run a program or write a file; it
// returns whether there were none.
func (m *pkgManager) options(c *call, verb string, p *getopt.Parsed) bool {
	name := strings.TrimSpace(c.name + " " + verb)
	for _, o := range p.Opts {
		if why, ok := m.runs[o.Name]; ok {
			c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("%s %s %s", name, o.Name, why))
			return false
		}
		if what, ok := m.writes[o.Name]; ok {
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("%s %s %s", name, o.Name, what))
			return false
		}
	}
	return true
}

// firstOp is a read verb's first operand (npm config get), or "".
func firstOp(ops []*arg) string {
	if len(ops) == 0 {
		return ""
	}
	return ops[0].val
}

var (
	// apt, apt-get and apt-cache (apt's CommandLine: exact names, options
	// anywhere). -o and -c set configuration, which can name programs
	// apt runs (Acquire::http::Proxy-Auto-Detect, APT::Update::Pre-Invoke).
	aptLead = getopt.New("hvc:o:q::sydfmuVt:a:P:b", "help", "version", "config-file=", "option=", "quiet?",
		"simulate", "just-print", "dry-run", "recon", "no-act", "yes", "assume-yes", "assume-no",
		"download-only", "fix-broken", "ignore-missing", "fix-missing", "no-download", "show-upgraded",
		"verbose-versions", "target-release=", "default-release=", "host-architecture=",
		"build-profiles=", "compile", "build", "ignore-hold", "with-new-pkgs", "no-upgrade",
		"only-upgrade", "allow-downgrades", "allow-remove-essential", "allow-change-held-packages",
		"force-yes", "print-uris", "purge", "reinstall", "list-cleanup", "trivial-only", "no-remove",
		"auto-remove", "autoremove", "only-source", "diff-only", "dsc-only", "tar-only", "arch-only",
		"indep-only", "allow-unauthenticated", "allow-insecure-repositories",
		"allow-releaseinfo-change", "show-progress", "with-source=", "error-on=",
		"install-recommends", "no-install-recommends", "install-suggests", "no-install-suggests",
		"mark-auto", "solver=", "planner=", "color", "no-color", "snapshot=", "update").NoAbbreviations()
	// The options of apt's and apt-cache's listings (apt list -a is
	// --all-versions).
	aptList = aptLead.Plus("ainf", "installed", "upgradable", "upgradeable", "manual-installed",
		"all-versions", "no-all-versions", "verbose", "names-only", "full", "recurse", "important",
		"implicit", "no-pre-depends", "no-depends", "no-recommends", "no-suggests", "no-conflicts",
		"no-breaks", "no-replaces", "no-enhances", "all-names", "generate", "no-generate")
	aptCacheLead = aptList.Plus("p:s:g", "pkg-cache=", "src-cache=")
	aptRuns      = map[string]string{
		"-o": "sets configuration, which can name programs apt runs (Acquire::http::Proxy-Auto-Detect, APT::Update::Pre-Invoke)", "--option": "sets configuration, which can name programs apt runs (Acquire::http::Proxy-Auto-Detect, APT::Update::Pre-Invoke)",
		"-c": "reads a configuration file, which can name programs apt runs", "--config-file": "reads a configuration file, which can name programs apt runs",
	}
	aptRemoves = wordSet("remove purge autoremove autopurge")
	// aptSimulated are the verbs whose -s only prints what they would do.
	aptSimulated = wordSet("install reinstall remove purge upgrade dist-upgrade full-upgrade autoremove autopurge build-dep satisfy")

	// dnf and yum (argparse: unique abbreviations, options anywhere).
	// A config file, --setopt or an install root can load plugins
	// (Python) from other paths.
	dnfLead = getopt.New("yqvCc:d:e:hx:R:b46", "assumeyes", "assumeno", "quiet", "verbose", "cacheonly", "config=",
		"debuglevel=", "errorlevel=", "help", "help-cmd", "exclude=", "excludepkgs=", "disableexcludes=",
		"disableexcludepkgs=", "randomwait=", "best", "nobest", "allowerasing", "skip-broken",
		"skip-unavailable", "showduplicates", "enablerepo=", "disablerepo=", "repo=", "repoid=",
		"repofrompath=", "releasever=", "nogpgcheck", "noplugins", "enableplugin=", "disableplugin=",
		"refresh", "color=", "comment=", "rpmverbosity=", "obsoletes", "noautoremove", "forcearch=",
		"ipv4", "ipv6", "nodocs", "security", "bugfix", "enhancement", "newpackage", "sec-severity=",
		"secseverity=", "advisory=", "advisories=", "bz=", "bzs=", "cve=", "cves=", "setopt=",
		"installroot=", "downloadonly", "downloaddir=", "destdir=", "debugsolver", "version")
	dnfRead = dnfLead.Plus("lia", "all", "available", "installed", "extras", "recent", "upgrades", "updates",
		"autoremove", "enabled", "disabled", "changelogs", "whatprovides=", "whatrequires=",
		"whatdepends=", "whatrecommends=", "whatsuggests=", "whatsupplements=", "whatenhances=",
		"whatconflicts=", "whatobsoletes=", "requires", "provides", "conflicts", "recommends",
		"suggests", "supplements", "enhances", "qf=", "queryformat=", "list", "info", "arch=",
		"archlist=", "location", "source", "tree", "recursive", "resolve", "deplist", "latest-limit=",
		"userinstalled", "duplicates", "unneeded", "srpm", "file=", "nvr", "nevra", "envra",
		"querytags", "exactdeps", "alldeps", "installonly", "leaves", "unsatisfied", "reverse")
	dnfRuns = map[string]string{
		"-c": "reads a configuration file, which can load plugins (Python code)", "--config": "reads a configuration file, which can load plugins (Python code)",
		"--setopt":      "sets configuration, which can load plugins (Python code) from another path",
		"--installroot": "uses the configuration in another root, which can load plugins (Python code)",
	}
	dnfWrites = map[string]string{"--debugsolver": "writes the solver's debug data", "--downloaddir": "downloads into a directory", "--destdir": "downloads into a directory"}

	// pip (optparse: unique abbreviations, general options anywhere).
	pipLead = getopt.New("hvVq", "help", "debug", "isolated", "require-virtualenv", "python=", "verbose", "version",
		"quiet", "log=", "log-file=", "local-log=", "no-input", "keyring-provider=", "proxy=", "retries=",
		"timeout=", "exists-action=", "trusted-host=", "cert=", "client-cert=", "cache-dir=",
		"no-cache-dir", "disable-pip-version-check", "no-color", "no-python-version-warning",
		"use-feature=", "use-deprecated=", "resume-retries=")
	pipIndex = []string{"index-url=", "extra-index-url=", "no-index", "find-links=", "pre"}
	pipReads = map[string]*getopt.Spec{
		"list": pipLead.Plus("i:f:loue", append(pipIndex, "local", "user", "path=", "format=", "not-required",
			"exclude-editable", "include-editable", "editable", "outdated", "uptodate", "exclude=")...),
		"show":    pipLead.Plus("f", "files"),
		"freeze":  pipLead.Plus("r:l", "requirement=", "local", "user", "path=", "all", "exclude-editable", "exclude="),
		"check":   pipLead,
		"search":  pipLead.Plus("i:", "index="),
		"index":   pipLead.Plus("i:f:", append(pipIndex, "platform=", "python-version=", "implementation=", "abi=", "json")...),
		"inspect": pipLead.Plus("", "local", "user", "path="),
		"debug":   pipLead.Plus("", "platform=", "python-version=", "implementation=", "abi="),
		"help":    pipLead,
		"hash":    pipLead.Plus("a:", "algorithm="),
		"config":  pipLead.Plus("", "global", "user", "site"),
		"cache":   pipLead.Plus("", "format="),
	}
	pipRuns = map[string]string{
		"--python":           "runs pip under another Python interpreter",
		"--keyring-provider": "can run the keyring program for credentials",
	}
	pipWrites = map[string]string{"--log": "writes a log file", "--log-file": "writes a log file", "--local-log": "writes a log file"}

	// npm (nopt; abbreviations would be matched against npm's whole
	// config list, which this spec does not hold, so none are taken).
	npmLead = getopt.New("gsqdlpvhayfC:w:", "global", "silent", "quiet", "loglevel=", "verbose", "json", "parseable",
		"long", "all", "depth=", "prefix=", "workspace=", "workspaces", "include-workspace-root",
		"registry=", "userconfig=", "globalconfig=", "cache=", "offline", "prefer-offline",
		"prefer-online", "color?", "no-color", "unicode", "omit=", "include=", "production", "dev",
		"link", "package-lock-only", "install-links", "before=", "yes", "force", "usage", "help",
		"version", "fetch-retries=", "fetch-timeout=", "location=", "audit-level=", "searchlimit=",
		"searchopts=", "searchexclude=", "package=", "expect-results", "expect-result-count=",
		"timing", "logs-dir=", "logs-max=", "scope=", "tag=", "browser=", "viewer=", "description",
		"no-description", "fund", "no-fund", "audit", "no-audit", "strict-ssl", "ca=", "cafile=",
		"proxy=", "https-proxy=", "noproxy=", "otp=", "auth-type=", "heading=", "progress",
		"no-progress").NoAbbreviations()
	npmRuns = map[string]string{"--browser": "names a browser program npm runs", "--viewer": "names a program npm help runs"}

	yarnLead = getopt.New("svh", "json", "verbose", "offline", "prefer-offline", "silent", "no-progress", "cwd=",
		"registry=", "network-timeout=", "ignore-engines", "modules-folder=", "cache-folder=",
		"use-yarnrc=", "no-default-rc", "emoji?", "no-emoji", "non-interactive", "help", "version",
		"production?", "depth=", "pattern=", "level=", "groups=", "summary").NoAbbreviations()

	pnpmLead = getopt.New("C:F:rswhvgPD", "dir=", "filter=", "recursive", "silent", "workspace-root", "help",
		"version", "reporter=", "loglevel=", "color", "no-color", "stream", "aggregate-output",
		"use-stderr", "workspace-concurrency=", "json", "long", "parseable", "depth=", "prod", "dev",
		"no-optional", "global", "only-projects", "exclude-peers", "compatible", "format=", "no-table",
		"sort-by=", "audit-level=", "ignore-registry-errors", "ignore=", "ignore-unfixable", "fix").NoAbbreviations()

	// gem (Ruby's OptionParser: unique abbreviations, options anywhere).
	gemLead = getopt.New("hVq", "help", "verbose", "no-verbose", "quiet", "silent", "config-file=", "backtrace",
		"debug", "norc", "version")
	gemRead = gemLead.Plus("lrbaeidv:s:p::", "local", "remote", "both", "all", "exact", "versions",
		"no-versions", "installed", "no-installed", "version=", "details", "no-details", "prerelease",
		"no-prerelease", "bulk-threshold=", "clear-sources", "source=", "http-proxy?", "no-http-proxy",
		"platform=", "ruby", "yaml", "marshal", "lib-only", "prefix", "no-prefix", "show-install-dir",
		"spec-dir=", "reverse-dependencies", "pipe")

	// go (Go's flag package: one or two dashes, no abbreviations; the
	// verb comes first).
	goSpec = func(longs ...string) *getopt.Spec {
		short := ""
		for _, l := range longs {
			if n := strings.TrimRight(l, "=?"); len(n) == 1 {
				short += n + map[bool]string{true: ":", false: ""}[strings.HasSuffix(l, "=")]
			}
		}
		return getopt.New(short, longs...).SingleDashLongs().NoAbbreviations().StopAtOperand()
	}
	goBuildFlags = []string{"a", "n", "p=", "race", "msan", "asan", "cover", "covermode=", "coverpkg=", "v",
		"work", "x", "asmflags=", "buildmode=", "buildvcs?", "compiler=", "gccgoflags=", "gcflags=",
		"installsuffix=", "ldflags=", "linkshared", "mod=", "modcacherw", "modfile=", "overlay=", "pgo=",
		"pkgdir=", "tags=", "trimpath", "toolexec=", "C="}
	goRuns = map[string]string{
		"--toolexec": "runs a program for every build tool",
		"--export":   "compiles the packages (the compiler and cgo run)",
		"--compiled": "runs cgo, which runs the C compiler",
		"--http":     "starts a documentation web server",
	}
	goEnvFile = "changes the Go configuration (the go env file)"
	goWrites  = map[string]string{"-w": goEnvFile, "--w": goEnvFile, "-u": goEnvFile, "--u": goEnvFile}

	// brew (Homebrew's parser: exact names).
	brewLead = getopt.New("dqvh", "debug", "quiet", "verbose", "help").NoAbbreviations()
	brewRead = brewLead.Plus("1lrtsnpD", "formula", "formulae", "cask", "casks", "full-name", "versions",
		"multiple", "pinned", "installed-on-request", "installed-as-dependency", "poured-from-bottle",
		"built-from-source", "json?", "installed", "eval-all", "analytics", "days=", "category=",
		"github", "fetch-HEAD", "greedy", "greedy-latest", "greedy-auto-updates", "desc",
		"pull-request", "open", "closed", "repology", "macports", "fink", "opensuse", "fedora",
		"archlinux", "debian", "ubuntu", "topological", "tree", "annotate", "union", "include-build",
		"include-optional", "include-test", "skip-recommended", "include-requirements", "for-each",
		"direct", "graph", "dot", "missing", "recursive", "search", "name", "description",
		"list-checks", "audit-debug", "variations", "sizes", "os=", "arch=")
	brewBrowser = "opens a web browser"
	brewRuns    = map[string]string{"--github": brewBrowser, "--repology": brewBrowser, "--macports": brewBrowser,
		"--fink": brewBrowser, "--opensuse": brewBrowser, "--fedora": brewBrowser, "--archlinux": brewBrowser,
		"--debian": brewBrowser, "--ubuntu": brewBrowser}

	// snap (go-flags: exact names).
	snapLead = getopt.New("h", "help").NoAbbreviations()
	snapRead = snapLead.Plus("", "all", "color=", "unicode=", "verbose", "abs-time", "private", "narrow",
		"section?", "global", "user", "disconnected")

	// flatpak (GOption: exact names).
	flatpakLead = getopt.New("vh", "verbose", "ostree-verbose", "help", "version", "default-arch",
		"supported-arches", "gl-drivers", "installations", "print-updated-env", "print-system-only").NoAbbreviations()
	flatpakRead = flatpakLead.Plus("dacorsMmel", "user", "system", "installation=", "show-details", "app",
		"runtime", "all", "app-runtime=", "columns=", "arch=", "show-ref", "show-commit",
		"show-origin", "show-size", "show-metadata", "show-runtime", "show-sdk", "show-permissions",
		"file-access=", "show-extensions", "show-location", "show-disabled", "updates", "cached",
		"sideloaded", "commit=", "log", "since=", "until=", "reverse", "json")

	// apk (exact names).
	apkLead = getopt.New("hp:X:qviVfU", "help", "root=", "repository=", "quiet", "verbose", "interactive",
		"no-interactive", "version", "force", "force-binary-stdout", "force-broken-world",
		"force-non-repository", "force-old-apk", "force-overwrite", "force-refresh",
		"force-missing-repositories", "update-cache", "allow-untrusted", "arch=", "cache-dir=",
		"cache-max-age=", "cache-packages", "cache-predownload", "keys-dir=", "no-cache",
		"no-check-certificate", "no-logfile", "no-network", "no-progress", "preserve-env",
		"print-arch", "progress", "progress-fd=", "purge", "repositories-file=", "timeout=", "wait=").NoAbbreviations()
	apkRead = apkLead.Plus("LWRPrsdwateoxIOucl:", "contents", "who-owns", "depends", "provides", "rdepends",
		"replaces", "install-if", "rinstall-if", "webpage", "size", "description", "all", "license",
		"triggers", "installed", "exact", "has-origin", "origin", "orphaned", "available",
		"upgradable", "upgradeable", "providers", "manifest", "indexes", "test", "check", "limit=", "errors")

	// aptitude (getopt_long: unique abbreviations).
	aptitudeRead = getopt.New("hDdF:fPRrsq::O:t:VvW:w:yZuiS:o:", "help", "version", "show-deps", "download-only",
		"display-format=", "group-by=", "purge-unused", "prompt", "without-recommends", "with-recommends",
		"simulate", "safe-resolver", "full-resolver", "quiet?", "sort=", "target-release=",
		"show-versions", "verbose", "width=", "assume-yes", "allow-untrusted", "no-new-installs",
		"no-new-upgrades", "disable-columns", "show-summary?")

	// zypper (getopt_long: unique abbreviations; global options first).
	zypperLead = getopt.New("qvnxtR:c:s:AD:C:p:iVh", "quiet", "verbose", "non-interactive", "xmlout", "terse",
		"no-refresh", "root=", "config=", "table-style=", "no-abbrev", "reposd-dir=", "cache-dir=",
		"raw-cache-dir=", "solv-cache-dir=", "pkg-cache-dir=", "userdata=", "no-gpg-checks",
		"gpg-auto-import-keys", "plus-repo=", "plus-content=", "disable-repositories", "no-remote",
		"no-cd", "installroot=", "disable-system-resolvables", "ignore-unknown", "color", "no-color",
		"help", "version", "promptids", "non-interactive-include-reboot-patches").StopAtOperand()
	zypperRead = getopt.New("siut:r:xfdCvae:nupEPUNAR", "details", "installed-only", "not-installed-only", "type=",
		"repo=", "match-exact", "match-substrings", "match-words", "file-list", "search-descriptions",
		"case-sensitive", "sort-by-name", "sort-by-repo", "verbose", "provides", "requires",
		"recommends", "suggests", "conflicts", "obsoletes", "supplements", "enhances", "all",
		"best-effort", "export=", "alias", "name", "refresh", "uri", "priority", "show-enabled-only",
		"service", "sort-by-priority", "sort-by-uri", "sort-by-alias", "orphaned", "suggested",
		"recommended", "unneeded", "help")
)

// pkgManagers describes each package manager by its options.
var pkgManagers = func() map[string]*pkgManager {
	apt := &pkgManager{lead: aptLead.Plus("").StopAtOperand(), runs: aptRuns, removes: aptRemoves,
		reads: merge(verbs(aptList, "list", "show", "search", "policy", "depends", "rdepends", "showsrc",
			"changelog", "help"), verbs(aptLead, "check"), verbs(aptLead, keysOf(aptSimulated)...)),
		check: aptCheck}
	aptCache := &pkgManager{lead: aptCacheLead.Plus("").StopAtOperand(), runs: aptRuns,
		verbWrites: map[string]string{"gencaches": "writes the package cache files"},
		writes: map[string]string{"-p": "names a package cache file apt-cache may write", "--pkg-cache": "names a package cache file apt-cache may write",
			"-s": "names a source cache file apt-cache may write", "--src-cache": "names a source cache file apt-cache may write"},
		reads: verbs(aptCacheLead, "showpkg", "showsrc", "stats", "dump", "dumpavail", "unmet", "search", "show",
			"depends", "rdepends", "pkgnames", "dotty", "xvcg", "policy", "madison")}
	dnf := &pkgManager{lead: dnfLead.Plus("").StopAtOperand(), runs: dnfRuns, writes: dnfWrites,
		removes: wordSet("remove erase autoremove"),
		reads: verbs(dnfRead, "list", "info", "search", "repolist", "repoinfo", "repoquery", "provides",
			"whatprovides", "deplist", "history", "check-update", "check-upgrade"),
		check: func(verb string, _ *getopt.Parsed, ops []*arg) string {
			switch first := firstOp(ops); {
			case verb != "history":
			case first == "undo" || first == "redo" || first == "rollback" || first == "replay" || first == "store":
				return "history " + first + " changes packages or writes a transaction file"
			}
			return ""
		}}
	pip := &pkgManager{lead: pipLead.Plus("").StopAtOperand(), reads: pipReads, runs: pipRuns, writes: pipWrites,
		removes: wordSet("uninstall"),
		check: func(verb string, _ *getopt.Parsed, ops []*arg) string {
			first := firstOp(ops)
			switch {
			case verb == "config" && first != "list" && first != "get" && first != "debug":
				return "config " + first + " changes or edits the configuration"
			case verb == "cache" && first != "dir" && first != "info" && first != "list":
				return "cache " + first + " removes cached files"
			}
			return ""
		}}
	npm := &pkgManager{lead: npmLead.Plus("").StopAtOperand(), runs: npmRuns, risk: RiskHighWrite,
		verbWrites: verbsSay("runs a package.json script or a package's program", "run", "run-script", "rum", "urn", "exec", "x", "test", "t", "tst", "start", "stop", "restart", "explore", "rebuild", "rb"),
		removes:    wordSet("uninstall remove rm r un unlink prune"),
		reads: verbs(npmLead, "ls", "list", "ll", "la", "view", "info", "show", "v", "outdated", "search", "s",
			"se", "find", "help", "help-search", "explain", "why", "config", "c", "root", "prefix", "bin",
			"query", "audit", "fund", "ping", "whoami", "pkg"),
		check: func(verb string, _ *getopt.Parsed, ops []*arg) string {
			first := firstOp(ops)
			switch verb {
			case "config", "c":
				if first != "" && first != "get" && first != "list" && first != "ls" {
					return "config " + first + " changes or edits the configuration"
				}
			case "audit":
				if first == "fix" {
					return "audit fix installs packages"
				}
			case "pkg":
				if first != "get" {
					return "pkg " + first + " changes package.json"
				}
			case "fund":
				if first != "" {
					return "fund PACKAGE opens the funding URL in a web browser"
				}
			}
			return ""
		}}
	yarn := &pkgManager{lead: yarnLead.Plus("").StopAtOperand(), removes: wordSet("remove"),
		other: "installs, removes or changes packages, or runs the package.json script of that name",
		reads: verbs(yarnLead, "list", "info", "why", "outdated", "help", "audit", "licenses", "config", "bin"),
		check: func(verb string, _ *getopt.Parsed, ops []*arg) string {
			if first := firstOp(ops); verb == "config" && first != "get" && first != "list" && first != "" ||
				verb == "licenses" && first != "list" && first != "ls" && first != "" {
				return verb + " " + first + " is not a known read-only form"
			}
			return ""
		}}
	pnpm := &pkgManager{lead: pnpmLead.Plus("").StopAtOperand(), removes: wordSet("remove rm uninstall un prune"),
		other: "installs, removes or changes packages, or runs the package.json script of that name",
		reads: verbs(pnpmLead, "list", "ls", "ll", "la", "outdated", "why", "audit", "help", "root", "bin",
			"config", "licenses"),
		check: func(verb string, p *getopt.Parsed, ops []*arg) string {
			first := firstOp(ops)
			switch {
			case verb == "audit" && p.Has("--fix"):
				return "audit --fix adds overrides to package.json"
			case verb == "config" && first != "get" && first != "list" && first != "":
				return "config " + first + " changes the configuration"
			case verb == "licenses" && first != "list" && first != "ls" && first != "":
				return "licenses " + first + " is not a known read-only form"
			}
			return ""
		}}
	gem := &pkgManager{lead: gemLead.Plus("").StopAtOperand(), removes: wordSet("uninstall cleanup"),
		reads: verbs(gemRead, "list", "search", "info", "specification", "contents", "environment", "env",
			"query", "outdated", "help", "which", "dependency")}
	goTool := &pkgManager{lead: goSpec(), risk: RiskMediumWrite, runs: goRuns, writes: goWrites,
		other: "builds, runs or installs code, or changes the module files",
		reads: map[string]*getopt.Spec{
			"version": goSpec("m", "v", "json"),
			"env":     goSpec("json", "changed", "w", "u"),
			"list": goSpec(append([]string{"f=", "json?", "m", "u", "versions", "retracted", "deps", "test", "e",
				"export", "compiled", "find", "reuse="}, goBuildFlags...)...),
			"doc":  goSpec("all", "c", "cmd", "short", "src", "u", "http"),
			"help": goSpec(),
		},
		check: func(verb string, p *getopt.Parsed, _ []*arg) string {
			if o, ok := p.Get("--mod"); ok && verb == "list" && o.Value == "mod" {
				return "list -mod=mod may update go.mod and go.sum"
			}
			return ""
		}}
	brew := &pkgManager{lead: brewLead.Plus("").StopAtOperand(), runs: brewRuns, removes: wordSet("uninstall remove rm cleanup autoremove"),
		reads: verbs(brewRead, "list", "ls", "info", "abv", "search", "outdated", "deps", "uses", "leaves",
			"config", "doctor", "dr", "desc", "commands", "tap-info", "--version", "--prefix", "--cellar",
			"--cache", "--repository", "--repo", "--env", "--config"),
		check: func(verb string, p *getopt.Parsed, _ []*arg) string {
			if verb == "deps" && p.Has("--graph") && !p.Has("--dot") {
				return "deps --graph opens a web browser (--dot prints)"
			}
			return ""
		}}
	snap := &pkgManager{lead: snapLead.Plus("").StopAtOperand(), removes: wordSet("remove"),
		reads: verbs(snapRead, "list", "info", "find", "search", "version", "services", "connections", "changes",
			"tasks", "aliases")}
	flatpak := &pkgManager{lead: flatpakLead.Plus("").StopAtOperand(), removes: wordSet("uninstall remove"),
		reads: verbs(flatpakRead, "list", "info", "search", "remotes", "remote-ls", "remote-info", "history", "ps")}
	apk := &pkgManager{lead: apkLead.Plus("").StopAtOperand(), removes: wordSet("del"),
		reads: verbs(apkRead, "info", "search", "list", "policy", "version", "dot", "stats")}
	aptitude := &pkgManager{lead: aptitudeRead.Plus("").StopAtOperand(), removes: wordSet("remove purge"),
		runs:  map[string]string{"-o": aptRuns["-o"]},
		reads: verbs(aptitudeRead, "search", "show", "why", "why-not", "versions")}
	zypper := &pkgManager{lead: zypperLead, removes: wordSet("remove rm"),
		writes: map[string]string{"-e": "exports the repositories to a file", "--export": "exports the repositories to a file"},
		reads: verbs(zypperRead, "search", "se", "info", "if", "list-updates", "lu", "repos", "lr", "packages", "pa",
			"patches", "pch", "patterns", "pt", "products", "pd", "what-provides", "wp", "list-patches", "lp",
			"locks", "ll", "services", "ls")}
	return map[string]*pkgManager{
		"apt": apt, "apt-get": apt, "apt-cache": aptCache, "aptitude": aptitude, "yum": dnf, "dnf": dnf,
		"zypper": zypper, "apk": apk, "brew": brew, "snap": snap, "flatpak": flatpak, "pip": pip,
		"pip3": pip, "npm": npm, "yarn": yarn, "pnpm": pnpm, "gem": gem, "go": goTool,
	}
}()

// verbsSay maps each of names to what.
func verbsSay(what string, names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = what
	}
	return m
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// aptCheck: apt-get's and apt's changing verbs read only under -s (they
// print what they would do); changelog -d downloads the changelog into
// the current directory; check rebuilds the package cache but changes no
// package.
func aptCheck(verb string, p *getopt.Parsed, _ []*arg) string {
	switch {
	case aptSimulated[verb] && !p.Has("-s", "--simulate", "--just-print", "--dry-run", "--recon", "--no-act"):
		return verb + " installs, removes or changes packages (-s only prints what it would do)"
	case verb == "changelog" && p.Has("-d", "--download-only"):
		return "changelog -d writes the changelog into the current directory"
	}
	return ""
}

// dpkgSpec is dpkg's actions and options (its own parser: exact names),
// with the dpkg-deb actions dpkg passes on. --force-*, --no-force-* and
// --refuse-* are not listed: with a query they do nothing, so they fail
// closed as unknown.
var dpkgSpec = getopt.New("lLsSpCVcIfiPrRBDEGOxXbeA:", "list", "listfiles", "status", "search", "print-avail", "audit",
	"verify", "get-selections", "print-architecture", "print-foreign-architectures",
	"compare-versions", "version", "help", "force-help", "contents", "info", "field", "fsys-tarfile",
	"ctrl-tarfile", "validate-pkgname", "validate-trigname", "validate-archname",
	"validate-version", "assert-support-predepends", "assert-working-epoch",
	"assert-long-filenames", "assert-multi-conrep", "assert-multi-arch", "assert-versioned-provides",
	"assert-protected-field", "install", "remove", "purge", "unpack", "configure", "triggers-only",
	"set-selections", "clear-selections", "update-avail", "merge-avail", "clear-avail",
	"forget-old-unavail", "add-architecture", "remove-architecture", "extract", "vextract",
	"raw-extract", "build", "control", "record-avail", "admindir=", "instdir=", "root=", "no-pager",
	"verify-format=", "debug=", "status-fd=", "status-logger=", "log=", "pre-invoke=", "post-invoke=",
	"path-include=", "path-exclude=", "no-act", "dry-run", "simulate", "ignore-depends=",
	"abort-after=", "no-triggers", "triggers", "no-debsig", "recursive", "selected-only",
	"skip-same-version", "auto-deconfigure", "refuse-downgrade", "showformat=").NoAbbreviations()

// dpkgReads are dpkg's query actions; dpkgRemoves its removing ones.
var (
	dpkgReads = wordSet(`-l --list -L --listfiles -s --status -S --search -p --print-avail -C --audit -V
		--verify --get-selections --print-architecture --print-foreign-architectures --compare-versions
		--version --help --force-help -c --contents -I --info -f --field --fsys-tarfile --ctrl-tarfile
		--validate-pkgname --validate-trigname --validate-archname --validate-version
		--assert-support-predepends --assert-working-epoch --assert-long-filenames
		--assert-multi-conrep --assert-multi-arch --assert-versioned-provides --assert-protected-field`)
	dpkgRemoves = wordSet("-r --remove -P --purge")
	dpkgRuns    = map[string]string{"--status-logger": "runs a program with the status updates",
		"--pre-invoke": "runs a program before the action", "--post-invoke": "runs a program after the action"}
)

// dpkgRule: dpkg's query actions read; any other action installs, removes
// or changes packages; with none, dpkg has nothing to do.
func dpkgRule(c *call) {
	p := c.parse(dpkgSpec)
	if !c.strict(p) {
		return
	}
	read, write := "", ""
	for _, o := range p.Opts {
		switch {
		case dpkgRuns[o.Name] != "":
			c.a.writes(CodeRunsProgram, RiskHighWrite, "dpkg "+o.Name+" "+dpkgRuns[o.Name])
			return
		case o.Name == "--log":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "dpkg --log appends to a log file")
			return
		case dpkgReads[o.Name]:
			read = o.Name
		case strings.HasPrefix(o.Name, "-") && len(o.Name) == 2 && strings.ContainsRune("iPrxXbeA", rune(o.Name[1])),
			slices.Contains([]string{"--install", "--remove", "--purge", "--unpack", "--configure", "--triggers-only",
				"--set-selections", "--clear-selections", "--update-avail", "--merge-avail", "--clear-avail",
				"--forget-old-unavail", "--add-architecture", "--remove-architecture", "--extract", "--vextract",
				"--raw-extract", "--build", "--control", "--record-avail"}, o.Name):
			write = o.Name
		}
	}
	if write == "" && read != "" {
		return
	}
	if write == "" {
		write = "without a query action"
	}
	c.a.writes(CodeWriteSubcommand, RiskHighWrite, "dpkg "+write+" installs, removes, unpacks or changes packages")
	if dpkgRemoves[write] {
		c.a.destroys("dpkg " + write + " removes packages")
	}
}

// dpkgQuerySpec is dpkg-query's options: every action only reads.
var dpkgQuerySpec = getopt.New("lWspLScf:", "list", "show", "status", "print-avail", "listfiles", "search",
	"control-path", "control-list", "control-show", "admindir=", "root=", "instdir=", "load-avail",
	"showformat=", "no-pager", "help", "version").NoAbbreviations()

func dpkgQueryRule(c *call) { c.strict(c.parse(dpkgQuerySpec)) }

// pacmanSpec is pacman's operations and options (getopt_long: unique
// abbreviations). The same letter means different things per operation
// (-c is --changelog under -Q, --clean under -S), so the judgement below
// goes by operation.
var pacmanSpec = getopt.New("QSRUDTFVhcdegiklmnopqstuwyxvb:r:", "query", "sync", "remove", "upgrade", "database",
	"deptest", "files", "version", "help", "dbpath=", "root=", "verbose", "arch=", "cachedir=", "color=",
	"config=", "debug", "gpgdir=", "hookdir=", "logfile=", "noconfirm", "confirm",
	"disable-download-timeout", "sysroot=", "changelog", "deps", "explicit", "groups", "info", "check",
	"list", "foreign", "native", "owns", "file", "quiet", "search", "unrequired", "upgrades", "clean",
	"sysupgrade", "refresh", "downloadonly", "print", "print-format=", "needed", "asdeps",
	"asexplicit", "ignore=", "ignoregroup=", "nodeps", "assume-installed=", "dbonly",
	"noprogressbar", "noscriptlet", "overwrite=", "cascade", "nosave", "recursive", "unneeded",
	"regex", "machinereadable", "disable-sandbox")

// pacmanRule: -Q, -T, -V and -h read; -S reads with search, info, list,
// groups or print and without clean, sysupgrade, refresh or download;
// -F reads without --refresh; -D reads with --check; -R and -U change.
func pacmanRule(c *call) {
	p := c.parse(pacmanSpec)
	if !c.strict(p) {
		return
	}
	op := ""
	for _, o := range p.Opts {
		switch o.Name {
		case "-Q", "--query", "-S", "--sync", "-R", "--remove", "-U", "--upgrade", "-D", "--database",
			"-T", "--deptest", "-F", "--files", "-V", "--version", "-h", "--help":
			if op == "" || op == "-h" || op == "--help" {
				op = o.Name
			}
		}
	}
	write := ""
	switch op {
	case "-Q", "--query", "-T", "--deptest", "-V", "--version", "-h", "--help":
	case "-S", "--sync":
		if o, ok := p.Get("-c", "--clean", "-u", "--sysupgrade", "-y", "--refresh", "-w", "--downloadonly"); ok {
			write = "pacman -S " + o.Name + " " + map[string]string{"-c": "removes cached packages", "--clean": "removes cached packages",
				"-u": "upgrades the installed packages", "--sysupgrade": "upgrades the installed packages",
				"-y": "downloads fresh package databases", "--refresh": "downloads fresh package databases",
				"-w": "downloads packages into the cache", "--downloadonly": "downloads packages into the cache"}[o.Name]
		} else if !p.Has("-s", "--search", "-i", "--info", "-l", "--list", "-g", "--groups", "-p", "--print") {
			write = "pacman -S installs packages"
		}
	case "-F", "--files":
		if p.Has("-y", "--refresh") {
			write = "pacman -F --refresh downloads the file databases"
		}
	case "-D", "--database":
		if !p.Has("-k", "--check") {
			write = "pacman -D changes the package database"
		}
	case "-R", "--remove":
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "pacman -R removes packages")
		c.a.destroys("pacman -R removes packages")
		return
	default:
		write = "pacman " + strings.TrimSpace(op+" installs or changes packages")
	}
	if write != "" {
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, write)
	}
}
