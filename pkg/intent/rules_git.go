package intent

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

func registerGitRules() { rules["git"] = gitRule }

var gitGlobalSpec = getopt.New("C:c:pPhv", "config-env=", "paginate", "no-pager", "git-dir=", "work-tree=",
	"namespace=", "bare", "no-replace-objects", "literal-pathspecs", "glob-pathspecs",
	"noglob-pathspecs", "icase-pathspecs", "no-optional-locks", "exec-path?", "html-path",
	"man-path", "info-path", "version", "help", "list-cmds=", "attr-source=", "super-prefix=",
	"no-lazy-fetch", "no-advice").NoAbbreviations().StopAtOperand()

// gitForm is how one read-capable git subcommand (or sub-subcommand) is
// parsed and judged: every option goes through the one option parser
// (issue 14), so an option the spec does not know fails closed and a
// unique abbreviation (--outp) is the option it abbreviates (--output).
type gitForm struct {
	opts   *getopt.Spec
	runs   map[string]string // options that run a program
	writes map[string]string // options that write files
	// check judges the forms that change the repository (git branch NAME):
	// it returns what they do, and whether that destroys data.
	check func(p *getopt.Parsed, ops []*arg) (detail string, destroys bool)
	// pager: the form shows text through a pager or viewer (git help NAME).
	pager func(p *getopt.Parsed, ops []*arg) string
}

var (
	gitDiffRuns   = map[string]string{"--ext-diff": "runs the configured external diff program", "--textconv": "runs the configured textconv filters"}
	gitDiffWrites = map[string]string{"--output": "writes its output to a file"}
)

// gitForms are the subcommands that only read, as they are parsed.
// They stay read_only_conditional: repository config can still make them
// run programs (gitConfigCheck).
var gitForms = func() map[string]*gitForm {
	logForm := &gitForm{opts: gitLogSpec, runs: gitDiffRuns, writes: gitDiffWrites}
	diffTree := &gitForm{opts: gitDiffTreeSpec, runs: gitDiffRuns, writes: gitDiffWrites}
	plain := func(s *getopt.Spec) *gitForm { return &gitForm{opts: s} }
	return map[string]*gitForm{
		"status": plain(gitStatusSpec), "log": logForm, "show": logForm, "whatchanged": logForm,
		"rev-list": logForm, "diff": {opts: gitDiffSpec, runs: gitDiffRuns, writes: gitDiffWrites},
		"diff-tree": diffTree, "diff-index": diffTree, "diff-files": diffTree,
		"range-diff":        {opts: gitRangeDiffSpec, runs: gitDiffRuns, writes: gitDiffWrites},
		"shortlog":          plain(gitShortlogSpec),
		"blame":             plain(gitBlameSpec),
		"annotate":          plain(gitBlameSpec),
		"grep":              {opts: gitGrepSpec, runs: map[string]string{"-O": "opens the matching files in a pager program", "--open-files-in-pager": "opens the matching files in a pager program", "--textconv": "runs the configured textconv filters"}},
		"describe":          plain(gitDescribeSpec),
		"rev-parse":         plain(gitRevParseSpec),
		"ls-files":          plain(gitLsFilesSpec),
		"ls-tree":           plain(gitLsTreeSpec),
		"cat-file":          {opts: gitCatFileSpec, runs: map[string]string{"--textconv": "runs the configured textconv filters", "--filters": "runs the configured smudge and textconv filters"}},
		"show-ref":          plain(gitShowRefSpec),
		"for-each-ref":      plain(gitForEachRefSpec),
		"merge-base":        plain(gitMergeBaseSpec),
		"name-rev":          plain(gitNameRevSpec),
		"count-objects":     plain(gitCountObjsSpec),
		"cherry":            plain(gitCherrySpec),
		"check-ignore":      plain(gitCheckIgnoreSpec),
		"check-attr":        plain(gitCheckAttrSpec),
		"check-ref-format":  plain(gitCheckRefSpec),
		"show-branch":       plain(gitShowBranchSpec),
		"var":               plain(gitVarSpec),
		"version":           plain(gitVersionSpec),
		"verify-commit":     plain(gitVerifySpec),
		"verify-tag":        plain(gitVerifySpec),
		"verify-pack":       plain(gitVerifyPackSpec),
		"fsck":              {opts: gitFsckSpec, writes: map[string]string{"--lost-found": "writes dangling objects into .git/lost-found"}},
		"ls-remote":         {opts: gitLsRemoteSpec, runs: map[string]string{"--upload-pack": "runs a program as the remote's upload-pack", "-u": "runs a program as the remote's upload-pack"}},
		"get-tar-commit-id": plain(gitTarIDSpec),
		"archive":           {opts: gitArchiveSpec, writes: map[string]string{"-o": "writes the archive to a file", "--output": "writes the archive to a file"}, runs: map[string]string{"--exec": "runs a program as the remote's upload-archive"}},
		"branch":            {opts: gitBranchSpec, check: gitBranchCheck},
		"tag":               {opts: gitTagSpec, check: gitTagCheck},
		"clean":             {opts: gitCleanSpec, check: gitCleanCheck},
		"apply":             {opts: gitApplySpec, writes: map[string]string{"--build-fake-ancestor": "writes a temporary index file"}, check: gitApplyCheck},
		"config":            {opts: gitConfigSpec, check: gitConfigWrites},
		"symbolic-ref":      {opts: gitSymbolicRefSpec, check: gitSymbolicRefCheck},
		"help":              {opts: gitHelpSpec, check: gitHelpCheck, pager: gitHelpPager},
	}
}()

