package intent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/govkit/govkit/pkg/getopt"
)

// Seed 000 §6 risk levels (P-51, P-52, P-53).
func TestRiskLevels(t *testing.T) {
	tests := []struct {
		cmd  string
		want Risk
	}{
		{"cat f", RiskReadOnly},
		{"sudo ls", RiskHighWrite},
		{"echo x > f", RiskHighWrite},
		{"echo x >> f", RiskHighWrite},
		{"ls 2> err.log", RiskHighWrite},
		{"tee f", RiskHighWrite},
		{"rm f", RiskHighWrite},
		{"shutdown now", RiskHighWrite},
		{"reboot", RiskHighWrite},
		{"poweroff", RiskHighWrite},
		{"systemctl restart x", RiskHighWrite},
		{"systemctl stop x", RiskHighWrite},
		{"systemctl start x", RiskHighWrite},
		{"apt install x", RiskHighWrite},
		{"yum install x", RiskHighWrite},
		{"dnf install x", RiskHighWrite},
		{"pacman -S x", RiskHighWrite},
		{"docker rm x", RiskHighWrite},
		{"docker kill x", RiskHighWrite},
		{"chmod 600 f", RiskHighWrite},
		{"chown a f", RiskHighWrite},
		{"iptables -A INPUT -j DROP", RiskHighWrite},
		{"mv a b", RiskMediumWrite},
		{"cp a b", RiskMediumWrite},
		{"touch a", RiskMediumWrite},
		{"mkdir a", RiskMediumWrite},
		{"sed -i s/a/b/ f", RiskMediumWrite},
		{"tar -xf a.tar", RiskMediumWrite},
		{"unzip a.zip", RiskMediumWrite},
		{"curl -X POST https://x", RiskMediumWrite},
		{"curl -X DELETE https://x", RiskHighWrite}, // destructive dominates
		{"curl --data x https://x", RiskMediumWrite},
		{"git fetch", RiskLowWrite},
		// Worst of parts (P-51 deviation): chaining adds nothing by itself.
		{"ls && cat f", RiskReadOnly},
		{"ls; mv a b", RiskMediumWrite},
		{"mv a b; rm c", RiskHighWrite},
	}
	for _, tt := range tests {
		if got := Classify(tt.cmd).Risk; got != tt.want {
			t.Errorf("%q: risk %s, want %s", tt.cmd, got, tt.want)
		}
	}
}

// The seed's rewrite templates must come out exactly (P-49).
func TestRewriteTemplates(t *testing.T) {
	tests := []struct{ cmd, want string }{
		{"journalctl -f", `journalctl -n 200 --since "10 min ago"`},
		{"docker logs -f x", "docker logs --tail=200 x"},
		{"kubectl logs -f x", "kubectl logs --tail=200 --since=10m x"},
		{"tail -f file", "tail -n 200 file"},
		{"top", "top -b -n 1"},
		{"ping 10.0.0.1", "ping -c 4 10.0.0.1"},
		{"watch df -h", "df -h"},
		{"watch 'df -h'", "df -h"},
		{"kubectl get pods -w", "kubectl get pods"},
		{"docker stats", "docker stats --no-stream"},
		{"less f", "cat f"},
		{"htop", "top -b -n 1"},
		{"tail -F -n 50 app.log", "tail -n 50 app.log"},
		{"journalctl -u nginx -f", `journalctl -u nginx -n 200 --since "10 min ago"`},
		{"journalctl -f --since '1 hour ago'", `journalctl --since '1 hour ago' -n 200`},
		{"kubectl logs -n prod -f api", "kubectl logs --tail=200 --since=10m -n prod api"},
		{"journalctl -f | grep error", `journalctl -n 200 --since "10 min ago" | grep error`},
		{"docker exec -it web ls", "docker exec -i web ls"},
		{"vmstat 1", "vmstat 1 5"},
	}
	for _, tt := range tests {
		r := Classify(tt.cmd)
		if r.SuggestedRewrite != tt.want || !r.AutoRecoverable {
			t.Errorf("%q: rewrite %q (auto_recoverable %v), want %q", tt.cmd, r.SuggestedRewrite, r.AutoRecoverable, tt.want)
		}
	}
	// No rewrite is offered when the rewrite would still not be read-only
	// and bounded.
	for _, cmd := range []string{"tail -f x > out", "tail -f x; rm y", "docker exec -it web sh", "python", "watch rm x"} {
		if r := Classify(cmd); r.SuggestedRewrite != "" || r.AutoRecoverable {
			t.Errorf("%q: unexpected rewrite %q", cmd, r.SuggestedRewrite)
		}
	}
}

