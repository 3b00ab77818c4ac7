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

var systemctlSpec = func() *optSpec {
	s := spec("alqt:p:P:H:M:n:o:s:ifrNh", "all", "full", "quiet", "type=", "property=", "value",
		"host=", "machine=", "lines=", "output=", "signal=", "kill-whom=", "kill-value=", "state=",
		"no-pager", "no-legend", "no-block", "no-wall", "no-reload", "no-ask-password", "user",
		"system", "global", "runtime", "now", "force", "recursive", "reverse", "after", "before",
		"with-dependencies", "job-mode=", "show-types", "show-transaction", "ignore-inhibitors",
		"what=", "root=", "image=", "preset-mode=", "firmware-setup", "boot-loader-menu=",
		"boot-loader-entry=", "reboot-argument=", "timestamp=", "mkdir", "marked", "read-only",
		"check-inhibitors=", "legend=", "plain", "failed", "version", "help", "wait", "dry-run",
		"message=", "drop-in=", "when=", "image-policy=", "capsule=", "kernel-cmdline=")
	s.noAbbrev = true
	return s
}()

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

var journalctlSpec = func() *optSpec {
	s := spec("ab::c:D:eF:fg:hi:kM:Nn::o:p:qrS:t:T:u:U:xmlI", "all", "boot?", "cursor=",
		"directory=", "pager-end", "field=", "follow", "grep=", "help", "file=", "dmesg",
		"machine=", "fields", "lines?", "output=", "priority=", "quiet", "reverse", "since=",
		"identifier=", "exclude-identifier=", "unit=", "until=", "catalog", "merge", "full",
		"no-pager", "no-full", "no-tail", "no-hostname", "utc", "header", "disk-usage",
		"list-boots", "list-fields", "list-namespaces", "verify", "verify-key=", "user", "system",
		"user-unit=", "after-cursor=", "show-cursor", "cursor-file=", "output-fields=", "facility=",
		"namespace=", "root=", "image=", "case-sensitive?", "vacuum-size=", "vacuum-time=",
		"vacuum-files=", "rotate", "flush", "sync", "relinquish-var", "smart-relinquish-var",
		"setup-keys", "interval=", "force", "update-catalog", "new-id128", "version", "synchronize-on-exit?",
		"invocation=", "list-invocations", "image-policy=", "truncate-newest", "boot-id?")
	s.noAbbrev = true
	return s
}()

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

// topRule: top is bounded only in batch mode with an iteration count.
// Rewrite: top → top -b -n 1.
func topRule(c *call) {
	batch, count := false, false
	for i, a := range c.rest() {
		v := a.val
		if strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") {
			if strings.ContainsRune(v, 'b') {
				batch = true
			}
			if j := strings.IndexRune(v, 'n'); j > 0 && (j+1 < len(v) || i+1 < len(c.rest())) {
				count = true
			}
		}
	}
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

// killRule: kill -0 and kill -l only probe; anything else stops processes.
func killRule(c *call) {
	for _, a := range c.rest() {
		if a.val == "-0" || a.val == "-l" || a.val == "-L" || a.val == "--list" || a.val == "--table" {
			if c.name == "kill" {
				return
			}
		}
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

// sysctlRule: reading keys is fine; -w, -p and KEY=VALUE set them.
func sysctlRule(c *call) {
	for _, a := range c.rest() {
		if a.val == "-w" || a.val == "--write" || strings.HasPrefix(a.val, "-p") || a.val == "--load" || a.val == "--system" || strings.Contains(a.val, "=") {
			c.a.writes(CodeWriteOption, RiskHighWrite, "sysctl "+a.val+" changes kernel parameters")
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

// ipRule: ip OBJECT [show|list|get] reads; add, del, set, flush … write.
func ipRule(c *call) {
	words := []string{}
	for i := 0; i < len(c.rest()); i++ {
		a := c.rest()[i]
		if strings.HasPrefix(a.val, "-") {
			if a.val == "-n" || a.val == "-netns" || a.val == "-f" || a.val == "-family" || a.val == "-l" || a.val == "-loops" || a.val == "-rc" || a.val == "-rcvbuf" || a.val == "-b" || a.val == "-batch" {
				if a.val == "-b" || a.val == "-batch" {
					c.a.writes(CodeRunsProgram, RiskHighWrite, "ip -batch runs commands from a file")
					return
				}
				i++
			}
			continue
		}
		words = append(words, a.val)
	}
	if len(words) <= 1 {
		return
	}
	switch words[1] {
	case "show", "list", "lst", "ls", "sh", "get", "help", "l", "s":
		return
	}
	if words[0] == "monitor" || words[0] == "mon" {
		c.a.never(UnboundedStream, "ip monitor waits for events forever")
		return
	}
	c.a.writes(CodeWriteSubcommand, RiskHighWrite, "ip "+words[0]+" "+words[1]+" changes network configuration")
	if words[1] == "flush" || words[1] == "del" || words[1] == "delete" {
		c.a.destroys("ip " + words[0] + " " + words[1] + " removes network configuration")
	}
}
