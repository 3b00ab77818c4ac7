package intent

import (
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

func registerNetworkRules() {
	rules["curl"] = curlRule
	rules["wget"] = wgetRule
	rules["ssh"] = sshRule
	rules["ping"] = pingRule
	rules["ping6"] = pingRule
	rules["tcpdump"] = tcpdumpRule
	rules["mtr"] = mtrRule
}

var curlSpec = getopt.New("sSLfkvIiGN#46qZb:c:d:D:e:F:H:K:m:o:O:r:T:u:U:w:x:X:y:Y:z:A:E:C:J",
	"silent", "show-error", "location", "location-trusted", "fail", "fail-with-body", "insecure",
	"verbose", "head", "include", "get", "no-buffer", "progress-bar", "ipv4", "ipv6",
	"compressed", "http1.0", "http1.1", "http2", "http2-prior-knowledge", "http3", "no-keepalive",
	"cookie=", "cookie-jar=", "data=", "data-ascii=", "data-binary=", "data-raw=", "data-urlencode=",
	"dump-header=", "referer=", "form=", "form-string=", "header=", "config=", "max-time=",
	"output=", "remote-name", "remote-name-all", "range=", "upload-file=", "user=", "proxy-user=",
	"write-out=", "proxy=", "request=", "speed-time=", "speed-limit=", "time-cond=", "user-agent=",
	"cert=", "continue-at=", "remote-header-name", "json=", "url=", "connect-timeout=", "retry=",
	"retry-delay=", "retry-max-time=", "retry-all-errors", "resolve=", "cacert=", "capath=",
	"key=", "limit-rate=", "max-redirs=", "max-filesize=", "interface=", "dns-servers=",
	"oauth2-bearer=", "aws-sigv4=", "trace=", "trace-ascii=", "stderr=", "libcurl=",
	"output-dir=", "create-dirs", "netrc", "netrc-optional", "netrc-file=", "raw", "globoff",
	"path-as-is", "ssl", "ssl-reqd", "tlsv1.2", "tlsv1.3", "no-progress-meter", "parallel",
	"fail-early", "styled-output", "no-styled-output", "alt-svc=", "hsts=", "etag-save=",
	"etag-compare=", "variable=", "expand-url=", "expand-data=", "expand-header=", "unix-socket=",
	"abstract-unix-socket=", "noproxy=", "proxy-insecure", "digest", "basic", "ntlm", "negotiate",
	"anyauth", "service-name=", "head", "show-headers", "skip-existing", "remove-on-error").NoAbbreviations()

// curlRule: a GET to stdout reads (DESIGN §4); -X with another method,
// request bodies and uploads are HTTP writes; output files are writes.
func curlRule(c *call) {
	p := c.parse(curlSpec)
	if !c.strict(p) {
		return
	}
	get := p.Has("-G", "--get")
	for _, o := range p.Opts {
		switch o.Name {
		case "-X", "--request":
			m := strings.ToUpper(o.Value)
			if m != "GET" && m != "HEAD" && m != "OPTIONS" {
				c.a.writes(CodeHTTPWrite, RiskMediumWrite, fmt.Sprintf("curl %s %s sends a %s request", o.Name, o.Value, m))
				if m == "DELETE" {
					c.a.destroys("curl -X DELETE deletes a remote resource")
				}
			}
		case "-d", "--data", "--data-ascii", "--data-binary", "--data-raw", "--data-urlencode":
			if !get {
				c.a.writes(CodeHTTPWrite, RiskMediumWrite, fmt.Sprintf("curl %s sends a request body", o.Name))
			}
			if strings.HasPrefix(o.Value, "@") {
				c.a.writes(CodeHTTPWrite, RiskMediumWrite, fmt.Sprintf("curl %s %s uploads a file", o.Name, o.Value))
			}
		case "--json", "-F", "--form", "--form-string", "-T", "--upload-file":
			c.a.writes(CodeHTTPWrite, RiskMediumWrite, fmt.Sprintf("curl %s sends data", o.Name))
		case "-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii",
			"--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc":
			if !isStdStream(o.Value) {
				c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("curl %s %s writes a file", o.Name, o.Value))
			}
		case "-O", "--remote-name", "--remote-name-all", "-J", "--remote-header-name", "--output-dir", "--create-dirs":
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("curl %s saves to a file", o.Name))
		case "-K", "--config":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "curl --config reads options classify cannot see")
		case "-w", "--write-out":
			if strings.Contains(o.Value, "%output{") {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "curl --write-out %output{} writes a file")
			}
		}
	}
	for _, i := range p.Operands {
		u := strings.ToLower(c.rest()[i].val)
		if hasPrefixAny(u, "smtp", "smtps", "ftp://", "ftps://", "sftp", "scp", "tftp", "mqtt", "telnet", "gopher", "ldap") {
			c.a.writes(CodeHTTPWrite, RiskMediumWrite, "curl "+c.rest()[i].val+" uses a protocol that can send or change data")
		}
	}
}

