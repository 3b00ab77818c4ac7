package intent

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/govkit/govkit/pkg/getopt"
)

// Cloud CLIs (aws, gcloud, az) read with their describe/list/get and
// list/show commands (issue 14): those call read-only APIs, so the reason
// for the others is that they call an API that changes resources, not
// that they "send data over the network". The global options go through
// the one option parser; the options of an operation are its API's input
// parameters, which the CLIs accept in any order, and which cannot make a
// read API write; the few client-side options that write files, prompt or
// follow are known by name.
//
// Configuration chosen by name (--profile, --configuration,
// --subscription) comes from the user's own config files, whose
// credential_process or auth helpers run as they would for any call,
// like git's global config; a config file chosen by the command line or
// the environment (AWS_CONFIG_FILE=, CLOUDSDK_CONFIG=, --flags-file) was
// not checked and fails closed.

var _ = describeTools(func() {
	rules["aws"] = awsRule
	rules["gcloud"] = gcloudRule
	rules["az"] = azRule
	rules["openssl"] = opensslRule
	rules["yq"] = yqRule
	rules["redis-cli"] = redisRule
	for _, n := range []string{"aws", "gcloud", "az", "openssl", "yq", "redis-cli"} {
		argSafe[n] = false
	}
})

// awsSpec is the AWS CLI v2's global options.
var awsSpec = getopt.New("", "debug", "endpoint-url=", "no-verify-ssl", "no-paginate", "output=", "query=",
	"profile=", "region=", "version", "color=", "no-sign-request", "ca-bundle=",
	"cli-read-timeout=", "cli-connect-timeout=", "cli-binary-format=", "no-cli-pager",
	"cli-auto-prompt", "no-cli-auto-prompt", "cli-input-json=", "cli-input-yaml=",
	"generate-cli-skeleton?", "page-size=", "max-items=", "starting-token=").NoAbbreviations()

// awsOutfile are read operations that stream their result into a file
// named by a positional argument (aws s3api get-object BUCKET KEY FILE).
var awsOutfile = map[string]bool{
	"get-object": true, "get-object-torrent": true, "get-job-output": true, "get-media": true,
	"get-clip": true, "get-media-for-fragment-list": true, "get-snapshot-block": true,
	"get-package-version-asset": true, "get-thing-shadow": true, "get-export": true, "get-sdk": true,
}

// awsReadOp reports the operations that only read.
func awsReadOp(service, op string) bool {
	switch {
	case awsOutfile[op]:
		return false
	case hasPrefixAny(op, "describe-", "list-", "get-", "batch-get-", "lookup-"),
		op == "filter-log-events", op == "wait",
		service == "dynamodb" && (op == "scan" || op == "query"),
		service == "s3" && (op == "ls" || op == "presign"),
		service == "configure" && (op == "list" || op == "get" || op == "list-profiles" || op == "export-credentials"),
		service == "logs" && op == "tail":
		return true
	}
	return false
}