// gitGroups are the subcommands with sub-subcommands: they return the form
// of the words after the sub-subcommand, or what the write form does.
var gitGroups = map[string]func(rest []*arg) (form *gitForm, args []*arg, detail string, destroys bool){
	"stash": func(rest []*arg) (*gitForm, []*arg, string, bool) {
		switch first := gitFirstWord(rest); first {
		case "list":
			return gitForms["log"], rest[1:], "", false
		case "show":
			return &gitForm{opts: gitStashShowSpec, runs: gitDiffRuns, writes: gitDiffWrites}, rest[1:], "", false
		case "drop", "clear":
			return nil, nil, "git stash " + first + " deletes stashed changes", true
		default:
			return nil, nil, strings.TrimSpace("git stash "+first) + " changes the stash and work tree", false
		}
	},
	"reflog": func(rest []*arg) (*gitForm, []*arg, string, bool) {
		switch first := gitFirstWord(rest); first {
		case "show":
			return gitForms["log"], rest[1:], "", false
		case "list", "exists":
			return &gitForm{opts: gitReflogExists}, rest[1:], "", false
		case "expire", "delete", "drop":
			return nil, nil, "git reflog " + first + " deletes reflog entries", true
		default: // git reflog [log options] [REF] is git reflog show
			return gitForms["log"], rest, "", false
		}
	},
	"worktree": func(rest []*arg) (*gitForm, []*arg, string, bool) {
		if first := gitFirstWord(rest); first != "list" {
			return nil, nil, strings.TrimSpace("git worktree "+first) + " creates, moves or removes work trees and branches", first == "remove" || first == "prune"
		}
		return &gitForm{opts: gitWorktreeList}, rest[1:], "", false
	},
	"notes": func(rest []*arg) (*gitForm, []*arg, string, bool) {
		// git notes [--ref REF] [list|show|get-ref …]: --ref is the only
		// option before the subcommand; list, show and get-ref take none.
		first, lead, after, form := gitGroupLead("notes", rest, gitNotesLead)
		switch first {
		case "":
			return form, rest, "", false
		case "list", "show", "get-ref":
			return &gitForm{opts: gitNotesSpec}, append(append([]*arg{}, lead...), after...), "", false
		default:
			return nil, nil, "git notes " + first + " changes notes refs", first == "remove" || first == "prune"
		}
	},
	"remote": func(rest []*arg) (*gitForm, []*arg, string, bool) {
		// git remote [-v] [show|get-url …]
		first, _, after, form := gitGroupLead("remote", rest, gitRemoteLead)
		switch first {
		case "":
			return form, rest, "", false
		case "show":
			return &gitForm{opts: gitRemoteShowSpec}, after, "", false
		case "get-url":
			return &gitForm{opts: gitRemoteURLSpec}, after, "", false
		default:
			return nil, nil, "git remote " + first + " changes remotes", first == "remove" || first == "rm"
		}
	},
	"submodule": func(rest []*arg) (*gitForm, []*arg, string, bool) {
		// git submodule [-q] [--cached] [status|summary …]
		first, _, after, form := gitGroupLead("submodule", rest, gitSubmoduleLead)
		switch first {
		case "":
			return form, rest, "", false
		case "status":
			return &gitForm{opts: gitSubmoduleStatus}, after, "", false
		case "summary":
			return &gitForm{opts: gitSubmoduleSumm}, after, "", false
		default:
			return nil, nil, "git submodule " + first + " changes submodules or runs commands in them", first == "deinit"
		}
	},
	"bundle": func(rest []*arg) (*gitForm, []*arg, string, bool) {
		switch first := gitFirstWord(rest); first {
		case "verify", "list-heads":
			return &gitForm{opts: gitBundleVerify}, rest[1:], "", false
		default:
			return nil, nil, strings.TrimSpace("git bundle "+first) + " writes or unbundles files", false
		}
	},
	"bisect": func(rest []*arg) (*gitForm, []*arg, string, bool) {
		switch first := gitFirstWord(rest); first {
		case "log":
			return &gitForm{opts: gitReflogExists}, rest[1:], "", false
		case "terms":
			return &gitForm{opts: gitBisectTerms}, rest[1:], "", false
		case "visualize", "view":
			return nil, nil, "git bisect " + first + " runs gitk (or git log through a pager)", false
		default:
			return nil, nil, strings.TrimSpace("git bisect "+first) + " moves HEAD and writes the bisection state", false
		}
	},
}

var (
	gitStashShowSpec = gitSpec(gitDiffShort+"u", gitDiffLongs, []string{"include-untracked", "no-include-untracked", "only-untracked"})
	gitBisectTerms   = getopt.New("", "term-good", "term-bad", "term-old", "term-new")
)

// Options a group takes before its sub-subcommand (issue 14): git notes
// --ref (parse-options: abbreviations allowed), git remote -v, and git
// submodule's shell parser (-q, --quiet, --cached, exact words only).
var (
	gitNotesLead     = getopt.New("", "ref=").StopAtOperand()
	gitRemoteLead    = getopt.New("v", "verbose").StopAtOperand()
	gitSubmoduleLead = getopt.New("q", "quiet", "cached").NoAbbreviations().StopAtOperand()
)

