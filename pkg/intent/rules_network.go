package intent

import (
	"fmt"
	"strings"
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

var curlSpec = func() *optSpec {
	s := spec("sSLfkvIiGN#46qZb:c:d:D:e:F:H:K:m:o:O:r:T:u:U:w:x:X:y:Y:z:A:E:C:J",
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
		"anyauth", "service-name=", "head", "show-headers", "skip-existing", "remove-on-error")
	s.noAbbrev = true
	return s
}()

// curlRule: a GET to stdout reads (DESIGN §4); -X with another method,
// request bodies and uploads are HTTP writes; output files are writes.
func curlRule(c *call) {
	p := c.parse(curlSpec)
	if !c.strict(p) {
		return
	}
	get := p.has("-G", "--get")
	for _, o := range p.opts {
		switch o.name {
		case "-X", "--request":
			m := strings.ToUpper(o.value)
			if m != "GET" && m != "HEAD" && m != "OPTIONS" {
				c.a.writes(CodeHTTPWrite, RiskMediumWrite, fmt.Sprintf("curl %s %s sends a %s request", o.name, o.value, m))
				if m == "DELETE" {
					c.a.destroys("curl -X DELETE deletes a remote resource")
				}
			}
		case "-d", "--data", "--data-ascii", "--data-binary", "--data-raw", "--data-urlencode":
			if !get {
				c.a.writes(CodeHTTPWrite, RiskMediumWrite, fmt.Sprintf("curl %s sends a request body", o.name))
			}
			if strings.HasPrefix(o.value, "@") {
				c.a.writes(CodeHTTPWrite, RiskMediumWrite, fmt.Sprintf("curl %s %s uploads a file", o.name, o.value))
			}
		case "--json", "-F", "--form", "--form-string", "-T", "--upload-file":
			c.a.writes(CodeHTTPWrite, RiskMediumWrite, fmt.Sprintf("curl %s sends data", o.name))
		case "-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii",
			"--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc":
			if !isStdStream(o.value) {
				c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("curl %s %s writes a file", o.name, o.value))
			}
		case "-O", "--remote-name", "--remote-name-all", "-J", "--remote-header-name", "--output-dir", "--create-dirs":
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("curl %s saves to a file", o.name))
		case "-K", "--config":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "curl --config reads options classify cannot see")
		case "-w", "--write-out":
			if strings.Contains(o.value, "%output{") {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "curl --write-out %output{} writes a file")
			}
		}
	}
	for _, i := range p.operands {
		u := strings.ToLower(c.rest()[i].val)
		if hasPrefixAny(u, "smtp", "smtps", "ftp://", "ftps://", "sftp", "scp", "tftp", "mqtt", "telnet", "gopher", "ldap") {
			c.a.writes(CodeHTTPWrite, RiskMediumWrite, "curl "+c.rest()[i].val+" uses a protocol that can send or change data")
		}
	}
}

// wgetRule: wget saves to a file unless -O - prints it; POST options send.
func wgetRule(c *call) {
	toStdout, spider := false, false
	args := c.rest()
	for i, a := range args {
		v := a.val
		next := ""
		if i+1 < len(args) {
			next = args[i+1].val
		}
		switch {
		case v == "-O" && next == "-" || v == "-O-" || v == "--output-document=-" || v == "--output-document" && next == "-" ||
			strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.HasSuffix(v, "O-") ||
			strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.HasSuffix(v, "O") && next == "-":
			toStdout = true
		case v == "--spider":
			spider = true
		case strings.HasPrefix(v, "--post-data") || strings.HasPrefix(v, "--post-file") || strings.HasPrefix(v, "--body-data") ||
			strings.HasPrefix(v, "--body-file") || strings.HasPrefix(v, "--method"):
			c.a.writes(CodeHTTPWrite, RiskMediumWrite, "wget "+v+" sends data")
		case v == "-o" || v == "-a" || strings.HasPrefix(v, "--output-file") || strings.HasPrefix(v, "--append-output") ||
			v == "-r" || v == "--recursive" || v == "-m" || v == "--mirror" || v == "-x" || v == "-P" || strings.HasPrefix(v, "--directory-prefix") ||
			strings.HasPrefix(v, "--save-cookies") || v == "-i" || strings.HasPrefix(v, "--input-file") || strings.HasPrefix(v, "--execute") || v == "-e":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "wget "+v+" writes files or runs commands")
		}
	}
	if !toStdout && !spider {
		c.a.writes(CodeWriteOption, RiskMediumWrite, "wget saves the download to a file; wget -qO- URL prints it")
	}
}

