package intent

import (
	"fmt"
	"strings"
)

// Rules for system inspection and service management tools.
func registerSystemRules() {
	rules["systemctl"] = systemctlRule
	rules["service"] = serviceRule
	rules["journalctl"] = journalctlRule
	rules["dmesg"] = dmesgRule
	for _, n := range []string{"vmstat", "iostat", "mpstat", "pidstat", "sar"} {
		rules[n] = intervalRule
	}
	rules["top"] = topRule
	for _, n := range []string{"htop", "atop", "btop", "glances", "nload", "iftop", "nethogs", "bmon", "nmon", "powertop"} {
		rules[n] = func(c *call) {
			c.a.never(UnboundedStream, c.name+" refreshes until a key is pressed")
			c.rewrite("top", "-b", "-n", "1")
		}
	}
	rules["iotop"] = func(c *call) {
		if !hasAnyArg(c, "-b", "--batch") || !hasArgPrefix(c, "-n", "--iter") {
			c.a.never(UnboundedStream, "iotop refreshes until stopped; use -b -n N")
		}
	}
	rules["free"] = freeRule
	for _, n := range []string{"kill", "pkill", "killall"} {
		rules[n] = killRule
	}
	rules["crontab"] = crontabRule
	rules["sysctl"] = sysctlRule
	rules["iptables"] = iptablesRule
	rules["ufw"] = func(c *call) {
		if len(c.rest()) > 0 && (c.rest()[0].val == "status" || c.rest()[0].val == "show" || c.rest()[0].val == "version") {
			return
		}
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "ufw changes firewall rules")
	}
	rules["ip"] = ipRule
	rules["ifconfig"] = func(c *call) {
		if len(c.rest()) > 1 {
			c.a.writes(CodeWriteCommand, RiskHighWrite, "ifconfig with settings changes an interface")
		}
	}
	rules["ldd"] = func(c *call) {
		// ldd may execute the binary it inspects (glibc's ldd runs it with
		// LD_TRACE_LOADED_OBJECTS set).
		c.a.writes(CodeRunsProgram, RiskMediumWrite, "ldd may run the program it inspects")
	}
}

func hasAnyArg(c *call, vals ...string) bool {
	for _, a := range c.rest() {
		for _, v := range vals {
			if a.val == v {
				return true
			}
		}
	}
	return false
}

func hasArgPrefix(c *call, prefixes ...string) bool {
	for _, a := range c.rest() {
		if hasPrefixAny(a.val, prefixes...) {
			return true
		}
	}
	return false
}

var systemctlSpec = spec("alqt:p:P:H:M:n:o:s:ifrNh", "all", "full", "quiet", "type=", "property=", "value",
	"host=", "machine=", "lines=", "output=", "signal=", "kill-whom=", "kill-value=", "state=",
	"no-pager", "no-legend", "no-block", "no-wall", "no-reload", "no-ask-password", "user",
	"system", "global", "runtime", "now", "force", "recursive", "reverse", "after", "before",
	"with-dependencies", "job-mode=", "show-types", "show-transaction", "ignore-inhibitors",
	"what=", "root=", "image=", "preset-mode=", "firmware-setup", "boot-loader-menu=",
	"boot-loader-entry=", "reboot-argument=", "timestamp=", "mkdir", "marked", "read-only",
	"check-inhibitors=", "legend=", "plain", "failed", "version", "help", "wait", "dry-run",
	"message=", "drop-in=", "when=", "image-policy=", "capsule=", "kernel-cmdline=").noAbbreviations()

