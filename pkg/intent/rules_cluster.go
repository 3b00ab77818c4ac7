package intent

import (
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

func registerClusterRules() {
	rules["kubectl"] = kubectlRule
	rules["oc"] = kubectlRule
	rules["docker"] = dockerRule
	rules["podman"] = dockerRule
	rules["nerdctl"] = dockerRule
	rules["helm"] = helmRule
	rules["terraform"] = terraformRule
	rules["tofu"] = terraformRule
}

// kubectlSpec: kubectl (cobra/pflag) takes no abbreviations; an unknown flag
// before the verb could swallow the verb as its value, so it fails closed.
var kubectlSpec = getopt.New("n:l:o:c:f:s:L:k:p:iwtAqRv:h", "namespace=", "context=", "cluster=", "user=", "server=",
	"kubeconfig=", "selector=", "output=", "container=", "filename=", "token=", "as=", "as-group=",
	"as-uid=", "request-timeout=", "field-selector=", "sort-by=", "tail=", "since=", "since-time=",
	"template=", "label-columns=", "cache-dir=", "certificate-authority=", "client-certificate=",
	"client-key=", "tls-server-name=", "insecure-skip-tls-verify", "profile=", "profile-output=",
	"chunk-size=", "max-log-requests=", "limit-bytes=", "timeout=", "for=", "all-namespaces",
	"watch", "watch-only", "follow", "previous", "timestamps", "prefix", "stdin", "tty",
	"show-labels", "show-kind", "no-headers", "ignore-not-found", "output-watch-events",
	"server-print", "show-managed-fields", "recursive", "all-containers", "ignore-errors",
	"pod-running-timeout=", "quiet", "match-server-version", "disable-compression",
	"warnings-as-errors", "log-flush-frequency=", "v=", "vmodule=", "username=", "password=",
	"raw=", "subresource=", "allow-missing-template-keys", "kustomize=", "help", "all", "field-manager=",
	"dry-run?", "containers", "sort-by-cpu?", "use-protocol-buffers", "api-group=", "cached",
	"namespaced", "verbs=", "for-each=", "local", "list", "replicas=", "current-replicas=",
	"resource-version=", "grace-period=", "force", "wait", "cascade=", "now", "overwrite",
	"record", "image=", "port=", "type=", "name=", "env=", "show-events", "output-directory=",
	// Options of the writing verbs, so that their --dry-run forms parse.
	"server-side", "force-conflicts", "prune", "prune-allowlist=", "validate?", "save-config",
	"patch=", "patch-file=", "from-literal=", "from-file=", "from-env-file=", "append-hash",
	"restart=", "rm", "command", "expose", "labels=", "annotations=", "attach",
	"override-type=", "overrides=", "schedule=", "resource=", "target-port=", "protocol=",
	"cert=", "key=", "docker-server=", "docker-username=", "docker-password=", "docker-email=",
	"clusterrole=", "role=", "serviceaccount=", "group=", "verb=", "resource-name=", "hard=",
	"scopes=", "min=", "max=", "cpu-percent=", "openapi-patch", "windows-line-ending",
	"delete-emptydir-data", "ignore-daemonsets", "disable-eviction", "skip-wait-for-delete-timeout=",
	"to-revision=", "local", "external-ip=", "load-balancer-ip=", "cluster-ip=", "session-affinity=").NoAbbreviations()

var kubectlLogsSpec = kubectlSpec.WithShort('f', getopt.NoValue)

var kubectlRead = map[string]bool{
	"get": true, "describe": true, "logs": true, "top": true, "explain": true, "version": true,
	"cluster-info": true, "api-resources": true, "api-versions": true, "events": true,
	"wait": true, "diff": true, "auth": true, "config": true, "rollout": true, "completion": true,
	"plugin": true, "options": true, "help": true, "kustomize": true,
}

// kubectlDryRun lists the verbs whose --dry-run=client|server only
// prints what they would do (issue 14): never a plugin, whose options
// kubectl does not read.
var kubectlDryRun = map[string]bool{
	"apply": true, "create": true, "delete": true, "patch": true, "replace": true, "scale": true,
	"label": true, "annotate": true, "set": true, "expose": true, "run": true, "drain": true,
	"cordon": true, "uncordon": true, "taint": true, "autoscale": true,
}

// kubectlRule: read verbs read; watch and follow flags never end; exec
// classifies its inner command; delete and drain are destructive.
func kubectlRule(c *call) {
	p := c.parse(kubectlSpec)
	vi := verbIndex(p)
	if vi < 0 {
		c.strict(p)
		return
	}
	// An unknown flag before the verb might take the verb as its value.
	if !c.strict(c.parseWords(c.rest()[:vi], kubectlSpec)) {
		return
	}
	if o, ok := p.Get("--kubeconfig"); ok {
		// A kubeconfig can name exec credential plugins (users[].user.exec)
		// and auth providers that kubectl runs; a file named on the command
		// line was not checked (issue 14). The default kubeconfig is the
		// user's own configuration, like git's global config.
		c.a.failClosed(CodeRunsProgram, fmt.Sprintf("kubectl --kubeconfig %s: a kubeconfig can name exec credential plugins that kubectl runs, and this one was not checked", o.Value))
		return
	}
	for _, o := range p.Opts {
		switch {
		case o.Name == "--profile-output":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "kubectl --profile-output writes a profile file")
			return
		case o.Name == "--profile" && o.Value != "none":
			c.a.writes(CodeWriteOption, RiskMediumWrite, "kubectl --profile writes a profile file (profile.pprof by default)")
			return
		}
	}
	args := c.rest()
	verb := args[vi].val
	if !args[vi].literal() {
		c.a.failClosed(CodeDynamicCommand, "kubectl verb "+args[vi].src+" is computed at run time")
		return
	}
	var operands []string
	for _, i := range p.Operands[1:] {
		operands = append(operands, args[i].val)
	}
	sub := ""
	if len(operands) > 0 {
		sub = operands[0]
	}
	if o, ok := p.Get("--dry-run"); ok && kubectlDryRun[verb] && o.Value != "none" && o.Value != "false" {
		// --dry-run=client prints the objects; =server asks the API server
		// to validate without persisting. Neither changes the cluster.
		if !c.strict(p) {
			return
		}
		if verb == "set" && sub == "" {
			c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "kubectl set without a subcommand")
		}
		return
	}
	switch verb {
	case "exec":
		kubectlExec(c, p, vi)
		return
	case "logs":
		p = c.parse(kubectlLogsSpec) // in logs, -f is --follow, not --filename
	case "delete", "drain":
		c.a.destroys("kubectl " + verb + " removes resources or evicts pods")
		return
	case "port-forward", "proxy":
		c.a.never(UnboundedStream, "kubectl "+verb+" runs until stopped")
		return
	case "attach":
		c.a.never(TTYFlag, "kubectl attach attaches to a running container")
		return
	case "edit":
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "kubectl edit changes resources")
		c.a.never(Pager, "kubectl edit opens an editor")
		return
	case "config":
		if !c.strict(p) {
			return
		}
		switch sub {
		case "view", "get-contexts", "current-context", "get-clusters", "get-users", "":
		default:
			c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "kubectl config "+sub+" changes the kubeconfig")
		}
		return
	case "rollout":
		if !c.strict(p) {
			return
		}
		switch sub {
		case "history":
			return
		case "status":
			kubectlRolloutStatus(c, p)
			return
		}
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "kubectl rollout "+sub+" changes workloads")
		return
	case "auth":
		if !c.strict(p) {
			return
		}
		if sub != "can-i" && sub != "whoami" {
			c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "kubectl auth "+sub+" changes RBAC")
		}
		return
	case "plugin", "kustomize":
		if !c.strict(p) {
			return
		}
		if verb == "plugin" && sub != "list" {
			c.a.writes(CodeUnknownCommand, RiskMediumWrite, "kubectl plugin "+sub)
		}
		return
	}
	if !kubectlRead[verb] {
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, fmt.Sprintf("kubectl %s changes the cluster", verb))
		if verb == "scale" {
			if o, ok := p.Get("--replicas"); ok && o.Value == "0" {
				c.a.destroys("kubectl scale --replicas=0 takes a workload down")
			}
		}
		return
	}
	if len(p.Dynamic) > 0 && (verb == "logs" || verb == "get" || verb == "events") {
		// None of these verbs' options writes, but one may watch forever.
		c.a.never(UnboundedStream, "kubectl "+verb+": argument "+p.Dynamic[0]+" may expand into a follow or watch option")
		return
	}
	if !c.strict(p) {
		return
	}
	isFollow := func(o getopt.Opt) bool {
		return (o.Name == "-f" && verb == "logs") || o.Name == "--follow" || o.Name == "-w" || o.Name == "--watch" || o.Name == "--watch-only"
	}
	for _, o := range p.Opts {
		if !isFollow(o) || o.Value == "false" {
			continue
		}
		if o.Name == "-f" && verb != "logs" {
			continue
		}
		if verb == "logs" {
			c.a.never(UnboundedStream, "kubectl logs "+o.Name+" follows forever")
			var extra []string
			if !p.Has("--tail") {
				extra = append(extra, "--tail=200")
			}
			if !p.Has("--since", "--since-time") {
				extra = append(extra, "--since=10m")
			}
			c.rewrite(c.srcExcept(p, vi+2, isFollow, extra...)...)
		} else {
			c.a.never(UnboundedStream, fmt.Sprintf("kubectl %s %s watches forever", verb, o.Name))
			c.rewrite(c.srcExcept(p, len(c.args), isFollow)...)
		}
		return
	}
	if verb == "wait" {
		// kubectl wait gives up after --timeout, 30s by default; zero
		// checks once; a negative one waits a week (issue 14).
		if o, ok := p.Get("--timeout"); ok && strings.HasPrefix(o.Value, "-") {
			c.a.never(UnboundedStream, "kubectl wait --timeout="+o.Value+" waits a week")
		}
	}
	if verb == "cluster-info" && p.Has("--output-directory") {
		c.a.writes(CodeWriteOption, RiskMediumWrite, "kubectl cluster-info dump --output-directory writes files")
	}
}

