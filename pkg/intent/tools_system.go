package intent

import (
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

// System and network inspection programs described by their options
// (issue 14). Before, they were read-only whatever their options, so
// netstat -c, lsof -r, ss -E and findmnt -p passed as bounded reads and
// ss -K (closes sockets) and lastlog -S (writes lastlog) as reads. Each spec
// lists every option of the current procps-ng, util-linux, coreutils,
// net-tools, iproute2, bind, man-db, glibc, lsof and iputils program with its
// arity; an option not listed fails closed.
var _ = describeTools(func() {
	// coreutils and friends that print one fact.
	for _, n := range []string{"whoami", "groups", "logname", "users", "arch"} {
		readOnlyTool(&tool{opts: getopt.New("")}, n)
	}
	readOnlyTool(&tool{opts: getopt.New("aZgGnruz", "context", "group", "groups", "name", "real", "user", "zero")}, "id")
	readOnlyTool(&tool{opts: getopt.New("asnrvmpio", "all", "kernel-name", "nodename", "kernel-release",
		"kernel-version", "machine", "processor", "hardware-platform", "operating-system")}, "uname")
	readOnlyTool(&tool{opts: getopt.New("0", "null")}, "printenv")
	readOnlyTool(&tool{opts: getopt.New("", "all", "ignore=")}, "nproc")
	readOnlyTool(&tool{opts: getopt.New("s", "silent", "quiet")}, "tty")
	readOnlyTool(&tool{opts: getopt.New("phsVrc", "pretty", "since", "raw", "container")}, "uptime")
	readOnlyTool(&tool{opts: getopt.New("abdHlmpqrstTwu", "all", "boot", "dead", "heading", "ips", "login",
		"lookup", "process", "count", "runlevel", "short", "time", "mesg", "message", "writable", "users")}, "who")
	readOnlyTool(&tool{opts: getopt.New("husfoipcV", "no-header", "no-current", "short", "from", "old-style",
		"ip-addr", "pids", "container")}, "w")
	// last -5 is last -n 5: the digits are options.
	readOnlyTool(&tool{opts: getopt.New("0123456789adf:FiRn:s:t:p:wxhVT", "hostlast", "dns", "file=",
		"fulltimes", "ip", "limit=", "nohostname", "since=", "until=", "present=", "fullnames", "system",
		"time-format=", "tab-separated")}, "last", "lastb")
	readOnlyTool(&tool{opts: getopt.New("b:CR:St:u:h", "before=", "clear", "root=", "set", "time=", "user="),
		writes: map[string]string{"-C": "clears lastlog records", "--clear": "clears lastlog records",
			"-S": "writes lastlog records", "--set": "writes lastlog records"}}, "lastlog")

	// procps-ng. ps's BSD words (ps aux) are operands to it; none of its
	// options writes or repeats.
	readOnlyTool(&tool{opts: getopt.New("AaC:cdeFfG:g:HhjLlMmNn:O:o:Pp:q:s:Tt:U:u:VwXyZ", "Group=", "User=",
		"cols=", "columns=", "context", "cumulative", "deselect", "forest", "format=", "group=", "headers",
		"help?", "info", "lines=", "no-headers", "noheaders", "pid=", "ppid=", "quick-pid=", "rows=",
		"sid=", "signames", "sort=", "tty=", "user=", "version", "width=")}, "ps")
	readOnlyTool(&tool{opts: getopt.New("d:lavwcfg:G:inoO:P:s:t:u:U:xF:Lr:AhVQ", "delimiter=", "list-name",
		"list-full", "inverse", "lightweight", "count", "full", "pgroup=", "group=", "ignore-case",
		"newest", "oldest", "older=", "parent=", "session=", "terminal=", "euid=", "uid=", "exact",
		"pidfile=", "logpidfile", "runstates=", "ignore-ancestors", "cgroup=", "ns=", "nslist=",
		"env=", "quiet")}, "pgrep")
	readOnlyTool(&tool{opts: getopt.New("scnxzqtwd:o:S:", "single-shot", "check-root", "omit-pid=",
		"lightweight", "separator=", "with-workers", "quiet")}, "pidof")

	// util-linux listings.
	readOnlyTool(&tool{opts: getopt.New("abBC::ce::Jp::s:xyV", "all", "online", "bytes", "caches?", "offline",
		"json", "extended?", "parse?", "sysroot=", "hex", "physical", "output-all")}, "lscpu")
	readOnlyTool(&tool{opts: getopt.New("ADE:I:JMOPSTabde:filmnopqrstw:x:yzV", "noempty", "discard", "dedup=",
		"include=", "json", "merge", "output-all", "pairs", "scsi", "tree?", "all", "bytes", "nodeps",
		"exclude=", "fs", "ascii", "list", "perms", "noheadings", "output=", "paths", "raw", "inverse",
		"topology", "width=", "sort=", "shell", "zoned", "sysroot=", "properties-by=", "filter=",
		"highlight=", "ct=", "ct-filter=", "hyperlink?", "nvme", "virtio", "list-columns")}, "lsblk")
	readOnlyTool(&tool{opts: getopt.New("Jlno:p:ruWt:T::QHV", "json", "list", "noheadings", "output=",
		"output-all", "task=", "raw", "notruncate", "nowrap", "type=", "tree?", "filter=",
		"persistent", "list-columns")}, "lsns")
	// findmnt --poll waits for mount table changes; --timeout bounds each
	// wait, and the table does not change forever.
	readOnlyTool(&tool{opts: getopt.New("smkp::w:AabCcDd:eF:fiJlN:nO:o:PRrS:T:M:t:UuvyxHQ:I:V", "fstab",
		"mtab", "kernel?", "poll?", "timeout=", "all", "ascii", "bytes", "nocanonicalize", "canonicalize",
		"df", "direction=", "evaluate", "tab-file=", "first-only", "invert", "json", "list", "task=",
		"noheadings", "options=", "output=", "output-all", "pairs", "pseudo", "shadowed", "submounts",
		"raw", "real", "source=", "target=", "tree", "mountpoint=", "types=", "uniq", "notruncate",
		"nofsroot", "shell", "verify", "verbose", "vfs-all", "list-columns", "filter=", "id=", "uniq-id=",
		"hyperlink?", "lsfd?"),
		check: func(c *call, p *getopt.Parsed) {
			if p.Has("-p", "--poll") && !p.Has("-w", "--timeout") {
				c.a.never(UnboundedStream, "findmnt --poll waits for mount table changes until killed; --timeout ends it")
			}
		}}, "findmnt")
	readOnlyTool(&tool{opts: getopt.New("sv", "syslog", "verbose")}, "lsmod")
	readOnlyTool(&tool{opts: getopt.New("vs:d:D:tVh", "verbose", "tree", "help", "version")}, "lsusb")
	// lspci -q/-Q ask a DNS database and cache the answers in
	// ~/.pciids-cache; -O sets library parameters (cache files, access
	// methods) classify does not check.
	readOnlyTool(&tool{opts: getopt.New("mtvkxbDPnqQi:p:s:d:A:O:H:F:GMJ", "version", "help"),
		writes: map[string]string{"-q": "caches PCI ID lookups in ~/.pciids-cache",
			"-Q": "caches PCI ID lookups in ~/.pciids-cache", "-O": "sets library parameters that are not checked"}}, "lspci")

	// glibc, man-db and locale.
	readOnlyTool(&tool{opts: getopt.New("av:"), check: nil}, "getconf")
	readOnlyTool(&tool{opts: getopt.New("amckv?V", "all-locales", "charmaps", "category-name",
		"keyword-name", "verbose", "usage")}, "locale")
	readOnlyTool(&tool{opts: getopt.New("AiS:s:?V", "no-addrconfig", "no-idn", "service=", "usage")}, "getent")
	manSearch := getopt.New("dvrwlC:L:m:M:s:?Ve", "debug", "verbose", "regex", "wildcard", "long",
		"config-file=", "locale=", "systems=", "manpath=", "sections=", "section=", "usage", "exact", "and")
	readOnlyTool(&tool{opts: manSearch}, "whatis", "apropos")
	// util-linux cal and ncal (bsdmainutils): ncal's -m MONTH is taken as
	// util-linux's -m (monday), which leaves the month as an operand.
	readOnlyTool(&tool{opts: getopt.New("13jmsyYvw::Sc:hVn:A:B:bCeopNMJd:H:", "months=", "span", "sunday",
		"monday", "julian", "year", "twelve", "week?", "vertical", "color?", "columns=", "reform=",
		"iso")}, "cal", "ncal")

	// Lookups.
	readOnlyTool(&tool{opts: getopt.New("AbdHilLmNsw0ceqrPVS", "all", "basename", "count", "database=",
		"existing", "follow", "ignore-case", "limit=", "null", "nofollow", "regexp=", "regex",
		"stdio", "statistics", "quiet", "wholename", "literal", "ignore-spaces", "transliterate")}, "locate", "plocate", "mlocate")
	// GNU which and debianutils which.
	readOnlyTool(&tool{opts: getopt.New("aisvV", "all", "read-alias", "skip-alias", "read-functions",
		"skip-functions", "skip-dot", "skip-tilde", "show-dot", "show-tilde", "tty-only")}, "which")
	readOnlyTool(&tool{opts: getopt.New("bB:mM:sS:fulgV")}, "whereis")

	// Sockets and open files.
	readOnlyTool(&tool{opts: getopt.New("rigsMvWnNeopclaFCZ46A:tuUSwxT", "route", "interfaces", "groups",
		"statistics", "masquerade", "verbose", "wide", "numeric", "numeric-hosts", "numeric-ports",
		"numeric-users", "symbolic", "extend", "programs", "timers", "continuous", "listening", "all",
		"fib", "cache", "context", "protocol=", "tcp", "udp", "udplite", "sctp", "raw", "unix", "ax25",
		"ipx", "netrom", "ddp", "inet", "inet6", "x25", "rose", "bluetooth", "notrim"),
		forever: map[string]string{"-c": "repeats every second until killed", "--continuous": "repeats every second until killed"}}, "netstat")
	readOnlyTool(&tool{opts: getopt.New("hVnraloemptTisbEZzN:46t0uMSdwxf:KHOA:D:F:B", "numeric", "resolve",
		"all", "listening", "options", "extended", "memory", "processes", "threads", "info", "tipcinfo",
		"summary", "tos", "cgroup", "bpf", "events", "context", "contexts", "net=", "ipv4", "ipv6",
		"packet", "tcp", "mptcp", "sctp", "udp", "dccp", "raw", "unix", "tipc", "vsock", "xdp",
		"family=", "kill", "no-header", "oneline", "inet-sockopt", "query=", "socket=", "diag=",
		"filter=", "bound-inet-sockets", "backlog"),
		writes: map[string]string{"-K": "closes the sockets it lists", "--kill": "closes the sockets it lists",
			"-D": "dumps raw socket data to a file", "--diag": "dumps raw socket data to a file"},
		forever: map[string]string{"-E": "waits for socket events until killed", "--events": "waits for socket events until killed"}}, "ss")
	readOnlyTool(lsofTool, "lsof")

	// DNS and routes.
	readOnlyTool(&tool{opts: getopt.New("46hdimnruvb:c:f:k:p:q:t:x:y:")}, "dig")
	readOnlyTool(&tool{opts: getopt.New("aACdilnrsTUvVwx46c:m:N:p:R:t:W:D")}, "host")
	readOnlyTool(&tool{opts: nslookupSpec, check: func(c *call, p *getopt.Parsed) {
		if p.Has("--ver", "--vers", "--versi", "--versio", "--version") {
			return // prints its version and exits
		}
		if a, ok := c.operand(p, 0); !ok || a.val == "-" {
			c.a.never(InteractiveREPL, "nslookup without a host to look up reads queries from its prompt")
		}
	}}, "nslookup")
	readOnlyTool(&tool{opts: getopt.New("46dFITUDnreAVLM:O:P:f:g:i:m:N:p:t:l:w:q:s:z:x", "icmp", "tcp", "udp",
		"udplite", "dccp", "raw", "port=", "tos=", "flowlabel=", "wait=", "queries=", "source=",
		"sendwait=", "mtu", "back", "sport=", "fwmark=", "extensions", "as-path-lookups", "as-server=",
		"module=", "options=", "protocol=", "first=", "gateway=", "interface=", "max-hops=",
		"sim-queries=", "resolve-hostnames", "dont-fragment", "debug", "mod-traceroute")}, "traceroute", "traceroute6")
	readOnlyTool(&tool{opts: getopt.New("46bnl:m:p:V")}, "tracepath", "tracepath6")
})

var nslookupSpec = func() *getopt.Spec {
	// nslookup's options are -name[=value] with one dash (bind 9.18
	// setoption): KEY=VALUE settings in the spellings it lists (-q=MX,
	// -query=MX, -type=MX), and switches that may be cut down to a
	// minimum length (-rec, -recur, -recurse). Every one only sets how the
	// lookup is made; a word starting with -ver prints the version.
	names := []string{"class=", "cl=", "type=", "ty=", "querytype=", "query=", "qu=", "domain=", "do=",
		"port=", "po=", "timeout=", "retry=", "ret=", "ndots=", "sil"}
	for _, sw := range []struct {
		name string
		min  int
	}{{"all", 3}, {"recurse", 3}, {"norecurse", 5}, {"defname", 3}, {"nodefname", 5}, {"vc", 2},
		{"novc", 4}, {"debug", 3}, {"nodebug", 5}, {"d2", 2}, {"nod2", 4}, {"search", 3},
		{"nosearch", 5}, {"fail", 3}, {"nofail", 5}, {"version", 3}} {
		for n := sw.min; n <= len(sw.name); n++ {
			names = append(names, sw.name[:n])
		}
	}
	// -q=MX and -t=5 are one letter: short options whose value is "=…".
	return getopt.New("46q::t::", names...).SingleDashLongs().NoAbbreviations()
}()

// lsofTool: lsof's "+" options (+D DIR, +r) are operands to a getopt
// parser, so check reads them; -r and +r repeat until killed; -D builds or
// updates the device cache file unless its function is i, r or ?.
var lsofTool = &tool{
	opts: getopt.New("?abhKlnNoOPRtUvVXQEHwMC:c:d:D:e:F::g::i::k:L::m:o::p:s::S::T::u:x::Z::A:f::r::"),
	forever: map[string]string{
		"-r": "repeats every 15 seconds until killed",
	},
	check: func(c *call, p *getopt.Parsed) {
		if o, ok := p.Get("-D"); ok && o.Value != "i" && o.Value != "r" && o.Value != "?" {
			c.a.writes(CodeWriteOption, RiskMediumWrite, "lsof -D "+o.Value+" may build or update the device cache file")
		}
		for _, i := range p.Operands {
			a := c.rest()[i]
			if p.DashDash >= 0 && i > p.DashDash {
				break
			}
			v := a.val
			if len(v) < 2 || v[0] != '+' {
				continue
			}
			switch v[1] {
			case 'r':
				c.a.never(UnboundedStream, "lsof "+v+" repeats until no file matches")
			case 'c', 'd', 'D', 'e', 'E', 'f', 'L', 'm', 'M', 'w':
			default:
				c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("lsof: option %s is not known to be read-only", v))
			}
		}
	},
}