// systemctlRule: status and list verbs read; stop, kill and the power verbs
// take services or the machine down (DESIGN §4 destructive); start, restart
// and friends are high-risk writes (P-52).
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
	case "status", "show", "cat", "is-active", "is-enabled", "is-failed", "is-system-running",
		"list-units", "list-unit-files", "list-sockets", "list-timers", "list-jobs",
		"list-dependencies", "list-machines", "list-automounts", "list-paths", "get-default",
		"show-environment", "help", "whoami":
		return // status pages only on a terminal, and agents have none (DESIGN §4)
	case "stop", "kill", "mask", "isolate", "poweroff", "reboot", "halt", "kexec", "suspend",
		"hibernate", "hybrid-sleep", "suspend-then-hibernate", "rescue", "emergency", "default",
		"exit", "soft-reboot", "disable", "freeze", "clean":
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "systemctl "+verb+" changes service state")
		c.a.destroys("systemctl " + verb + " takes a service or the system down")
	case "edit":
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "systemctl edit modifies a unit file")
		c.a.never(Pager, "systemctl edit opens an editor")
	default:
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "systemctl "+verb+" changes service state")
	}
}

// serviceRule: service NAME status reads; any other action changes state.
func serviceRule(c *call) {
	args := c.rest()
	if len(args) == 1 && (args[0].val == "--status-all" || args[0].val == "--version" || args[0].val == "--help") {
		return
	}
	if len(args) >= 2 && args[1].val == "status" && args[0].literal() {
		return
	}
	action := ""
	if len(args) >= 2 {
		action = args[1].val
	}
	c.a.writes(CodeWriteSubcommand, RiskHighWrite, "service "+joined(args)+" changes service state")
	if action == "stop" {
		c.a.destroys("service stop takes a service down")
	}
}

var journalctlSpec = spec("ab::c:D:eF:fg:hi:kM:Nn::o:p:qrS:t:T:u:U:xmlI", "all", "boot?", "cursor=",
	"directory=", "pager-end", "field=", "follow", "grep=", "help", "file=", "dmesg",
	"machine=", "fields", "lines?", "output=", "priority=", "quiet", "reverse", "since=",
	"identifier=", "exclude-identifier=", "unit=", "until=", "catalog", "merge", "full",
	"no-pager", "no-full", "no-tail", "no-hostname", "utc", "header", "disk-usage",
	"list-boots", "list-fields", "list-namespaces", "verify", "verify-key=", "user", "system",
	"user-unit=", "after-cursor=", "show-cursor", "cursor-file=", "output-fields=", "facility=",
	"namespace=", "root=", "image=", "case-sensitive?", "vacuum-size=", "vacuum-time=",
	"vacuum-files=", "rotate", "flush", "sync", "relinquish-var", "smart-relinquish-var",
	"setup-keys", "interval=", "force", "update-catalog", "new-id128", "version", "synchronize-on-exit?",
	"invocation=", "list-invocations", "image-policy=", "truncate-newest", "boot-id?").noAbbreviations()

// journalctlRule: --follow never ends unless --until gives an end time (or a
// timeout wraps it); --since and -n do not stop a follow (DESIGN §4, P-48
// deviation). Maintenance options write. Rewrite (seed 000):
// journalctl -f → journalctl -n 200 --since "10 min ago".
func journalctlRule(c *call) {
	// journalctl's -n takes its count as the next word when it is a number.
	args := c.rest()
	p := c.parse(journalctlSpec)
	for _, o := range p.opts {
		if (o.name == "-n" || o.name == "--lines") && !o.hasValue && o.index+1 < len(args) && isCount(args[o.index+1].val) {
			p.operands = removeInt(p.operands, o.index+1)
		}
	}
	if !c.strict(p) {
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "--vacuum-size", "--vacuum-time", "--vacuum-files":
			c.a.writes(CodeWriteOption, RiskHighWrite, "journalctl "+o.name+" deletes journal files")
			c.a.destroys("journalctl " + o.name + " deletes journal files")
		case "--rotate", "--flush", "--sync", "--relinquish-var", "--smart-relinquish-var",
			"--setup-keys", "--update-catalog", "--cursor-file":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "journalctl "+o.name+" writes journal state")
		}
	}
	follow := func(o opt) bool { return o.name == "-f" || o.name == "--follow" }
	if !p.has("-f", "--follow") || p.has("-U", "--until") {
		return
	}
	c.a.never(UnboundedStream, "journalctl -f follows forever; --since and -n do not stop it")
	var extra []string
	if !p.has("-n", "--lines") {
		extra = append(extra, "-n", "200")
	}
	if !p.has("-S", "--since") {
		extra = append(extra, "--since", shellQuote("10 min ago"))
	}
	c.rewrite(c.srcExcept(p, len(c.args), follow, extra...)...)
}

