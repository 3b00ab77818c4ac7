package govkit_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/govkit/govkit/internal/cmdtree"
	"github.com/govkit/govkit/pkg/cli"
)

// TestConfigDoc keeps docs/config.md equal to what the command trees say
// (issue 20: every flag, variable and file of every binary, generated and
// kept true by a test). make docs, or -update, regenerates it.
func TestConfigDoc(t *testing.T) {
	streams, _, _, _ := cli.Test()
	want := cmdtree.ConfigDoc(cmdtree.Roots(streams))
	got, err := os.ReadFile("docs/config.md")
	if err != nil && !*update {
		t.Fatalf("%v; run: make docs", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	if *update {
		if err := os.WriteFile("docs/config.md", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	i := firstDiff(got, want)
	t.Fatalf("docs/config.md is stale from line %d; run: make docs\n got: %s\nwant: %s", i, lineOf(got, i), lineOf(want, i))
}

// TestCmdTreeHasEveryBinary keeps cmdtree.Binaries, from which the docs,
// the man pages and the scripts' binaries come, equal to the directories
// of cmd/, which make build and make install take: a binary missing there
// would go undocumented.
func TestCmdTreeHasEveryBinary(t *testing.T) {
	dirs, err := os.ReadDir("cmd")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range dirs {
		if d.IsDir() {
			want = append(want, d.Name())
		}
	}
	streams, _, _, _ := cli.Test()
	var names, roots []string
	for _, b := range cmdtree.Binaries {
		names = append(names, b.Name)
		roots = append(roots, cmdtree.Root(streams, b.Name).Name())
	}
	if !slices.Equal(names, want) || !slices.Equal(roots, want) {
		t.Errorf("cmdtree.Binaries are %q (commands %q), cmd/ holds %q", names, roots, want)
	}
}

// manDate is the date field of a man page's .TH line: make docs stamps it
// with the last commit's date (SOURCE_DATE_EPOCH), which a test cannot
// reproduce, so it is left out of the comparison.
var manDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*" )"[^"]*"`)

// TestManPages keeps docs/man equal to what the command trees say, as
// TestConfigDoc does docs/config.md: the same generator (internal/gendocs,
// make docs) writes the pages into a temporary directory, and every page
// must be in docs/man with the same text, and no other.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if err := cmdtree.ManPages(dir); err != nil {
		t.Fatal(err)
	}
	pages := func(dir string) []string {
		names, err := filepath.Glob(filepath.Join(dir, "*.1"))
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range names {
			names[i] = filepath.Base(n)
		}
		return names
	}
	want, got := pages(dir), pages("docs/man")
	for _, name := range want {
		if !slices.Contains(got, name) {
			t.Errorf("docs/man/%s is missing; run: make docs", name)
		}
	}
	for _, name := range got {
		if !slices.Contains(want, name) {
			t.Errorf("docs/man/%s documents no command; run: make docs", name)
		}
	}
	for _, name := range want {
		w, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		g, err := os.ReadFile(filepath.Join("docs/man", name))
		if err != nil {
			continue // reported above
		}
		w, g = manDate.ReplaceAll(w, []byte(`$1"DATE"`)), manDate.ReplaceAll(g, []byte(`$1"DATE"`))
		if !bytes.Equal(g, w) {
			t.Errorf("docs/man/%s is stale from line %d; run: make docs", name, firstDiff(g, w))
		}
	}
}

// firstDiff is the number of the first line where a and b differ.
func firstDiff(a, b []byte) int {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(al), len(bl)) {
		if !bytes.Equal(al[i], bl[i]) {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// lineOf is line n (from 1) of b, empty past its end.
func lineOf(b []byte, n int) []byte {
	if lines := bytes.Split(b, []byte("\n")); n <= len(lines) {
		return lines[n-1]
	}
	return nil
}