// kubectlRolloutStatus: rollout status watches until the rollout ends,
// which may be never; --timeout (zero means forever) or --watch=false
// bound it (issue 14). The rewrite adds a timeout.
func kubectlRolloutStatus(c *call, p *getopt.Parsed) {
	if o, ok := p.Get("-w", "--watch"); ok && o.Value == "false" {
		return
	}
	if o, ok := p.Get("--timeout"); ok && o.Value != "" && strings.TrimLeft(o.Value, "0smh.") != "" && !strings.HasPrefix(o.Value, "-") {
		return
	}
	c.a.never(UnboundedStream, "kubectl rollout status waits for the rollout to finish, forever without a --timeout")
	c.rewrite(c.srcExcept(p, len(c.args), func(o getopt.Opt) bool { return o.Name == "--timeout" }, "--timeout=5m")...)
}

// verbIndex returns the index (in rest) of the first operand, or -1.
func verbIndex(p *getopt.Parsed) int {
	if len(p.Operands) == 0 {
		return -1
	}
	return p.Operands[0]
}

// kubectlExec: kubectl exec POD [-c C] -- CMD classifies CMD; -t allocates
// a terminal (seed 000 [tty_flag]).
func kubectlExec(c *call, p *getopt.Parsed, vi int) {
	args := c.rest()
	var inner []*arg
	if p.DashDash >= 0 {
		inner = args[p.DashDash+1:]
	} else if len(p.Operands) > 2 {
		inner = args[p.Operands[2]:] // deprecated: kubectl exec POD CMD
	}
	if len(inner) == 0 {
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, "kubectl exec without a command")
		return
	}
	tty := false
	for _, o := range p.Opts {
		if o.Index < vi && o.Name != "-t" && o.Name != "--tty" {
			continue
		}
		if (o.Name == "-t" || o.Name == "--tty") && o.Value != "false" {
			tty = true
		}
	}
	c.inner(inner, stmtCtx{})
	if tty {
		c.a.never(TTYFlag, "kubectl exec -t allocates a terminal and waits for input")
		c.rewrite(c.srcExcept(p, len(c.args), func(o getopt.Opt) bool { return o.Name == "-t" || o.Name == "--tty" })...)
	}
}