// Programs that are not plain tools but read their options with the one
// parser too (issue 14: hostname and date used hand-written loops, mount,
// route and arp were writes whatever they were asked).
var _ = describeTools(func() {
	rules["hostname"] = hostnameSpecRule
	rules["date"] = dateRule
	rules["renice"] = reniceRule
	rules["taskset"] = tasksetRule
	rules["chrt"] = chrtRule
	rules["nvidia-smi"] = nvidiaSMIRule
	rules["mount"] = mountRule
	rules["route"] = routeRule
	rules["arp"] = arpRule
	rules["nginx"] = nginxRule
	for _, n := range []string{"hostname", "date", "ionice", "renice", "taskset", "chrt", "nvidia-smi",
		"mount", "route", "arp", "nginx"} {
		argSafe[n] = false
	}
})

// hostnameSpec is net-tools hostname (and Debian's hostname) with
// getopt_long's abbreviations: --fi is --file, --f is ambiguous.
var hostnameSpec = getopt.New("aAbdfF:iIsyvnhV", "alias", "all-fqdns", "boot", "domain", "fqdn", "long",
	"file=", "ip-address", "all-ip-addresses", "short", "yp", "nis", "node", "verbose")

// hostnameSpecRule: hostname NAME, -F/--file FILE and -b/--boot set the host
// name; the rest print it.
func hostnameSpecRule(c *call) {
	p := c.parse(hostnameSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-F", "--file", "-b", "--boot"); ok {
		c.a.writes(CodeWriteOption, RiskHighWrite, "hostname "+o.Name+" sets the host name")
		return
	}
	if a, ok := c.operand(p, 0); ok {
		c.a.writes(CodeWriteCommand, RiskHighWrite, "hostname "+a.val+" sets the host name")
	}
}

