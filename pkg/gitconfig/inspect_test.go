package gitconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tempDir returns a fresh temporary directory with symlinks resolved, as
// the paths Inspect reports are.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// write creates the file at path (making its directory) with text.
func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeGitDir makes dir a minimal git directory: HEAD, objects, refs and,
// unless config is "", a config file.
func makeGitDir(t *testing.T, dir, config string) {
	t.Helper()
	for _, sub := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "HEAD"), "ref: refs/heads/main\n")
	if config != "" {
		write(t, filepath.Join(dir, "config"), config)
	}
}

const cleanConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = false
	logallrefupdates = true
	hooksPath = .githooks
	sshCommand = ssh -i key
	fsmonitor = false
	pager = cat
[remote "origin"]
	url = https://example.com/x.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[credential]
	helper = store
[log]
	showSignature = true
[pager]
	log = false
	diff = true
	branch
[diff]
	external = off
[diff "img"]
	textconv =
[alias]
	st = status
	lg = log --oneline
`

func TestInspectRiskyKeys(t *testing.T) {
	tests := []struct {
		config string
		want   []string // keys; each set on line 2
	}{
		{"[core]\n", nil},
		{cleanConfig, nil},
		{"[core]\nfsmonitor = .git/hooks/query-watchman\n", []string{"core.fsmonitor"}},
		{"[core]\nfsmonitor = true\n", []string{"core.fsmonitor"}},
		{"[core]\nfsmonitor\n", []string{"core.fsmonitor"}},
		{"[core]\nfsmonitor = No\n", nil},
		{"[core]\nfsmonitor = \"\"\n", nil},
		{"[core]\npager = less -R\n", []string{"core.pager"}},
		{"[pager]\nlog = sh -c evil\n", []string{"pager.log"}},
		{"[pager]\nlog = true\n", nil},
		{"[diff]\nexternal = difft\n", []string{"diff.external"}},
		{"[diff \"Bin\"]\ntextconv = hexdump -C\n", []string{"diff.Bin.textconv"}},
		{"[diff.bin]\ntextconv = hexdump -C\n", []string{"diff.bin.textconv"}},
		{"[diff \"x\"]\ncommand = evil\n", []string{"diff.x.command"}},
		{"[filter \"lfs\"]\nclean = git-lfs clean -- %f\n", []string{"filter.lfs.clean"}},
		{"[filter \"lfs\"]\nsmudge = git-lfs smudge -- %f\n", []string{"filter.lfs.smudge"}},
		{"[filter \"lfs\"]\nprocess = git-lfs filter-process\n", []string{"filter.lfs.process"}},
		{"[filter \"lfs\"]\nrequired = true\n", nil},
		{"[gpg]\nprogram = evil\n", []string{"gpg.program"}},
		{"[gpg \"ssh\"]\nprogram = evil\n", []string{"gpg.ssh.program"}},
		{"[gpg]\nformat = ssh\n", nil},
		{"[alias]\nst = status\n", nil},
		{"[alias]\nx = !sh\n", []string{"alias.x"}},
		{"[alias]\nx = \"  !sh\"\n", []string{"alias.x"}},
		{"[Alias]\nX = !sh\n", []string{"alias.x"}},
		{"[core]\nFsMonitor = a\nPager = b\n", []string{"core.fsmonitor", "core.pager"}},
	}
	for _, tt := range tests {
		root := tempDir(t)
		makeGitDir(t, filepath.Join(root, ".git"), tt.config)
		got, err := Inspect(root)
		if err != nil {
			t.Fatalf("%q: %v", tt.config, err)
		}
		var want []Risk
		for i, k := range tt.want {
			want = append(want, Risk{Key: k, Source: filepath.Join(root, ".git", "config") + ":" + fmt.Sprint(i+2)})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %v\nwant %v", tt.config, got, want)
		}
	}
}

func TestInspectRepositories(t *testing.T) {
	const risky = "[core]\n\tfsmonitor = evil\n"
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) (dir string, want []Risk)
	}{
		{"clean", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), cleanConfig)
			return root, nil
		}},
		{"no config file", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), "")
			return root, nil
		}},
		{"subdirectory", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), risky)
			sub := filepath.Join(root, "a", "b")
			os.MkdirAll(sub, 0o755)
			return sub, []Risk{{"core.fsmonitor", root + "/.git/config:2"}}
		}},
		{"symlinked directory walks up from its target", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, "repo", ".git"), risky)
			os.MkdirAll(filepath.Join(root, "repo", "sub"), 0o755)
			os.MkdirAll(filepath.Join(root, "plain"), 0o755)
			if err := os.Symlink(filepath.Join(root, "repo", "sub"), filepath.Join(root, "plain", "link")); err != nil {
				t.Skip(err)
			}
			return filepath.Join(root, "plain", "link"), []Risk{{"core.fsmonitor", root + "/repo/.git/config:2"}}
		}},
		{"not a git directory is passed over", func(t *testing.T, root string) (string, []Risk) {
			// A .git without HEAD/objects/refs does not stop git's
			// search, so it must not hide the repository above.
			makeGitDir(t, filepath.Join(root, ".git"), risky)
			write(t, filepath.Join(root, "sub", ".git", "config"), "")
			write(t, filepath.Join(root, "sub", ".git", "HEAD"), "ref: refs/heads/main\n")
			return filepath.Join(root, "sub"), []Risk{{"core.fsmonitor", root + "/.git/config:2"}}
		}},
		{"nested repository wins", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), risky)
			makeGitDir(t, filepath.Join(root, "sub", ".git"), "[core]\n")
			return filepath.Join(root, "sub"), nil
		}},
		{"detached HEAD", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), risky)
			write(t, filepath.Join(root, ".git", "HEAD"), strings.Repeat("a1", 20)+"\n")
			return root, []Risk{{"core.fsmonitor", root + "/.git/config:2"}}
		}},
		{"bare repository", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, "r.git"), risky)
			return filepath.Join(root, "r.git"), []Risk{{"core.fsmonitor", root + "/r.git/config:2"}}
		}},
		{"inside the .git directory", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), risky)
			return filepath.Join(root, ".git", "refs"), []Risk{{"core.fsmonitor", root + "/.git/config:2"}}
		}},
		{"linked worktree", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, "main", ".git"), risky)
			wt := filepath.Join(root, "main", ".git", "worktrees", "wt")
			write(t, filepath.Join(wt, "HEAD"), "ref: refs/heads/wt\n")
			write(t, filepath.Join(wt, "commondir"), "../..\n")
			write(t, filepath.Join(wt, "config.worktree"), "[core]\npager = evil\n")
			write(t, filepath.Join(root, "wt", ".git"), "gitdir: ../main/.git/worktrees/wt\n")
			return filepath.Join(root, "wt"), []Risk{
				{"core.fsmonitor", root + "/main/.git/config:2"},
				{"core.pager", wt + "/config.worktree:2"},
			}
		}},
		{"submodule", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), "[core]\n")
			makeGitDir(t, filepath.Join(root, ".git", "modules", "sub"), risky)
			write(t, filepath.Join(root, "sub", ".git"), "gitdir: ../.git/modules/sub\r\n")
			return filepath.Join(root, "sub"), []Risk{{"core.fsmonitor", root + "/.git/modules/sub/config:2"}}
		}},
		{"absolute gitdir", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, "store"), risky)
			write(t, filepath.Join(root, "w", ".git"), "gitdir: "+filepath.Join(root, "store")+"\n")
			return filepath.Join(root, "w"), []Risk{{"core.fsmonitor", root + "/store/config:2"}}
		}},
		{"config.worktree", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), "[extensions]\nworktreeConfig = true\n")
			write(t, filepath.Join(root, ".git", "config.worktree"), "\n[alias]\nx = !evil\n")
			return root, []Risk{{"alias.x", root + "/.git/config.worktree:3"}}
		}},
		{"include relative path", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), "[include]\n\tpath = ../common/git.inc\n[core]\n\tpager = p\n")
			write(t, filepath.Join(root, "common", "git.inc"), "[diff \"x\"]\n\ttextconv = evil\n[include]\n\tpath = more\n")
			write(t, filepath.Join(root, "common", "more"), "[gpg]\nprogram = evil\n")
			return root, []Risk{
				{"diff.x.textconv", root + "/.git/../common/git.inc:2"},
				{"gpg.program", root + "/.git/../common/more:2"},
				{"core.pager", root + "/.git/config:4"},
			}
		}},
		{"includeIf is always read", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), "[includeIf \"onbranch:never-matches\"]\n\tpath = "+root+"/inc\n")
			write(t, filepath.Join(root, "inc"), "[filter \"f\"]\n\tclean = evil\n")
			return root, []Risk{{"filter.f.clean", root + "/inc:2"}}
		}},
		{"include from home", func(t *testing.T, root string) (string, []Risk) {
			t.Setenv("HOME", filepath.Join(root, "home"))
			makeGitDir(t, filepath.Join(root, ".git"), "[include]\n\tpath = ~/inc\n")
			write(t, filepath.Join(root, "home", "inc"), "[core]\n\tfsmonitor = evil\n")
			return root, []Risk{{"core.fsmonitor", root + "/home/inc:2"}}
		}},
		{"missing and empty includes are ignored", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), "[include]\npath = nope\npath = nope/nope\npath =\n")
			return root, nil
		}},
		{"ignored include forms", func(t *testing.T, root string) (string, []Risk) {
			makeGitDir(t, filepath.Join(root, ".git"), "[include \"x\"]\npath = inc\n[includeIf]\npath = inc\n")
			write(t, filepath.Join(root, ".git", "inc"), risky)
			return root, nil
		}},
		{"include depth 10", func(t *testing.T, root string) (string, []Risk) {
			includeChain(t, filepath.Join(root, ".git"), 10, risky)
			return root, []Risk{{"core.fsmonitor", root + "/.git/inc10:2"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tempDir(t)
			dir, want := tt.setup(t, root)
			got, err := Inspect(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
		})
	}
}

func TestInspectErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) string
		err   string // with "ROOT" for the temp dir
	}{
		{"malformed config", func(t *testing.T, root string) string {
			makeGitDir(t, filepath.Join(root, ".git"), "[core]\n\tbare = false\n\tpager = \"less\n")
			return root
		}, "gitconfig: ROOT/.git/config:3: unterminated quote"},
		{"malformed include", func(t *testing.T, root string) string {
			makeGitDir(t, filepath.Join(root, ".git"), "[include]\npath = inc\n")
			write(t, filepath.Join(root, ".git", "inc"), "[core\n")
			return root
		}, "gitconfig: ROOT/.git/inc:1: bad section header"},
		{"include loop", func(t *testing.T, root string) string {
			makeGitDir(t, filepath.Join(root, ".git"), "[include]\npath = config\n")
			return root
		}, "gitconfig: ROOT/.git/config:2: includes nested more than 10 deep"},
		{"include depth 11", func(t *testing.T, root string) string {
			includeChain(t, filepath.Join(root, ".git"), 11, "")
			return root
		}, "gitconfig: ROOT/.git/inc10:2: includes nested more than 10 deep"},
		{"include without value", func(t *testing.T, root string) string {
			makeGitDir(t, filepath.Join(root, ".git"), "[include]\npath\n")
			return root
		}, "gitconfig: ROOT/.git/config:2: include path has no value"},
		{"include of a directory", func(t *testing.T, root string) string {
			makeGitDir(t, filepath.Join(root, ".git"), "[include]\npath = objects\n")
			return root
		}, "gitconfig: ROOT/.git/config:2: include: read ROOT/.git/objects: not a regular file"},
		{"config too large", func(t *testing.T, root string) string {
			makeGitDir(t, filepath.Join(root, ".git"), "[core]\n"+strings.Repeat("# padding\n", maxFileSize/10+1))
			return root
		}, "gitconfig: read ROOT/.git/config: file larger than 1 MiB"},
		{"bad gitfile", func(t *testing.T, root string) string {
			write(t, filepath.Join(root, ".git"), "not a gitfile\n")
			return root
		}, "gitconfig: ROOT/.git: invalid gitfile format"},
		{"gitfile pointing at nothing", func(t *testing.T, root string) string {
			write(t, filepath.Join(root, ".git"), "gitdir: nowhere\n")
			return root
		}, "gitconfig: ROOT/.git: lstat ROOT/nowhere: no such file or directory"},
		{"gitfile pointing at a non-repository", func(t *testing.T, root string) string {
			os.MkdirAll(filepath.Join(root, "empty"), 0o755)
			write(t, filepath.Join(root, ".git"), "gitdir: empty\n")
			return root
		}, "gitconfig: ROOT/.git: ROOT/empty is not a git repository"},
		{"missing directory", func(t *testing.T, root string) string {
			return filepath.Join(root, "nope")
		}, "gitconfig: lstat ROOT/nope: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tempDir(t)
			dir := tt.setup(t, root)
			got, err := Inspect(dir)
			want := strings.ReplaceAll(tt.err, "ROOT", root)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Inspect = %v, %v; want error %q", got, err, want)
			}
		})
	}
}

// includeChain makes gitDir a git directory whose config includes inc1,
// which includes inc2, and so on to incN, which holds last.
func includeChain(t *testing.T, gitDir string, n int, last string) {
	makeGitDir(t, gitDir, "[include]\npath = inc1\n")
	for i := 1; i < n; i++ {
		write(t, filepath.Join(gitDir, fmt.Sprint("inc", i)), fmt.Sprintf("[include]\npath = inc%d\n", i+1))
	}
	write(t, filepath.Join(gitDir, fmt.Sprint("inc", n)), last)
}

func TestInspectOutsideRepository(t *testing.T) {
	root := tempDir(t)
	if d, err := findGitDir(root); d != "" || err != nil {
		t.Skipf("the temporary directory is inside a repository (%q, %v)", d, err)
	}
	got, err := Inspect(root)
	if got != nil || err != nil {
		t.Errorf("Inspect = %v, %v; want nil, nil", got, err)
	}
}

func TestRisky(t *testing.T) {
	tests := []struct {
		key, value string
		want       bool
	}{
		{"core.fsmonitor", "/x", true},
		{"core.fsmonitor", "true", true},
		{"core.fsmonitor", "FALSE", false},
		{"core.fsmonitor", "0", false},
		{"core.fsmonitor", "off", false},
		{"core.fsmonitor", "", false},
		{"core.fsmonitor", " false", true}, // git sees a hook named " false"
		{"Core.FSMonitor", "x", true},
		{"core.pager", "less", true},
		{"core.pager", "cat", false},
		{"core.pager", "no", false},
		{"pager.log", "less", true},
		{"pager.log", "yes", false},
		{"pager.log", "cat", false},
		{"pager.x.log", "less", true},
		{"diff.external", "x", true},
		{"diff.external", "false", false},
		{"diff.textconv", "x", false}, // needs a driver
		{"diff.x.textconv", "x", true},
		{"diff.a.b.textconv", "x", true},
		{"diff.x.command", "x", true},
		{"diff.x.binary", "true", false},
		{"filter.x.clean", "x", true},
		{"filter.x.smudge", "x", true},
		{"filter.x.process", "x", true},
		{"filter.x.required", "true", false},
		{"gpg.program", "x", true},
		{"gpg.ssh.program", "x", true},
		{"gpg.format", "ssh", false},
		{"alias.x", "!sh", true},
		{"alias.x", " \t!sh", true},
		{"alias.x", "status", false},
		{"alias.x.y", "!sh", true},
		{"log.showsignature", "true", false},
		{"core.hookspath", "x", false},
		{"core.sshcommand", "x", false},
		{"credential.helper", "x", false},
		{"core", "x", false},
	}
	for _, tt := range tests {
		if got := Risky(tt.key, tt.value); got != tt.want {
			t.Errorf("Risky(%q, %q) = %v, want %v", tt.key, tt.value, got, tt.want)
		}
	}
}

// git status refreshes the index, which runs the post-index-change hook:
// an executable one is reported, in .git/hooks or under core.hooksPath.
func TestInspectHooks(t *testing.T) {
	for _, tc := range []struct {
		name, config, hookDir string
		want                  bool
	}{
		{"default hooks dir", "", ".git/hooks", true},
		{"hooksPath", "[core]\n\thooksPath = myhooks\n", "myhooks", true},
		{"not executable", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			makeGitDir(t, filepath.Join(root, ".git"), tc.config+"\n")
			mode := os.FileMode(0o755)
			dir := tc.hookDir
			if dir == "" {
				dir, mode = ".git/hooks", 0o644
			}
			hook := filepath.Join(root, dir, "post-index-change")
			write(t, hook, "#!/bin/sh\ntouch /tmp/pwned\n")
			if err := os.Chmod(hook, mode); err != nil {
				t.Fatal(err)
			}
			risks, err := Inspect(root)
			if err != nil {
				t.Fatal(err)
			}
			got := len(risks) == 1 && risks[0].Key == "hooks.post-index-change"
			if got != tc.want {
				t.Fatalf("risks = %+v, want hook reported: %v", risks, tc.want)
			}
		})
	}
}