func awsRule(c *call) {
	p := c.parse(awsSpec)
	if len(p.Operands) == 0 {
		c.strict(p)
		return
	}
	// Before the service only global options: an unknown one could take
	// the service as its value.
	if !c.strict(c.parseWords(c.rest()[:p.Operands[0]], awsSpec)) {
		return
	}
	for _, u := range p.Unknown {
		// An operation's parameters are --kebab-case; the CLI's own
		// options start with --cli or are short.
		if !strings.HasPrefix(u, "--") || strings.HasPrefix(u, "--cli") {
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("aws: option %s is not known to be read-only", u))
			return
		}
	}
	args := c.rest()
	words := make([]string, 0, 2)
	for _, i := range p.Operands[:min(2, len(p.Operands))] {
		if !args[i].literal() {
			c.a.failClosed(CodeDynamicCommand, "aws command "+args[i].src+" is computed at run time")
			return
		}
		words = append(words, args[i].val)
	}
	service, op := words[0], ""
	if len(words) > 1 {
		op = words[1]
	}
	if len(p.Dynamic) > 0 {
		// An expansion after a literal read operation (aws s3 ls
		// $BUCKET) can only become an operand, one of the operation's
		// input parameters or a global option: none of them writes
		// (issue 14). Before the operation it could become the
		// operation; any other operation writes anyway (below).
		last := p.Operands[min(1, len(p.Operands)-1)]
		if before := c.parseWords(args[:last+1], awsSpec); len(before.Dynamic) > 0 {
			c.a.writes(CodeDynamicCommand, RiskMediumWrite, fmt.Sprintf("aws: argument %s may expand into an option", before.Dynamic[0]))
			return
		}
		if service == "logs" && op == "tail" {
			c.a.never(UnboundedStream, fmt.Sprintf("aws logs tail: argument %s may expand into --follow", p.Dynamic[0]))
			return
		}
	}
	if service == "help" || op == "help" || len(p.Operands) > 2 && args[p.Operands[2]].val == "help" {
		c.a.never(Pager, "aws help shows the manual through a pager")
		return
	}
	if p.Has("--cli-auto-prompt") {
		c.a.never(TTYFlag, "aws --cli-auto-prompt prompts for the command")
		return
	}
	if o, ok := p.Get("--generate-cli-skeleton"); ok && o.Value != "" || ok && !o.HasValue {
		return // prints a skeleton and calls no API
	}
	name := strings.TrimSpace("aws " + service + " " + op)
	if !awsReadOp(service, op) {
		if awsOutfile[op] {
			c.a.writes(CodeWriteOption, RiskMediumWrite, name+" writes the result to the file named by its last argument")
			return
		}
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, name+" calls an API that is not known to be read-only")
		if hasPrefixAny(op, "delete-", "terminate-", "remove-", "deregister-", "rb", "rm") {
			c.a.destroys(name + " deletes resources")
		}
		return
	}
	if service == "logs" && op == "tail" && slicesContains(p.Unknown, "--follow") {
		c.a.never(UnboundedStream, "aws logs tail --follow follows forever")
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// gcloudSpec is gcloud's global options and the list options.
var gcloudSpec = getopt.New("qh", "account=", "billing-project=", "configuration=", "flags-file=", "flatten=",
	"format=", "help", "project=", "quiet", "verbosity=", "impersonate-service-account=",
	"log-http", "trace-token=", "user-output-enabled", "no-user-output-enabled",
	"access-token-file=", "filter=", "limit=", "page-size=", "sort-by=", "uri", "zone=",
	"region=", "location=", "version").NoAbbreviations()

// gcloudGroups are command groups whose list and describe commands read.
// A command's positional arguments follow it (gcloud compute instances
// delete list deletes an instance named list), so every word before the
// verb must be a known group.
var gcloudGroups = wordSet(`alpha beta compute instances disks zones regions networks subnets
	firewall-rules routes addresses images snapshots machine-types instance-groups managed
	unmanaged instance-templates forwarding-rules backend-services target-pools health-checks
	url-maps ssl-certificates routers operations project-info accelerator-types disk-types
	resource-policies reservations container clusters node-pools projects iam service-accounts
	keys roles policies run services revisions jobs executions functions sql databases users
	backups storage buckets objects pubsub topics subscriptions logging logs sinks metrics config
	configurations auth secrets versions kms keyrings locations dns managed-zones record-sets app
	artifacts repositories docker packages tags builds triggers organizations billing accounts
	deployment-manager deployments dataproc dataflow bigtable spanner redis composer
	environments monitoring dashboards channels filestore memcache scheduler tasks queues
	workflows source repos endpoints certificate-manager certificates maps resource-manager
	folders asset recommender recommendations components`)

// azGroups: az commands take no positional arguments, but extensions
// add groups; the same known-groups rule keeps az honest.
var azGroups = wordSet(`account group resource vm vmss disk snapshot image network vnet subnet nsg
	rule public-ip nic lb application-gateway dns zone record-set private-dns storage blob
	container queue share table aks acr repository keyvault secret key certificate webapp
	functionapp appservice plan sql server db cosmosdb monitor activity-log metrics diagnostic-settings
	log-analytics workspace role assignment definition ad sp app user policy tag
	deployment sub mg redis servicebus eventhubs namespace eventgrid topic apim identity
	containerapp logic postgres mysql flexible-server extension provider location feature
	bicep lock backup vault security alert advisor recommendation consumption usage billing
	cache batch search signalr iot hub log cognitiveservices ml aro arc connectedk8s k8s-configuration`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

func gcloudRule(c *call) { cloudPathRule(c, gcloudSpec, gcloudGroups) }

var azSpec = getopt.New("o:h", "debug", "only-show-errors", "output=", "query=", "subscription=", "verbose", "help", "version").NoAbbreviations()

func azRule(c *call) { cloudPathRule(c, azSpec, azGroups) }

// cloudPathRule judges gcloud GROUP… VERB and az GROUP… VERB: list and
// describe/show read; tail and --follow never end.
func cloudPathRule(c *call, s *getopt.Spec, groups map[string]bool) {
	p := c.parse(s)
	if len(p.Operands) == 0 {
		c.strict(p)
		return
	}
	if len(p.Dynamic) > 0 {
		c.a.writes(CodeDynamicCommand, RiskMediumWrite, fmt.Sprintf("%s: argument %s may expand into an option", c.name, p.Dynamic[0]))
		return
	}
	if o, ok := p.Get("--flags-file"); ok {
		c.a.failClosed(CodeWriteOption, fmt.Sprintf("%s --flags-file %s: flags from a file that was not checked", c.name, o.Value))
		return
	}
	args := c.rest()
	if !c.strict(c.parseWords(args[:p.Operands[0]], s)) {
		return // an unknown option before the command could take it as its value
	}
	// The command path: operands from the start, before any option this
	// parser does not know (whose value could look like a word).
	var path []string
	for _, i := range p.Operands {
		if q := c.parseWords(args[:i], s); len(q.Unknown) > 0 {
			break
		}
		if !args[i].literal() {
			c.a.failClosed(CodeDynamicCommand, c.name+" command "+args[i].src+" is computed at run time")
			return
		}
		path = append(path, args[i].val)
	}
	// Options after the path this parser does not know are the command's
	// own (az -g RG -n NAME): inputs to a read API once the verb reads.
	name := strings.Join(append([]string{c.name}, path...), " ")
	verb := ""
	for _, w := range path {
		if !groups[w] {
			verb = w
			break
		}
	}
	switch {
	case verb == "help" || len(path) == 1 && (path[0] == "version" || path[0] == "info") && !groups[path[0]]:
		if verb == "help" {
			c.a.never(Pager, name+" shows the manual through a pager")
		}
		return
	case verb == "list" || strings.HasPrefix(verb, "list-") && verb != "list-keys" && verb != "list-secrets",
		verb == "describe" || verb == "show" || verb == "get-iam-policy" || verb == "get-value" && path[0] == "config",
		verb == "read" && path[0] == "logging", verb == "logs" && c.name == "az", verb == "get-versions", verb == "get-access-token" && path[0] == "account":
		// Every word before the verb is a known group, so this is the
		// command, not an argument of one.
	case verb == "tail" || verb == "tail-serial-port-output":
		c.a.never(UnboundedStream, name+" follows forever")
		return
	default:
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, name+" is not a known read-only command (it may change resources)")
		if verb == "delete" || verb == "remove" {
			c.a.destroys(name + " deletes resources")
		}
		return
	}
	if slicesContains(p.Unknown, "--follow") || slicesContains(p.Unknown, "--stream") {
		c.a.never(UnboundedStream, name+" --follow follows forever")
	}
}

// opensslSpec is the inspection options of openssl x509, req, verify, crl,
// pkey, rsa, ec, asn1parse, dgst and friends (OpenSSL 3; single-dash long
// options, no abbreviations).
var opensslSpec = getopt.New("icrav", "in=", "inform=", "out=", "outform=", "noout", "text", "subject", "issuer", "serial",
	"hash", "subject_hash", "issuer_hash", "subject_hash_old", "issuer_hash_old", "fingerprint",
	"dates", "startdate", "enddate", "purpose", "pubkey", "modulus", "email", "ocsp_uri", "ocspid",
	"nameopt=", "certopt=", "ext=", "checkend=", "checkhost=", "checkemail=", "checkip=", "alias",
	"nocert", "sha1", "sha256", "sha384", "sha512", "md5", "passin=", "keyform=", "verify",
	"pubin", "pubout", "check", "pubcheck", "noenc", "nodes", "dateopt=", "multi", "new", "newkey=",
	"keyout=", "x509", "subj=", "config=", "engine=", "provider=", "provider-path=", "propquery=",
	"rand=", "writerand=", "CAfile=", "CApath=", "CAstore=", "no-CAfile", "no-CApath",
	"no-CAstore", "untrusted=", "trusted=", "crl_check", "crl_check_all", "show_chain",
	"verbose", "purpose=", "verify_hostname=", "verify_email=", "verify_ip=", "attime=",
	"partial_chain", "x509_strict", "policy_check", "ignore_critical", "issuer_checks",
	"crl_download", "CRLfile=", "lastupdate", "nextupdate", "crlnumber", "badsig", "key=",
	"days=", "reqexts=", "extensions=", "signkey=", "CA=", "CAkey=", "CAserial=",
	"CAcreateserial", "set_serial=", "req", "x509toreq", "extfile=", "clrtrust", "clrreject",
	"addtrust=", "addreject=", "setalias=", "trustout", "next_serial", "preserve_dates",
	"batch", "utf8", "genkey", "strparse=", "offset=", "length=", "i", "dump", "dlimit=", "oid=",
	"item=", "noprompt", "param_out", "traditional", "passout=", "cipher=", "c", "r",
	"hex", "binary", "sign=", "signature=", "prverify=", "help", "v", "version", "a").SingleDashLongs().NoAbbreviations()

// opensslReads are the openssl commands that inspect.
var opensslReads = wordSet(`x509 req verify crl pkey rsa ec asn1parse dgst version list ciphers
	crl2pkcs7 pkeyparam ecparam dhparam`)

// opensslRuns: these load code (engines, providers) or a config that can.
var opensslRuns = map[string]string{"--engine": "loads an engine (a shared library)",
	"--provider": "loads a provider module", "--provider-path": "loads provider modules from a directory",
	"--config": "reads a config file, which can load engines and providers"}

// opensslRule: inspection reads; -out, -keyout, -writerand and serial
// files write; a new request generates a key (req -new writes
// privkey.pem without -keyout).
func opensslRule(c *call) {
	args := c.rest()
	if len(args) == 0 || !args[0].literal() {
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, "openssl without a command reads commands from standard input")
		return
	}
	cmd := args[0].val
	if cmd == "s_client" {
		opensslSClient(c, args[1:])
		return
	}
	if !opensslReads[cmd] {
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "openssl "+cmd+" is not a known inspection command (it may write keys or files, or connect)")
		return
	}
	p := c.parseWords(args[1:], opensslSpec)
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		if why, ok := opensslRuns[o.Name]; ok {
			c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("openssl %s -%s %s", cmd, o.Name[2:], why))
			return
		}
		switch o.Name {
		case "--out", "--keyout", "--writerand", "--CAserial", "--signature":
			if o.Name == "--out" && isStdStream(o.Value) || o.Name == "--signature" {
				continue
			}
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("openssl %s -%s writes %s", cmd, o.Name[2:], o.Value))
			return
		case "--CAcreateserial":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "openssl x509 -CAcreateserial writes a serial file")
			return
		case "--genkey":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "openssl "+cmd+" -genkey generates a key")
			return
		}
	}
	if cmd == "req" && p.Has("--new", "--newkey", "--x509") && !p.Has("--key") {
		c.a.writes(CodeWriteOption, RiskMediumWrite, "openssl req -new generates a private key and writes it (privkey.pem without -keyout)")
	}
	if cmd == "dhparam" && len(p.Operands) > 0 {
		c.a.writes(CodeWriteOption, RiskLowWrite, "openssl dhparam NUMBIT generates parameters")
	}
}