// gitGroupLead splits a group's leading options (by its spec, never by
// matching words) from its sub-subcommand: it returns the sub-subcommand
// (or ""), the option words before it, the words after it, and the form
// that judges rest when there is none. With an option the spec does not
// know, an expansion or a computed sub-subcommand, that form fails closed
// (an unknown option could take the real sub-subcommand as its value; a
// glob like a* could match "add").
func gitGroupLead(group string, rest []*arg, lead *getopt.Spec) (first string, before, after []*arg, form *gitForm) {
	p := parseArgs(rest, lead)
	bare := &gitForm{opts: lead}
	if len(p.Unknown) > 0 || len(p.Dynamic) > 0 {
		return "", nil, nil, bare // gitRule reports the unknown option or expansion
	}
	if p.DashDash >= 0 || len(p.Operands) == 0 {
		// git remote -- add x y: parse-options drops "--" and the words
		// after it are no subcommand (git refuses them); with none, the
		// group lists.
		return "", nil, nil, &gitForm{opts: lead, check: func(_ *getopt.Parsed, ops []*arg) (string, bool) {
			if len(ops) > 0 {
				return "git " + group + " -- " + ops[0].val + ": words after -- are not a known read-only form", false
			}
			return "", false
		}}
	}
	i := p.Operands[0]
	if !rest[i].literal() {
		return "", nil, nil, &gitForm{opts: lead, check: func(*getopt.Parsed, []*arg) (string, bool) {
			return "git " + group + " " + rest[i].src + ": the subcommand is computed at run time", false
		}}
	}
	return rest[i].val, rest[:i], rest[i+1:], bare
}

// gitFirstWord is a group's sub-subcommand: the first word when it is not
// an option, "" otherwise.
func gitFirstWord(rest []*arg) string {
	if len(rest) == 0 || strings.HasPrefix(rest[0].val, "-") || !rest[0].literal() {
		return ""
	}
	return rest[0].val
}

func gitRule(c *call) {
	p := c.parse(gitGlobalSpec)
	if !c.strict(p) {
		return
	}
	dir, dirKnown := c.w.dir, c.w.dirKnown
	for _, o := range p.Opts {
		switch o.Name {
		case "-c", "--config-env":
			c.a.failClosed(CodeGitConfigOverride, fmt.Sprintf("git %s %s can set options that run programs", o.Name, o.Value))
			return
		case "-p", "--paginate":
			c.a.writes(CodeRunsProgram, RiskHighWrite, "git "+o.Name+" runs the configured pager program")
			return
		case "--exec-path":
			if o.HasValue {
				c.a.failClosed(CodeRunsProgram, "git --exec-path= runs git's helpers from another directory")
				return
			}
		case "-C":
			if path.IsAbs(o.Value) {
				dir = path.Clean(o.Value)
			} else {
				dir = path.Join(dir, o.Value)
			}
		case "--git-dir", "--work-tree":
			dirKnown = false
		}
	}
	if len(p.Operands) == 0 {
		return // git --version, git --help, git -C x
	}
	args := c.rest()[p.Operands[0]:]
	sub := args[0].val
	if !args[0].literal() {
		c.a.failClosed(CodeDynamicCommand, "git subcommand "+args[0].src+" is computed at run time")
		return
	}
	rest := args[1:]
	form := gitForms[sub]
	if group, ok := gitGroups[sub]; ok {
		if len(rest) > 0 && rest[0].mayBeOption() {
			c.a.writes(CodeDynamicCommand, RiskMediumWrite, fmt.Sprintf("git %s: argument %s may expand into a subcommand or option", sub, rest[0].src))
			return
		}
		var detail string
		var destroys bool
		form, rest, detail, destroys = group(rest)
		if form == nil {
			c.a.writes(CodeWriteSubcommand, RiskMediumWrite, detail)
			if destroys {
				c.a.destroys(detail)
			}
			return
		}
	}
	if form == nil {
		gitWrite(c, sub, rest)
		return
	}
	gp := c.parseWords(rest, form.opts)
	if len(gp.Dynamic) > 0 {
		c.a.writes(CodeDynamicCommand, RiskMediumWrite, "git "+sub+": argument "+gp.Dynamic[0]+" may expand into an option")
		return
	}
	if len(gp.Unknown) > 0 {
		c.a.writes(CodeWriteOption, RiskMediumWrite, "git "+sub+": option "+gp.Unknown[0]+" is not known to be read-only")
		return
	}
	found := false
	for _, o := range gp.Opts {
		if what, ok := form.runs[o.Name]; ok {
			c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("git %s %s %s", sub, o.Name, what))
			found = true
		}
		if what, ok := form.writes[o.Name]; ok {
			c.a.writes(CodeWriteOption, RiskHighWrite, fmt.Sprintf("git %s %s %s", sub, o.Name, what))
			found = true
		}
	}
	if found {
		return
	}
	ops := make([]*arg, len(gp.Operands))
	for i, j := range gp.Operands {
		ops[i] = rest[j]
	}
	if form.check != nil {
		if detail, destroys := form.check(gp, ops); detail != "" {
			c.a.writes(CodeWriteSubcommand, RiskMediumWrite, detail)
			if destroys {
				c.a.destroys(detail)
			}
			return
		}
	}
	if form.pager != nil {
		if why := form.pager(gp, ops); why != "" {
			c.a.never(Pager, why)
		}
	}
	gitConfigCheck(c, sub, dir, dirKnown)
}