func TestInteractiveCategories(t *testing.T) {
	tests := []struct {
		cmd  string
		want Interactive
	}{
		{"docker exec -it web sh", TTYFlag},
		{"kubectl exec -it api-0 -- bash", TTYFlag},
		{"less f", Pager},
		{"vim f", Pager},
		{"top", UnboundedStream},
		{"tail -f x", UnboundedStream},
		{"journalctl -f", UnboundedStream},
		{"watch ls", UnboundedStream},
		{"ssh host", InteractiveREPL},
		{"mysql", InteractiveREPL},
		{"psql", InteractiveREPL},
		{"python", InteractiveREPL},
		{"node", InteractiveREPL},
		{"ls", NotInteractive},
	}
	for _, tt := range tests {
		r := Classify(tt.cmd)
		if r.Interactive != tt.want || r.Bounded != (tt.want == NotInteractive) {
			t.Errorf("%q: interactive %q bounded %v, want %q", tt.cmd, r.Interactive, r.Bounded, tt.want)
		}
	}
}

func TestReasonsCarryCodes(t *testing.T) {
	tests := []struct {
		cmd  string
		code Code
	}{
		{"ls |", CodeParseError},
		{"ls\x00", CodeControlCharacter},
		{"$x", CodeDynamicCommand},
		{"$'ls'", CodeANSICQuoting},
		{"echo \"a\\\nb\"", CodeQuotedContinue},
		{"echo $((1))", CodeArithmetic},
		{"eval x", CodeEval},
		{"python -c 1", CodeInlineCode},
		{"cat x | sh", CodePipeToShell},
		{"./ls", CodePathCommand},
		{"frobnicate", CodeUnknownCommand},
		{"LD_PRELOAD=x ls", CodeUnsafeAssignment},
		{"sudo ls", CodeSudo},
		{"ls > f", CodeOutputRedirect},
		{"mv a b", CodeWriteCommand},
		{"git push", CodeWriteSubcommand},
		{"sort -o f g", CodeWriteOption},
		{"find . -exec ls \\;", CodeRunsProgram},
		{"curl -d x u", CodeHTTPWrite},
		{"rm x", CodeDestructive},
		{"git -c a=b log", CodeGitConfigOverride},
		{"git log", CodeGitConfigDependent},
		{"tail -f x", CodeUnboundedStream},
		{"less x", CodePager},
		{"docker exec -t c ls", CodeTTYFlag},
		{"python", CodeInteractiveREPL},
		{"sh script.sh", CodeRunsProgram},
	}
	for _, tt := range tests {
		if r := Classify(tt.cmd); !r.HasReason(tt.code) {
			t.Errorf("%q: reasons %v lack %s", tt.cmd, r.Reasons, tt.code)
		}
	}
	documented := map[Code]bool{}
	for _, c := range Codes {
		documented[c.Code] = true
	}
	for _, tt := range tests {
		if !documented[tt.code] {
			t.Errorf("code %s is not in Codes", tt.code)
		}
	}
}

func TestLimits(t *testing.T) {
	c := New(Options{MaxBytes: 20, MaxDepth: 4})
	if r := c.Classify("echo 0123456789012345"); !r.HasReason(CodeInputTooLarge) || r.Verdict() != VerdictWrite {
		t.Errorf("over-size: %+v", r)
	}
	if r := c.Classify("( ( ( ( ls ) ) ) )"); !r.HasReason(CodeNestingTooDeep) {
		t.Errorf("deep: %+v", r)
	}
	if r := c.Classify("(ls)"); r.Verdict() != VerdictReadOnly {
		t.Errorf("shallow: %+v", r)
	}
}