// opensslSClientSpec is openssl s_client's options (OpenSSL 3: one dash,
// no abbreviations); HOST:PORT may be an operand.
var opensslSClientSpec = getopt.New("46", "connect=", "host=", "port=", "bind=", "proxy=", "proxy_user=", "proxy_pass=",
	"unix=", "servername=", "noservername", "verify=", "verify_return_error", "verify_quiet", "cert=",
	"certform=", "CRL=", "CRLform=", "crl_download", "key=", "keyform=", "pass=", "dane_tlsa_domain=",
	"dane_tlsa_rrdata=", "dane_ee_no_namechecks", "CApath=", "CAfile=", "CAstore=", "no-CAfile",
	"no-CApath", "no-CAstore", "chainCApath=", "chainCAfile=", "chainCAstore=", "verifyCApath=",
	"verifyCAfile=", "verifyCAstore=", "requestCAfile=", "xkey=", "xcert=", "xchain=", "xchain_build",
	"xcertform=", "xkeyform=", "build_chain", "sess_out=", "sess_in=", "starttls=", "xmpphost=", "name=",
	"mtu=", "keymatexport=", "keymatexportlen=", "msgfile=", "keylogfile=", "early_data=",
	"psk_identity=", "psk=", "psk_session=", "srpuser=", "srppass=", "srp_lateuser", "srp_moregroups",
	"srp_strength=", "alpn=", "nextprotoneg=", "use_srtp=", "ctlogfile=", "ct", "noct", "cipher=",
	"ciphersuites=", "curves=", "groups=", "sigalgs=", "client_sigalgs=", "named_curve=",
	"max_send_frag=", "split_send_frag=", "max_pipelines=", "read_buf=", "maxfraglen=", "serverinfo=",
	"rand=", "writerand=", "engine=", "provider=", "provider-path=", "propquery=", "ssl_config=",
	"verify_name=", "purpose=", "attime=", "verify_hostname=", "verify_email=", "verify_ip=",
	"verify_depth=", "auth_level=", "policy=", "nameopt=", "brief", "prexit", "showcerts", "debug",
	"msg", "trace", "state", "nbio", "crlf", "quiet", "ign_eof", "no_ign_eof", "tlsextdebug", "status",
	"reconnect", "no_ticket", "no_ssl3", "no_tls1", "no_tls1_1", "no_tls1_2", "no_tls1_3", "ssl3", "tls1",
	"tls1_1", "tls1_2", "tls1_3", "dtls", "dtls1", "dtls1_2", "sctp", "sctp_label_bug", "timeout",
	"fallback_scsv", "async", "nocommands", "no_etm", "no_ems", "legacy_renegotiation",
	"legacy_server_connect", "no_legacy_server_connect", "allow_no_dhe_kex", "prefer_no_dhe_kex",
	"prioritize_chacha", "strict", "no_middlebox", "no_comp", "comp", "no_renegotiation",
	"no_resumption_on_reneg", "no_tx_cert_comp", "no_rx_cert_comp", "enable_pha", "enable_client_rpk",
	"enable_server_rpk", "crl_check", "crl_check_all", "x509_strict", "partial_chain", "ignore_critical",
	"issuer_checks", "policy_check", "explicit_policy", "inhibit_any", "inhibit_map", "extended_crl",
	"use_deltas", "policy_print", "check_ss_sig", "trusted_first", "no_alt_chains", "no_check_time",
	"suiteB_128", "suiteB_128_only", "suiteB_192", "ktls", "security_debug", "security_debug_verbose",
	"tfo", "help").SingleDashLongs().NoAbbreviations()

