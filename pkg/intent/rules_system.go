package intent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

// Rules for system inspection and service management tools. Every one reads
// its options with the one parser (issue 14): before, systemctl and
// journalctl refused GNU abbreviations they accept, and iptables, ufw,
// crontab, iotop, ifconfig and the vmstat family found their options with
// hand-written loops that let unknown options through (pidstat -e rm -rf /
// passed as a bounded read).
func registerSystemRules() {
	rules["systemctl"] = systemctlRule
	rules["service"] = serviceRule
	rules["journalctl"] = journalctlRule
	rules["dmesg"] = dmesgRule
	for _, n := range []string{"vmstat", "iostat", "mpstat", "pidstat", "sar"} {
		rules[n] = intervalRule
	}
	rules["top"] = topRule
	// atop, glances, bmon and nmon are full-screen monitors whose many
	// options are not modelled: whatever their options, they are not
	// bounded reads (the described ones are in the describeTools below).
	for _, n := range []string{"atop", "glances", "bmon", "nmon"} {
		rules[n] = func(c *call) {
			c.a.never(UnboundedStream, c.name+" refreshes until a key is pressed")
			c.rewrite("top", "-b", "-n", "1")
		}
	}
	rules["free"] = freeRule
	for _, n := range []string{"kill", "killall"} {
		rules[n] = killRule
	}
	rules["pkill"] = pkillRule
	rules["crontab"] = crontabRule
	rules["sysctl"] = sysctlRule
	for _, n := range []string{"iptables", "ip6tables", "iptables-legacy", "ip6tables-legacy", "iptables-nft", "ip6tables-nft"} {
		rules[n] = iptablesRule
	}
	rules["ufw"] = ufwRule
	rules["ip"] = ipRule
	rules["ifconfig"] = ifconfigRule
	rules["ldd"] = func(c *call) {
		// ldd may execute the binary it inspects (glibc's ldd runs it with
		// LD_TRACE_LOADED_OBJECTS set).
		c.a.writes(CodeRunsProgram, RiskMediumWrite, "ldd may run the program it inspects")
	}
}

// parseTaking parses like c.parse, and then lets a value-less occurrence of
// one of names take the next word as its value when accept says it is one,
// the way the program reads its argv (journalctl -n 50 and -b -1, iostat
// -p sda, iptables -w 5): the getopt rules alone would make the word an
// operand, or an unknown option (-1). The taken word stays out of the
// operands. s must not stop at the first operand.
func parseTaking(c *call, s *getopt.Spec, accept func(string) bool, names ...string) *getopt.Parsed {
	args := c.rest()
	taken := map[int]bool{}
	for {
		p := c.parseWords(args, s)
		grew := false
		for _, o := range p.Opts {
			i := o.Index + 1
			if o.HasValue || taken[i] || i >= len(args) || !slices.Contains(names, o.Name) || !endsWord(c.rest()[o.Index].val, o.Name) {
				continue
			}
			if next := c.rest()[i]; next.literal() && accept(next.val) {
				taken[i], grew = true, true
				break
			}
		}
		if !grew {
			for k, o := range p.Opts {
				if i := o.Index + 1; taken[i] && !o.HasValue && slices.Contains(names, o.Name) {
					p.Opts[k].Value, p.Opts[k].HasValue, p.Opts[k].SepValue = c.rest()[i].val, true, true
					p.Operands = removeInt(p.Operands, i)
				}
			}
			return p
		}
		// Parse again with the taken words as plain operands, so that a
		// word like -1 is not read as options.
		args = slices.Clone(c.rest())
		for i := range taken {
			args[i] = &arg{val: "taken", src: "taken"}
		}
	}
}

// endsWord reports whether the option name is the last thing in its word:
// the whole word for a long option without "=VALUE", the last letter of a
// short cluster.
func endsWord(word, name string) bool {
	if strings.HasPrefix(name, "--") {
		return !strings.Contains(word, "=")
	}
	return strings.HasSuffix(word, name[1:])
}

// systemctlSpec is systemctl's options (systemd 257), with getopt_long's
// abbreviations (--no-p is --no-pager; --no-b is --no-block).
var systemctlSpec = getopt.New("ht:p:P:alqfs:H:M:n:o:iTrC:.::", "help", "version", "type=", "property=", "all",
	"reverse", "after", "before", "show-types", "failed", "full", "job-mode=", "fail", "irreversible",
	"ignore-dependencies", "ignore-inhibitors", "check-inhibitors=", "value", "user", "system", "global",
	"capsule=", "wait", "no-block", "legend=", "no-legend", "no-pager", "no-wall", "dry-run", "quiet",
	"no-warn", "root=", "image=", "image-policy=", "force", "no-reload", "kill-whom=", "kill-value=",
	"kill-subgroup=", "signal=", "no-ask-password", "host=", "machine=", "runtime", "lines=", "output=",
	"plain", "state=", "recursive", "with-dependencies", "preset-mode=", "firmware-setup",
	"boot-loader-menu=", "boot-loader-entry=", "now", "message=", "show-transaction", "what=",
	"reboot-argument=", "timestamp=", "read-only", "mkdir", "marked", "drop-in=", "when=", "stdin")

// systemctlReads are the verbs that only print; systemctl matches verbs
// whole, without abbreviations.
var systemctlReads = map[string]bool{
	"status": true, "show": true, "cat": true, "is-active": true, "is-enabled": true, "is-failed": true,
	"is-system-running": true, "list-units": true, "list-unit-files": true, "list-sockets": true,
	"list-timers": true, "list-jobs": true, "list-dependencies": true, "list-machines": true,
	"list-automounts": true, "list-paths": true, "get-default": true, "show-environment": true,
	"help": true, "whoami": true,
}