// RepoConfig is consulted for read-only git commands in the right directory.
func TestRepoConfig(t *testing.T) {
	var asked []string
	c := New(Options{Dir: "/repo", RepoConfig: func(dir string) ([]GitRisk, error) {
		asked = append(asked, dir)
		switch dir {
		case "/repo/evil":
			return []GitRisk{{Key: "core.fsmonitor", Source: ".git/config:3"}}, nil
		case "/repo/broken":
			return nil, errors.New("bad config")
		case "/repo/aliased":
			return []GitRisk{{Key: "alias.lg", Source: ".git/config:9"}}, nil
		}
		return nil, nil
	}})
	tests := []struct {
		cmd  string
		want Verdict
		code Code
	}{
		{"git status", VerdictReadOnly, CodeGitConfigDependent},
		{"git -C evil status", VerdictWrite, CodeGitConfigRisk},
		{"cd evil && git log", VerdictWrite, CodeGitConfigRisk},
		{"(cd evil) && git log", VerdictReadOnly, CodeGitConfigDependent},
		{"git -C broken log", VerdictWrite, CodeGitConfigUnchecked},
		{"cd $X && git log", VerdictWrite, CodeGitConfigUnchecked},
		{"git --git-dir=/x log", VerdictWrite, CodeGitConfigUnchecked},
		{"ssh host git log", VerdictWrite, CodeGitConfigUnchecked},
		{"git -C aliased log", VerdictReadOnly, CodeGitConfigDependent},
		{"git -C /abs/evil/../evil status", VerdictReadOnly, CodeGitConfigDependent},
	}
	for _, tt := range tests {
		r := c.Classify(tt.cmd)
		if r.Verdict() != tt.want || !r.HasReason(tt.code) {
			t.Errorf("%q: verdict %d reasons %v; want %d with %s", tt.cmd, r.Verdict(), r.Reasons, tt.want, tt.code)
		}
	}
	if r := c.Classify("git -C evil status"); !strings.Contains(r.Reasons[0].Detail, "core.fsmonitor (.git/config:3)") {
		t.Errorf("detail should name the setting and where: %v", r.Reasons)
	}
	n := len(asked)
	c.Classify("git -C evil status")
	if len(asked) != n+1 {
		t.Errorf("RepoConfig must be asked afresh each time (config can change between commands)")
	}
}