func isCount(s string) bool {
	return s == "all" || isInteger(&arg{val: s}) || (strings.HasPrefix(s, "+") && isInteger(&arg{val: s[1:]}))
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

var dmesgSpec = spec("CcDdEeF:f:HhkLl:n:PrSs:TtuwWx", "clear", "read-clear", "console-off",
	"show-delta", "console-on", "reltime", "file=", "facility=", "human", "help", "kernel",
	"color?", "level=", "console-level=", "nopager", "noescape", "raw", "syslog", "buffer-size=",
	"ctime", "notime", "userspace", "follow", "follow-new", "decode", "since=", "until=", "time-format=",
	"json", "force-prefix", "version")

// dmesgRule: -w/-W follow; -c/-C clear the ring buffer; -n/-D/-E change
// console logging.
func dmesgRule(c *call) {
	p := c.parse(dmesgSpec)
	if !c.strict(p) {
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "-c", "-C", "--clear", "--read-clear":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "dmesg "+o.name+" clears the kernel ring buffer")
		case "-n", "-D", "-E", "--console-level", "--console-off", "--console-on":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "dmesg "+o.name+" changes console logging")
		}
	}
	follow := func(o opt) bool {
		return o.name == "-w" || o.name == "-W" || o.name == "--follow" || o.name == "--follow-new"
	}
	for _, o := range p.opts {
		if follow(o) {
			c.a.never(UnboundedStream, "dmesg "+o.name+" waits for new messages forever")
			c.rewrite(c.srcExcept(p, len(c.args), follow)...)
			return
		}
	}
}