var sshSpec = func() *optSpec {
	s := spec("46AaCfGgKkMNnqsTtVvXxYyB:b:c:D:E:e:F:I:i:J:L:l:m:O:o:P:p:Q:R:S:W:w:")
	s.posixStop = true
	return s
}()

// sshRule: ssh HOST CMD runs CMD through the remote shell, so CMD is
// classified as a command line (P-48: ssh host "ls -la" is read-only);
// ssh HOST alone is a REPL; -t allocates a terminal; forwarding runs forever.
func sshRule(c *call) {
	p := c.parse(sshSpec)
	if !c.strict(p) {
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "-o":
			k := strings.ToLower(strings.TrimSpace(strings.SplitN(strings.ReplaceAll(o.value, "=", " "), " ", 2)[0]))
			if k == "proxycommand" || k == "localcommand" || k == "permitlocalcommand" || k == "knownhostscommand" || k == "remotecommand" {
				c.a.failClosed(CodeRunsProgram, "ssh -o "+k+" runs a local command")
				return
			}
		case "-F":
			c.a.writes(CodeRunsProgram, RiskMediumWrite, "ssh -F loads a config that can run commands")
			return
		case "-L", "-R", "-D", "-W", "-N", "-f", "-M", "-S", "-O":
			if o.name == "-N" || o.name == "-L" || o.name == "-R" || o.name == "-D" {
				c.a.never(UnboundedStream, "ssh "+o.name+" forwards ports until stopped")
			}
		}
	}
	if len(p.operands) < 1 {
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, "ssh without a host")
		return
	}
	cmd := c.rest()[p.operands[0]+1:]
	if len(cmd) == 0 {
		if !p.has("-N") {
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
	if p.has("-t") {
		c.a.never(TTYFlag, "ssh -t allocates a terminal and waits for input")
	}
}

var pingSpec = spec("46aAbBdDfhLnOqrRUvVc:i:I:l:m:M:p:Q:s:S:t:T:w:W:F:", "")

// pingRule: ping without -c or -w pings forever. Rewrite: ping H → ping -c 4 H.
func pingRule(c *call) {
	p := c.parse(pingSpec)
	if !c.strict(p) {
		return
	}
	if p.has("-c", "-w") {
		return
	}
	c.a.never(UnboundedStream, c.name+" without -c pings forever")
	c.rewrite(c.srcExcept(p, 1, func(opt) bool { return false }, "-c", "4")...)
}

var tcpdumpSpec = spec("AbdDeKlLnNOpqStuUvxXc:C:E:F:G:i:j:m:M:r:s:T:w:W:y:z:Z:B:Q:", "help", "version", "list-interfaces", "interface=", "immediate-mode", "number", "print")

// tcpdumpRule: -w writes a capture file; without -c it captures forever.
func tcpdumpRule(c *call) {
	p := c.parse(tcpdumpSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.get("-w"); ok && !isStdStream(o.value) {
		c.a.writes(CodeWriteOption, RiskMediumWrite, "tcpdump -w writes a capture file")
	}
	if p.has("-z") {
		c.a.writes(CodeRunsProgram, RiskHighWrite, "tcpdump -z runs a program")
	}
	if !p.has("-c", "-r", "-D", "--list-interfaces", "--help", "--version") {
		c.a.never(UnboundedStream, "tcpdump without -c captures forever")
		c.rewrite(c.srcExcept(p, 1, func(opt) bool { return false }, "-c", "100")...)
	}
}

// mtrRule: mtr is interactive unless it writes a report.
func mtrRule(c *call) {
	for _, a := range c.rest() {
		if a.val == "-r" || a.val == "--report" || a.val == "-w" || a.val == "--report-wide" || a.val == "-j" || a.val == "--json" || a.val == "-C" || a.val == "--csv" {
			return
		}
	}
	c.a.never(UnboundedStream, "mtr refreshes until stopped; --report prints once")
}