// gitBranchCheck: git branch lists, unless an option or a name makes it
// create, rename, copy, delete or reconfigure a branch (issue 14).
func gitBranchCheck(p *getopt.Parsed, ops []*arg) (string, bool) {
	if p.Has("-D") || p.Has("-d", "--delete") && p.Has("-f", "--force") {
		return "git branch -D deletes a branch whether merged or not", true
	}
	if p.Has("-d", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force",
		"-u", "--set-upstream-to", "--unset-upstream", "--edit-description", "-t", "--track",
		"--no-track", "--create-reflog", "--recurse-submodules") {
		return "git branch with these options creates, renames, copies, deletes or reconfigures branches", false
	}
	// These imply list mode; with them, names are patterns.
	if len(ops) > 0 && !p.Has("-l", "--list", "-a", "--all", "-r", "--remotes", "--contains",
		"--no-contains", "--merged", "--no-merged", "--points-at", "--show-current", "-v", "--verbose") {
		return "git branch NAME creates a branch", false
	}
	return "", false
}

// gitTagCheck: git tag lists, unless an option or a name makes it create,
// sign or delete a tag.
func gitTagCheck(p *getopt.Parsed, ops []*arg) (string, bool) {
	if p.Has("-d", "--delete") {
		return "git tag -d deletes tags", false
	}
	if p.Has("-a", "--annotate", "-s", "--sign", "-u", "--local-user", "-f", "--force", "-m",
		"--message", "-F", "--file", "-e", "--edit", "--cleanup", "--create-reflog", "--trailer") {
		return "git tag with these options creates tags", false
	}
	if len(ops) > 0 && !p.Has("-l", "--list", "-n", "--contains", "--no-contains", "--points-at",
		"--merged", "--no-merged", "-v", "--verify") {
		return "git tag NAME creates a tag", false
	}
	return "", false
}

func gitCleanCheck(p *getopt.Parsed, _ []*arg) (string, bool) {
	if p.Has("-n", "--dry-run") && !p.Has("-i", "--interactive") {
		return "", false
	}
	return "git clean deletes untracked files", true
}

// gitApplyCheck: --check, --stat, --numstat and --summary only report,
// unless --apply asks for the patch to be applied too.
func gitApplyCheck(p *getopt.Parsed, _ []*arg) (string, bool) {
	if p.Has("--check", "--stat", "--numstat", "--summary") && !p.Has("--apply") {
		return "", false
	}
	return "git apply changes files", false
}

// gitConfigWrites: both the subcommand form (git config get/set …) and
// the option form (git config --unset …).
func gitConfigWrites(p *getopt.Parsed, ops []*arg) (string, bool) {
	first := ""
	if len(ops) > 0 {
		first = ops[0].val
	}
	switch first {
	case "get", "list":
		return "", false
	case "set", "unset", "rename-section", "remove-section", "edit":
		return "git config " + first + " changes configuration", false
	}
	if p.Has("--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
		"--remove-section", "-e", "--edit") {
		return "git config with these options changes configuration", false
	}
	if p.Has("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--get-color", "--get-colorbool") {
		return "", false
	}
	if len(ops) >= 2 {
		return "git config KEY VALUE sets an option", false
	}
	return "", false
}

// gitSymbolicRefCheck: git symbolic-ref NAME reads; with a target it sets
// the ref; -d deletes it.
func gitSymbolicRefCheck(p *getopt.Parsed, ops []*arg) (string, bool) {
	if p.Has("-d", "--delete") {
		return "git symbolic-ref -d deletes a symbolic ref", true
	}
	if len(ops) != 1 || p.Has("-m") {
		return "git symbolic-ref NAME REF sets a symbolic ref", false
	}
	return "", false
}

// gitHelpCheck: git help -w opens a web browser (a program).
func gitHelpCheck(p *getopt.Parsed, _ []*arg) (string, bool) {
	if p.Has("-w", "--web") {
		return "git help -w runs a web browser", false
	}
	return "", false
}

// gitHelpPager: git help, -a, -g and --config print lists and end; git
// help NAME (and -m, -i) shows a manual through man's pager or info, which
// wait for the reader on a terminal, so it is not bounded (issue 14).
func gitHelpPager(p *getopt.Parsed, ops []*arg) string {
	if len(ops) == 0 && !p.Has("-m", "--man", "-i", "--info") {
		return ""
	}
	return "git help NAME shows the manual through man's pager or info"
}

// gitWrite specs: only to tell the destructive forms; every form writes.
var (
	gitPushSpec = getopt.New("nfdquv46o:", "all", "branches", "prune", "mirror", "dry-run", "porcelain",
		"delete", "tags", "follow-tags", "no-follow-tags", "signed?", "no-signed", "atomic",
		"no-atomic", "push-option=", "receive-pack=", "exec=", "force-with-lease?",
		"no-force-with-lease", "force-if-includes", "no-force-if-includes", "force", "repo=",
		"set-upstream", "thin", "no-thin", "quiet", "verbose", "progress", "no-progress",
		"recurse-submodules=", "no-recurse-submodules", "verify", "no-verify", "ipv4", "ipv6",
		"server-option=")
	gitResetSpec = getopt.New("qpNU:", "quiet", "no-quiet", "refresh", "no-refresh", "soft", "mixed", "hard",
		"merge", "keep", "patch", "intent-to-add", "recurse-submodules?", "no-recurse-submodules",
		"pathspec-from-file=", "pathspec-file-nul", "unified=", "inter-hunk-context=")
	gitCheckoutSpec = getopt.New("qfb:B:tlmpU:23", "quiet", "force", "track?", "no-track", "detach",
		"orphan=", "merge", "conflict=", "patch", "ours", "theirs", "ignore-skip-worktree-bits",
		"ignore-other-worktrees", "overwrite-ignore", "no-overwrite-ignore", "recurse-submodules?",
		"no-recurse-submodules", "progress", "no-progress", "pathspec-from-file=",
		"pathspec-file-nul", "overlay", "no-overlay", "guess", "no-guess", "unified=", "inter-hunk-context=")
	gitRestoreSpec = getopt.New("s:pWSqmU:23", "source=", "patch", "worktree", "staged", "quiet", "progress",
		"no-progress", "ours", "theirs", "merge", "conflict=", "ignore-unmerged",
		"ignore-skip-worktree-bits", "recurse-submodules?", "no-recurse-submodules", "overlay",
		"no-overlay", "pathspec-from-file=", "pathspec-file-nul", "unified=", "inter-hunk-context=")
	gitSwitchSpec = getopt.New("c:C:dfmqt", "create=", "force-create=", "detach", "guess", "no-guess", "force",
		"discard-changes", "merge", "conflict=", "quiet", "progress", "no-progress", "track?",
		"no-track", "orphan=", "ignore-other-worktrees", "recurse-submodules?", "no-recurse-submodules")
	gitUpdateRefSpec = getopt.New("dm:z", "no-deref", "create-reflog", "stdin", "batch-updates")
)

