package intent

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

func registerGitRules() { rules["git"] = gitRule }

var gitGlobalSpec = func() *optSpec {
	s := spec("C:c:pPhv", "config-env=", "paginate", "no-pager", "git-dir=", "work-tree=",
		"namespace=", "bare", "no-replace-objects", "literal-pathspecs", "glob-pathspecs",
		"noglob-pathspecs", "icase-pathspecs", "no-optional-locks", "exec-path?", "html-path",
		"man-path", "info-path", "version", "help", "list-cmds=", "attr-source=", "super-prefix=",
		"no-lazy-fetch", "no-advice")
	s.noAbbrev = true
	s.posixStop = true
	return s
}()

// gitReadOnly lists subcommands that only read the repository. They are
// read_only_conditional: repository config can still make them run programs.
var gitReadOnly = map[string]bool{
	"status": true, "log": true, "show": true, "diff": true, "blame": true, "annotate": true,
	"grep": true, "shortlog": true, "describe": true, "rev-parse": true, "rev-list": true,
	"ls-files": true, "ls-tree": true, "cat-file": true, "show-ref": true, "for-each-ref": true,
	"merge-base": true, "name-rev": true, "count-objects": true, "whatchanged": true,
	"range-diff": true, "cherry": true, "check-ignore": true, "check-attr": true,
	"check-ref-format": true, "diff-tree": true, "diff-index": true, "diff-files": true,
	"show-branch": true, "var": true, "version": true, "verify-commit": true, "verify-tag": true,
	"verify-pack": true, "fsck": true, "ls-remote": true, "get-tar-commit-id": true,
	"archive": true, "branch": true, "tag": true, "remote": true, "config": true, "stash": true,
	"reflog": true, "worktree": true, "notes": true, "submodule": true, "apply": true, "bundle": true,
	"clean": true,
}

// gitDangerous are subcommand options that write files or run programs
// (DESIGN §4). git's option parser accepts unique abbreviations, so any
// prefix of these names counts.
var gitDangerous = map[string]Code{
	"output": CodeWriteOption, "ext-diff": CodeRunsProgram, "textconv": CodeRunsProgram,
	"open-files-in-pager": CodeRunsProgram, "filters": CodeRunsProgram,
	"upload-pack": CodeRunsProgram, "exec": CodeRunsProgram, "receive-pack": CodeRunsProgram,
	"lost-found": CodeWriteOption,
}

func gitRule(c *call) {
	p := c.parse(gitGlobalSpec)
	if !c.strict(p) {
		return
	}
	dir, dirKnown := c.w.dir, c.w.dirKnown
	for _, o := range p.opts {
		switch o.name {
		case "-c", "--config-env":
			c.a.failClosed(CodeGitConfigOverride, fmt.Sprintf("git %s %s can set options that run programs", o.name, o.value))
			return
		case "-p", "--paginate":
			c.a.writes(CodeRunsProgram, RiskHighWrite, "git "+o.name+" runs the configured pager program")
			return
		case "--exec-path":
			if o.hasValue {
				c.a.failClosed(CodeRunsProgram, "git --exec-path= runs git's helpers from another directory")
				return
			}
		case "-C":
			if path.IsAbs(o.value) {
				dir = path.Clean(o.value)
			} else {
				dir = path.Join(dir, o.value)
			}
		case "--git-dir", "--work-tree":
			dirKnown = false
		}
	}
	if len(p.operands) == 0 {
		return // git --version, git --help, git -C x
	}
	args := c.rest()[p.operands[0]:]
	sub := args[0].val
	if !args[0].literal() {
		c.a.failClosed(CodeDynamicCommand, "git subcommand "+args[0].src+" is computed at run time")
		return
	}
	rest := args[1:]
	if !gitReadOnly[sub] {
		gitWrite(c, sub, rest)
		return
	}
	for _, a := range rest {
		if a.val == "--" && a.literal() {
			break
		}
		if a.mayBeOption() {
			c.a.writes(CodeDynamicCommand, RiskMediumWrite, fmt.Sprintf("git %s: argument %s may expand into an option", sub, a.src))
			return
		}
		if code, ok := gitDangerousOption(sub, a.val); ok {
			c.a.writes(code, RiskHighWrite, fmt.Sprintf("git %s %s %s", sub, a.val, map[Code]string{CodeWriteOption: "writes a file", CodeRunsProgram: "runs a program"}[code]))
			return
		}
	}
	if detail, write := gitSubcommandWrites(sub, rest); write {
		gitWriteDetail(c, sub, rest, detail)
		return
	}
	gitConfigCheck(c, sub, dir, dirKnown)
}