// wgetSpec is GNU Wget 1.21's options, with getopt_long's abbreviations
// (--post-d is --post-data, --exe is --execute). -nv, -nc, -nd, -nH and -np
// are -n with a value.
var wgetSpec = getopt.New("Vhbe:o:a:dqvn:i:FB:t:O:cNST:w:Q:46xP:EU:rl:kKmpA:R:D:HLI:X:",
	"version", "help", "background", "execute=", "output-file=", "append-output=", "debug", "quiet",
	"verbose", "no-verbose", "report-speed=", "input-file=", "force-html", "base=", "config=",
	"no-config", "rejected-log=", "tries=", "retry-connrefused", "retry-on-http-error=",
	"output-document=", "no-clobber", "no-netrc", "continue", "start-pos=", "progress=",
	"show-progress", "timestamping", "no-if-modified-since", "no-use-server-timestamps",
	"server-response", "spider", "timeout=", "dns-timeout=", "connect-timeout=", "read-timeout=",
	"wait=", "waitretry=", "random-wait", "no-proxy", "quota=", "bind-address=", "limit-rate=",
	"no-dns-cache", "restrict-file-names=", "ignore-case", "inet4-only", "inet6-only",
	"prefer-family=", "user=", "password=", "ask-password", "use-askpass=", "no-iri",
	"local-encoding=", "remote-encoding=", "unlink", "xattr", "no-directories", "force-directories",
	"no-host-directories", "protocol-directories", "directory-prefix=", "cut-dirs=", "http-user=",
	"http-password=", "no-cache", "default-page=", "adjust-extension", "ignore-length", "header=",
	"compression=", "max-redirect=", "proxy-user=", "proxy-password=", "referer=", "save-headers",
	"user-agent=", "no-http-keep-alive", "no-cookies", "load-cookies=", "save-cookies=",
	"keep-session-cookies", "post-data=", "post-file=", "method=", "body-data=", "body-file=",
	"content-disposition", "content-on-error", "auth-no-challenge", "secure-protocol=", "https-only",
	"no-check-certificate", "certificate=", "certificate-type=", "private-key=", "private-key-type=",
	"ca-certificate=", "ca-directory=", "crl-file=", "pinnedpubkey=", "ciphers=", "no-hsts",
	"hsts-file=", "ftp-user=", "ftp-password=", "no-remove-listing", "no-glob", "no-passive-ftp",
	"preserve-permissions", "retr-symlinks", "ftps-implicit", "ftps-resume-ssl",
	"ftps-clear-data-connection", "ftps-fallback-to-ftp", "warc-file=", "warc-header=",
	"warc-max-size=", "warc-cdx", "warc-dedup=", "no-warc-compression", "no-warc-digests",
	"no-warc-keep-log", "warc-tempdir=", "recursive", "level=", "delete-after", "convert-links",
	"convert-file-only", "backups=", "backup-converted", "mirror", "page-requisites",
	"strict-comments", "accept=", "reject=", "accept-regex=", "reject-regex=", "regex-type=",
	"domains=", "exclude-domains=", "follow-ftp", "follow-tags=", "ignore-tags=", "span-hosts",
	"relative", "include-directories=", "trust-server-names", "exclude-directories=", "no-parent",
	"check-certificate", "hsts", "passive-ftp", "cookies", "http-keep-alive", "dns-cache", "iri",
	"glob", "remove-listing", "warc-compression", "warc-digests", "warc-keep-log", "proxy",
	"if-modified-since", "use-server-timestamps", "netrc", "parent", "clobber", "directories",
	"host-directories", "verbose", "chunk-size=", "max-threads=", "metalink-over-http",
	"metalink-index=", "preferred-location=", "input-metalink=", "keep-badhash", "xattr")

