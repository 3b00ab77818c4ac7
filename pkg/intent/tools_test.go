package intent

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unknownOption is a long option no program has.
const unknownOption = "--govkit-no-such-option"

// Every program described by its options fails closed on an option it does
// not know (issue 14): an option the parser skipped could be the one that
// writes.
func TestToolsRefuseUnknownOptions(t *testing.T) {
	loadRules()
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		for _, cmd := range []string{n + " " + unknownOption, n + " " + unknownOption + "=x"} {
			if r := Classify(cmd); r.ReadOnly() {
				t.Errorf("%s: read-only (%v)", cmd, r.Reasons)
			}
		}
		if r := Classify(n + " --help"); r.Verdict() != VerdictReadOnly {
			t.Errorf("%s --help: %v", n, r.Reasons)
		}
	}
}

// Property (issue 14): for any rule, appending an unknown long option never
// turns a verdict into exit 0 (read-only and bounded).
func FuzzUnknownOptionNeverLaunders(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, file := range files {
		for _, c := range loadCorpus(f, file) {
			f.Add(c.Cmd)
		}
	}
	c := New(Options{})
	f.Fuzz(func(t *testing.T, cmd string) {
		r := c.Classify(cmd)
		if r.Verdict() == VerdictReadOnly || r.HasReason(CodeParseError) {
			return // appending to what does not parse may complete it ("0<")
		}
		for _, reason := range r.Reasons {
			if strings.HasSuffix(reason.Detail, "needs a value") {
				return // the appended word is that value, not an option (psql -lc: SQL, here a comment)
			}
		}
		if slices.Contains(strings.Fields(cmd), "--") {
			// After "--" the appended word is an operand, not an option, and
			// may rightly change the verdict: tail +f -- 0 follows (GNU
			// tail's obsolete form allows one file), tail +f -- 0 X reads
			// three files.
			return
		}
		for _, tail := range []string{" " + unknownOption, " " + unknownOption + "=1"} {
			if r := c.Classify(cmd + tail); r.Verdict() == VerdictReadOnly {
				t.Fatalf("%q is not read-only, but %q is", cmd, cmd+tail)
			}
		}
	})
}
