package govkit_test

import (
	"bytes"
	"os"
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
	gotLines, wantLines := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(gotLines), len(wantLines)) {
		var g, w []byte
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if !bytes.Equal(g, w) {
			t.Fatalf("docs/config.md is stale from line %d; run: make docs\n got: %s\nwant: %s", i+1, g, w)
		}
	}
}