var dateSpec = getopt.New("d:f:I::R::ur:s:", "date=", "file=", "iso-8601?", "rfc-email", "rfc-3339=",
	"reference=", "set=", "universal", "utc", "debug", "resolution")

// dateRule: date -s and date MMDDhhmm set the system clock (not a file);
// +FORMAT operands only print.
func dateRule(c *call) {
	p := c.parse(dateSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-s", "--set"); ok {
		c.a.writes(CodeWriteOption, RiskHighWrite, "date "+o.Name+" sets the system clock")
		return
	}
	// strict has refused expanding words, so every operand is literal.
	for _, i := range p.Operands {
		if a := c.rest()[i]; !strings.HasPrefix(a.val, "+") {
			c.a.writes(CodeWriteCommand, RiskHighWrite, "date "+a.src+" sets the system clock")
			return
		}
	}
}

// reniceRule: renice changes the priority of running processes whatever
// its options say.
func reniceRule(c *call) {
	c.a.writes(CodeWriteCommand, RiskMediumWrite, "renice changes the priority of running processes")
}

var tasksetSpec = getopt.New("ahcpV", "all-tasks", "cpu-list", "pid").StopAtOperand()

// tasksetRule: taskset -p PID prints an affinity, taskset -p MASK PID sets
// it; taskset MASK CMD runs CMD, which is classified.
func tasksetRule(c *call) {
	p := c.parse(tasksetSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("-p", "--pid") {
		if len(p.Operands) > 1 {
			c.a.writes(CodeWriteOption, RiskMediumWrite, "taskset -p MASK PID changes the CPU affinity of a running process")
		}
		return
	}
	c.inner(c.fromOperand(p, 1), c.ctx)
}

var chrtSpec = getopt.New("bdfiorRT:P:D:amphvV", "batch", "deadline", "fifo", "idle", "other", "rr",
	"reset-on-fork", "sched-runtime=", "sched-period=", "sched-deadline=", "all-tasks", "max",
	"pid", "verbose", "ext").StopAtOperand()

// chrtRule: chrt -p PID and chrt -m print; chrt -p PRIO PID sets a running
// process's policy; chrt PRIO CMD runs CMD, which is classified.
func chrtRule(c *call) {
	p := c.parse(chrtSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("-m", "--max") {
		return
	}
	if p.Has("-p", "--pid") {
		if len(p.Operands) > 1 {
			c.a.writes(CodeWriteOption, RiskMediumWrite, "chrt -p PRIO PID changes the scheduling policy of a running process")
		}
		return
	}
	c.inner(c.fromOperand(p, 1), c.ctx)
}

// nvidiaSMISpec is nvidia-smi's query options and its setters; its
// multi-letter options (-lms, -pm) take one dash.
var nvidiaSMISpec = getopt.New("hLBquxi:d:f:l:e:p:c:r", "help", "list-gpus", "list-excluded-gpus", "query", "unit",
	"id=", "xml-format", "dtd", "display=", "filename=", "loop=", "lms=", "loop-ms=", "query-gpu=",
	"query-supported-clocks=", "query-compute-apps=", "query-accounted-apps=",
	"query-retired-pages=", "query-remapped-rows=", "format=", "debug=",
	// Setters.
	"ecc-config=", "reset-ecc-errors=", "compute-mode=", "dm=", "driver-model=", "fdm=",
	"force-driver-model=", "gpu-reset", "vm=", "virt-mode=", "lgc=", "lock-gpu-clocks=", "rgc",
	"reset-gpu-clocks", "lmc=", "lock-memory-clocks=", "rmc", "reset-memory-clocks", "ac=",
	"applications-clocks=", "rac", "reset-applications-clocks", "acp=",
	"applications-clocks-permission=", "pl=", "power-limit=", "cc=", "cuda-clocks=", "am=",
	"accounting-mode=", "caa", "clear-accounted-apps", "auto-boost-default=",
	"auto-boost-permission=", "pm=", "persistence-mode=", "mig=", "multi-instance-gpu=").SingleDashLongs().NoAbbreviations()

var nvidiaSMIMonitorSpec = getopt.New("i:d:c:s:o:f:", "format=")

// nvidiaSMIRule: queries read; -l/-lms loop until killed; -f and --debug
// write files; every other option sets GPU state. dmon and pmon stream
// until -c COUNT; topo prints; other subcommands are not checked.
func nvidiaSMIRule(c *call) {
	args := c.rest()
	if len(args) > 0 && args[0].literal() && !strings.HasPrefix(args[0].val, "-") {
		sub := args[0].val
		switch sub {
		case "topo":
			s := getopt.New("mi:c:n:", "matrix", "mp", "matrix_pci", "cpu=", "nearest_gpus=", "gpu=", "p2p=", "id=").SingleDashLongs()
			c.strict(c.parseWords(args[1:], s))
		case "dmon", "pmon":
			p := c.parseWords(args[1:], nvidiaSMIMonitorSpec)
			if !c.strict(p) {
				return
			}
			if p.Has("-f") {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "nvidia-smi "+sub+" -f writes its samples to a file")
			}
			if !p.Has("-c") {
				c.a.never(UnboundedStream, "nvidia-smi "+sub+" samples until killed; -c COUNT ends it")
			}
		default:
			c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "nvidia-smi "+sub+" is not known to be read-only")
		}
		return
	}
	p := c.parse(nvidiaSMISpec)
	if !c.strict(p) {
		return
	}
	if len(p.Operands) > 0 {
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "nvidia-smi: argument "+c.rest()[p.Operands[0]].src+" is not known to be read-only")
		return
	}
	for _, o := range p.Opts {
		switch o.Name {
		case "-h", "--help", "-L", "--list-gpus", "-B", "--list-excluded-gpus", "-q", "--query", "-u",
			"--unit", "-i", "--id", "-x", "--xml-format", "--dtd", "-d", "--display", "--format":
		case "-l", "--loop", "--lms", "--loop-ms":
			c.a.never(UnboundedStream, "nvidia-smi "+o.Name+" queries again and again until killed")
		case "-f", "--filename", "--debug":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "nvidia-smi "+o.Name+" writes a file")
		default:
			if strings.HasPrefix(o.Name, "--query-") {
				continue
			}
			c.a.writes(CodeWriteOption, RiskHighWrite, "nvidia-smi "+o.Name+" changes GPU settings")
		}
	}
}