// opensslSClientWrites are s_client's options that write files.
var opensslSClientWrites = map[string]string{"--sess_out": "writes the TLS session to a file",
	"--keylogfile": "writes the session keys to a file", "--msgfile": "writes the protocol messages to a file",
	"--writerand": "writes random state to a file"}

// opensslSClient: s_client connects, shakes hands and prints the
// server's certificates; then it sends whatever it reads on standard input
// to the server until that input ends (issue 14). So it reads and ends
// only when its input is empty and ends at once (</dev/null, an empty
// here-string), and it keeps no connection open past that (-ign_eof, or
// -quiet, which implies it). Input from a pipe, a file or a
// here-document is data sent to the server, which classify does not
// inspect; inherited input may never end.
func opensslSClient(c *call, args []*arg) {
	p := c.parseWords(args, opensslSClientSpec)
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		if why, ok := opensslRuns[o.Name]; ok {
			c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("openssl s_client -%s %s", o.Name[2:], why))
			return
		}
		if what, ok := opensslSClientWrites[o.Name]; ok && !isSinkPath(o.Value) {
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("openssl s_client -%s %s", o.Name[2:], what))
			return
		}
		if o.Name == "--early_data" {
			c.a.writes(CodeWriteOption, RiskMediumWrite, "openssl s_client -early_data sends the file "+o.Value+" to the server")
			return
		}
	}
	switch c.ctx.stdin {
	case stdinPipe:
		c.a.writes(CodeWriteCommand, RiskMediumWrite, "openssl s_client sends its piped input to the server, which classify does not inspect")
		return
	case stdinFile:
		if !stdinIsNull(c) {
			c.a.writes(CodeWriteCommand, RiskMediumWrite, "openssl s_client sends its redirected input to the server, which classify does not inspect")
			return
		}
	case stdinHeredoc:
		if !c.ctx.heredocOK || strings.TrimSpace(c.ctx.heredoc) != "" {
			c.a.writes(CodeWriteCommand, RiskMediumWrite, "openssl s_client sends the here-document to the server")
			return
		}
	default:
		c.a.never(InteractiveREPL, "openssl s_client sends its standard input to the server until it ends; </dev/null ends it")
		c.rewrite(c.srcExcept(p, len(c.args), func(getopt.Opt) bool { return false }, "</dev/null")...)
		return
	}
	if o, ok := p.Get("--ign_eof", "--no_ign_eof", "--quiet"); ok && o.Name != "--no_ign_eof" {
		c.a.never(UnboundedStream, "openssl s_client -"+o.Name[2:]+" keeps the connection open after its input ends, until the server closes it")
	}
}