// wgetRule: wget saves what it downloads unless -O - prints it or --spider
// only checks; request bodies send data; -e/--execute and --config apply
// .wgetrc commands (which can set any of this), --use-askpass runs a
// program, and log, cookie, WARC and HSTS files are writes.
func wgetRule(c *call) {
	p := c.parse(wgetSpec)
	if !c.strict(p) {
		return
	}
	toStdout, spider := false, p.Has("--spider")
	for _, o := range p.Opts {
		switch o.Name {
		case "-O", "--output-document":
			if isStdStream(o.Value) {
				toStdout = true
			} else {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "wget "+o.Name+" "+o.Value+" writes a file")
			}
		case "-e", "--execute", "--config":
			c.a.writes(CodeRunsProgram, RiskHighWrite, "wget "+o.Name+" applies .wgetrc commands classify does not check")
		case "--use-askpass":
			c.a.writes(CodeRunsProgram, RiskHighWrite, "wget --use-askpass runs "+o.Value)
		case "--post-data", "--post-file", "--body-data", "--body-file":
			c.a.writes(CodeHTTPWrite, RiskMediumWrite, "wget "+o.Name+" sends data")
		case "--method":
			if m := strings.ToUpper(o.Value); m != "GET" && m != "HEAD" && m != "OPTIONS" {
				c.a.writes(CodeHTTPWrite, RiskMediumWrite, "wget --method "+o.Value+" sends a "+m+" request")
			}
		case "-o", "--output-file", "-a", "--append-output", "--rejected-log", "--save-cookies",
			"--warc-file", "--hsts-file":
			if !isStdStream(o.Value) {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "wget "+o.Name+" "+o.Value+" writes a file")
			}
		case "-r", "--recursive", "-m", "--mirror", "-p", "--page-requisites", "-x",
			"--force-directories", "-P", "--directory-prefix", "-k", "--convert-links", "-K",
			"--backup-converted", "--delete-after", "--backups", "--unlink", "--xattr", "--save-headers",
			"--warc-cdx", "--input-metalink", "--metalink-over-http":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "wget "+o.Name+" writes or removes files")
		case "-b", "--background":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "wget -b keeps running in the background and logs to wget-log")
		case "--ask-password":
			c.a.never(InteractiveREPL, "wget --ask-password prompts for a password")
		}
	}
	if !toStdout && !spider {
		c.a.writes(CodeWriteOption, RiskMediumWrite, "wget saves the download to a file; wget -qO- URL prints it")
	}
}

var sshSpec = getopt.New("46AaCfGgKkMNnqsTtVvXxYyB:b:c:D:E:e:F:I:i:J:L:l:m:O:o:P:p:Q:R:S:W:w:").StopAtOperand()

// sshSafeKeys are the ssh_config keywords an -o may set without running,
// loading or writing anything beyond what a plain ssh does (keys are
// case-insensitive). Any other keyword fails closed: ProxyCommand,
// LocalCommand, KnownHostsCommand, PKCS11Provider, SecurityKeyProvider,
// XAuthLocation and Include run or load code; ControlMaster, ControlPersist,
// Tunnel and the forwardings write sockets or run until killed.
var sshSafeKeys = map[string]bool{
	"addressfamily": true, "batchmode": true, "bindaddress": true, "bindinterface": true,
	"canonicaldomains": true, "canonicalizefallbacklocal": true, "canonicalizehostname": true,
	"canonicalizemaxdots": true, "canonicalizepermittedcnames": true, "casignaturealgorithms": true,
	"certificatefile": true, "checkhostip": true, "ciphers": true, "clearallforwardings": true,
	"compression": true, "connectionattempts": true, "connecttimeout": true, "controlpath": true,
	"escapechar": true, "exitonforwardfailure": true, "fingerprinthash": true,
	"forwardagent": true, "forwardx11": true, "forwardx11trusted": true, "gssapiauthentication": true,
	"gssapidelegatecredentials": true, "globalknownhostsfile": true, "hashknownhosts": true,
	"hostbasedacceptedalgorithms": true, "hostbasedauthentication": true, "hostkeyalgorithms": true,
	"hostkeyalias": true, "hostname": true, "identitiesonly": true, "identityagent": true,
	"identityfile": true, "ipqos": true, "kbdinteractiveauthentication": true,
	"kbdinteractivedevices": true, "kexalgorithms": true, "loglevel": true, "logverbose": true,
	"macs": true, "nohostauthenticationforlocalhost": true, "numberofpasswordprompts": true,
	"obscurekeystroketiming": true, "passwordauthentication": true, "port": true,
	"preferredauthentications": true, "proxyjump": true, "pubkeyacceptedalgorithms": true,
	"pubkeyacceptedkeytypes": true, "pubkeyauthentication": true, "rekeylimit": true,
	"requiredrsasize": true, "revokedhostkeys": true, "sendenv": true, "serveralivecountmax": true,
	"serveraliveinterval": true, "setenv": true, "stricthostkeychecking": true, "tcpkeepalive": true,
	"user": true, "verifyhostkeydns": true, "visualhostkey": true, "enableescapecommandline": true,
	"requesttty": true, "sessiontype": true, "stdinnull": true, "warnweakcrypto": true,
	"channeltimeout": true, "pubkeyauthoptions": true,
}