// systemctlRule: status and list verbs read; stop, kill and the power verbs
// take services or the machine down (DESIGN §4 destructive); start, restart
// and friends are high-risk writes (P-52). log-level, log-target and
// service-watchdogs print the setting without a value and set it with one.
func systemctlRule(c *call) {
	p := c.parse(systemctlSpec)
	if !c.strict(p) {
		return
	}
	verb := "list-units"
	if a, ok := c.operand(p, 0); ok {
		verb = a.val
	}
	switch verb {
	case "log-level", "log-target", "service-watchdogs":
		if len(p.Operands) == 1 {
			return
		}
	case "stop", "kill", "mask", "isolate", "poweroff", "reboot", "halt", "kexec", "suspend",
		"hibernate", "hybrid-sleep", "suspend-then-hibernate", "rescue", "emergency", "default",
		"exit", "soft-reboot", "disable", "freeze", "clean", "sleep":
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "systemctl "+verb+" changes service state")
		c.a.destroys("systemctl " + verb + " takes a service or the system down")
		return
	case "edit":
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "systemctl edit modifies a unit file")
		c.a.never(Pager, "systemctl edit opens an editor")
		return
	}
	if systemctlReads[verb] {
		return // status pages only on a terminal, and agents have none (DESIGN §4)
	}
	c.a.writes(CodeWriteSubcommand, RiskHighWrite, "systemctl "+verb+" changes service state")
}

// serviceSpec is the options of service (init-system-helpers): it stops at
// --help, -h or --version wherever they are, and --status-all must be its
// only argument. It matches no abbreviations.
var serviceSpec = getopt.New("hV", "help", "version", "status-all").NoAbbreviations()

// serviceRule: service NAME status reads; any other action changes state
// (the script runs the init script or systemctl with it).
func serviceRule(c *call) {
	p := c.parse(serviceSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("-h", "--help", "-V", "--version") {
		return // printed before any action runs
	}
	if p.Has("--status-all") {
		if len(c.rest()) == 1 {
			return // runs every init script's status
		}
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "service --status-all with other arguments is passed to an init script")
		return
	}
	if len(p.Operands) == 2 && p.DashDash < 0 && c.rest()[p.Operands[1]].val == "status" {
		return
	}
	action := ""
	if a, ok := c.operand(p, 1); ok {
		action = a.val
	}
	c.a.writes(CodeWriteSubcommand, RiskHighWrite, "service "+joined(c.rest())+" changes service state")
	if action == "stop" {
		c.a.destroys("service stop takes a service down")
	}
}

// journalctlSpec is journalctl's options (systemd 257), with getopt_long's
// abbreviations (--vacuum-s is --vacuum-size, --vac is ambiguous).
var journalctlSpec = getopt.New("hefo:aln::qmb::kD:p:g:c:S:U:t:T:u:INF:xrM:i:W", "help", "version", "no-pager",
	"pager-end", "follow", "force", "output=", "all", "full", "no-full", "lines?", "truncate-newline",
	"no-tail", "new-id128", "quiet", "merge", "this-boot", "boot?", "list-boots", "list-invocations",
	"dmesg", "system", "user", "directory=", "file=", "root=", "image=", "image-policy=", "header",
	"identifier=", "exclude-identifier=", "priority=", "facility=", "grep=", "case-sensitive?",
	"setup-keys", "interval=", "verify", "verify-key=", "disk-usage", "cursor=", "cursor-file=",
	"after-cursor=", "show-cursor", "since=", "until=", "unit=", "user-unit=", "invocation=", "field=",
	"fields", "catalog", "list-catalog", "dump-catalog", "update-catalog", "reverse", "machine=", "utc",
	"flush", "relinquish-var", "smart-relinquish-var", "sync", "rotate", "vacuum-size=", "vacuum-files=",
	"vacuum-time=", "no-hostname", "output-fields=", "namespace=", "list-namespaces",
	"synchronize-on-exit=")

// journalctlWrites are the options that change the journal: what they do.
var journalctlWrites = map[string]string{
	"--rotate": "asks journald to rotate the journal files", "--flush": "asks journald to move the journal to /var",
	"--sync": "asks journald to write unwritten messages to disk", "--relinquish-var": "asks journald to stop writing to /var",
	"--smart-relinquish-var": "asks journald to stop writing to /var", "--setup-keys": "writes a new sealing key pair",
	"--update-catalog": "rebuilds the message catalog database", "--cursor-file": "updates the cursor file",
	"--synchronize-on-exit": "asks journald to write unwritten messages to disk",
}

// isBootID reports journalctl's boot descriptors: all, a signed offset, or
// a 32-digit boot ID with an optional offset (-b -1, -b 4a3…+2).
func isBootID(s string) bool {
	if s == "all" || isInteger(&arg{val: strings.TrimPrefix(s, "+")}) {
		return true
	}
	if len(s) < 32 || strings.Trim(s[:32], "0123456789abcdefABCDEF") != "" {
		return false
	}
	rest := s[32:]
	return rest == "" || (rest[0] == '+' || rest[0] == '-') && isInteger(&arg{val: rest[1:]})
}

// journalctlRule: --follow never ends unless --until gives an end time (or a
// timeout wraps it); --since and -n do not stop a follow (DESIGN §4, P-48
// deviation). Maintenance options write. Rewrite (seed 000):
// journalctl -f → journalctl -n 200 --since "10 min ago".
func journalctlRule(c *call) {
	// journalctl's -n and -b take their value as the next word when it is
	// one (journalctl -n 50, journalctl -b -1).
	p := parseTaking(c, journalctlSpec, func(s string) bool { return isCount(s) || isBootID(s) }, "-n", "--lines", "-b", "--boot")
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		switch o.Name {
		case "--vacuum-size", "--vacuum-time", "--vacuum-files":
			c.a.writes(CodeWriteOption, RiskHighWrite, "journalctl "+o.Name+" deletes journal files")
			c.a.destroys("journalctl " + o.Name + " deletes journal files")
		default:
			if what, ok := journalctlWrites[o.Name]; ok {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "journalctl "+o.Name+" "+what)
			}
		}
	}
	follow := func(o getopt.Opt) bool { return o.Name == "-f" || o.Name == "--follow" }
	if !p.Has("-f", "--follow") || p.Has("-U", "--until") {
		return
	}
	c.a.never(UnboundedStream, "journalctl -f follows forever; --since and -n do not stop it")
	var extra []string
	if !p.Has("-n", "--lines") {
		extra = append(extra, "-n", "200")
	}
	if !p.Has("-S", "--since") {
		extra = append(extra, "--since", shellQuote("10 min ago"))
	}
	c.rewrite(c.srcExcept(p, len(c.args), follow, extra...)...)
}