// stdinIsNull reports a call whose own standard-input redirect reads
// /dev/null.
func stdinIsNull(c *call) bool {
	null := false
	for _, r := range c.ctx.redirs {
		if r.Op == syntax.RdrIn && (r.N == nil || r.N.Value == "0") && r.Word != nil {
			t := newArg(c.w.src, r.Word)
			null = t.literal() && t.val == "/dev/null"
		}
	}
	return null
}

// yqSpec is mikefarah yq v4's options (cobra: no abbreviations).
var yqSpec = getopt.New("ieo:p:PI:CMNnrs:0vh", "inplace", "exit-status", "output-format=", "input-format=",
	"prettyPrint", "indent=", "colors", "no-colors", "no-doc", "null-input", "unwrapScalar?",
	"split-exp=", "split-exp-file=", "from-file=", "front-matter=", "header-preprocess?",
	"expression=", "nul-output", "verbose", "help", "version", "xml-attribute-prefix=",
	"xml-content-name=", "xml-keep-namespace?", "xml-raw-token?", "xml-strict-mode",
	"xml-skip-proc-inst", "xml-skip-directives", "xml-proc-inst-prefix=",
	"xml-directive-name=", "csv-auto-parse?", "csv-separator=", "tsv-auto-parse?",
	"properties-separator=", "properties-array-brackets", "lua-globals", "lua-prefix=",
	"lua-suffix=", "lua-unquoted", "security-disable-env-ops", "security-disable-file-ops",
	"string-interpolation?", "shell-key-separator=").NoAbbreviations()

