package gitconfig

import "strings"

// riskyKeys are the settings whose value names a program that a read-only
// git command runs, as "section.name" or, with "*" for the subsection (a
// driver or format name), "section.*.name". Each is risky unless its value
// is empty or a boolean false. Why each one matters:
var riskyKeys = map[string]bool{
	// A hook run by everything that refreshes the index (status, diff,
	// and friends) to ask which files changed; "true" starts the
	// built-in fsmonitor daemon instead.
	"core.fsmonitor": true,
	// Run through the shell to page the output of log, diff, show,
	// grep, blame, branch, ... whenever stdout is a terminal.
	"core.pager": true,
	// Run instead of the built-in diff by git diff (and by show and
	// log -p when given --ext-diff).
	"diff.external": true,
	// The same, for paths whose diff=<driver> attribute names the
	// driver.
	"diff.*.command": true,
	// Converts a file to text whenever diff, log -p, show or blame
	// renders it (attributes in the checked-out tree pick the driver).
	"diff.*.textconv": true,
	// Run on work-tree files when status, diff or blame read them (for
	// status and diff, any file whose stat data changed).
	"filter.*.clean": true,
	// Run when git writes a file to the work tree: checkout, but also
	// archive and cat-file --filters.
	"filter.*.smudge": true,
	// A long-running clean/smudge process, started where those are.
	"filter.*.process": true,
	// Run to verify signatures: log --show-signature, log.showSignature,
	// verify-commit, verify-tag. (log.showSignature alone is not listed:
	// with no gpg.program it runs the user's own gpg.)
	"gpg.program": true,
	// The same for gpg.format openpgp, x509 and ssh.
	"gpg.*.program": true,
	// Run by git archive to compress an archive of that format.
	"tar.*.command": true,
}

// Not listed, because read-only commands do not run them: core.sshCommand
// and credential.helper (network). core.hooksPath is not risky itself, but
// Inspect looks in the hooks directory it names for the hooks that read-only
// commands trigger (post-index-change, run when status refreshes the index).

// Risky reports whether setting key to value makes a read-only git command
// run a program. key is canonical, as in Entry.Key. A key written without a
// value (Entry.NoValue) means boolean true: pass "true".
func Risky(key, value string) bool {
	section, name, hasSub := splitKey(key)
	pattern := section + "." + name
	if hasSub {
		pattern = section + ".*." + name
	}
	switch {
	case section == "alias":
		// "alias.<name> = !cmd" runs cmd in the shell for `git <name>`;
		// other aliases expand to git commands, which are classified on
		// their own. Any subsection is part of the alias name.
		return strings.HasPrefix(strings.TrimSpace(value), "!")
	case value == "cat" && (section == "pager" || pattern == "core.pager"):
		return false // git runs no pager at all for "cat"
	case section == "pager":
		// pager.<cmd> is a boolean (page <cmd> with the default pager or
		// not) or a command to page it with.
		return !isBool(value)
	}
	return riskyKeys[pattern] && !isFalse(value)
}

// splitKey returns a key's section and name, and whether it has a
// subsection between them: the section ends at the first dot and the name
// starts after the last, as in git. They are lower-cased in case key is
// not canonical.
func splitKey(key string) (section, name string, hasSub bool) {
	first := strings.IndexByte(key, '.')
	last := strings.LastIndexByte(key, '.')
	if first < 0 {
		return strings.ToLower(key), "", false
	}
	return strings.ToLower(key[:first]), strings.ToLower(key[last+1:]), first != last
}

// isFalse reports whether git reads value as boolean false. (git also
// accepts other spellings of zero such as "0x0"; calling those risky only
// over-reports.)
func isFalse(value string) bool {
	switch strings.ToLower(value) {
	case "", "false", "no", "off", "0":
		return true
	}
	return false
}

// isBool reports whether value is one of git's boolean words.
func isBool(value string) bool {
	switch strings.ToLower(value) {
	case "true", "yes", "on", "1":
		return true
	}
	return isFalse(value)
}