func isCount(s string) bool {
	return s == "all" || isInteger(&arg{val: s}) || (strings.HasPrefix(s, "+") && isInteger(&arg{val: s[1:]}))
}

// isDigits reports a non-empty string of decimal digits: an interval or a
// count (vmstat 1 5).
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func removeInt(xs []int, v int) []int {
	out := xs[:0]
	for _, x := range xs {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// dmesgSpec is util-linux dmesg's options (2.40), with getopt_long's
// abbreviations (--read is --read-clear, --cl is --clear).
var dmesgSpec = getopt.New("CcDdEeF:f:HhJK:kL::l:n:PprSs:TtuVWwx", "buffer-size=", "clear", "color?",
	"console-level=", "console-off", "console-on", "decode", "file=", "facility=", "follow",
	"follow-new", "human", "help", "json", "kernel", "kmsg-file=", "level=", "since=", "syslog", "raw",
	"read-clear", "reltime", "show-delta", "ctime", "noescape", "notime", "nopager", "until=",
	"userspace", "version", "time-format=", "force-prefix")

// dmesgRule: -w/-W follow; -c/-C clear the ring buffer; -n/-D/-E change
// console logging.
func dmesgRule(c *call) {
	p := c.parse(dmesgSpec)
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		switch o.Name {
		case "-c", "-C", "--clear", "--read-clear":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "dmesg "+o.Name+" clears the kernel ring buffer")
		case "-n", "-D", "-E", "--console-level", "--console-off", "--console-on":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "dmesg "+o.Name+" changes console logging")
		}
	}
	follow := func(o getopt.Opt) bool {
		return o.Name == "-w" || o.Name == "-W" || o.Name == "--follow" || o.Name == "--follow-new"
	}
	for _, o := range p.Opts {
		if follow(o) {
			c.a.never(UnboundedStream, "dmesg "+o.Name+" waits for new messages forever")
			c.rewrite(c.srcExcept(p, len(c.args), follow)...)
			return
		}
	}
}

// intervalProgram is how one of vmstat's family reads its arguments.
type intervalProgram struct {
	opts *getopt.Spec
	// optWord lists options that take the next word as their value when it
	// is not a number (iostat -p sda, sar -u ALL, sar -o FILE): the
	// sysstat programs read their argv that way.
	optWord []string
	// devices: non-numeric operands name devices (iostat sda 1 5).
	devices bool
}

// intervalPrograms: vmstat (procps-ng 4) uses getopt_long; the sysstat
// programs (12.7) compare whole words, so their long options take no
// abbreviations and a value-taking letter must be its own word.
var intervalPrograms = map[string]intervalProgram{
	"vmstat": {opts: getopt.New("afmnsdDp:S:wtyhVC", "active", "forks", "slabs", "one-header", "stats", "disk",
		"disk-sum", "partition=", "unit=", "wide", "timestamp", "no-first", "full-cache", "help", "version")},
	"iostat": {opts: getopt.New("cdhkmNstVxyzHf:g:j:o:p", "compact", "dec=", "human", "pretty", "help").NoAbbreviations(),
		optWord: []string{"-p"}, devices: true},
	"mpstat": {opts: getopt.New("AnTuVI:N:o:P:", "dec=", "help").NoAbbreviations()},
	"pidstat": {opts: getopt.New("dHhIlRrstuVvwUC:G:p:T:e:", "dec=", "human", "help").NoAbbreviations(),
		optWord: []string{"-U"}},
	"sar": {opts: getopt.New("ABbCDdFHhIprSuVvWwyzfoqseP:m:n:j:i:0123456789", "dec=", "dev=", "fs=", "human",
		"iface=", "int=", "pretty", "sadc", "help").NoAbbreviations(),
		optWord: []string{"-F", "-I", "-q", "-r", "-u", "-f", "-o", "-s", "-e"}},
}

// intervalRule: vmstat 1 repeats forever; vmstat 1 5 stops after 5 reports.
// sar -o writes a data file; pidstat -e runs a program (classified too).
func intervalRule(c *call) {
	prog := intervalPrograms[c.name]
	p := parseTaking(c, prog.opts, func(s string) bool { return !isDigits(s) && !strings.HasPrefix(s, "-") }, prog.optWord...)
	for _, o := range p.Opts {
		if o.Name != "-e" || c.name != "pidstat" {
			continue
		}
		// pidstat -e PROGRAM ARGS… runs the rest of the line (classified
		// like any command) and reports on it until it exits.
		if !o.SepValue || o.Cluster {
			c.a.writes(CodeRunsProgram, RiskMediumWrite, "pidstat: "+c.rest()[o.Index].src+" runs a program that is not checked")
			return
		}
		if c.strict(c.parseWords(c.rest()[:o.Index], prog.opts)) {
			c.inner(c.rest()[o.Index+1:], stmtCtx{})
		}
		return
	}
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-o"); ok && c.name == "sar" {
		c.a.writes(CodeWriteOption, RiskMediumWrite, "sar -o "+o.Value+" writes a data file")
	}
	var nums []*arg
	for _, i := range p.Operands {
		a := c.rest()[i]
		switch {
		case isDigits(a.val):
			nums = append(nums, a)
		case !prog.devices:
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("%s: argument %s is not an interval or a count", c.name, a.src))
			return
		}
	}
	if len(nums) == 1 {
		c.a.never(UnboundedStream, fmt.Sprintf("%s %s reports every %s s until stopped; add a count", c.name, nums[0].val, nums[0].val))
		words := make([]string, 0, len(c.args)+1)
		for _, a := range c.args {
			words = append(words, a.src)
			if a == nums[0] {
				words = append(words, "5")
			}
		}
		c.rewrite(words...)
	}
}