// sshOption splits an -o value the way ssh's readconf does: the keyword
// ends at whitespace or "=", and may be quoted.
func sshOption(v string) (key, value string) {
	v = strings.TrimLeft(v, " \t")
	end := strings.IndexAny(v, " \t=")
	if end < 0 {
		end = len(v)
	}
	key = strings.ToLower(strings.Trim(v[:end], `"`))
	value = strings.TrimLeft(v[end:], " \t")
	value = strings.TrimSpace(strings.TrimPrefix(value, "="))
	return key, strings.Trim(value, `"`)
}

// sshRule: ssh HOST CMD runs CMD through the remote shell, so CMD is
// classified as a command line (P-48: ssh host "ls -la" is read-only);
// ssh HOST alone is a REPL; -t allocates a terminal; forwarding runs
// forever. Options that load code (-I, -F, -o ProxyCommand …) or write
// files (-E, -M, -o ControlMaster …) fail closed, in every -o spelling;
// -G, -V and -Q print and exit.
func sshRule(c *call) {
	p := c.parse(sshSpec)
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		switch o.Name {
		case "-o":
			k, v := sshOption(o.Value)
			lv := strings.ToLower(v)
			switch {
			case k == "userknownhostsfile" && (isSinkPath(v) || lv == "none"),
				(k == "controlmaster" || k == "controlpersist" || k == "forkafterauthentication" ||
					k == "permitlocalcommand" || k == "tunnel" || k == "updatehostkeys" ||
					k == "addkeystoagent" || k == "streamlocalbindunlink") && lv == "no":
			case sshSafeKeys[k]:
			default:
				c.a.failClosed(CodeRunsProgram, "ssh -o "+k+" may run, load or write something classify does not check")
				return
			}
		case "-F":
			if !isSinkPath(o.Value) && o.Value != "none" {
				c.a.writes(CodeRunsProgram, RiskMediumWrite, "ssh -F loads a config that can run commands")
				return
			}
		case "-I":
			c.a.writes(CodeRunsProgram, RiskHighWrite, "ssh -I loads a PKCS#11 library")
			return
		case "-E":
			if !isSinkPath(o.Value) {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "ssh -E appends its log to "+o.Value)
			}
		case "-M":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "ssh -M creates a control socket and keeps the master running")
		case "-O":
			if o.Value != "check" {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "ssh -O "+o.Value+" controls a running master")
				return
			}
		case "-w":
			c.a.writes(CodeWriteOption, RiskHighWrite, "ssh -w creates a tunnel device")
		case "-f":
			c.a.never(UnboundedStream, "ssh -f keeps running in the background")
		case "-L", "-R", "-D", "-N":
			c.a.never(UnboundedStream, "ssh "+o.Name+" forwards ports until stopped")
		}
	}
	if p.Has("-G", "-V", "-Q") || p.Has("-O") {
		return // print and exit without connecting (-O check asks a master)
	}
	if len(p.Operands) < 1 {
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, "ssh without a host")
		return
	}
	cmd := c.rest()[p.Operands[0]+1:]
	if len(cmd) == 0 {
		if !p.Has("-N") {
			c.a.never(InteractiveREPL, "ssh without a command opens a remote shell")
		}
		return
	}
	for _, a := range cmd {
		if !a.literal() && !a.procSub {
			c.a.writes(CodeDynamicCommand, RiskMediumWrite, "ssh: the remote command "+a.src+" is computed at run time")
			return
		}
	}
	c.w.script(joined(cmd), c.a, true)
	if p.Has("-t") {
		c.a.never(TTYFlag, "ssh -t allocates a terminal and waits for input")
	}
}