// yqRule: yq prints; -i rewrites its files and -s splits into files.
func yqRule(c *call) {
	p := c.parse(yqSpec)
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		switch o.Name {
		case "-i", "--inplace":
			if o.Value != "false" {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "yq "+o.Name+" rewrites the files in place")
				return
			}
		case "-s", "--split-exp", "--split-exp-file":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "yq "+o.Name+" writes each document to a file")
			return
		}
	}
}

// redisSpec is redis-cli 7's options (exact names).
var redisSpec = getopt.New("h:p:s:a:u:r:i:n:d:t:x234ceDX:", "user=", "pass=", "askpass", "raw", "no-raw",
	"quoted-input", "csv", "json", "quoted-json", "show-pushes?", "stat", "latency",
	"latency-history", "latency-dist", "lru-test=", "replica", "slave", "rdb=", "functions-rdb=",
	"pipe", "pipe-timeout=", "bigkeys", "memkeys", "memkeys-samples=", "hotkeys", "keystats",
	"keystats-samples=", "scan", "pattern=", "count=", "quoted-pattern=", "intrinsic-latency=",
	"eval=", "ldb", "ldb-sync-mode", "cluster", "verbose", "no-auth-warning", "tls", "sni=",
	"cacert=", "cacertdir=", "insecure", "tls-ciphers=", "tls-ciphersuites=", "cert=", "key=",
	"help", "version", "cluster-yes", "top=").NoAbbreviations().StopAtOperand()