// topSpec is procps-ng top's options (4.0), with getopt_long's
// abbreviations (--batch is --batch-mode, --iter is --iterations).
var topSpec = getopt.New("bcd:E:e:Hhin:o:Op:sSu:U:vVw::1", "batch-mode", "cmdline-toggle", "delay=",
	"scale-summary-mem=", "scale-task-mem=", "threads-show", "idle-toggle", "iterations=",
	"sort-override=", "list-fields", "pid=", "secure-mode", "accum-time-toggle", "filter-only-euser=",
	"filter-any-user=", "width?", "single-cpu-toggle", "help", "version")

// topRule: top is bounded only in batch mode with an iteration count.
// Rewrite: top → top -b -n 1.
func topRule(c *call) {
	p := c.parse(topSpec)
	if !c.strict(p) {
		return
	}
	batch, count := p.Has("-b", "--batch-mode"), p.Has("-n", "--iterations")
	if batch && count || p.Has("-O", "--list-fields") {
		return
	}
	c.a.never(UnboundedStream, "top refreshes until stopped; -b -n N makes it print N times")
	words := []string{c.args[0].src}
	if !batch {
		words = append(words, "-b")
	}
	if !count {
		words = append(words, "-n", "1")
	}
	for _, a := range c.rest() {
		words = append(words, a.src)
	}
	c.rewrite(words...)
}

var freeSpec = getopt.New("bkmgthlLvwc:s:V", "bytes", "kilo", "mega", "giga", "tera", "peta", "kibi", "mebi",
	"gibi", "tebi", "pebi", "human", "si", "lohi", "line", "total", "committed", "wide", "count=",
	"seconds=", "help", "version")