// The JSON form is DESIGN §4's contract.
func TestJSONContract(t *testing.T) {
	b, err := json.Marshal(Classify("journalctl -f"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"schema_version": 1.0, "command": "journalctl -f", "intent": "read_only_certain",
		"bounded": false, "interactive": "unbounded_stream", "risk": "read_only", "action_class": "read",
		"suggested_rewrite": `journalctl -n 200 --since "10 min ago"`, "auto_recoverable": true,
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	reasons, ok := m["reasons"].([]any)
	if !ok || len(reasons) != 1 || reasons[0].(map[string]any)["code"] != "UNBOUNDED_STREAM" {
		t.Errorf("reasons = %#v", m["reasons"])
	}
	if len(m) != len(want)+1 {
		t.Errorf("unexpected fields: %s", b)
	}
	b, _ = json.Marshal(Classify("ls"))
	if !strings.Contains(string(b), `"reasons":[]`) {
		t.Errorf("reasons must be [] not null: %s", b)
	}
}

func TestOptionParsing(t *testing.T) {
	s := getopt.New("fn:b::", "follow?", "lines=", "output=", "outline")
	mk := func(ws ...string) []*arg {
		out := make([]*arg, len(ws))
		for i, w := range ws {
			out[i] = &arg{val: w, src: w}
		}
		return out
	}
	tests := []struct {
		args     []string
		opts     string // name=value, space separated
		operands int
		unknown  int
	}{
		{[]string{"-fn5", "x"}, "-f= -n=5", 1, 0},
		{[]string{"-n", "5", "-f", "x"}, "-n=5 -f=", 1, 0},
		{[]string{"--lines=5", "--follow"}, "--lines=5 --follow=", 0, 0},
		{[]string{"--lin", "5"}, "--lines=5", 0, 0},
		{[]string{"--out=x"}, "", 0, 1}, // ambiguous: output, outline
		{[]string{"--outp=x"}, "--output=x", 0, 0},
		{[]string{"--", "-f"}, "", 1, 0},
		{[]string{"x", "-f"}, "-f=", 1, 0}, // GNU permutes
		{[]string{"-b", "x"}, "-b=", 1, 0}, // optional value must be attached
		{[]string{"-bz", "x"}, "-b=z", 1, 0},
		{[]string{"-q"}, "", 0, 1},
	}
	for _, tt := range tests {
		p := parseArgs(mk(tt.args...), s)
		var got []string
		for _, o := range p.Opts {
			got = append(got, o.Name+"="+o.Value)
		}
		if strings.Join(got, " ") != tt.opts || len(p.Operands) != tt.operands || len(p.Unknown) != tt.unknown {
			t.Errorf("%v: opts %v operands %d unknown %v", tt.args, got, len(p.Operands), p.Unknown)
		}
	}
}

func TestWordNormalization(t *testing.T) {
	tests := []struct {
		word, val               string
		expands, glob, brace, c bool
	}{
		{`ab`, "ab", false, false, false, false},
		{`"a b"`, "a b", false, false, false, false},
		{`'a\b'`, `a\b`, false, false, false, false},
		{`a\ b`, "a b", false, false, false, false},
		{`"a\$b\q"`, `a$b\q`, false, false, false, false},
		{`$'\x2di'`, "-i", false, false, false, true},
		{`*.txt`, "*.txt", false, true, false, false},
		{`\*.txt`, "*.txt", false, false, false, false},
		{`"*.txt"`, "*.txt", false, false, false, false},
		{`{-i,x}`, "{-i,x}", false, false, true, false},
		{`x{1..3}`, "x{1..3}", false, false, true, false},
		{`"{a,b}"`, "{a,b}", false, false, false, false},
		{`$x`, "", true, false, false, false},
		{`"$x"y`, "y", true, false, false, false},
	}
	c := New(Options{})
	for _, tt := range tests {
		f, err := c.parse("cmd " + tt.word)
		if err != nil {
			t.Fatalf("%s: %v", tt.word, err)
		}
		a := newArg("cmd "+tt.word, f.Stmts[0].Cmd.(*syntax.CallExpr).Args[1])
		if a.val != tt.val || a.expands != tt.expands || a.glob != tt.glob || a.brace != tt.brace || a.ansiC != tt.c || a.src != tt.word {
			t.Errorf("%s: got %+v", tt.word, *a)
		}
	}
}

// fakeInspector proves "redisro GET …" read-only: an inspector is one entry
// in the registry (P-46).
type fakeInspector struct{}

func (fakeInspector) Applies(p string) bool { return p == "redisro" }
func (fakeInspector) Inspect(argv []string) Inspection {
	if len(argv) < 2 {
		return Inspection{REPL: true}
	}
	return Inspection{ReadOnly: strings.EqualFold(argv[1], "GET"), Destructive: strings.EqualFold(argv[1], "FLUSHALL")}
}

func TestInspectorRegistration(t *testing.T) {
	defer func(saved []ContentInspector) { inspectors = saved }(inspectors)
	if r := Classify("redisro GET k"); r.Verdict() != VerdictWrite {
		t.Fatalf("before registration: %+v", r)
	}
	inspectors = append(inspectors, fakeInspector{})
	for cmd, want := range map[string]Intent{"redisro GET k": ReadOnlyConditional, "redisro SET k v": WriteOrUnknown} {
		if r := Classify(cmd); r.Intent != want {
			t.Errorf("%q: %s, want %s", cmd, r.Intent, want)
		}
	}
	if r := Classify("redisro FLUSHALL"); r.ActionClass != ActionDestructive {
		t.Errorf("FLUSHALL: %+v", r)
	}
	if r := Classify("redisro"); r.Verdict() != VerdictUnbounded || r.Interactive != InteractiveREPL {
		t.Errorf("bare: %+v", r)
	}
}
