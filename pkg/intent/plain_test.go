package intent

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// plainSamples are commands of plain words for the equivalence checks: the
// corpus rows that are plain, every rewrite the corpus suggests, and each
// known program alone and with a few options.
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
	for name := range rules {
		out = append(out, name, name+" --help", name+" -l x", name+"  -f\t/tmp/x ", "x "+name)
	}
	return out
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
		if got, want := c.classifyPlain(cmd, n), c.classify(cmd); !reflect.DeepEqual(got, want) {
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

// FuzzPlainCommand: whatever plainCommand accepts, classifying it without
// parsing gives exactly the result of parsing it.
func FuzzPlainCommand(f *testing.F) {
	for _, cmd := range plainSamples(f) {
		f.Add(cmd)
	}
	c := New(Options{})
	f.Fuzz(func(t *testing.T, cmd string) {
		n, ok := plainCommand(cmd)
		if !ok {
			return
		}
		if got, want := c.classifyPlain(cmd, n), c.classify(cmd); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nplain %+v\nparse %+v", cmd, got, want)
		}
	})
}