// freeRule: free -s N repeats forever unless -c bounds it.
func freeRule(c *call) {
	p := c.parse(freeSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("-s", "--seconds") && !p.Has("-c", "--count") {
		c.a.never(UnboundedStream, "free -s repeats forever; add -c N")
		c.rewrite(append(c.srcExcept(p, len(c.args), func(getopt.Opt) bool { return false }), "-c", "5")...)
	}
}

// killSpec is the options of bash's kill builtin once its signal word is
// read: -l/-L list, -s SIG and -n NUM name the signal, "--" ends them; the
// first word that is none of these starts the pid list.
// (procps-ng kill's long options are known too: kill --list, kill --table).
var killSpec = getopt.New("lLs:n:", "list?", "table", "signal=").NoAbbreviations().StopAtOperand()

// killallSpec is psmisc killall's options (23): getopt_long_only, so long
// options may take one dash too.
var killallSpec = getopt.New("eIgy:o:ilqrs:u:vwZ:Vn:h", "exact", "ignore-case", "process-group", "younger-than=",
	"older-than=", "interactive", "list", "quiet", "regexp", "signal=", "user=", "verbose", "wait",
	"version", "ns=", "context=", "help").SingleDashLongs()

// signalWord reports a first argument -SIG (kill -9, kill -TERM, killall
// -0): a signal, not an option, unless it is one of the program's option
// letters (-0 always names signal 0).
func signalWord(args []*arg, s *getopt.Spec) (string, bool) {
	if len(args) == 0 || !args[0].literal() {
		return "", false
	}
	v := args[0].val
	if len(v) < 2 || v[0] != '-' || v[1] == '-' {
		return "", false
	}
	if _, isOpt := s.Short(v[1]); isOpt && v != "-0" {
		return "", false
	}
	return v[1:], true
}

// killRule: kill -0 and kill -s 0 only probe whether processes exist,
// kill -l lists signals; anything else signals processes. The signal is
// read the way bash's kill builtin reads it: -s SIG, -n NUM or -SIG, with
// the first other word starting the pid list, so kill -TERM -- -0 (the
// whole process group) is a write, not a probe (issue 14).
func killRule(c *call) {
	s := killSpec
	if c.name == "killall" {
		s = killallSpec
	}
	args := c.rest()
	sig, fromWord := signalWord(args, s)
	if fromWord {
		args = args[1:]
	}
	viaS := false
	var p *getopt.Parsed
	if c.name == "kill" && sig != "" && len(args) > 0 && isInteger(args[0]) && strings.HasPrefix(args[0].val, "-") {
		// After the signal word, bash reads -1234 as a process group.
		p = &getopt.Parsed{DashDash: -1}
		for i := range args {
			p.Operands = append(p.Operands, i)
		}
	} else {
		p = c.parseWords(args, s)
	}
	if len(p.Unknown) > 0 {
		c.strict(p)
		return
	}
	if p.Has("-l", "-L", "--list", "--table") || c.name == "killall" && p.Has("-V", "--version") {
		return // lists signal names, or prints the version
	}
	if o, ok := p.Get("-s", "-n", "--signal"); ok {
		sig, viaS = o.Value, true
		if !o.HasValue || o.SepValue && !args[o.Index+1].literal() {
			sig = "?"
		}
	}
	var pids []*arg
	for _, i := range p.Operands {
		pids = append(pids, args[i])
	}
	probe := sig == "0"
	if probe && len(p.Dynamic) > 0 {
		// A word that expands may split into -s SIG PID, unless it is one
		// "…" word standing alone in the pid list.
		probe = len(pids) == 1 && !pids[0].literal() && fullyDoubleQuoted(pids[0].src) && len(p.Dynamic) == 1
	}
	if probe && len(pids) > 0 {
		if first := pids[0]; first.literal() && strings.HasPrefix(first.val, "-") && (viaS || c.name != "kill") {
			probe = false // after -s 0 (or in killall), a word like -9 may still be read as a signal
		}
	}
	if probe && c.name == "killall" {
		if p.Has("-i", "--interactive") {
			c.a.never(InteractiveREPL, "killall -i asks before signalling each process")
		}
		if p.Has("-w", "--wait") {
			c.a.never(UnboundedStream, "killall -w waits for processes that signal 0 does not end")
		}
	}
	if probe {
		return
	}
	c.a.writes(CodeWriteCommand, RiskHighWrite, c.name+" sends signals to processes")
	c.a.destroys(c.name + " can take a service down")
}

// fullyDoubleQuoted reports a word written as one "…" string: it expands to
// exactly one word.
func fullyDoubleQuoted(src string) bool {
	return len(src) >= 2 && src[0] == '"' && src[len(src)-1] == '"' && !strings.Contains(src[1:len(src)-1], `"`)
}

// pkillSpec is procps-ng pkill's options (4.0), with getopt_long's
// abbreviations.
var pkillSpec = getopt.New("d:lavwcfg:G:inoO:P:s:t:u:U:xF:Lr:AhVeqH", "delimiter=", "list-name", "list-full",
	"inverse", "lightweight", "count", "full", "pgroup=", "group=", "ignore-case", "newest", "oldest",
	"older=", "parent=", "session=", "terminal=", "euid=", "uid=", "exact", "pidfile=", "logpidfile",
	"runstates=", "ignore-ancestors", "cgroup=", "ns=", "nslist=", "env=", "signal=", "echo", "queue=",
	"require-handler", "help", "version")

// pkillRule: pkill -0 PATTERN and pkill --signal 0 only probe. pkill takes
// the first -SIG word as its signal; one after other options is an
// unknown option here (fails closed).
func pkillRule(c *call) {
	args := c.rest()
	sig, ok := signalWord(args, pkillSpec)
	if ok {
		args = args[1:]
	}
	p := c.parseWords(args, pkillSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("--signal"); ok {
		sig = o.Value
	}
	if sig == "0" && !p.Has("-q", "--queue") {
		return
	}
	c.a.writes(CodeWriteCommand, RiskHighWrite, c.name+" sends signals to processes")
	c.a.destroys(c.name + " can take a service down")
}

// crontabSpec is the options of Debian's and cronie's crontab (getopt, no
// long options).
var crontabSpec = getopt.New("u:lerinhsx:cVT")

// crontabRule: -l lists (and cronie's -T tests a file); -r removes; -e
// edits; a file or standard input installs a crontab.
func crontabRule(c *call) {
	p := c.parse(crontabSpec)
	if !c.strict(p) {
		return
	}
	switch {
	case p.Has("-r"):
		c.a.writes(CodeWriteCommand, RiskHighWrite, "crontab -r removes the crontab")
		c.a.destroys("crontab -r removes the crontab")
	case p.Has("-e"):
		c.a.writes(CodeWriteCommand, RiskHighWrite, "crontab -e edits the crontab")
		c.a.never(Pager, "crontab -e opens an editor")
	case p.Has("-n", "-s", "-c"):
		o, _ := p.Get("-n", "-s", "-c")
		c.a.writes(CodeWriteOption, RiskHighWrite, "crontab "+o.Name+" is not known to be read-only (cronie's -n sets the cluster host)")
	case p.Has("-l", "-h", "-V") && len(p.Operands) == 0 || p.Has("-T") && len(p.Operands) == 1:
	default:
		c.a.writes(CodeWriteCommand, RiskHighWrite, "crontab installs a crontab")
	}
}

// sysctlSpec is procps-ng sysctl's options (4.0), with getopt_long's
// abbreviations (--lo is --load).
var sysctlSpec = getopt.New("aAXbeNnp::f::r:qwoxdhV", "all", "deprecated", "dry-run", "binary", "ignore",
	"names", "values", "load?", "system", "pattern=", "quiet", "write", "help", "version")

// sysctlRule: sysctl -a and sysctl NAME read; -w, -p/-f/--load, --system
// and NAME=VALUE set kernel parameters (unless --dry-run).
func sysctlRule(c *call) {
	p := c.parse(sysctlSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("--dry-run") {
		return
	}
	if o, ok := p.Get("-w", "--write", "-p", "-f", "--load", "--system"); ok {
		c.a.writes(CodeWriteOption, RiskHighWrite, "sysctl "+o.Name+" changes kernel parameters")
		return
	}
	for _, i := range p.Operands {
		if a := c.rest()[i]; strings.Contains(a.val, "=") {
			c.a.writes(CodeWriteOption, RiskHighWrite, "sysctl "+a.val+" changes a kernel parameter")
			return
		}
	}
}

// iptablesSpec is iptables' options (1.8), with getopt_long's
// abbreviations (--list-r is --list-rules, --li is ambiguous). Options of
// match and target extensions (-m tcp --dport 22) are not known: they fail
// closed.
var iptablesSpec = getopt.New("A:C:D:R:I:L::S::M:F::Z::N:X::E:P:Vh::o:p:s:d:j:i:fbvw::W:nt:m:xc:g:46", "append=",
	"check=", "delete=", "insert=", "replace=", "list?", "list-rules?", "flush?", "zero?", "new-chain=",
	"delete-chain?", "rename-chain=", "policy=", "source=", "src=", "destination=", "dst=", "protocol=",
	"in-interface=", "out-interface=", "jump=", "goto=", "table=", "match=", "numeric", "verbose",
	"wait?", "wait-interval=", "exact", "fragment", "fragments", "version", "help?", "line-numbers",
	"modprobe=", "set-counters=", "ipv4", "ipv6")

// iptablesWrites are the commands that change the rules.
var iptablesWrites = map[string]bool{
	"-A": true, "--append": true, "-D": true, "--delete": true, "-I": true, "--insert": true,
	"-R": true, "--replace": true, "-F": true, "--flush": true, "-Z": true, "--zero": true,
	"-N": true, "--new-chain": true, "-X": true, "--delete-chain": true, "-E": true,
	"--rename-chain": true, "-P": true, "--policy": true,
}

// iptablesRule: -L and -S list, -C checks whether a rule exists, -V and -h
// print; every other command changes the rules (P-52 high_write).
// --modprobe runs the program it names.
func iptablesRule(c *call) {
	p := parseTaking(c, iptablesSpec, isDigits, "-w", "--wait")
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-M", "--modprobe"); ok {
		c.a.writes(CodeRunsProgram, RiskHighWrite, c.name+" "+o.Name+" runs "+o.Value+" to load kernel modules")
		return
	}
	for _, o := range p.Opts {
		if iptablesWrites[o.Name] {
			c.a.writes(CodeWriteCommand, RiskHighWrite, c.name+" "+o.Name+" changes firewall rules")
			if o.Name == "-F" || o.Name == "--flush" || o.Name == "-X" || o.Name == "--delete-chain" {
				c.a.destroys(c.name + " " + o.Name + " deletes firewall rules")
			}
			return
		}
	}
	switch {
	case p.Has("-V", "--version", "-h", "--help"):
	case p.Has("-C", "--check"):
		for _, i := range p.Operands {
			if a := c.rest()[i]; a.val != "!" {
				c.a.writes(CodeWriteCommand, RiskHighWrite, c.name+" -C: argument "+a.src+" is not known")
				return
			}
		}
	case p.Has("-L", "--list", "-S", "--list-rules"):
		if len(p.Operands) > 2 {
			c.a.writes(CodeWriteCommand, RiskHighWrite, c.name+": argument "+c.rest()[p.Operands[2]].src+" is not known")
		}
	default:
		c.a.writes(CodeWriteCommand, RiskHighWrite, c.name+" changes firewall rules")
	}
}

// ufwSpec is ufw's option words: --dry-run first, or --help, -h and
// --version in place of a command; everything after the command is its
// arguments.
var ufwSpec = getopt.New("h", "dry-run", "help", "version").NoAbbreviations().StopAtOperand()

// ufwShowReports are the reports ufw show prints.
var ufwShowReports = map[string]bool{"raw": true, "before-rules": true, "user-rules": true,
	"after-rules": true, "logging-rules": true, "builtins": true, "listening": true, "added": true}

// ufwRule: ufw status [verbose|numbered], ufw show REPORT, ufw app list,
// ufw app info PROFILE and ufw version print; every other command changes
// the firewall. ufw reads its commands case-insensitively.
func ufwRule(c *call) {
	p := c.parse(ufwSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("-h", "--help", "--version") {
		return
	}
	var words []string
	for _, i := range p.Operands {
		words = append(words, strings.ToLower(c.rest()[i].val))
	}
	switch {
	case len(words) == 1 && (words[0] == "version" || words[0] == "help"),
		len(words) >= 1 && len(words) <= 2 && words[0] == "status" && (len(words) == 1 || words[1] == "verbose" || words[1] == "numbered"),
		len(words) == 2 && words[0] == "show" && ufwShowReports[words[1]],
		len(words) == 2 && words[0] == "app" && words[1] == "list",
		len(words) == 3 && words[0] == "app" && words[1] == "info":
		return
	}
	c.a.writes(CodeWriteSubcommand, RiskHighWrite, "ufw changes firewall rules")
}

// ifconfigSpec is net-tools ifconfig's options: whole words before the
// interface, no long options beyond --help and --version.
var ifconfigSpec = getopt.New("asvVh?", "help", "version").NoAbbreviations().StopAtOperand()

// ifconfigRule: ifconfig, ifconfig -a and ifconfig IFACE print; an
// interface followed by settings changes it.
func ifconfigRule(c *call) {
	p := c.parse(ifconfigSpec)
	if !c.strict(p) {
		return
	}
	if len(p.Operands) > 1 {
		c.a.writes(CodeWriteCommand, RiskHighWrite, "ifconfig with settings changes an interface")
	}
}

// Monitors described by their options (issue 14): an option they do not
// know fails closed, and the few that make them write or end say so.
var _ = describeTools(func() {
	// iotop (Python 0.6, optparse: long abbreviations; and iotop-c) is
	// bounded in batch mode with an iteration count; -t and -q imply
	// batch mode.
	readOnlyTool(&tool{opts: getopt.New("obn:d:p:u:Pakt1qc23456789g:xh", "version", "help", "only", "batch", "iter=",
		"delay=", "pid=", "user=", "processes", "accumulated", "kilobytes", "time", "quiet", "no-help",
		"fullcmdline", "hide-pid", "hide-prio", "hide-user", "hide-read", "hide-write", "hide-swapin",
		"hide-io", "hide-graph", "hide-command", "grtype=", "dead-x"),
		check: func(c *call, p *getopt.Parsed) {
			if !p.Has("-b", "--batch", "-t", "--time", "-q", "--quiet") || !p.Has("-n", "--iter") {
				c.a.never(UnboundedStream, "iotop refreshes until stopped; use -b -n N")
			}
		}}, "iotop")
	// htop (3.3) and btop (1.2–1.4) are full-screen only; htop -n still
	// needs a terminal to draw on.
	fullScreen := func(c *call, p *getopt.Parsed) {
		c.a.never(UnboundedStream, c.name+" refreshes until a key is pressed")
		c.rewrite("top", "-b", "-n", "1")
	}
	readOnlyTool(&tool{opts: getopt.New("hVMCs:td:n:u::Up:F:H::", "help", "version", "no-mouse", "no-color",
		"no-colour", "sort-key=", "tree", "delay=", "max-iterations=", "user?", "no-unicode", "pid=",
		"filter=", "highlight-changes?", "readonly", "drop-capabilities?"),
		check: fullScreen}, "htop")
	readOnlyTool(&tool{opts: getopt.New("hvtp:c:u:f:dl", "help", "version", "lc", "low-color", "tty_on", "tty",
		"no-tty", "preset=", "utf-force", "force-utf", "debug", "config=", "update=", "filter=",
		"default-config").NoAbbreviations().SingleDashLongs(),
		check: func(c *call, p *getopt.Parsed) {
			if !p.Has("--default-config") { // prints the default configuration
				fullScreen(c, p)
			}
		}}, "btop")
	readOnlyTool(&tool{opts: getopt.New("a:i:mo:t:u:U:h", "help").NoAbbreviations(), check: fullScreen}, "nload")
	// iftop -t -s N prints text and quits after N seconds; nethogs -t -c N
	// after N updates. powertop's reports (--csv, --html) are files.
	readOnlyTool(&tool{opts: getopt.New("hnNpPlbBm:i:f:F:G:c:ts:L:o:"),
		check: func(c *call, p *getopt.Parsed) {
			if o, ok := p.Get("-s"); !ok || !p.Has("-t") || !isDigits(o.Value) || strings.Trim(o.Value, "0") == "" {
				fullScreen(c, p)
			}
		}}, "iftop")
	readOnlyTool(&tool{opts: getopt.New("Vhxd:v:c:tpslaCbg:P:f:"),
		check: func(c *call, p *getopt.Parsed) {
			if o, ok := p.Get("-c"); !ok || !p.Has("-t", "-x") || !isDigits(o.Value) || strings.Trim(o.Value, "0") == "" {
				fullScreen(c, p)
			}
		}}, "nethogs")
	readOnlyTool(&tool{opts: getopt.New("cC::r::i::qt::w::Vh", "auto-tune", "calibrate", "csv?", "debug", "extech=",
		"html?", "iteration?", "quiet", "time?", "workload?", "version", "help"),
		writes: map[string]string{"--auto-tune": "sets every power tunable", "-c": "calibrates by changing device power states",
			"--calibrate": "calibrates by changing device power states", "-C": "writes a CSV report file",
			"--csv": "writes a CSV report file", "-r": "writes an HTML report file", "--html": "writes an HTML report file"},
		runs: map[string]string{"-w": "runs a workload file", "--workload": "runs a workload file"},
		check: func(c *call, p *getopt.Parsed) {
			if !p.Has("-C", "--csv", "-r", "--html", "--auto-tune", "-c", "--calibrate") {
				fullScreen(c, p)
			}
		}}, "powertop")
	// iptables-save prints the rules; -f writes them to a file and -M runs
	// a modprobe program.
	readOnlyTool(&tool{opts: getopt.New("cM:t:f:Vh", "counters", "modprobe=", "table=", "file=", "version", "help"),
		writes: map[string]string{"-f": "writes the rules to a file", "--file": "writes the rules to a file"},
		runs:   map[string]string{"-M": "runs a program to load kernel modules", "--modprobe": "runs a program to load kernel modules"}},
		"iptables-save", "ip6tables-save", "iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save", "ip6tables-nft-save")
})

// ipSpec is ip's options in iproute2's order: ip -s is -stats, ip -b is
// -batch, ip -br is -brief, ip -n is -netns, ip -h is -human (ip.c).
var ipSpec = func() *getopt.Spec {
	s := getopt.Ordered("loops=", "family=", "4", "6", "0", "I", "D", "M", "B", "human", "human-readable",
		"iec", "stats", "statistics", "details", "resolve", "oneline", "timestamp", "tshort", "Version",
		"force", "batch=", "brief", "json", "pretty", "rcvbuf=", "color?", "help", "netns=", "Numeric",
		"all", "echo")
	return s.StopAtOperand()
}()

// ipObjects is ip's object table in the order ip.c matches it: ip l is
// link, ip r is route, ip m is maddress, ip n is neighbor.
var ipObjects = []string{"address", "addrlabel", "maddress", "route", "rule", "neighbor", "neighbour",
	"ntable", "ntbl", "link", "l2tp", "fou", "ila", "macsec", "tunnel", "tunl", "tuntap", "tap", "token",
	"tcpmetrics", "tcp_metrics", "monitor", "xfrm", "mroute", "mrule", "netns", "netconf", "vrf", "sr",
	"nexthop", "mptcp", "ioam", "stats", "help"}

// ipVerb is one entry of an object's verb table: what the verb does
// ('r' reads, 'w' writes, 'd' deletes, 'f' runs until killed, 'x' runs a
// command).
type ipVerb struct {
	name string
	does byte
}

// ipVerbs are the objects' verb tables in the order their do_* functions
// match them, so ip l s is link set (a write) and ip a s is address show.
// An object not listed here reads only with no verb or a literal show,
// list or help.
var ipVerbs = map[string][]ipVerb{
	"address": {{"add", 'w'}, {"change", 'w'}, {"chg", 'w'}, {"replace", 'w'}, {"delete", 'd'},
		{"list", 'r'}, {"show", 'r'}, {"lst", 'r'}, {"flush", 'd'}, {"save", 'r'}, {"showdump", 'r'},
		{"restore", 'w'}, {"help", 'r'}},
	"addrlabel": {{"list", 'r'}, {"lst", 'r'}, {"show", 'r'}, {"add", 'w'}, {"delete", 'd'},
		{"flush", 'd'}, {"help", 'r'}},
	"maddress": {{"add", 'w'}, {"delete", 'd'}, {"list", 'r'}, {"show", 'r'}, {"lst", 'r'}, {"help", 'r'}},
	"route": {{"add", 'w'}, {"change", 'w'}, {"chg", 'w'}, {"replace", 'w'}, {"prepend", 'w'},
		{"append", 'w'}, {"test", 'w'}, {"delete", 'd'}, {"list", 'r'}, {"show", 'r'}, {"lst", 'r'},
		{"get", 'r'}, {"flush", 'd'}, {"save", 'r'}, {"restore", 'w'}, {"showdump", 'r'}, {"help", 'r'}},
	"rule": {{"list", 'r'}, {"lst", 'r'}, {"show", 'r'}, {"save", 'r'}, {"restore", 'w'},
		{"showdump", 'r'}, {"add", 'w'}, {"delete", 'd'}, {"flush", 'd'}, {"help", 'r'}},
	"neighbor": {{"add", 'w'}, {"change", 'w'}, {"chg", 'w'}, {"replace", 'w'}, {"delete", 'd'},
		{"show", 'r'}, {"list", 'r'}, {"lst", 'r'}, {"get", 'r'}, {"flush", 'd'}, {"help", 'r'}},
	"ntable": {{"change", 'w'}, {"show", 'r'}, {"list", 'r'}, {"lst", 'r'}, {"help", 'r'}},
	"link": {{"add", 'w'}, {"set", 'w'}, {"change", 'w'}, {"replace", 'w'}, {"delete", 'd'},
		{"show", 'r'}, {"lst", 'r'}, {"list", 'r'}, {"xstats", 'r'}, {"afstats", 'r'}, {"property", 'w'},
		{"help", 'r'}},
	"tunnel": {{"add", 'w'}, {"change", 'w'}, {"chg", 'w'}, {"delete", 'd'}, {"show", 'r'},
		{"list", 'r'}, {"lst", 'r'}, {"prl", 'w'}, {"6rd", 'w'}, {"help", 'r'}},
	"tuntap":  {{"add", 'w'}, {"delete", 'd'}, {"show", 'r'}, {"list", 'r'}, {"lst", 'r'}, {"help", 'r'}},
	"monitor": {},
	"mroute":  {{"show", 'r'}, {"list", 'r'}, {"lst", 'r'}, {"help", 'r'}},
	"netns": {{"list", 'r'}, {"show", 'r'}, {"lst", 'r'}, {"list-id", 'r'}, {"help", 'r'}, {"add", 'w'},
		{"set", 'w'}, {"delete", 'd'}, {"identify", 'r'}, {"pids", 'r'}, {"exec", 'x'},
		{"monitor", 'f'}, {"attach", 'w'}},
	"netconf": {{"show", 'r'}, {"list", 'r'}, {"lst", 'r'}, {"help", 'r'}},
	"nexthop": {{"add", 'w'}, {"replace", 'w'}, {"delete", 'd'}, {"list", 'r'}, {"show", 'r'},
		{"lst", 'r'}, {"get", 'r'}, {"flush", 'd'}, {"bucket", 'w'}, {"help", 'r'}},
	"vrf": {{"show", 'r'}, {"exec", 'x'}, {"identify", 'r'}, {"pids", 'r'}, {"help", 'r'}},
}

// ipAliases maps the objects ip.c lists twice to one verb table.
var ipAliases = map[string]string{"neighbour": "neighbor", "ntbl": "ntable", "tunl": "tunnel",
	"tap": "tuntap", "mrule": "rule", "tcp_metrics": "tcpmetrics"}

// ipRule: ip OBJECT [VERB] reads for show, list and get; add, set, del,
// flush … write. Objects, verbs and options are matched the way iproute2
// matches them (first prefix in a fixed order), so abbreviations mean what
// they mean to ip. ip monitor never ends; -batch runs commands from a file.
func ipRule(c *call) {
	p := c.parse(ipSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-batch"); ok {
		c.a.writes(CodeRunsProgram, RiskHighWrite, "ip -batch "+o.Value+" runs ip commands from a file")
		return
	}
	if len(p.Operands) == 0 {
		return // ip alone prints its usage
	}
	words := c.rest()[p.Operands[0]:]
	for _, a := range words[:min(2, len(words))] {
		if !a.literal() {
			c.a.writes(CodeDynamicCommand, RiskMediumWrite, "ip: "+a.src+" is computed at run time")
			return
		}
	}
	obj, ok := getopt.FirstPrefix(words[0].val, ipObjects)
	if !ok {
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "ip: object "+words[0].val+" is not known")
		return
	}
	if obj == "help" {
		return
	}
	if obj == "monitor" {
		c.a.never(UnboundedStream, "ip monitor waits for events until killed")
		return
	}
	if obj == "xfrm" {
		ipXfrm(c, words[1:])
		return
	}
	table, modelled := ipVerbs[cmpOr(ipAliases[obj], obj)]
	if len(words) < 2 {
		return // the object alone lists
	}
	word := words[1].val
	verb, does := word, byte('w')
	if modelled {
		verb = ""
		for _, v := range table {
			if word != "" && strings.HasPrefix(v.name, word) {
				verb, does = v.name, v.does
				break
			}
		}
		if verb == "" {
			c.a.writes(CodeWriteSubcommand, RiskHighWrite, "ip "+obj+": command "+word+" is not known")
			return
		}
	} else if word == "show" || word == "list" || word == "help" {
		does = 'r'
	}
	ipDoes(c, "ip "+obj+" "+verb, does, words[2:])
}

// ipXfrm judges ip xfrm state|policy|monitor VERB.
func ipXfrm(c *call, words []*arg) {
	if len(words) == 0 {
		return
	}
	sub, ok := getopt.FirstPrefix(words[0].val, []string{"state", "policy", "monitor", "help"})
	switch {
	case !ok || !words[0].literal():
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "ip xfrm: "+words[0].src+" is not known")
		return
	case sub == "help":
		return
	case sub == "monitor":
		c.a.never(UnboundedStream, "ip xfrm monitor waits for events until killed")
		return
	case len(words) < 2:
		return
	}
	verbs := []ipVerb{{"add", 'w'}, {"update", 'w'}, {"allocspi", 'w'}, {"delete", 'd'},
		{"deleteall", 'd'}, {"list", 'r'}, {"show", 'r'}, {"lst", 'r'}, {"get", 'r'}, {"flush", 'd'},
		{"count", 'r'}, {"set", 'w'}, {"setdefault", 'w'}, {"getdefault", 'r'}, {"help", 'r'}}
	for _, v := range verbs {
		if words[1].literal() && words[1].val != "" && strings.HasPrefix(v.name, words[1].val) {
			ipDoes(c, "ip xfrm "+sub+" "+v.name, v.does, nil)
			return
		}
	}
	c.a.writes(CodeWriteSubcommand, RiskHighWrite, "ip xfrm "+sub+": command "+words[1].src+" is not known")
}

func ipDoes(c *call, what string, does byte, rest []*arg) {
	switch does {
	case 'r':
	case 'f':
		c.a.never(UnboundedStream, what+" waits for events until killed")
	case 'x':
		c.a.writes(CodeRunsProgram, RiskHighWrite, what+" runs a command in another namespace or VRF")
		if len(rest) > 1 {
			c.inner(rest[1:], stmtCtx{})
		}
	case 'd':
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, what+" changes network configuration")
		c.a.destroys(what + " removes network configuration")
	default:
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, what+" changes network configuration")
	}
}