// gitWrite classifies the subcommands that change the repository or remote.
func gitWrite(c *call, sub string, rest []*arg) {
	risk := RiskMediumWrite
	switch sub {
	case "fetch":
		risk = RiskLowWrite
	case "add", "commit", "merge", "rebase", "cherry-pick", "revert", "mv", "pull", "clone", "init",
		"am", "gc", "prune", "repack", "switch", "checkout", "restore", "reset", "rm", "push",
		"update-ref", "update-index", "filter-branch", "filter-repo", "replace",
		"format-patch", "send-email", "sparse-checkout", "maintenance", "lfs", "mergetool",
		"difftool", "request-pull", "fast-import", "hash-object", "mktree", "commit-tree", "read-tree",
		"write-tree", "checkout-index", "pack-refs", "prune-packed", "rerere", "citool", "gui", "instaweb",
		"daemon", "http-backend", "credential":
	default:
		c.a.writes(CodeUnknownCommand, RiskMediumWrite, "git "+sub+" is not a known read-only subcommand (aliases can run programs)")
		return
	}
	c.a.writes(CodeWriteSubcommand, risk, "git "+sub+" changes the repository, work tree or remote")
	if d := gitDestroys(sub, rest); d != "" {
		c.a.destroys(d)
	}
}

// gitDestroys tells the forms that lose data. An option its spec does not
// know might be the forcing one, so it counts as destroying.
func gitDestroys(sub string, rest []*arg) string {
	specs := map[string]*getopt.Spec{"push": gitPushSpec, "reset": gitResetSpec, "checkout": gitCheckoutSpec,
		"restore": gitRestoreSpec, "switch": gitSwitchSpec, "update-ref": gitUpdateRefSpec}
	switch sub {
	case "rm":
		return "git rm deletes files"
	case "filter-branch", "filter-repo":
		return "git " + sub + " rewrites history"
	}
	s, ok := specs[sub]
	if !ok {
		return ""
	}
	p := parseArgs(rest, s)
	if len(p.Unknown) > 0 {
		return fmt.Sprintf("git %s %s: an option not known here may force or discard", sub, p.Unknown[0])
	}
	if len(p.Dynamic) > 0 {
		return fmt.Sprintf("git %s %s: an argument computed at run time may force or discard", sub, p.Dynamic[0])
	}
	switch sub {
	case "push":
		if o, ok := p.Get("-f", "--force", "--force-with-lease", "--force-if-includes", "--mirror", "-d", "--delete", "--prune"); ok {
			return "git push " + o.Name + " overwrites or deletes remote history"
		}
		for _, i := range p.Operands {
			if v := rest[i].val; strings.HasPrefix(v, "+") || strings.HasPrefix(v, ":") {
				return "git push " + v + " overwrites or deletes remote history"
			}
		}
	case "reset":
		if o, ok := p.Get("--hard", "--merge", "--keep"); ok {
			return "git reset " + o.Name + " discards uncommitted changes"
		}
	case "checkout":
		if o, ok := p.Get("-f", "--force"); ok {
			return "git checkout " + o.Name + " overwrites uncommitted changes"
		}
		if p.DashDash >= 0 {
			return "git checkout -- PATHS overwrites uncommitted changes"
		}
		for _, i := range p.Operands {
			if rest[i].val == "." {
				return "git checkout . overwrites uncommitted changes"
			}
		}
	case "restore":
		if !p.Has("-S", "--staged") || p.Has("-W", "--worktree") {
			return "git restore discards uncommitted changes"
		}
	case "switch":
		if o, ok := p.Get("--discard-changes", "-f", "--force"); ok {
			return "git switch " + o.Name + " discards uncommitted changes"
		}
	case "update-ref":
		if p.Has("-d") {
			return "git update-ref -d deletes a ref"
		}
		if p.Has("--stdin") {
			return "git update-ref --stdin may delete refs"
		}
	}
	return ""
}