// pingSpec is iputils ping's options.
var pingSpec = getopt.New("346aAbBc:CdDe:fF:hi:I:l:Lm:M:nOp:qQ:rRs:S:t:T:UvVw:W:")

// pingRule: ping without -c or -w pings forever. Rewrite: ping H → ping -c 4 H.
func pingRule(c *call) {
	p := c.parse(pingSpec)
	if !c.strict(p) {
		return
	}
	// A count or deadline must be a literal positive number (the last one
	// counts); -w 0 sets no deadline.
	for _, n := range []string{"-c", "-w"} {
		if o, ok := p.Get(n); ok && isInteger(&arg{val: o.Value}) && !strings.HasPrefix(o.Value, "-") && strings.Trim(o.Value, "0") != "" {
			return
		}
	}
	c.a.never(UnboundedStream, c.name+" without -c pings forever")
	if !p.Has("-c", "-w") {
		c.rewrite(c.srcExcept(p, 1, func(getopt.Opt) bool { return false }, "-c", "4")...)
	}
}

var tcpdumpSpec = getopt.New("AbdDeKlLnNOpqStuUvxXc:C:E:F:G:i:j:m:M:r:s:T:w:W:y:z:Z:B:Q:", "help", "version", "list-interfaces", "interface=", "immediate-mode", "number", "print")

// tcpdumpRule: -w writes a capture file; without -c it captures forever.
func tcpdumpRule(c *call) {
	p := c.parse(tcpdumpSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.Get("-w"); ok && !isStdStream(o.Value) {
		c.a.writes(CodeWriteOption, RiskMediumWrite, "tcpdump -w writes a capture file")
	}
	if p.Has("-z") {
		c.a.writes(CodeRunsProgram, RiskHighWrite, "tcpdump -z runs a program")
	}
	if !p.Has("-c", "-r", "-D", "--list-interfaces", "--help", "--version") {
		c.a.never(UnboundedStream, "tcpdump without -c captures forever")
		c.rewrite(c.srcExcept(p, 1, func(getopt.Opt) bool { return false }, "-c", "100")...)
	}
}

// mtrSpec is mtr's options (0.95), with getopt_long's abbreviations
// (--rep is ambiguous, --report-c is --report-cycles).
var mtrSpec = getopt.New("F:46uTSI:a:f:m:U:E:P:L:s:B:i:G:Q:eZ:M:rwc:jxClptgno:by:zhv", "filename=", "inet",
	"inet6", "udp", "tcp", "sctp", "interface=", "address=", "first-ttl=", "max-ttl=", "max-unknown=",
	"max-display-path=", "port=", "localport=", "psize=", "bitpattern=", "interval=", "gracetime=", "tos=",
	"mpls", "timeout=", "mark=", "report", "report-wide", "report-cycles=", "json", "xml", "csv", "raw",
	"split", "curses", "gtk", "displaymode=", "no-dns", "show-ips", "order=", "ipinfo=", "aslookup",
	"help", "version")

// mtrRule: mtr redraws until stopped unless it writes a report (--report,
// --report-wide, --json, --xml or --csv), which ends after --report-cycles
// (10 by default); --raw and --split stream, --curses and --gtk are
// interactive.
func mtrRule(c *call) {
	p := c.parse(mtrSpec)
	if !c.strict(p) {
		return
	}
	report := p.Has("-r", "--report", "-w", "--report-wide", "-j", "--json", "-x", "--xml", "-C", "--csv")
	if o, ok := p.Get("-c", "--report-cycles"); ok && (!isDigits(o.Value) || strings.Trim(o.Value, "0") == "") {
		report = false // a count that is not a positive number does not end it
	}
	if !report || p.Has("-t", "--curses", "-g", "--gtk", "-l", "--raw", "-p", "--split") {
		c.a.never(UnboundedStream, "mtr refreshes until stopped; --report prints once")
	}
}