var dockerGlobalSpec = getopt.New("H:c:l:Dhv", "host=", "context=", "config=", "log-level=", "debug", "tls", "tlscacert=",
	"tlscert=", "tlskey=", "tlsverify", "help", "version").NoAbbreviations().StopAtOperand()

var dockerRead = map[string]bool{
	"ps": true, "logs": true, "inspect": true, "images": true, "stats": true, "top": true,
	"version": true, "info": true, "events": true, "port": true, "diff": true, "history": true,
	"search": true,
}

// dockerGroupRead lists "docker GROUP VERB" pairs that only read.
var dockerGroupRead = map[string]map[string]bool{
	"container": {"ls": true, "list": true, "ps": true, "inspect": true, "logs": true, "stats": true, "top": true, "port": true, "diff": true},
	"image":     {"ls": true, "list": true, "inspect": true, "history": true},
	"volume":    {"ls": true, "list": true, "inspect": true},
	"network":   {"ls": true, "list": true, "inspect": true},
	"system":    {"df": true, "info": true, "events": true},
	"context":   {"ls": true, "list": true, "inspect": true, "show": true},
	"node":      {"ls": true, "list": true, "inspect": true, "ps": true},
	"service":   {"ls": true, "list": true, "inspect": true, "ps": true, "logs": true},
	"secret":    {"ls": true, "list": true, "inspect": true},
	"config":    {"ls": true, "list": true, "inspect": true},
	"compose":   {"ps": true, "logs": true, "config": true, "ls": true, "images": true, "top": true, "version": true, "port": true},
	"manifest":  {"inspect": true},
	"buildx":    {"ls": true, "inspect": true, "du": true, "version": true},
	"plugin":    {"ls": true, "list": true, "inspect": true},
	"stack":     {"ls": true, "ps": true, "services": true},
}

// dockerDestroys lists verbs that remove containers, images or data, or
// take services down (DESIGN §4: docker rm/kill are destructive).
var dockerDestroys = map[string]bool{
	"rm": true, "rmi": true, "kill": true, "stop": true, "prune": true, "down": true, "remove": true,
}

func dockerRule(c *call) {
	p := c.parse(dockerGlobalSpec)
	if !c.strict(p) || len(p.Operands) == 0 {
		return
	}
	if o, ok := p.Get("--config"); ok {
		// The config directory names credential helpers (credsStore,
		// credHelpers) and holds cli-plugins (docker compose is one), which
		// docker runs; a directory named here was not checked (issue 14).
		c.a.failClosed(CodeRunsProgram, fmt.Sprintf("docker --config %s: the config directory can name credential helpers and CLI plugins that docker runs, and this one was not checked", o.Value))
		return
	}
	args := c.rest()[p.Operands[0]:]
	verb := args[0].val
	if !args[0].literal() {
		c.a.failClosed(CodeDynamicCommand, "docker subcommand "+args[0].src+" is computed at run time")
		return
	}
	rest := args[1:]
	if verb == "compose" {
		dockerCompose(c, rest)
		return
	}
	group := ""
	if m, ok := dockerGroupRead[verb]; ok && len(rest) > 0 {
		group, verb, rest = verb, rest[0].val, rest[1:]
		if m[verb] {
			dockerReadVerb(c, group, verb, rest, len(c.args)-len(rest))
			return
		}
	}
	name := strings.TrimSpace(group + " " + verb)
	switch {
	case verb == "exec" && (group == "" || group == "container"):
		dockerExec(c, rest, len(c.args)-len(rest))
		return
	case dockerRead[verb] && group == "":
		dockerReadVerb(c, group, verb, rest, len(c.args)-len(rest))
		return
	case verb == "attach":
		c.a.never(TTYFlag, "docker attach attaches to a running container")
		return
	case dockerDestroys[verb] || group == "system" && verb == "prune":
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "docker "+name+" removes or stops containers, images or data")
		c.a.destroys("docker " + name + " removes or stops containers, images or data")
		return
	case verb == "pull":
		c.a.writes(CodeWriteSubcommand, RiskLowWrite, "docker "+name+" downloads images")
		return
	}
	c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "docker "+name+" changes containers, images or the host")
	if verb == "run" || verb == "create" {
		dockerHostControl(c, name, rest)
	}
}