func gitDangerousOption(sub, v string) (Code, bool) {
	if sub == "grep" && strings.HasPrefix(v, "-O") {
		return CodeRunsProgram, true
	}
	if sub == "ls-remote" && (v == "-u" || strings.HasPrefix(v, "-u")) {
		return CodeRunsProgram, true
	}
	if sub == "archive" && (v == "-o" || strings.HasPrefix(v, "-o")) {
		return CodeWriteOption, true
	}
	name, ok := strings.CutPrefix(v, "--")
	if !ok || name == "" {
		return "", false
	}
	name, _, _ = strings.Cut(name, "=")
	for d, code := range gitDangerous {
		if strings.HasPrefix(d, name) && (len(name) >= 3 || name == d) {
			return code, true
		}
	}
	return "", false
}

// gitSubcommandWrites decides the subcommands that both list and modify.
func gitSubcommandWrites(sub string, rest []*arg) (string, bool) {
	var flags, operands []string
	for i, a := range rest {
		if a.val == "--" {
			for _, b := range rest[i+1:] {
				operands = append(operands, b.val)
			}
			break
		}
		if strings.HasPrefix(a.val, "-") && a.val != "-" {
			flags = append(flags, a.val)
		} else {
			operands = append(operands, a.val)
		}
	}
	has := func(names ...string) bool {
		for _, f := range flags {
			for _, n := range names {
				if f == n || strings.HasPrefix(n, "--") && strings.HasPrefix(f, n+"=") {
					return true
				}
				if !strings.HasPrefix(n, "--") && len(n) == 2 && !strings.HasPrefix(f, "--") && strings.Contains(f[1:], n[1:]) {
					return true
				}
			}
		}
		return false
	}
	first := ""
	if len(operands) > 0 {
		first = operands[0]
	}
	switch sub {
	case "branch":
		if has("-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force",
			"--set-upstream-to", "-u", "--unset-upstream", "--edit-description", "-t", "--track",
			"--no-track", "--create-reflog") {
			return "git branch with these options changes branches", true
		}
		if len(operands) > 0 && !has("-l", "--list", "-a", "--all", "-r", "--remotes", "--contains",
			"--no-contains", "--merged", "--no-merged", "--points-at", "--format", "--sort", "--show-current", "-v", "-vv", "--verbose") {
			return "git branch NAME creates a branch", true
		}
	case "tag":
		if has("-d", "--delete", "-a", "--annotate", "-s", "--sign", "-u", "--local-user", "-m",
			"--message", "-F", "--file", "-f", "--force", "-e", "--edit", "--create-reflog") {
			return "git tag with these options creates or deletes tags", true
		}
		if len(operands) > 0 && !has("-l", "--list", "-n", "--contains", "--no-contains", "--points-at",
			"--merged", "--no-merged", "--sort", "--format", "-v", "--verify", "--column") {
			return "git tag NAME creates a tag", true
		}
	case "remote":
		switch first {
		case "", "show", "get-url":
		default:
			return "git remote " + first + " changes remotes", true
		}
	case "config":
		switch first {
		case "get", "list":
			return "", false
		case "set", "unset", "rename-section", "remove-section", "edit", "--add":
			return "git config " + first + " changes configuration", true
		}
		if has("--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
			"--remove-section", "-e", "--edit") {
			return "git config changes configuration", true
		}
		if has("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--get-color", "--get-colorbool") {
			return "", false
		}
		if len(operands) >= 2 {
			return "git config KEY VALUE sets an option", true
		}
	case "stash":
		if first != "list" && first != "show" {
			return "git stash " + first + " changes the stash and work tree", true
		}
	case "reflog":
		if first != "" && first != "show" && first != "exists" && first != "list" {
			return "git reflog " + first + " rewrites the reflog", true
		}
	case "worktree", "notes":
		if first != "list" && !(sub == "notes" && (first == "show" || first == "")) {
			return "git " + sub + " " + first + " changes the repository", true
		}
	case "submodule":
		if first != "status" && first != "summary" && first != "" {
			return "git submodule " + first + " changes submodules", true
		}
	case "apply":
		if !has("--check", "--stat", "--numstat", "--summary") || has("--apply", "--index", "--cached") {
			return "git apply changes files", true
		}
	case "bundle":
		if first != "verify" && first != "list-heads" {
			return "git bundle " + first + " writes files", true
		}
	case "clean":
		if !has("-n", "--dry-run") {
			return "git clean deletes untracked files", true
		}
	}
	return "", false
}

// gitWriteDetail records a listing subcommand used to modify.
func gitWriteDetail(c *call, sub string, rest []*arg, detail string) {
	c.a.writes(CodeWriteSubcommand, RiskMediumWrite, detail)
	switch {
	case sub == "branch" && gitHasFlag(rest, "-D"),
		sub == "stash" && len(rest) > 0 && (rest[0].val == "drop" || rest[0].val == "clear"),
		sub == "clean",
		sub == "reflog" && len(rest) > 0 && (rest[0].val == "expire" || rest[0].val == "delete"):
		c.a.destroys(detail)
	}
}