// gitConfigCheck makes a read-only git subcommand conditional on repository
// config, or, with RepoConfig (--cwd), checks that config (DESIGN §4).
func gitConfigCheck(c *call, sub, dir string, dirKnown bool) {
	cl := c.w.c
	if cl.opts.RepoConfig == nil {
		c.a.conditionally(CodeGitConfigDependent, "git "+sub+" is read-only unless repository config runs programs (core.fsmonitor, textconv, pagers)")
		return
	}
	if !dirKnown {
		c.a.writes(CodeGitConfigUnchecked, RiskMediumWrite, "git "+sub+" runs in a repository chosen at run time (cd, --git-dir, --work-tree, remote shell), whose config was not checked")
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
	c.a.conditionally(CodeGitConfigDependent, "git "+sub+": the repository config in "+dir+" sets nothing that runs programs")
}

// git's subcommand options (git 2.47), for the one option parser (issue 14).
// git's parse-options accepts unique abbreviations of long options, so the
// specs are GNU-style; an option a spec does not know fails closed.

// gitSpec merges short strings and long lists into one spec.
func gitSpec(short string, longs ...[]string) *getopt.Spec {
	var all []string
	for _, l := range longs {
		all = append(all, l...)
	}
	return getopt.New(short, all...)
}

// gitDiffLongs are the diff options (Documentation/diff-options.txt)
// shared by diff, log, show, diff-tree, stash show, range-diff.
var gitDiffLongs = []string{
	"patch", "no-patch", "unified=", "output=", "output-indicator-new=", "output-indicator-old=",
	"output-indicator-context=", "raw", "patch-with-raw", "indent-heuristic", "no-indent-heuristic",
	"minimal", "patience", "histogram", "anchored=", "diff-algorithm=", "stat?", "stat-width=",
	"stat-name-width=", "stat-graph-width=", "stat-count=", "compact-summary", "numstat", "shortstat",
	"dirstat?", "cumulative", "dirstat-by-file?", "summary", "patch-with-stat", "name-only",
	"name-status", "submodule?", "color?", "no-color", "color-moved?", "no-color-moved",
	"color-moved-ws=", "no-color-moved-ws", "word-diff?", "word-diff-regex=", "color-words?",
	"no-renames", "renames", "rename-empty", "no-rename-empty", "check", "ws-error-highlight=",
	"full-index", "binary", "abbrev?", "no-abbrev", "break-rewrites?", "find-renames?",
	"find-copies?", "find-copies-harder", "irreversible-delete", "diff-filter=", "find-object=",
	"pickaxe-all", "pickaxe-regex", "skip-to=", "rotate-to=", "relative?", "no-relative", "text",
	"ignore-cr-at-eol", "ignore-space-at-eol", "ignore-space-change", "ignore-all-space",
	"ignore-blank-lines", "ignore-matching-lines=", "inter-hunk-context=", "function-context",
	"no-function-context", "exit-code", "quiet", "ext-diff", "no-ext-diff", "textconv",
	"no-textconv", "ignore-submodules?", "src-prefix=", "dst-prefix=", "no-prefix",
	"default-prefix", "line-prefix=", "ita-invisible-in-index", "ita-visible-in-index",
	"combined-all-paths", "cc", "dd", "diff-merges=", "no-diff-merges", "remerge-diff",
	"max-depth=", "no-stat", "merge-base", "follow", "no-follow",
}

// gitDiffShort: -p -u -s -U<n> -z -B -M -C -D -l<n> -S -G -O -R -a -b -w
// -I -W -X -c -m -t and -1/-2/-3 (base, ours, theirs).
const gitDiffShort = "pusU::zB::M::C::Dl:S:G:O:RabwI:WX::cmt0123"

// gitRevLongs are the revision-walking and formatting options
// (Documentation/rev-list-options.txt, pretty-options.txt).
var gitRevLongs = []string{
	"max-count=", "skip=", "since=", "after=", "since-as-filter=", "until=", "before=", "max-age=",
	"min-age=", "author=", "committer=", "grep-reflog=", "grep=", "all-match", "invert-grep",
	"regexp-ignore-case", "basic-regexp", "extended-regexp", "fixed-strings", "perl-regexp",
	"remove-empty", "merges", "no-merges", "min-parents=", "max-parents=", "no-min-parents",
	"no-max-parents", "first-parent", "exclude-first-parent-only", "not", "all", "branches?",
	"tags?", "remotes?", "glob=", "exclude=", "exclude-hidden=", "reflog", "alternate-refs",
	"single-worktree", "ignore-missing", "bisect", "stdin", "cherry-mark", "cherry-pick",
	"left-only", "right-only", "cherry", "walk-reflogs", "merge", "boundary",
	"simplify-by-decoration", "show-pulls", "full-history", "dense", "sparse", "simplify-merges",
	"ancestry-path?", "date-order", "author-date-order", "topo-order", "reverse", "no-walk?",
	"do-walk", "pretty?", "format=", "abbrev-commit", "no-abbrev-commit", "oneline", "encoding=",
	"expand-tabs?", "no-expand-tabs", "notes?", "no-notes", "show-notes-by-default",
	"show-notes?", "standard-notes", "no-standard-notes", "show-signature", "relative-date",
	"date=", "parents", "children", "left-right", "graph", "show-linear-break?", "count",
	"objects", "objects-edge", "objects-edge-aggressive", "unpacked", "filter=", "no-filter",
	"filter-provided-objects", "filter-print-omitted", "missing=", "header", "timestamp",
	"in-commit-order", "indexed-objects", "use-bitmap-index", "progress=", "disk-usage?",
	"no-object-names", "object-names", "exclude-promisor-objects", "bisect-vars", "bisect-all",
	"decorate?", "no-decorate", "decorate-refs=", "decorate-refs-exclude=", "clear-decorations",
	"source", "mailmap", "no-mailmap", "use-mailmap", "no-use-mailmap", "full-diff", "log-size",
	"no-graph", "show-origin", "no-min-parents", "no-max-parents",
}

// gitRevShort: -n -i -E -F -P -g -L and -<number>.
const gitRevShort = "n:iEFPgL:456789"

var (
	gitLogSpec = gitSpec(gitDiffShort+gitRevShort, gitDiffLongs, gitRevLongs)
	// diff-tree, diff-index, diff-files: the diff options and their own.
	gitDiffTreeSpec = gitSpec(gitDiffShort+"rv", gitDiffLongs, gitRevLongs,
		[]string{"root", "no-commit-id", "always", "cached", "staged"})
	gitDiffSpec = gitSpec(gitDiffShort, gitDiffLongs,
		[]string{"cached", "staged", "no-index", "base", "ours", "theirs"})
	gitShortlogSpec = gitSpec("nsecw::iEFPgL:0123456789", gitRevLongs,
		[]string{"numbered", "summary", "email", "group=", "committer"})
	gitRangeDiffSpec = gitSpec(gitDiffShort, gitDiffLongs,
		[]string{"creation-factor=", "no-dual-color", "dual-color", "left-only", "right-only", "notes?", "no-notes"})
)

var gitStatusSpec = getopt.New("sbvu::z", "short", "branch", "show-stash", "porcelain?", "long",
	"verbose", "untracked-files?", "ignore-submodules?", "ignored?", "column?", "no-column",
	"ahead-behind", "no-ahead-behind", "renames", "no-renames", "find-renames?", "null")

var gitBlameSpec = getopt.New("bL:ltS:pM::C::hcfnsewe", "root", "show-stats", "reverse", "first-parent",
	"porcelain", "line-porcelain", "incremental", "encoding=", "contents=", "date=", "progress",
	"no-progress", "ignore-rev=", "ignore-revs-file=", "color-lines", "color-by-age", "minimal",
	"show-name", "show-number", "show-email", "abbrev?", "score-debug", "since=", "no-abbrev")

// gitGrepSpec: -O/--open-files-in-pager runs a program.
var gitGrepSpec = getopt.New("aiIwvhHEGFPnlLozqcpWO::e:f:A:B:C:m:0123456789", "cached", "untracked",
	"no-index", "index", "recurse-submodules", "exclude-standard", "no-exclude-standard", "text",
	"textconv", "no-textconv", "ignore-case", "max-depth=", "word-regexp", "invert-match",
	"full-name", "extended-regexp", "basic-regexp", "perl-regexp", "fixed-strings", "line-number",
	"column", "files-with-matches", "name-only", "files-without-match", "open-files-in-pager?",
	"null", "only-matching", "count", "color?", "no-color", "break", "heading", "show-function",
	"context=", "after-context=", "before-context=", "function-context", "threads=",
	"max-count=", "and", "or", "not", "all-match", "quiet", "no-recursive", "recursive", "invert-grep")

var gitDescribeSpec = getopt.New("", "dirty?", "broken?", "all", "tags", "contains", "abbrev?",
	"candidates=", "exact-match", "debug", "long", "match=", "exclude=", "always", "first-parent")

var gitRevParseSpec = func() *getopt.Spec {
	s := getopt.New("q", "parseopt", "sq-quote", "keep-dashdash", "stop-at-non-option", "stuck-long",
		"revs-only", "no-revs", "flags", "no-flags", "default=", "prefix=", "verify", "quiet", "sq",
		"short?", "not", "abbrev-ref?", "symbolic", "symbolic-full-name", "output-object-format=",
		"all", "branches?", "tags?", "remotes?", "glob=", "exclude=", "exclude-hidden=",
		"disambiguate=", "local-env-vars", "path-format=", "git-dir", "git-common-dir",
		"resolve-git-dir", "git-path=", "show-toplevel", "show-superproject-working-tree",
		"shared-index-path", "absolute-git-dir", "is-inside-git-dir", "is-inside-work-tree",
		"is-bare-repository", "is-shallow-repository", "show-cdup", "show-prefix",
		"show-object-format?", "show-ref-format", "since=", "after=", "until=", "before=")
	return s.NoAbbreviations() // rev-parse matches its options exactly
}()

var gitLsFilesSpec = getopt.New("cdoisztvfumkx:X:", "cached", "deleted", "others", "ignored", "stage",
	"directory", "no-empty-directory", "unmerged", "killed", "modified", "resolve-undo", "eol",
	"deduplicate", "exclude=", "exclude-from=", "exclude-per-directory=", "exclude-standard",
	"error-unmatch", "with-tree=", "full-name", "recurse-submodules", "abbrev?", "debug", "sparse",
	"format=", "no-empty-directory")

var gitLsTreeSpec = getopt.New("drtlz", "long", "name-only", "name-status", "object-only", "full-name",
	"full-tree", "abbrev?", "format=")

// gitCatFileSpec: --textconv and --filters run the configured filters.
var gitCatFileSpec = getopt.New("tsepZ", "textconv", "filters", "path=", "batch?", "batch-check?",
	"batch-command?", "batch-all-objects", "buffer", "unordered", "follow-symlinks",
	"allow-unknown-type", "mailmap", "no-mailmap", "use-mailmap", "no-use-mailmap")

var gitShowRefSpec = getopt.New("dsq", "head", "branches", "heads", "tags", "dereference", "hash?",
	"abbrev?", "verify", "exists", "quiet", "exclude-existing?")

var gitForEachRefSpec = getopt.New("", "count=", "shell", "perl", "python", "tcl", "sort=", "format=",
	"color?", "points-at=", "merged?", "no-merged?", "contains?", "no-contains?", "ignore-case",
	"omit-empty", "exclude=", "stdin", "include-root-refs")

var (
	gitMergeBaseSpec   = getopt.New("a", "all", "octopus", "independent", "is-ancestor", "fork-point")
	gitNameRevSpec     = getopt.New("", "tags", "refs=", "exclude=", "all", "annotate-stdin", "stdin", "name-only", "no-undefined", "always")
	gitCountObjsSpec   = getopt.New("vH", "verbose", "human-readable")
	gitCherrySpec      = getopt.New("v", "abbrev?")
	gitCheckIgnoreSpec = getopt.New("qvzn", "quiet", "verbose", "stdin", "non-matching", "no-index")
	gitCheckAttrSpec   = getopt.New("az", "all", "cached", "stdin", "source=")
	gitCheckRefSpec    = getopt.New("", "normalize", "allow-onelevel", "no-allow-onelevel", "refspec-pattern", "branch")
	gitShowBranchSpec  = getopt.New("arg", "all", "remotes", "topo-order", "date-order", "current", "color?",
		"no-color", "sha1-name", "more?", "list", "merge-base", "independent", "no-name", "topics", "reflog?")
	gitVarSpec        = getopt.New("l")
	gitVersionSpec    = getopt.New("", "build-options")
	gitVerifySpec     = getopt.New("v", "verbose", "raw", "format=")
	gitVerifyPackSpec = getopt.New("vs", "verbose", "stat-only")
	// fsck --lost-found writes the dangling objects into .git/lost-found.
	gitFsckSpec = getopt.New("v", "unreachable", "dangling", "no-dangling", "root", "tags", "cache",
		"no-reflogs", "full", "no-full", "connectivity-only", "strict", "verbose", "lost-found",
		"name-objects", "no-name-objects", "progress", "no-progress", "references", "no-references")
	// ls-remote --upload-pack/-u runs a program.
	gitLsRemoteSpec = getopt.New("htbqu:o:", "heads", "branches", "tags", "refs", "upload-pack=", "quiet",
		"exit-code", "get-url", "sort=", "server-option=", "symref")
	gitTarIDSpec = getopt.New("")
	// archive -o/--output writes a file; --exec runs a program.
	gitArchiveSpec = getopt.New("lvo:0123456789", "format=", "list", "verbose", "prefix=", "add-file=",
		"add-virtual-file=", "output=", "worktree-attributes", "mtime=", "remote=", "exec=")
)

// Subcommands that both list and change: the list forms' options.
var (
	gitBranchSpec = getopt.New("dDmMcCflaruvtiq", "delete", "create-reflog", "force", "move", "copy",
		"color?", "no-color", "list", "show-current", "verbose", "quiet", "abbrev?", "no-abbrev",
		"track?", "no-track", "set-upstream-to=", "unset-upstream", "edit-description", "contains?",
		"no-contains?", "merged?", "no-merged?", "points-at=", "format=", "sort=", "column?",
		"no-column", "ignore-case", "omit-empty", "remotes", "all", "recurse-submodules")
	gitTagSpec = getopt.New("ln::asfdvem:F:u:i", "list", "annotate", "sign", "no-sign", "local-user=", "force",
		"delete", "verify", "message=", "file=", "trailer=", "edit", "cleanup=", "create-reflog",
		"column?", "no-column", "contains?", "no-contains?", "merged?", "no-merged?", "points-at=",
		"sort=", "format=", "color?", "ignore-case", "omit-empty")
	gitConfigSpec = getopt.New("lefz", "global", "system", "local", "worktree", "file=", "blob=", "get",
		"get-all", "get-regexp", "get-urlmatch", "replace-all", "add", "unset", "unset-all",
		"rename-section", "remove-section", "list", "fixed-value", "edit", "type=", "no-type", "bool",
		"int", "bool-or-int", "bool-or-str", "path", "expiry-date", "null", "name-only", "includes",
		"no-includes", "show-origin", "show-scope", "get-color", "get-colorbool", "default=",
		"value=", "all", "regexp", "url=", "comment=", "append")
	gitCleanSpec = getopt.New("dfinqe:xX", "force", "interactive", "dry-run", "quiet", "exclude=")
	gitApplySpec = getopt.New("NR3p:C:vqz", "stat", "numstat", "summary", "check", "index", "intent-to-add",
		"3way", "ours", "theirs", "union", "apply", "no-add", "build-fake-ancestor=", "reverse",
		"allow-binary-replacement", "binary", "allow-empty", "exclude=", "include=", "inaccurate-eof",
		"recount", "cached", "ignore-space-change", "ignore-whitespace", "whitespace=", "verbose",
		"quiet", "unidiff-zero", "reject", "directory=", "unsafe-paths", "allow-overlap")
	gitRemoteShowSpec  = getopt.New("n")
	gitRemoteURLSpec   = getopt.New("", "push", "all")
	gitWorktreeList    = getopt.New("vz", "verbose", "porcelain", "expire=")
	gitNotesSpec       = getopt.New("", "ref=")
	gitSubmoduleStatus = getopt.New("q", "cached", "recursive", "quiet")
	gitSubmoduleSumm   = getopt.New("n:", "cached", "files", "summary-limit=", "for-status")
	gitBundleVerify    = getopt.New("q", "quiet")
	gitReflogExists    = getopt.New("")
	gitSymbolicRefSpec = getopt.New("qdm:", "quiet", "short", "no-recurse", "recurse", "delete")
	gitHelpSpec        = getopt.New("aimwgc", "all", "no-external-commands", "no-aliases", "verbose",
		"info", "man", "web", "guides", "config", "user-interfaces", "developer-interfaces")
)
