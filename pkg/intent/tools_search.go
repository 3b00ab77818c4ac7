package intent

import "github.com/govkit/govkit/pkg/getopt"

// fd (fd-find, installed as fdfind on Debian) lists files by name: read-only
// unless -x/-X runs a command for the matches (issue 14: fd was refused). It
// parses with clap, which takes no abbreviations of long options. -l runs
// ls -l, which only reads.
var _ = describeTools(func() {
	runs := "runs a command for the files it finds"
	readOnlyTool(&tool{
		opts: getopt.New("HIusigFalLp0qhV1xXd:E:t:e:S:o:c:j:",
			"hidden", "no-hidden", "no-ignore", "ignore", "no-ignore-vcs", "ignore-vcs",
			"no-ignore-parent", "no-require-git", "require-git", "unrestricted",
			"case-sensitive", "ignore-case", "glob", "regex", "fixed-strings", "and=",
			"absolute-path", "relative-path", "list-details", "follow", "no-follow",
			"full-path", "print0", "max-depth=", "min-depth=", "exact-depth=", "exclude=",
			"prune", "type=", "extension=", "size=", "changed-within=", "changed-before=",
			"newer=", "older=", "change-newer-than=", "change-older-than=", "owner=",
			"format=", "exec", "exec-batch", "batch-size=", "ignore-file=", "color=",
			"hyperlink?", "threads=", "max-buffer-time=", "max-results=", "quiet",
			"show-errors", "base-directory=", "path-separator=", "search-path=",
			"strip-cwd-prefix?", "one-file-system", "mount", "xdev", "no-global-ignore-file",
			"help", "version").NoAbbreviations(),
		runs:  map[string]string{"-x": runs, "--exec": runs, "-X": runs, "--exec-batch": runs},
		parse: fdParse,
	}, "fd", "fdfind")
})

// fdParse parses fd's options up to -x/-X: every word after it belongs to
// the command fd runs, not to fd.
func fdParse(c *call, s *getopt.Spec) *getopt.Parsed {
	args := c.rest()
	for i, a := range args {
		switch a.val {
		case "-x", "--exec", "-X", "--exec-batch":
			return c.parseWords(args[:i+1], s)
		}
	}
	return c.parse(s)
}