var mountSpec = getopt.New("afFnrsvwlLUhVBRMt:o:O:T:N:cimX:", "all", "no-canonicalize", "fake", "fork",
	"fstab=", "internal-only", "show-labels", "no-mtab", "options-mode=", "options-source=",
	"options-source-force", "onlyonce", "options=", "test-opts=", "read-only", "rw", "read-write",
	"source=", "target=", "target-prefix=", "types=", "verbose", "namespace=", "bind", "move", "rbind",
	"make-shared", "make-slave", "make-private", "make-unbindable", "make-rshared", "make-rslave",
	"make-rprivate", "make-runbindable", "mkdir?", "map-users=", "map-groups=", "beneath", "exclusive",
	"label=", "uuid=", "sloppy", "onlyonce", "subdir=")

// mountRule: bare mount, mount -l and mount -t TYPE list the mounted file
// systems; anything else mounts.
func mountRule(c *call) {
	p := c.parse(mountSpec)
	if !c.strict(p) {
		return
	}
	if len(p.Operands) == 0 {
		list := true
		for _, o := range p.Opts {
			switch o.Name {
			case "-l", "--show-labels", "-t", "--types", "-v", "--verbose", "-n", "--no-mtab":
			default:
				list = false
			}
		}
		if list {
			return
		}
	}
	c.a.writes(CodeWriteCommand, RiskHighWrite, "mount attaches file systems")
}