// dockerRunSpec is docker run's and create's options (docker 28, pflag:
// no abbreviations); the image ends them. --net, --net-alias and
// --dns-opt are hidden aliases.
var dockerRunSpec = getopt.New("a:c:de:h:il:m:p:Pqtu:v:w:", "add-host=", "annotation=", "attach=", "blkio-weight=",
	"blkio-weight-device=", "cap-add=", "cap-drop=", "cgroup-parent=", "cgroupns=", "cidfile=",
	"cpu-count=", "cpu-percent=", "cpu-period=", "cpu-quota=", "cpu-rt-period=", "cpu-rt-runtime=",
	"cpu-shares=", "cpus=", "cpuset-cpus=", "cpuset-mems=", "detach", "detach-keys=", "device=",
	"device-cgroup-rule=", "device-read-bps=", "device-read-iops=", "device-write-bps=",
	"device-write-iops=", "disable-content-trust?", "dns=", "dns-option=", "dns-opt=", "dns-search=",
	"domainname=", "entrypoint=", "env=", "env-file=", "expose=", "gpus=", "group-add=", "health-cmd=",
	"health-interval=", "health-retries=", "health-start-interval=", "health-start-period=",
	"health-timeout=", "help", "hostname=", "init?", "interactive?", "io-maxbandwidth=", "io-maxiops=",
	"ip=", "ip6=", "ipc=", "isolation=", "kernel-memory=", "label=", "label-file=", "link=",
	"link-local-ip=", "log-driver=", "log-opt=", "mac-address=", "memory=", "memory-reservation=",
	"memory-swap=", "memory-swappiness=", "mount=", "name=", "network=", "net=", "network-alias=",
	"net-alias=", "no-healthcheck?", "oom-kill-disable?", "oom-score-adj=", "pid=", "pids-limit=",
	"platform=", "privileged?", "publish=", "publish-all?", "pull=", "quiet?", "read-only?", "restart=",
	"rm?", "runtime=", "security-opt=", "shm-size=", "sig-proxy?", "stop-signal=", "stop-timeout=",
	"storage-opt=", "sysctl=", "tmpfs=", "tty?", "ulimit=", "use-api-socket?", "user=", "userns=", "uts=",
	"volume=", "volume-driver=", "volumes-from=", "workdir=").NoAbbreviations().StopAtOperand()

// dockerHostPaths are host paths whose bind mount hands the container the
// host: its root, devices, kernel interfaces, configuration and the
// container runtime's own socket.
var dockerHostPaths = []string{"/etc", "/dev", "/proc", "/sys", "/boot", "/root", "/run", "/var/run",
	"/var/lib/docker", "/var/lib/containerd", "/usr", "/bin", "/sbin", "/lib", "/home"}

// dockerHostCaps are capabilities that let a container escape or rule
// the host (the others only widen what it does inside).
var dockerHostCaps = wordSet(`ALL SYS_ADMIN SYS_MODULE SYS_PTRACE SYS_RAWIO SYS_BOOT SYS_TIME
	DAC_READ_SEARCH DAC_OVERRIDE NET_ADMIN BPF PERFMON MAC_ADMIN MAC_OVERRIDE SYSLOG MKNOD`)

