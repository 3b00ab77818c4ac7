package intent

import (
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

// tar and unzip read only in their listing and testing modes. Both are
// parsed by the one option parser (issue 14): before, hand-written loops
// let an unknown or abbreviated long option through, and tar -tvf a.tar
// --index-file=FILE (GNU tar writes its listing to FILE) passed as a read.

// tarSpec is GNU tar's options (tar 1.35), with getopt_long's
// abbreviations.
var tarSpec = getopt.New("AcdrtuxaBb:C:f:F:g:GhH:iI:jJkK:lL:mMnN:oOpPRsST:UvV:WX:zZ",
	// Operation modes.
	"append", "catenate", "concatenate", "create", "compare", "diff", "delete", "extract", "get",
	"list", "test-label", "update", "show-defaults", "usage", "help", "version",
	// Operation modifiers.
	"check-device", "no-check-device", "listed-incremental=", "incremental", "hole-detection=",
	"ignore-failed-read", "level=", "no-seek", "seek", "occurrence?", "restrict", "sparse",
	"sparse-version=", "keep-directory-symlink", "keep-newer-files", "keep-old-files",
	"skip-old-files", "no-overwrite-dir", "overwrite", "overwrite-dir", "recursive-unlink",
	"remove-files", "unlink-first", "verify", "ignore-command-error", "no-ignore-command-error",
	"to-command=", "to-stdout", "atime-preserve?", "delay-directory-restore",
	"no-delay-directory-restore", "group=", "group-map=", "mode=", "mtime=", "clamp-mtime",
	"no-same-owner", "no-same-permissions", "numeric-owner", "owner=", "owner-map=",
	"preserve-permissions", "same-permissions", "same-owner", "preserve-order", "same-order",
	"preserve", "sort=", "acls", "no-acls", "selinux", "no-selinux", "xattrs", "no-xattrs",
	"xattrs-exclude=", "xattrs-include=",
	// Device selection.
	"force-local", "file=", "info-script=", "new-volume-script=", "multi-volume", "rmt-command=",
	"rsh-command=", "tape-length=", "volno-file=",
	// Blocking and format.
	"blocking-factor=", "ignore-zeros", "read-full-records", "record-size=", "format=",
	"label=", "old-archive", "portability", "pax-option=", "posix",
	// Compression.
	"auto-compress", "no-auto-compress", "use-compress-program=", "bzip2", "xz", "lzip", "lzma",
	"lzop", "gzip", "gunzip", "ungzip", "compress", "uncompress", "zstd",
	// File selection.
	"add-file=", "directory=", "exclude=", "exclude-backups", "exclude-caches",
	"exclude-caches-all", "exclude-caches-under", "exclude-ignore=", "exclude-ignore-recursive=",
	"exclude-tag=", "exclude-tag-all=", "exclude-tag-under=", "exclude-vcs", "exclude-vcs-ignores",
	"exclude-from=", "files-from=", "null", "no-null", "no-recursion", "recursion",
	"no-unquote", "unquote", "no-verbatim-files-from", "verbatim-files-from", "one-file-system",
	"one-top-level?", "absolute-names", "dereference", "hard-dereference", "starting-file=",
	"newer=", "after-date=", "newer-mtime=", "backup?", "suffix=", "anchored", "no-anchored",
	"ignore-case", "no-ignore-case", "wildcards", "no-wildcards", "wildcards-match-slash",
	"no-wildcards-match-slash", "strip-components=", "transform=", "xform=",
	// Output.
	"checkpoint?", "checkpoint-action=", "full-time", "index-file=", "block-number",
	"quote-chars=", "no-quote-chars=", "quoting-style=", "show-omitted-dirs",
	"show-snapshot-field-ranges", "show-stored-names", "show-transformed-names", "totals?",
	"utc", "verbose", "warning=", "interactive", "confirmation",
)

// tarRuns are the options that make tar run a program, in any mode.
var tarRuns = map[string]bool{
	"--to-command": true, "--use-compress-program": true, "-I": true, "--checkpoint-action": true,
	"--info-script": true, "-F": true, "--new-volume-script": true, "--rsh-command": true,
	"--rmt-command": true,
}

// tarWrites are the options that make tar write a file, in any mode.
var tarWrites = map[string]string{
	"--index-file": "writes the listing to a file", "--volno-file": "writes the volume number to a file",
	"--listed-incremental": "updates a snapshot file", "-g": "updates a snapshot file",
	"--remove-files": "deletes the files it archives",
}

func tarRule(c *call) {
	args := c.rest()
	if len(args) > 0 && args[0].literal() && !strings.HasPrefix(args[0].val, "-") && args[0].val != "" {
		// Old-style "tar tvf a.tar": the first word is a cluster of
		// letters whose values follow in order; more than one value-taking
		// letter is too rare to be worth getting wrong.
		n := 0
		for _, l := range args[0].val {
			if k, ok := tarSpec.Short(byte(l)); ok && k != getopt.NoValue {
				n++
			}
		}
		if n > 1 {
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("tar %s: old-style options with several values are not checked", args[0].val))
			return
		}
		dashed := *args[0]
		dashed.val = "-" + dashed.val
		args = append([]*arg{&dashed}, args[1:]...)
	}
	p := c.parseWords(args, tarSpec)
	if !c.strict(p) {
		return
	}
	mode := ""
	for _, o := range p.Opts {
		switch o.Name {
		case "-t", "--list", "-d", "--diff", "--compare", "--test-label", "--help", "--usage", "--version", "--show-defaults":
			mode = cmpOr(mode, "read")
		case "-x", "--extract", "--get":
			mode = "extract"
		case "-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete":
			mode = "write"
		}
		if tarRuns[o.Name] {
			c.a.writes(CodeRunsProgram, RiskHighWrite, "tar "+o.Name+" runs a program")
		}
		if what, ok := tarWrites[o.Name]; ok && !(o.Value == "/dev/null" && (o.Name == "-g" || o.Name == "--listed-incremental")) {
			c.a.writes(CodeWriteOption, RiskMediumWrite, "tar "+o.Name+" "+what)
			if o.Name == "--remove-files" {
				c.a.destroys("tar --remove-files deletes the files it archives")
			}
		}
		if (o.Name == "-f" || o.Name == "--file") && strings.Contains(o.Value, ":") && !p.Has("--force-local") {
			// GNU tar opens host:file through rsh: a remote command.
			c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("tar -f %s opens a remote archive through rsh (--force-local reads a local file)", o.Value))
		}
	}
	switch mode {
	case "read":
	case "extract":
		c.a.writes(CodeWriteCommand, RiskMediumWrite, "tar -x extracts files")
	default:
		c.a.writes(CodeWriteCommand, RiskMediumWrite, "tar writes an archive or files")
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// unzipSpec is Info-ZIP unzip's options; it has no long options.
var unzipSpec = getopt.New("ZlvtpcfunojqaCDKLMNTUVWXYzbBd:O:I:P:xh")

// zipinfoSpec is unzip -Z's (zipinfo's) options: all of them list.
var zipinfoSpec = getopt.New("12smlvhMtTzxC")

// unzipRule: unzip -l/-v/-t/-p/-c/-z and zipinfo mode (-Z) only read.
func unzipRule(c *call) {
	args := c.rest()
	if len(args) > 0 && args[0].literal() && args[0].val == "-Z" {
		c.strict(c.parseWords(args[1:], zipinfoSpec))
		return
	}
	p := c.parse(unzipSpec)
	if !c.strict(p) {
		return
	}
	if p.Has("-l", "-v", "-t", "-p", "-c", "-z", "-h") {
		return
	}
	c.a.writes(CodeWriteCommand, RiskMediumWrite, "unzip extracts files")
}