var routeSpec = getopt.New("nNeFCvA:46", "numeric", "symbolic", "extend", "fib", "cache", "verbose", "inet", "inet6",
	"ax25", "netrom", "rose", "ipx", "ddp", "x25", "ash", "ether", "arcnet", "dlci", "fddi", "hippi",
	"irda", "eui64").StopAtOperand()

// routeRule: route and route -n list the routing table; route add, del and
// flush change it.
func routeRule(c *call) {
	p := c.parse(routeSpec)
	if !c.strict(p) {
		return
	}
	if a, ok := c.operand(p, 0); ok {
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "route "+a.val+" changes the routing table")
		if a.val == "del" || a.val == "flush" {
			c.a.destroys("route " + a.val + " removes routes")
		}
	}
}

var arpSpec = getopt.New("aenvDi:H:t:A:p:sdf", "verbose", "numeric", "device=", "use-device", "hw-type=",
	"protocol=", "set", "delete", "file", "all")

// arpRule: arp, arp -a and arp -n list the cache; -s, -d and -f change it.
func arpRule(c *call) {
	p := c.parse(arpSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-s", "--set", "-d", "--delete", "-f", "--file"); ok {
		c.a.writes(CodeWriteOption, RiskHighWrite, "arp "+o.Name+" changes the ARP cache")
	}
}