// dockerHostControl: docker run and create with these options give the
// container control of the host (high risk, like sudo). They are found by
// parsing with docker run's own spec (issue 14), so --privileged=true,
// -v /:/host, --volume=/:/x and --pid host are seen however spelled; an
// option the spec does not know, or an expansion, might be one of them.
func dockerHostControl(c *call, name string, rest []*arg) {
	p := c.parseWords(rest, dockerRunSpec)
	if len(p.Unknown) > 0 || len(p.Dynamic) > 0 {
		what := ""
		if len(p.Unknown) > 0 {
			what = "option " + p.Unknown[0] + " is not known"
		} else {
			what = "argument " + p.Dynamic[0] + " may expand into an option"
		}
		c.a.writes(CodeSudo, RiskHighWrite, fmt.Sprintf("docker %s: %s, and it may give the container control of the host", name, what))
		return
	}
	host := func(why string) {
		c.a.writes(CodeSudo, RiskHighWrite, "docker "+name+" "+why+": the container controls the host")
	}
	for _, o := range p.Opts {
		v := o.Value
		switch o.Name {
		case "--privileged", "--use-api-socket":
			if v != "false" {
				host(o.Name)
			}
		case "--pid", "--ipc", "--uts", "--userns", "--network", "--net", "--cgroupns":
			if v == "host" {
				host(o.Name + " host shares the host's namespace")
			}
		case "-v", "--volume":
			if src, _, ok := strings.Cut(v, ":"); ok && dockerHostPath(src) {
				host(o.Name + " " + v + " mounts " + src + " from the host")
			}
		case "--mount":
			for _, kv := range strings.Split(v, ",") {
				if k, src, _ := strings.Cut(kv, "="); (k == "source" || k == "src") && dockerHostPath(src) {
					host("--mount " + v + " mounts " + src + " from the host")
				}
			}
		case "--device":
			host("--device " + v + " hands it a host device")
		case "--cap-add":
			if dockerHostCaps[strings.TrimPrefix(strings.ToUpper(v), "CAP_")] {
				host("--cap-add " + v + " grants a capability over the host")
			}
		case "--security-opt":
			if strings.HasSuffix(v, "=unconfined") || strings.HasSuffix(v, ":unconfined") || v == "label=disable" || v == "label:disable" {
				host("--security-opt " + v + " turns off its confinement")
			}
		}
	}
}

// dockerHostPath reports a bind-mount source that is the host's root or
// one of dockerHostPaths (or under one).
func dockerHostPath(src string) bool {
	src = strings.TrimRight(src, "/")
	if src == "" {
		return true // "/"
	}
	for _, h := range dockerHostPaths {
		if src == h || strings.HasPrefix(src, h+"/") {
			return true
		}
	}
	return false
}

// dockerReadSpec is the union of the read verbs' options (docker 27 and
// compose v2): ps, images, inspect, logs, stats, top, version, info,
// events, port, diff, history, search and the group forms. An option not
// here fails closed (issue 14): compose config -o writes a file.
var dockerReadSpec = getopt.New("fn:tqsalHo:", "follow", "tail=", "since=", "until=", "timestamps", "details",
	"no-stream", "no-trunc", "all", "format=", "filter=", "last=", "latest", "quiet", "size", "type=",
	"help", "digests", "tree", "human", "platform=", "limit=", "no-color", "no-log-prefix",
	"index=", "services", "status=", "orphans", "volumes", "profiles", "images", "hash=",
	"resolve-image-digests", "no-interpolate", "no-normalize", "no-path-resolution",
	"no-consistency", "variables", "environment", "short", "dry-run", "verbose", "output=").NoAbbreviations()

// dockerReadWrites are the read verbs' options that write files.
var dockerReadWrites = map[string]bool{"-o": true, "--output": true}

var dockerListSpec = dockerReadSpec.WithShort('f', getopt.NeedsValue) // ps -f is --filter

// dockerReadVerb: logs -f and stats and events follow unless bounded.
// Rewrites (seed 000): docker logs -f X → docker logs --tail=200 X;
// docker stats → docker stats --no-stream.
func dockerReadVerb(c *call, group, verb string, rest []*arg, at int) {
	s := dockerListSpec // ps -f is --filter KEY=VALUE
	if verb == "logs" {
		s = dockerReadSpec // logs -f is --follow
	}
	p := c.parseWords(rest, s)
	if len(p.Dynamic) > 0 && (verb == "logs" || verb == "stats" || verb == "events") {
		// None of these verbs' options writes, but one may follow forever.
		c.a.never(UnboundedStream, "docker "+verb+": argument "+p.Dynamic[0]+" may expand into a follow option")
		return
	}
	if !c.strict(p) {
		return
	}
	for _, o := range p.Opts {
		if dockerReadWrites[o.Name] {
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("docker %s %s writes a file", strings.TrimSpace(group+" "+verb), o.Name))
			return
		}
	}
	switch verb {
	case "logs":
		follow := func(o getopt.Opt) bool { return o.Name == "-f" || o.Name == "--follow" }
		if p.Has("-f", "--follow") && !p.Has("--until") {
			c.a.never(UnboundedStream, "docker logs -f follows forever")
			var extra []string
			if !p.Has("--tail", "-n") {
				extra = append(extra, "--tail=200")
			}
			c.rewrite(c.srcExcept(p.Shifted(at-1), at, follow, extra...)...)
		}
	case "stats":
		if !p.Has("--no-stream") {
			c.a.never(UnboundedStream, "docker stats refreshes forever; --no-stream prints once")
			c.rewrite(c.srcExcept(p.Shifted(at-1), at, func(getopt.Opt) bool { return false }, "--no-stream")...)
		}
	case "events":
		if !p.Has("--until") {
			c.a.never(UnboundedStream, "docker events waits for events forever; --until ends it")
		}
	}
}

// dockerComposeSpec is docker compose v2's own options, before its
// command (pflag: no abbreviations; --no-ansi, --verbose and --workdir are
// hidden or deprecated).
var dockerComposeSpec = getopt.New("f:p:hv", "all-resources", "ansi=", "compatibility", "dry-run", "env-file=",
	"file=", "parallel=", "profile=", "progress=", "project-directory=", "project-name=", "help",
	"version", "no-ansi", "verbose", "workdir=").NoAbbreviations().StopAtOperand()

