package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// plainSamples are commands for the equivalence checks: the corpus rows,
// every rewrite the corpus suggests, the commands of classify's
// testscripts, and each known program alone and with a few options.
func plainSamples(t testing.TB) []string {
	var out []string
	files, err := filepath.Glob("testdata/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{})
	for _, file := range files {
		for _, tc := range loadCorpus(t, file) {
			out = append(out, tc.Cmd)
			if r := c.classify(tc.Cmd); r.SuggestedRewrite != "" {
				out = append(out, r.SuggestedRewrite)
			}
		}
	}
	out = append(out, scriptCommands(t)...)
	for name := range rules {
		out = append(out, name, name+" --help", name+" -l x", name+"  -f\t/tmp/x ", "x "+name,
			"bash -c '"+name+" -l x'", "sudo "+name+" -v", "ls | "+name)
	}
	// Words past the parser's column limit (16,383) and a few edges.
	long := strings.Repeat("a", 20000)
	out = append(out, "ls "+long, "echo x "+long+" y", long, "ls\t\t-la", "ls -- -x", "- x", "-- ls")
	return out
}

// scriptCommands gathers the command lines of the repository's classify
// testscripts: every line (a batch file's commands), what follows each
// "classify " and " -- " (a command given as arguments), and every string
// of a JSON line (hook events). Whatever is not a command is harmless here.
func scriptCommands(t testing.TB) []string {
	files, err := filepath.Glob("../../testdata/script/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("../../testdata/script/*.txtar: %v, %d files", err, len(files))
	}
	var out []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte("classify")) {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			out = append(out, line, strings.TrimSpace(line))
			for _, sep := range []string{"classify ", " -- "} {
				if i := strings.LastIndex(line, sep); i >= 0 {
					rest := strings.TrimSpace(line[i+len(sep):])
					out = append(out, rest, strings.Trim(rest, "'"))
				}
			}
			var v any
			if json.Unmarshal([]byte(line), &v) == nil {
				out = appendStrings(out, v)
			}
		}
	}
	return out
}

func appendStrings(out []string, v any) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = appendStrings(out, e)
		}
	case map[string]any:
		for _, e := range v {
			out = appendStrings(out, e)
		}
	}
	return out
}

// fastAndSlow is a classifier with the fast path and its reference
// without it, with the same options, each recording the directories it
// asked RepoConfig about.
type fastAndSlow struct {
	name       string
	fast, slow *Classifier
	fastDirs   *[]string
	slowDirs   *[]string
}

// classifierPairs covers the options the fast path reads or must not
// skip: the size and depth limits, and RepoConfig with a risky config, a
// failing read and a clean one.
func classifierPairs() []fastAndSlow {
	var pairs []fastAndSlow
	for _, o := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		{"repo-risk", Options{Dir: "/repo"}},
		{"repo-error", Options{Dir: "/err"}},
		{"repo-clean", Options{Dir: "/clean"}},
		{"max-bytes", Options{MaxBytes: 12}},
		{"depth-1", Options{MaxDepth: 1}},
		{"depth-2", Options{MaxDepth: 2}},
		{"depth-3", Options{MaxDepth: 3}},
	} {
		p := fastAndSlow{name: o.name, fastDirs: new([]string), slowDirs: new([]string)}
		withRepo := func(dirs *[]string) Options {
			opts := o.opts
			if opts.Dir != "" {
				opts.RepoConfig = func(dir string) ([]GitRisk, error) {
					*dirs = append(*dirs, dir)
					switch dir {
					case "/repo":
						return []GitRisk{{Key: "core.fsmonitor", Source: ".git/config:3"}}, nil
					case "/err":
						return nil, errors.New("permission denied")
					}
					return nil, nil
				}
			}
			return opts
		}
		p.fast = New(withRepo(p.fastDirs))
		p.slow = New(withRepo(p.slowDirs))
		p.slow.parseAlways = true
		pairs = append(pairs, p)
	}
	return pairs
}

// same classifies cmd both ways and reports how they differ, or "".
func (p fastAndSlow) same(cmd string) string {
	*p.fastDirs, *p.slowDirs = (*p.fastDirs)[:0], (*p.slowDirs)[:0]
	fast, slow := p.fast.Classify(cmd), p.slow.Classify(cmd)
	fj, sj := fast.AppendJSON(nil), slow.AppendJSON(nil)
	switch {
	case !bytes.Equal(fj, sj):
		return "fast " + string(fj) + "\nslow " + string(sj)
	case !reflect.DeepEqual(fast, slow):
		return "fast " + fmtResult(fast) + "\nslow " + fmtResult(slow)
	case !slices.Equal(*p.fastDirs, *p.slowDirs):
		return "RepoConfig asked about " + strings.Join(*p.fastDirs, ",") + " instead of " + strings.Join(*p.slowDirs, ",")
	}
	return ""
}

func fmtResult(r Result) string {
	b, _ := json.Marshal(struct {
		R Result
		S string
	}{r, r.SuggestedRewrite})
	return string(b)
}

// TestPlainFastPathMatchesParse: for every corpus and testscript command,
// under every option that matters, Classify with the fast path gives
// exactly the result it gives when it parses everything (a false
// read-only here would be a bypass). Commands that are not plain are
// compared too: the scripts nested in them (bash -c 'ls -1') may be.
func TestPlainFastPathMatchesParse(t *testing.T) {
	samples := plainSamples(t)
	plain := 0
	for _, cmd := range samples {
		if _, ok := plainCommand(cmd); ok {
			plain++
		}
	}
	if plain < 1000 || len(samples)-plain < 500 {
		t.Fatalf("%d plain samples of %d", plain, len(samples))
	}
	for _, p := range classifierPairs() {
		for _, cmd := range samples {
			if diff := p.same(cmd); diff != "" {
				t.Errorf("%s: %q:\n%s", p.name, cmd, diff)
			}
		}
	}
}

func TestPlainCommandMatchesParse(t *testing.T) {
	c := New(Options{})
	plain := 0
	for _, cmd := range plainSamples(t) {
		n, ok := plainCommand(cmd)
		if !ok {
			continue
		}
		plain++
		if got := len(strings.Fields(cmd)); n != got {
			t.Errorf("%q: %d words, want %d", cmd, n, got)
		}
		if got, want := c.classifyPlain(cmd, n), c.classifyParsed(cmd); !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\nplain %+v\nparse %+v", cmd, got, want)
		}
	}
	if plain < 500 {
		t.Fatalf("only %d plain samples", plain)
	}
}

func TestPlainCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd   string
		words int
	}{
		{"ls", 1},
		{" tail  -n\t200 /var/log/syslog ", 4},
		{"docker logs --tail=200 web", 4},
		{"ping -c 4 10.0.0.1", 4},
		{"env A=1 ls", 3},
		{"x@y:%+,-_./", 1},
		// Not plain: the parse would be something else than one call of
		// literal words, or not a call at all.
		{"", 0},
		{" \t", 0},
		{"A=1 ls", 0},
		{"=x", 0},
		{"ls ~", 0},
		{"ls *.go", 0},
		{"ls a?", 0},
		{"ls [ab]", 0},
		{"echo {a,b}", 0},
		{"ls # comment", 0},
		{"ls; rm x", 0},
		{"ls\nrm x", 0},
		{"ls | sh", 0},
		{"ls > x", 0},
		{"ls & ", 0},
		{"echo $HOME", 0},
		{"echo `id`", 0},
		{`echo "a b"`, 0},
		{"echo 'a'", 0},
		{`echo a\ b`, 0},
		{"f()", 0},
		{"! ls", 0},
		{"time ls", 0},
		{"declare x", 0},
		{"export PATH", 0},
		{"let x", 0},
		{"coproc ls", 0},
		{"fi", 0},
		{"ls\r", 0},
		{"ls é", 0},
	} {
		n, ok := plainCommand(tc.cmd)
		if n != tc.words || ok != (tc.words > 0) {
			t.Errorf("plainCommand(%q) = %d, %v; want %d", tc.cmd, n, ok, tc.words)
		}
	}
}

// FuzzPlainFastPath: whatever the input, Classify with the fast path gives
// exactly the result (its JSON, every field, and the RepoConfig questions
// asked) of Classify parsing everything, by default and with a risky
// repository config.
func FuzzPlainFastPath(f *testing.F) {
	for _, cmd := range plainSamples(f) {
		if len(cmd) < 1000 {
			f.Add(cmd)
		}
	}
	pairs := classifierPairs()[:2]
	f.Fuzz(func(t *testing.T, cmd string) {
		for _, p := range pairs {
			if diff := p.same(cmd); diff != "" {
				t.Fatalf("%s: %q:\n%s", p.name, cmd, diff)
			}
		}
	})
}