// nginxSpec is nginx's options (no long ones; clusters like getopt).
var nginxSpec = getopt.New("?hvVtTqs:p:e:c:g:")

// nginxRule: nginx -t/-T parse the system's configuration and print it
// without starting, signalling or binding anything; they read only
// (decided for issue 14). The test may create the configured log files
// empty, which is not counted. -c, -g and -p point nginx at another
// configuration, which can load modules (load_module runs their code), and
// -e names a log file, so they fail closed; without -t/-T/-v/-V/-h nginx
// starts or signals the server.
func nginxRule(c *call) {
	p := c.parse(nginxSpec)
	if !c.strict(p) {
		return
	}
	if len(p.Operands) > 0 {
		c.a.writes(CodeWriteCommand, RiskHighWrite, "nginx: unexpected argument "+c.rest()[p.Operands[0]].src)
		return
	}
	query := false
	for _, o := range p.Opts {
		switch o.Name {
		case "-t", "-T", "-v", "-V", "-h", "-?":
			query = true
		case "-q":
		case "-c", "-g", "-p":
			c.a.writes(CodeRunsProgram, RiskHighWrite, "nginx "+o.Name+" loads a configuration that can load modules")
			return
		case "-e":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "nginx -e writes its error log to "+o.Value)
			return
		case "-s":
			c.a.writes(CodeWriteCommand, RiskHighWrite, "nginx -s "+o.Value+" signals the running server")
			if o.Value == "stop" || o.Value == "quit" {
				c.a.destroys("nginx -s " + o.Value + " stops the server")
			}
			return
		}
	}
	if !query {
		c.a.writes(CodeWriteCommand, RiskHighWrite, "nginx starts the server")
	}
}