// dockerCompose: docker compose [OPTIONS] COMMAND: the project options
// (-f x.yml, -p name) only choose which files and project to read
// (issue 14), so compose's read commands read; the rest change
// containers, and down, rm, kill and stop remove or stop them.
func dockerCompose(c *call, rest []*arg) {
	p := c.parseWords(rest, dockerComposeSpec)
	if !c.strict(p) || len(p.Operands) == 0 {
		return // docker compose, docker compose --help: usage
	}
	w := rest[p.Operands[0]]
	if !w.literal() {
		c.a.failClosed(CodeDynamicCommand, "docker compose command "+w.src+" is computed at run time")
		return
	}
	verb, after := w.val, rest[p.Operands[0]+1:]
	if dockerGroupRead["compose"][verb] {
		dockerReadVerb(c, "compose", verb, after, len(c.args)-len(after))
		return
	}
	name := "docker compose " + verb
	if dockerDestroys[verb] {
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, name+" removes or stops containers, images or data")
		c.a.destroys(name + " removes or stops containers, images or data")
		return
	}
	c.a.writes(CodeWriteSubcommand, RiskMediumWrite, name+" changes containers, images or volumes")
}

var dockerExecSpec = getopt.New("itde:u:w:", "interactive", "tty", "detach", "env=", "env-file=", "user=", "workdir=",
	"privileged", "detach-keys=", "help").NoAbbreviations().StopAtOperand()

// dockerExec: docker exec [OPTIONS] CONTAINER CMD… classifies CMD; -t
// allocates a terminal (seed 000 [tty_flag]); -e sets the environment.
func dockerExec(c *call, rest []*arg, at int) {
	p := c.parseWords(rest, dockerExecSpec)
	if len(p.Dynamic) > 0 || len(p.Unknown) > 0 {
		c.a.writes(CodeDynamicCommand, RiskMediumWrite, "docker exec: options classify cannot vouch for")
		return
	}
	if len(p.Operands) < 2 {
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, "docker exec without a command")
		return
	}
	tty := false
	for _, o := range p.Opts {
		switch o.Name {
		case "-t", "--tty":
			tty = true
		case "-e", "--env":
			name, val, _ := strings.Cut(o.Value, "=")
			if !safeAssignment(name, &arg{val: val}, true) {
				c.a.writes(CodeUnsafeAssignment, RiskHighWrite, "docker exec -e "+name+"= can change what runs")
			}
		case "--env-file":
			c.a.writes(CodeUnsafeAssignment, RiskHighWrite, "docker exec --env-file sets variables classify cannot see")
		case "--privileged":
			c.a.writes(CodeSudo, RiskHighWrite, "docker exec --privileged")
		}
	}
	c.inner(rest[p.Operands[1]:], stmtCtx{})
	if tty {
		c.a.never(TTYFlag, "docker exec -t allocates a terminal and waits for input")
		c.rewrite(c.srcExcept(p.Shifted(at-1), len(c.args), func(o getopt.Opt) bool { return o.Name == "-t" || o.Name == "--tty" })...)
	}
}

// helmSpec is helm 3's global options and those of its read verbs and of
// template and lint (pflag: no abbreviations). An option not here fails
// closed (issue 14).
var helmSpec = getopt.New("n:hf:o:aAdm:rl:qcg", "debug", "kube-apiserver=", "kube-as-group=", "kube-as-user=",
	"kube-ca-file=", "kube-context=", "kube-insecure-skip-tls-verify", "kube-tls-server-name=",
	"kube-token=", "kubeconfig=", "namespace=", "qps=", "registry-config=", "repository-cache=",
	"repository-config=", "burst-limit=", "content-cache=", "color=", "colour=", "help",
	// list, status, get, history
	"all", "all-namespaces", "date", "deployed", "failed", "filter=", "max=", "no-headers",
	"offset=", "output=", "pending", "reverse", "selector=", "short", "superseded",
	"time-format=", "uninstalled", "uninstalling", "revision=", "show-desc", "show-resources",
	"template=",
	// show, search, verify, version
	"version=", "devel", "repo=", "username=", "password=", "ca-file=", "cert-file=", "key-file=",
	"insecure-skip-tls-verify", "plain-http", "keyring=", "verify", "pass-credentials",
	"jsonpath=", "regexp", "versions", "max-col-width=", "fail-on-no-result", "endpoint=",
	"list-repo-url", "client",
	// template and lint
	"values=", "set=", "set-string=", "set-file=", "set-json=", "set-literal=", "post-renderer=",
	"post-renderer-args=", "output-dir=", "show-only=", "api-versions=", "kube-version=",
	"include-crds", "skip-crds", "skip-tests", "validate", "is-upgrade", "release-name",
	"name-template=", "generate-name", "dependency-update", "dry-run?", "description=",
	"no-hooks", "replace", "wait", "wait-for-jobs", "timeout=", "disable-openapi-validation",
	"enable-dns", "hide-notes", "labels=", "skip-schema-validation", "atomic", "create-namespace",
	"strict", "with-subcharts", "quiet", "take-ownership", "rollback-on-failure",
	// install and upgrade, so that their --dry-run forms parse
	"install", "reuse-values", "reset-values", "reset-then-reuse-values", "force", "cleanup-on-fail",
	"history-max=", "max-history=", "render-subchart-notes", "hide-secret", "server-side?",
	"force-conflicts", "force-replace").NoAbbreviations().WithShort('i', getopt.NoValue)

