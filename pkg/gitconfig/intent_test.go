package gitconfig_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/govkit/govkit/pkg/gitconfig"
)

// TestIntentRisks runs the adapter over a real repository layout: a config
// setting core.fsmonitor must come back as a risk with its key and source.
func TestIntentRisks(t *testing.T) {
	repo := t.TempDir()
	for _, d := range []string{".git/objects", ".git/refs/heads", "src"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".git/HEAD", "ref: refs/heads/main\n")
	write(".git/config", "[core]\n\tbare = false\n")

	risks, err := gitconfig.IntentRisks(filepath.Join(repo, "src"))
	if err != nil {
		t.Fatal(err)
	}
	if len(risks) != 0 {
		t.Errorf("clean repository: risks = %+v, want none", risks)
	}

	write(".git/config", "[core]\n\tbare = false\n\tfsmonitor = \"sh -c 'touch /tmp/x'\"\n")
	risks, err = gitconfig.IntentRisks(filepath.Join(repo, "src"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range risks {
		if r.Key == "core.fsmonitor" && r.Source != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("risks = %+v, want core.fsmonitor with its source", risks)
	}
}