// redisReads are commands that only read (the first word, upper-cased);
// redisReadSubs the container commands whose named subcommands read.
var (
	redisReads = wordSet(`GET MGET EXISTS TTL PTTL EXPIRETIME PEXPIRETIME TYPE STRLEN GETRANGE SUBSTR
		SCAN KEYS RANDOMKEY HGET HMGET HGETALL HKEYS HVALS HLEN HEXISTS HSTRLEN HSCAN HRANDFIELD
		LRANGE LLEN LINDEX LPOS SMEMBERS SISMEMBER SMISMEMBER SCARD SRANDMEMBER SSCAN SINTER
		SUNION SDIFF SINTERCARD ZRANGE ZRANGEBYSCORE ZREVRANGE ZREVRANGEBYSCORE ZRANGEBYLEX
		ZREVRANGEBYLEX ZCARD ZCOUNT ZLEXCOUNT ZSCORE ZMSCORE ZRANK ZREVRANK ZSCAN ZRANDMEMBER
		ZINTER ZUNION ZDIFF ZINTERCARD DBSIZE PING INFO TIME ECHO LASTSAVE ROLE XLEN XRANGE
		XREVRANGE XPENDING PFCOUNT GEOPOS GEODIST GEOHASH GEOSEARCH GEORADIUS_RO
		GEORADIUSBYMEMBER_RO BITCOUNT BITPOS GETBIT LCS DUMP SORT_RO`)
	redisReadSubs = map[string]map[string]bool{
		"CLIENT":   wordSet("LIST INFO GETNAME ID"),
		"CONFIG":   wordSet("GET"),
		"MEMORY":   wordSet("USAGE STATS DOCTOR"),
		"OBJECT":   wordSet("ENCODING FREQ IDLETIME REFCOUNT"),
		"SLOWLOG":  wordSet("GET LEN"),
		"CLUSTER":  wordSet("INFO NODES SLOTS SHARDS MYID KEYSLOT COUNTKEYSINSLOT"),
		"XINFO":    wordSet("STREAM GROUPS CONSUMERS"),
		"COMMAND":  wordSet("COUNT INFO DOCS LIST GETKEYS"),
		"LATENCY":  wordSet("LATEST HISTORY DOCTOR"),
		"ACL":      wordSet("WHOAMI LIST USERS CAT GETUSER"),
		"FUNCTION": wordSet("LIST STATS DUMP"),
		"MODULE":   wordSet("LIST"),
	}
	redisForever = wordSet("MONITOR SUBSCRIBE PSUBSCRIBE SSUBSCRIBE")
)

// redisRule: a read command reads; any other command writes (or may);
// monitors, subscriptions and endless repeats never end.
func redisRule(c *call) {
	p := c.parse(redisSpec)
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		switch o.Name {
		case "--eval", "--ldb":
			c.a.writes(CodeRunsProgram, RiskHighWrite, "redis-cli "+o.Name+" runs a Lua script on the server")
			return
		case "--pipe", "--cluster":
			c.a.writes(CodeWriteOption, RiskHighWrite, "redis-cli "+o.Name+" sends commands that change data")
			return
		case "--rdb", "--functions-rdb":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "redis-cli "+o.Name+" writes a dump file")
			return
		case "-x", "-X":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "redis-cli "+o.Name+" takes the last argument from standard input, unseen")
			return
		case "--askpass":
			c.a.never(TTYFlag, "redis-cli --askpass prompts for the password")
		case "--stat", "--latency", "--latency-history", "--latency-dist", "--replica", "--slave", "--lru-test":
			c.a.never(UnboundedStream, "redis-cli "+o.Name+" runs until stopped")
			return
		case "-r":
			if strings.HasPrefix(o.Value, "-") {
				c.a.never(UnboundedStream, "redis-cli -r "+o.Value+" repeats forever")
			}
		}
	}
	if p.Has("--bigkeys", "--memkeys", "--hotkeys", "--keystats", "--scan", "--intrinsic-latency") && len(p.Operands) == 0 {
		return
	}
	if len(p.Operands) == 0 {
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, "redis-cli without a command runs commands from standard input or a prompt")
		return
	}
	args := c.rest()
	w := args[p.Operands[0]]
	if !w.literal() {
		c.a.failClosed(CodeDynamicCommand, "redis-cli command "+w.src+" is computed at run time")
		return
	}
	cmd := strings.ToUpper(w.val)
	if redisForever[cmd] {
		c.a.never(UnboundedStream, "redis-cli "+cmd+" streams until stopped")
		return
	}
	if subs, ok := redisReadSubs[cmd]; ok && len(p.Operands) > 1 {
		s := args[p.Operands[0]+1]
		if s.literal() && subs[strings.ToUpper(s.val)] {
			return
		}
	}
	if !redisReads[cmd] {
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "redis-cli "+cmd+" is not a known read-only command")
		if cmd == "FLUSHALL" || cmd == "FLUSHDB" || cmd == "DEL" || cmd == "UNLINK" {
			c.a.destroys("redis-cli " + cmd + " deletes keys")
		}
	}
}