// helmRuns and helmWrites: options that run a program or write files.
var (
	helmRuns = map[string]string{
		"--post-renderer":   "runs a program on the rendered manifests",
		"--kubeconfig":      "reads a kubeconfig, which can name exec credential plugins",
		"--registry-config": "reads a registry config, which can name credential helpers",
	}
	helmWrites = map[string]string{
		"--output-dir":        "writes the rendered manifests to files",
		"--dependency-update": "downloads chart dependencies into the chart",
	}
)

// helmRule: list/status/get/history/show/template/search/version read.
func helmRule(c *call) {
	p := c.parse(helmSpec)
	verb := ""
	if len(p.Operands) > 0 {
		v := c.rest()[p.Operands[0]]
		if !v.literal() {
			c.a.failClosed(CodeDynamicCommand, "helm verb "+v.src+" is computed at run time")
			return
		}
		verb = v.val
	}
	read := func() {
		if !c.strict(p) {
			return
		}
		for _, o := range p.Opts {
			if why, ok := helmRuns[o.Name]; ok {
				c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("helm %s %s %s", verb, o.Name, why))
				return
			}
			if what, ok := helmWrites[o.Name]; ok {
				c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("helm %s %s %s", verb, o.Name, what))
				return
			}
		}
	}
	switch verb {
	case "list", "ls", "status", "get", "history", "hist", "show", "inspect", "template", "search",
		"version", "lint", "env", "verify", "help", "":
		read()
		return
	case "install", "upgrade":
		// --dry-run (=client, =true or =server) renders the release and
		// prints it; server also asks the API server to validate. Nothing
		// is installed, no hook runs (issue 14); --post-renderer still
		// runs its program and --dependency-update still downloads.
		// pflag: --dry-run alone is client; none, false or anything else
		// is a real install.
		if o, ok := p.Get("--dry-run"); ok && (!o.HasValue || o.Value == "client" || o.Value == "server" || o.Value == "true") {
			read()
			return
		}
	case "uninstall", "delete", "del", "un":
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, "helm "+verb+" removes a release")
		c.a.destroys("helm " + verb + " removes a release")
		return
	}
	if p.Has("--post-renderer") {
		c.a.writes(CodeRunsProgram, RiskHighWrite, "helm "+verb+" --post-renderer runs a program on the rendered manifests")
	}
	c.a.writes(CodeWriteSubcommand, RiskMediumWrite, "helm "+verb+" changes releases or repositories")
}

// Terraform and OpenTofu parse options with Go's flag package: -name or
// --name, -name=VALUE or -name VALUE (a boolean takes only =VALUE), no
// abbreviations, and options end at the first operand (issue 14). The
// subcommand comes first; state, workspace and providers take a second
// word right after it (terraform state list).
var tfGlobalSpec = getopt.New("hv", "chdir=", "help", "version").SingleDashLongs().NoAbbreviations().StopAtOperand()

// tfSpec is one terraform command's options, with those every command takes.
func tfSpec(longs ...string) *getopt.Spec {
	return getopt.New("h", append(longs, "help", "no-color", "compact-warnings")...).SingleDashLongs().NoAbbreviations().StopAtOperand()
}

// tfForm is a terraform command that only reads, unless one of its
// writes options (or check) says otherwise.
type tfForm struct {
	opts   *getopt.Spec
	writes map[string]string
	check  func(p *getopt.Parsed, ops []*arg) string // what the form writes, or ""
}

var tfJSONInto = map[string]string{"--json-into": "writes its JSON output to a file"}

// tfReads are the read-only commands, by "verb" or "verb sub". show,
// validate, graph and providers schema start the installed provider
// plugins to read their schemas; none of them evaluates data sources.
var tfReads = map[string]*tfForm{
	"show":             {opts: tfSpec("json", "show-sensitive", "json-into=", "state", "plan=", "config", "module="), writes: tfJSONInto},
	"validate":         {opts: tfSpec("json", "no-tests", "test-directory=", "query", "json-into="), writes: tfJSONInto},
	"output":           {opts: tfSpec("state=", "json", "raw", "show-sensitive", "json-into="), writes: tfJSONInto},
	"fmt":              {opts: tfSpec("list", "write", "diff", "check", "recursive"), check: tfFmtWrites},
	"version":          {opts: tfSpec("json")},
	"graph":            {opts: tfSpec("type=", "plan=", "draw-cycles", "module-depth=")},
	"providers":        {opts: tfSpec("test-directory=")},
	"providers schema": {opts: tfSpec("json")},
	"state list":       {opts: tfSpec("state=", "id=")},
	"state show":       {opts: tfSpec("state=", "show-sensitive")},
	"state pull":       {opts: tfSpec()},
	"workspace list":   {opts: tfSpec()},
	"workspace show":   {opts: tfSpec()},
	// Without a known second word these print their usage.
	"state":     {opts: tfSpec()},
	"workspace": {opts: tfSpec()},
}

