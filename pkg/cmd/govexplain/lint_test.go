package govexplain_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/cmd/govexplain"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// run runs govexplain with args and returns its exit code and streams.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	streams, _, out, errOut := cli.Test()
	code := cli.Main("govexplain", govexplain.NewCmdGovexplain(streams, nil), streams, args)
	return code, out.String(), errOut.String()
}

// golden compares got with testdata/NAME (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// Lint's text names where each finding is: a policy and rule, the
// guardrails, or for a finding about the whole file (default_effect allow)
// the file and its line alone — never "line 0, policy \"\"" (issue 20).
func TestLintText(t *testing.T) {
	code, out, errOut := run(t, "lint", "--policy", "testdata/lint/file-level.yaml", "-o", "text")
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden(t, "lint/file-level.golden", out)
	for _, bad := range []string{":0:", `policy ""`} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q:\n%s", bad, out)
		}
	}
}