func gitHasFlag(rest []*arg, flag string) bool {
	for _, a := range rest {
		if a.val == flag || len(flag) == 2 && strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.Contains(a.val[1:], flag[1:]) {
			return true
		}
	}
	return false
}

// gitWrite classifies the subcommands that change the repository or remote.
func gitWrite(c *call, sub string, rest []*arg) {
	risk := RiskMediumWrite
	switch sub {
	case "fetch":
		risk = RiskLowWrite
	case "add", "commit", "merge", "rebase", "cherry-pick", "revert", "mv", "pull", "clone", "init",
		"am", "gc", "prune", "repack", "switch", "checkout", "restore", "reset", "rm", "push",
		"update-ref", "update-index", "filter-branch", "filter-repo", "replace", "symbolic-ref",
		"format-patch", "send-email", "bisect", "sparse-checkout", "maintenance", "lfs", "mergetool",
		"difftool", "request-pull", "fast-import", "hash-object", "mktree", "commit-tree", "read-tree",
		"write-tree", "checkout-index", "pack-refs", "prune-packed", "rerere", "citool", "gui", "instaweb",
		"daemon", "http-backend", "credential", "help":
	default:
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, fmt.Sprintf("git %s is not a known read-only subcommand (aliases can run programs)", sub))
		return
	}
	c.a.writes(CodeWriteSubcommand, risk, "git "+sub+" changes the repository, work tree or remote")
	destructive := ""
	switch sub {
	case "push":
		for _, a := range rest {
			v := a.val
			if v == "-f" || v == "--force" || strings.HasPrefix(v, "--force-with-lease") || v == "--force-if-includes" ||
				v == "--mirror" || v == "-d" || v == "--delete" || v == "--prune" ||
				!strings.HasPrefix(v, "-") && (strings.HasPrefix(v, "+") || strings.HasPrefix(v, ":")) ||
				strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.ContainsAny(v[1:], "fd") {
				destructive = "git push " + v + " overwrites or deletes remote history"
			}
		}
	case "reset":
		if gitHasFlag(rest, "--hard") || gitHasFlag(rest, "--merge") || gitHasFlag(rest, "--keep") {
			destructive = "git reset --hard discards uncommitted changes"
		}
	case "checkout":
		for _, a := range rest {
			if a.val == "--" || a.val == "-f" || a.val == "--force" || a.val == "." {
				destructive = "git checkout " + a.val + " overwrites uncommitted changes"
			}
		}
	case "restore":
		if !gitHasFlag(rest, "--staged") || gitHasFlag(rest, "--worktree") {
			destructive = "git restore discards uncommitted changes"
		}
	case "rm":
		destructive = "git rm deletes files"
	case "filter-branch", "filter-repo":
		destructive = "git " + sub + " rewrites history"
	case "update-ref":
		if gitHasFlag(rest, "-d") {
			destructive = "git update-ref -d deletes a ref"
		}
	case "switch":
		if gitHasFlag(rest, "--discard-changes") || gitHasFlag(rest, "-f") || gitHasFlag(rest, "--force") {
			destructive = "git switch --discard-changes discards uncommitted changes"
		}
	}
	if destructive != "" {
		c.a.destroys(destructive)
	}
}

// gitConfigCheck makes a read-only git subcommand conditional on repository
// config, or, with RepoConfig (--cwd), checks that config (DESIGN §4).
func gitConfigCheck(c *call, sub, dir string, dirKnown bool) {
	cl := c.w.c
	if cl.opts.RepoConfig == nil {
		c.a.conditionally(CodeGitConfigDependent, fmt.Sprintf("git %s is read-only unless repository config runs programs (core.fsmonitor, textconv, pagers)", sub))
		return
	}
	if !dirKnown {
		c.a.writes(CodeGitConfigUnchecked, RiskMediumWrite, fmt.Sprintf("git %s runs in a repository chosen at run time (cd, --git-dir, --work-tree, remote shell), whose config was not checked", sub))
		return
	}
	risks, err := cl.repoConfig(dir)
	if err != nil {
		c.a.writes(CodeGitConfigUnchecked, RiskMediumWrite, fmt.Sprintf("git %s: reading the git config of %s failed: %v", sub, dir, err))
		return
	}
	var found []string
	for _, r := range risks {
		if strings.HasPrefix(r.Key, "alias.") {
			continue // an alias runs only when used as the subcommand, which is never read-only
		}
		found = append(found, fmt.Sprintf("%s (%s)", r.Key, r.Source))
	}
	if len(found) > 0 {
		sort.Strings(found)
		c.a.writes(CodeGitConfigRisk, RiskHighWrite, fmt.Sprintf("git %s would run programs set by %s", sub, strings.Join(found, ", ")))
		return
	}
	c.a.conditionally(CodeGitConfigDependent, fmt.Sprintf("git %s: the repository config in %s sets nothing that runs programs", sub, dir))
}