// tfGroups take a second word.
var tfGroups = map[string]bool{"state": true, "workspace": true, "providers": true}

// tfBool is Go's strconv.ParseBool truth for a boolean flag occurrence.
func tfBool(o getopt.Opt) bool {
	switch o.Value {
	case "1", "t", "T", "TRUE", "true", "True":
		return true
	}
	return !o.HasValue
}

// tfFmtWrites: terraform fmt rewrites files in place unless -check (which
// turns -write off) or -write=false; reading "-" prints to stdout.
func tfFmtWrites(p *getopt.Parsed, ops []*arg) string {
	if o, ok := p.Get("--check"); ok && tfBool(o) {
		return ""
	}
	if o, ok := p.Get("--write"); ok && !tfBool(o) {
		return ""
	}
	if len(ops) == 1 && ops[0].val == "-" {
		return ""
	}
	return "terraform fmt rewrites the files in place (-check or -write=false only report)"
}

// tfPlanSpec is plan's and apply's options: enough to see -out and -destroy.
var tfPlanSpec = tfSpec("destroy", "refresh-only", "refresh", "replace=", "target=", "exclude=", "var=",
	"var-file=", "parallelism=", "lock", "lock-timeout=", "state=", "state-out=", "backup=",
	"detailed-exitcode", "input", "out=", "generate-config-out=", "json", "json-into=",
	"show-sensitive", "auto-approve")

// terraformRule: show, validate, output, fmt -check, version, graph,
// providers, state list/show/pull and workspace list/show read. plan
// evaluates the configuration's data sources, and data "external" runs
// any program, so it is not read-only (nor are console, refresh, test);
// apply, import, taint and the state and workspace changes write; destroy,
// apply -destroy, state rm and workspace delete destroy.
func terraformRule(c *call) {
	p := c.parse(tfGlobalSpec)
	if !c.strict(p) || len(p.Operands) == 0 {
		return // terraform -version, terraform -help
	}
	args := c.rest()
	vi := p.Operands[0]
	if !args[vi].literal() {
		c.a.failClosed(CodeDynamicCommand, c.name+" command "+args[vi].src+" is computed at run time")
		return
	}
	verb, rest := args[vi].val, args[vi+1:]
	name := verb
	if tfGroups[verb] && len(rest) > 0 && !strings.HasPrefix(rest[0].val, "-") {
		if !rest[0].literal() {
			c.a.failClosed(CodeDynamicCommand, c.name+" "+verb+" command "+rest[0].src+" is computed at run time")
			return
		}
		name, rest = verb+" "+rest[0].val, rest[1:]
	}
	full := c.name + " " + name
	if form, ok := tfReads[name]; ok {
		q := c.parseWords(rest, form.opts)
		if !c.strict(q) {
			return
		}
		for _, o := range q.Opts {
			if what, ok := form.writes[o.Name]; ok && !isStdStream(o.Value) {
				c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("%s -%s %s", full, o.Name[2:], what))
				return
			}
		}
		if form.check != nil {
			ops := make([]*arg, len(q.Operands))
			for i, j := range q.Operands {
				ops[i] = rest[j]
			}
			if what := form.check(q, ops); what != "" {
				c.a.writes(CodeWriteOption, RiskMediumWrite, what)
			}
		}
		return
	}
	switch name {
	case "destroy", "state rm", "workspace delete":
		what := map[string]string{"destroy": "destroys the infrastructure it manages",
			"state rm": "removes resources from the state", "workspace delete": "deletes a workspace and its state"}[name]
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, full+" "+what)
		c.a.destroys(full + " " + what)
	case "apply":
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, full+" changes infrastructure")
		q := c.parseWords(rest, tfPlanSpec)
		if o, ok := q.Get("--destroy"); ok && tfBool(o) {
			c.a.destroys(full + " -destroy destroys the infrastructure it manages")
		} else if len(q.Dynamic) > 0 {
			c.a.destroys(fmt.Sprintf("%s: argument %s may expand into -destroy", full, q.Dynamic[0]))
		}
	case "plan":
		c.a.writes(CodeRunsProgram, RiskLowWrite, full+" evaluates the configuration's data sources, and data \"external\" runs programs")
		q := c.parseWords(rest, tfPlanSpec)
		for _, o := range q.Opts {
			switch o.Name {
			case "--out", "--generate-config-out", "--state-out", "--backup", "--json-into":
				c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("%s -%s writes %s", full, o.Name[2:], o.Value))
			}
		}
	case "init", "get", "providers lock", "providers mirror":
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, full+" downloads providers or modules and writes them (and the lock file) to disk")
	case "workspace new", "workspace select":
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, full+" creates or selects a workspace")
	case "login", "logout":
		c.a.writes(CodeWriteSubcommand, RiskMediumWrite, full+" writes or removes stored credentials")
	case "console", "refresh", "test":
		c.a.writes(CodeRunsProgram, RiskMediumWrite, full+" evaluates the configuration's data sources, and data \"external\" runs programs")
	default:
		c.a.writes(CodeWriteSubcommand, RiskHighWrite, full+" changes infrastructure or state")
	}
}
