package govkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall runs make install DESTDIR=… PREFIX=/usr (issue 20) and
// checks the tree: every binary, every man page, and the bash, zsh and
// fish completions of every binary, where those tools look for them.
// The binaries are built into the test's directory, never into ./bin.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary; skipped with -short")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	tmp := t.TempDir()
	dest := filepath.Join(tmp, "root")
	cmd := exec.Command("make", "install", "DESTDIR="+dest, "PREFIX=/usr", "BIN="+filepath.Join(tmp, "bin"), "VERSION=test")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}

	cmds, err := os.ReadDir("cmd")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob("docs/man/*.1")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages in docs/man (%v)", err)
	}
	want := map[string]os.FileMode{} // the permission bits
	for _, c := range cmds {
		b := c.Name()
		want["usr/bin/"+b] = 0o755
		want["usr/share/bash-completion/completions/"+b] = 0o644
		want["usr/share/zsh/site-functions/_"+b] = 0o644
		want["usr/share/fish/vendor_completions.d/"+b+".fish"] = 0o644
	}
	for _, p := range pages {
		want["usr/share/man/man1/"+filepath.Base(p)] = 0o644
	}
	got := map[string]os.FileMode{}
	err = filepath.WalkDir(dest, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dest, path)
		got[filepath.ToSlash(rel)] = fi.Mode().Perm()
		if fi.Size() == 0 {
			t.Errorf("%s is empty", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f, mode := range want {
		// Completions are written through the umask; only the
		// executable bit is the tree's contract.
		switch m, ok := got[f]; {
		case !ok:
			t.Errorf("make install did not install %s", f)
		case (m&0o111 != 0) != (mode&0o111 != 0):
			t.Errorf("%s has mode %v, want %v", f, m, mode)
		}
	}
	for f := range got {
		if _, ok := want[f]; !ok {
			t.Errorf("make install installed %s, which nothing expects", f)
		}
	}

	// The completions are the binaries' own.
	bash, _ := os.ReadFile(filepath.Join(dest, "usr/share/bash-completion/completions/approvals"))
	if !strings.Contains(string(bash), "__start_approvals") {
		t.Errorf("the bash completion of approvals is not cobra's:\n%.200s", bash)
	}
	zsh, _ := os.ReadFile(filepath.Join(dest, "usr/share/zsh/site-functions/_gate"))
	if !strings.HasPrefix(string(zsh), "#compdef gate") {
		t.Errorf("the zsh completion of gate does not start with #compdef:\n%.200s", zsh)
	}
	out, err := exec.Command(filepath.Join(dest, "usr/bin/classify"), "--version").Output()
	if err != nil || !strings.Contains(string(out), "test") {
		t.Errorf("the installed classify --version: %q, %v", out, err)
	}
}