// intervalRule: vmstat 1 repeats forever; vmstat 1 5 stops after 5 reports.
func intervalRule(c *call) {
	var nums []*arg
	for i := 0; i < len(c.rest()); i++ {
		a := c.rest()[i]
		if strings.HasPrefix(a.val, "-") {
			if len(a.val) == 2 && strings.ContainsRune("pPdDoOfrSsIie", rune(a.val[1])) && c.name != "vmstat" && i+1 < len(c.rest()) {
				i++ // options with values (iostat -p sda, sar -o FILE …)
			}
			if c.name == "sar" && (a.val == "-o" || strings.HasPrefix(a.val, "-o")) {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "sar -o writes a data file")
			}
			continue
		}
		if isInteger(a) {
			nums = append(nums, a)
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

// topSpec is procps-ng top's options.
var topSpec = spec("bcd:E:e:Hhin:o:Op:sSu:U:vVw::1", "batch-mode", "cmdline-toggle", "delay=",
	"scale-summary-mem=", "scale-task-mem=", "threads-show", "idle-toggle", "iterations=",
	"sort-override=", "list-fields", "pid=", "secure-mode", "accum-time-toggle", "filter-only-euser=",
	"filter-any-user=", "width?", "single-cpu-toggle")

// topRule: top is bounded only in batch mode with an iteration count.
// Rewrite: top → top -b -n 1.
func topRule(c *call) {
	p := c.parse(topSpec)
	if !c.strict(p) {
		return
	}
	batch, count := p.has("-b", "--batch-mode"), p.has("-n", "--iterations")
	if batch && count {
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

var freeSpec = spec("bkmgthlLvwc:s:", "bytes", "kilo", "mega", "giga", "tera", "peta", "kibi", "mebi",
	"gibi", "tebi", "pebi", "human", "si", "lohi", "line", "total", "committed", "wide", "count=",
	"seconds=", "help", "version")

// freeRule: free -s N repeats forever unless -c bounds it.
func freeRule(c *call) {
	p := c.parse(freeSpec)
	if !c.strict(p) {
		return
	}
	if p.has("-s", "--seconds") && !p.has("-c", "--count") {
		c.a.never(UnboundedStream, "free -s repeats forever; add -c N")
		c.rewrite(append(c.srcExcept(p, len(c.args), func(opt) bool { return false }), "-c", "5")...)
	}
}

// killRule: kill -0 and kill -s 0 only probe whether processes exist,
// kill -l lists signals; anything else signals processes. The signal is
// read the way bash's kill builtin reads it: -s SIG, -n NUM or -SIG, with
// the first other word starting the pid list, so kill -TERM -- -0 (the
// whole process group) is a write, not a probe (issue 14).
func killRule(c *call) {
	if c.name == "pkill" {
		pkillRule(c)
		return
	}
	args := c.rest()
	sig, viaS, i := "", false, 0
	for ; i < len(args); i++ {
		a := args[i]
		if !a.literal() {
			break
		}
		v := a.val
		switch {
		case v == "-l" || v == "-L" || c.name == "kill" && (v == "--list" || v == "--table"):
			if c.name == "kill" || v == "-l" {
				return
			}
		case v == "-s" || v == "-n" || v == "--signal":
			if i+1 >= len(args) || !args[i+1].literal() {
				sig = "?"
				i = len(args)
				break
			}
			i++
			sig, viaS = args[i].val, true
			continue
		case v == "--":
			i++
		case len(v) > 1 && v[0] == '-' && sig == "":
			sig = v[1:]
			continue
		}
		break
	}
	pids := args[min(i, len(args)):]
	probe := sig == "0"
	if probe && len(pids) > 0 {
		first := pids[0]
		switch {
		case first.literal() && strings.HasPrefix(first.val, "-") && (viaS || c.name != "kill"):
			probe = false // after -s 0 (or in killall), a word like -9 may still be read as a signal
		case !first.literal() && (len(pids) > 1 || !fullyDoubleQuoted(first.src)):
			probe = false // an unquoted expansion may split into -s SIG PID
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

var pkillSpec = spec("d:lavwcfg:G:inoO:P:s:t:u:U:xF:Lr:AhVeqH", "delimiter=", "list-name", "list-full",
	"inverse", "lightweight", "count", "full", "pgroup=", "group=", "ignore-case", "newest", "oldest",
	"older=", "parent=", "session=", "terminal=", "euid=", "uid=", "exact", "pidfile=", "logpidfile",
	"runstates=", "ignore-ancestors", "cgroup=", "ns=", "nslist=", "env=", "signal=", "echo", "queue=",
	"require-handler")

// pkillRule: pkill -0 PATTERN and pkill --signal 0 only probe.
func pkillRule(c *call) {
	args := c.rest()
	sig := ""
	if len(args) > 0 && args[0].literal() && len(args[0].val) > 1 && args[0].val[0] == '-' && args[0].val[1] != '-' {
		if _, isOpt := pkillSpec.short[args[0].val[1]]; !isOpt || args[0].val == "-0" {
			sig, args = args[0].val[1:], args[1:]
		}
	}
	p := parseArgs(args, pkillSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.get("--signal"); ok {
		sig = o.value
	}
	if sig == "0" && !p.has("-q", "--queue") {
		return
	}
	c.a.writes(CodeWriteCommand, RiskHighWrite, c.name+" sends signals to processes")
	c.a.destroys(c.name + " can take a service down")
}

// crontabRule: -l lists; -r removes; anything else installs a crontab.
func crontabRule(c *call) {
	for _, a := range c.rest() {
		switch a.val {
		case "-l":
			return
		case "-r":
			c.a.writes(CodeWriteCommand, RiskHighWrite, "crontab -r removes the crontab")
			c.a.destroys("crontab -r removes the crontab")
			return
		}
	}
	c.a.writes(CodeWriteCommand, RiskHighWrite, "crontab installs or edits scheduled jobs")
}

// sysctlSpec is procps-ng sysctl's options.
var sysctlSpec = spec("aAXbeNnp::f::r:qwoxdhVE", "all", "deprecated", "dry-run", "binary", "ignore",
	"names", "values", "load?", "system", "pattern=", "quiet", "write")

// sysctlRule: sysctl -a and sysctl NAME read; -w, -p/-f/--load, --system
// and NAME=VALUE set kernel parameters (unless --dry-run).
func sysctlRule(c *call) {
	p := c.parse(sysctlSpec)
	if !c.strict(p) {
		return
	}
	if p.has("--dry-run") {
		return
	}
	if o, ok := p.get("-w", "--write", "-p", "-f", "--load", "--system"); ok {
		c.a.writes(CodeWriteOption, RiskHighWrite, "sysctl "+o.name+" changes kernel parameters")
		return
	}
	for _, i := range p.operands {
		if a := c.rest()[i]; strings.Contains(a.val, "=") {
			c.a.writes(CodeWriteOption, RiskHighWrite, "sysctl "+a.val+" changes a kernel parameter")
			return
		}
	}
}

// iptablesRule: -L, -S and --list only list (P-52 makes everything else
// high_write).
func iptablesRule(c *call) {
	for _, a := range c.rest() {
		v := a.val
		if v == "-L" || v == "-S" || v == "--list" || v == "--list-rules" || strings.HasPrefix(v, "-L") && !strings.HasPrefix(v, "--") {
			continue
		}
		if v == "-A" || v == "-I" || v == "-D" || v == "-R" || v == "-F" || v == "-X" || v == "-P" || v == "-N" || v == "-Z" || v == "-E" ||
			strings.HasPrefix(v, "--append") || strings.HasPrefix(v, "--insert") || strings.HasPrefix(v, "--delete") ||
			strings.HasPrefix(v, "--replace") || strings.HasPrefix(v, "--flush") || strings.HasPrefix(v, "--policy") ||
			strings.HasPrefix(v, "--new") || strings.HasPrefix(v, "--zero") || strings.HasPrefix(v, "--rename") {
			c.a.writes(CodeWriteCommand, RiskHighWrite, "iptables "+v+" changes firewall rules")
			if v == "-F" || v == "--flush" || v == "-X" {
				c.a.destroys("iptables " + v + " deletes firewall rules")
			}
			return
		}
	}
	if !hasAnyArg(c, "-L", "-S", "--list", "--list-rules") && !hasArgPrefix(c, "-L", "--version", "-V", "-h", "--help") {
		c.a.writes(CodeWriteCommand, RiskHighWrite, "iptables changes firewall rules")
	}
}

// ipSpec is ip's options in iproute2's order: ip -s is -stats, ip -b is
// -batch, ip -br is -brief, ip -n is -netns, ip -h is -human (ip.c).
var ipSpec = func() *optSpec {
	s := orderedSpec("loops=", "family=", "4", "6", "0", "I", "D", "M", "B", "human", "human-readable",
		"iec", "stats", "statistics", "details", "resolve", "oneline", "timestamp", "tshort", "Version",
		"force", "batch=", "brief", "json", "pretty", "rcvbuf=", "color?", "help", "netns=", "Numeric",
		"all", "echo")
	s.posixStop = true
	return s
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
	if o, ok := p.get("-batch"); ok {
		c.a.writes(CodeRunsProgram, RiskHighWrite, "ip -batch "+o.value+" runs ip commands from a file")
		return
	}
	if len(p.operands) == 0 {
		return // ip alone prints its usage
	}
	words := c.rest()[p.operands[0]:]
	for _, a := range words[:min(2, len(words))] {
		if !a.literal() {
			c.a.writes(CodeDynamicCommand, RiskMediumWrite, "ip: "+a.src+" is computed at run time")
			return
		}
	}
	obj, ok := firstPrefix(words[0].val, ipObjects)
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
	sub, ok := firstPrefix(words[0].val, []string{"state", "policy", "monitor", "help"})
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
