package intent

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/govkit/govkit/pkg/getopt"
)

// The read-only text and file programs, described by their options (issue
// 14): every option of the current GNU coreutils, diffutils, grep, gzip,
// util-linux, binutils and jq with its arity, so that an option the parser
// does not know fails closed. None of them writes a file, except sdiff -o;
// diff3 and sdiff --diff-program run a program. What they can do is never
// end: seq inf, cat /dev/zero, jq -n 'repeat(1)'.
//
// classify judges the devices named in the command. A file name that
// comes from an expansion is not followed (that would refuse every
// cat "$f"), except that a visible /dev/ or /proc/ prefix (cat /dev/$x) may
// name a device that never ends, and is unbounded.

// endless finds an endless device among the files the program reads: its
// file operands and a < redirect of its standard input.
func (t *tool) endless(c *call, p *getopt.Parsed) {
	var files []*arg
	if t.operands != nil {
		files = t.operands(c, p)
	} else {
		for _, i := range p.Operands {
			files = append(files, c.rest()[i])
		}
	}
	type dev struct {
		src  string
		zero bool // may have no newline: /dev/zero, /dev/full, or unknown
	}
	var devs []dev
	add := func(a *arg, prefix string) {
		if maybeDevice(a) {
			z := !a.literal() || hasPrefixAny(path.Base(a.val), "zero", "full")
			devs = append(devs, dev{prefix + a.src, z})
		}
	}
	for _, a := range files {
		add(a, "")
	}
	for _, r := range c.ctx.redirs {
		if r.Op == syntax.RdrIn && (r.N == nil || r.N.Value == "0") && r.Word != nil {
			add(newArg(c.w.src, r.Word), "< ")
		}
	}
	if len(devs) == 0 {
		return
	}
	ok, zeroOK := false, false
	if t.bound != nil {
		ok, zeroOK = t.bound(p)
	}
	for _, d := range devs {
		if ok && (zeroOK || !d.zero) {
			continue
		}
		why := "reads " + d.src + ", which may never end"
		if ok {
			why += " (it has no newline for a line count to stop at)"
		} else if t.bound != nil {
			why += " without a byte count"
		}
		c.a.never(UnboundedStream, c.name+" "+why)
		return
	}
}

// maybeDevice reports a word that names, or may name, a device whose reads
// never end: /dev/$x and /dev/* may; $f and /proc/$pid/status are not
// followed.
func maybeDevice(a *arg) bool {
	if a.literal() {
		return endlessDevice(a.val)
	}
	return strings.HasPrefix(path.Clean("/"+a.val), "/dev")
}

// endlessDevice reports paths whose reads never end: generators (zero,
// full, random, urandom), terminals and kernel message and trace pipes.
// Relative spellings (../../dev/zero) count: the directory is unknown.
func endlessDevice(p string) bool {
	if p == "" {
		return false
	}
	c := path.Clean("/" + p)
	for strings.HasPrefix(c, "/..") {
		c = strings.TrimPrefix(c, "/..")
	}
	switch c {
	case "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/console", "/dev/ptmx",
		"/dev/kmsg", "/proc/kmsg", "/sys/kernel/debug/tracing/trace_pipe", "/sys/kernel/tracing/trace_pipe":
		return true
	}
	return hasPrefixAny(c, "/dev/tty", "/dev/pts/", "/dev/input/", "/dev/hidraw", "/dev/vcs")
}

// positive reports a literal count: 10, 1K, 5MiB (head -c -5 and head -n
// -5 read everything but the tail, and a count from an expansion may be
// either).
func positive(o getopt.Opt) bool {
	return o.Value != "" && o.Value[0] >= '0' && o.Value[0] <= '9'
}

// Generic GNU options every coreutils program has.
var gnuStd = []string{"help", "version"}

func gnu(short string, longs ...string) *getopt.Spec {
	return getopt.New(short, append(longs, gnuStd...)...)
}

var (
	lsSpec = gnu("aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ1", "all", "almost-all", "author",
		"escape", "block-size=", "ignore-backups", "color?", "colour?", "directory", "dired", "classify?",
		"file-type", "format=", "full-time", "group-directories-first", "no-group",
		"human-readable", "si", "dereference-command-line",
		"dereference-command-line-symlink-to-dir", "hide=", "hyperlink?", "indicator-style=",
		"inode", "ignore=", "kibibytes", "dereference", "literal", "numeric-uid-gid",
		"hide-control-chars", "show-control-chars", "quote-name", "quoting-style=", "reverse",
		"recursive", "size", "sort=", "time=", "time-style=", "tabsize=", "width=", "context", "zero")
	checksumLongs = []string{"binary", "check", "tag", "text", "zero", "ignore-missing", "quiet",
		"status", "strict", "warn"}
	grepSpec = gnu("EFGPX:e:f:iyuwxzsvVm:bnHhoqaId:D:rRLlcTZUA:B:C:0123456789", "extended-regexp",
		"fixed-strings", "basic-regexp", "perl-regexp", "regexp=", "file=", "ignore-case",
		"no-ignore-case", "word-regexp", "line-regexp", "null-data", "no-messages",
		"invert-match", "max-count=", "byte-offset", "line-number", "line-buffered",
		"with-filename", "no-filename", "label=", "only-matching", "quiet", "silent",
		"binary-files=", "text", "directories=", "devices=", "recursive",
		"dereference-recursive", "include=", "exclude=", "exclude-from=", "exclude-dir=",
		"files-without-match", "files-with-matches", "count", "initial-tab", "null",
		"before-context=", "after-context=", "context=", "group-separator=",
		"no-group-separator", "color?", "colour?", "binary", "unix-byte-offsets")
	diffLongs = []string{"normal", "brief", "report-identical-files", "context?", "unified?", "ed",
		"rcs", "side-by-side", "width=", "left-column", "suppress-common-lines",
		"show-c-function", "show-function-line=", "label=", "expand-tabs", "initial-tab",
		"tabsize=", "suppress-blank-empty", "paginate", "recursive", "no-dereference",
		"new-file", "unidirectional-new-file", "ignore-file-name-case",
		"no-ignore-file-name-case", "exclude=", "exclude-from=", "starting-file=", "from-file=",
		"to-file=", "ignore-case", "ignore-tab-expansion", "ignore-trailing-space",
		"ignore-space-change", "ignore-all-space", "ignore-blank-lines",
		"ignore-matching-lines=", "text", "strip-trailing-cr", "ifdef=", "old-group-format=",
		"new-group-format=", "unchanged-group-format=", "changed-group-format=",
		"line-format=", "old-line-format=", "new-line-format=", "unchanged-line-format=",
		"minimal", "horizon-lines=", "speed-large-files", "color?", "palette=", "binary",
		"forward-ed", "inhibit-hunk-merge", "no-inhibit-hunk-merge"}
	diffShort = "0123456789abBcC:dD:eEfF:hHiI:lL:nNpPqrsS:tTuU:vwW:x:X:yZ"
)

// headBound: head -c N bounds any device; head -n N (and the obsolete -N)
// only one that has newlines.
func headBound(p *getopt.Parsed) (bool, bool) {
	if o, ok := p.Get("-c", "--bytes"); ok {
		return positive(o), positive(o)
	}
	if o, ok := p.Get("-n", "--lines"); ok {
		return positive(o), false
	}
	for _, o := range p.Opts {
		if len(o.Name) == 2 && o.Name[1] >= '0' && o.Name[1] <= '9' {
			return true, false // head -20: twenty lines
		}
	}
	return false, false // ten lines: never on /dev/zero
}

// optBound: a positive count given to one of names bounds the read.
func optBound(names ...string) func(p *getopt.Parsed) (bool, bool) {
	return func(p *getopt.Parsed) (bool, bool) {
		o, ok := p.Get(names...)
		return ok && positive(o), ok && positive(o)
	}
}

// afterFirst: the first operand is a pattern or string, unless an option
// already gave it (grep -e, grep -f).
func afterFirst(given ...string) func(c *call, p *getopt.Parsed) []*arg {
	return func(c *call, p *getopt.Parsed) []*arg {
		idx := p.Operands
		if !p.Has(given...) && len(idx) > 0 {
			idx = idx[1:]
		}
		var out []*arg
		for _, i := range idx {
			out = append(out, c.rest()[i])
		}
		return out
	}
}

var _ = describeTools(func() {
	readOnlyTool(&tool{opts: gnu("AbeEnstTuv", "show-all", "number-nonblank", "show-ends",
		"number", "squeeze-blank", "show-tabs", "show-nonprinting"), reads: true, argSafe: true}, "cat")
	readOnlyTool(&tool{opts: gnu("brs:", "before", "regex", "separator="), reads: true, argSafe: true}, "tac")
	readOnlyTool(&tool{opts: gnu("b:d:f:h:i:l:n:ps:v:w:", "body-numbering=", "section-delimiter=",
		"footer-numbering=", "header-numbering=", "line-increment=", "join-blank-lines=",
		"number-format=", "no-renumber", "number-separator=", "starting-line-number=",
		"number-width="), reads: true, argSafe: true}, "nl")
	readOnlyTool(&tool{opts: gnu("c:n:qvz0123456789", "bytes=", "lines=", "quiet", "silent",
		"verbose", "zero-terminated"), reads: true, bound: headBound, argSafe: true}, "head")
	readOnlyTool(&tool{opts: gnu("cmlLw", "bytes", "chars", "lines", "files0-from=",
		"max-line-length", "words", "total=", "debug"), reads: true, argSafe: true}, "wc")
	readOnlyTool(&tool{opts: lsSpec, argSafe: true}, "ls", "dir", "vdir")
	readOnlyTool(&tool{opts: gnu("Lfc:t", "dereference", "file-system", "cached=", "format=",
		"printf=", "terse"), argSafe: true}, "stat")
	readOnlyTool(&tool{opts: gnu("0abB:cDd:HhkLlmPSst:X:x", "null", "all", "apparent-size",
		"block-size=", "bytes", "total", "dereference-args", "max-depth=", "files0-from=",
		"human-readable", "inodes", "count-links", "dereference", "no-dereference",
		"separate-dirs", "si", "summarize", "threshold=", "time?", "time-style=",
		"exclude-from=", "exclude=", "one-file-system"), argSafe: true}, "du")
	readOnlyTool(&tool{opts: gnu("aB:hHiklPt:Tx:v", "all", "block-size=", "human-readable", "si",
		"inodes", "local", "no-sync", "output?", "portability", "sync", "total", "type=",
		"print-type", "exclude-type="), argSafe: true}, "df")
	readOnlyTool(&tool{opts: gnu("as:z", "multiple", "suffix=", "zero"), argSafe: true}, "basename")
	readOnlyTool(&tool{opts: gnu("z", "zero"), argSafe: true}, "dirname")
	readOnlyTool(&tool{opts: gnu("emLPqsz", "canonicalize-existing", "canonicalize-missing",
		"logical", "physical", "quiet", "relative-to=", "relative-base=", "strip", "no-symlinks",
		"zero"), argSafe: true}, "realpath")
	readOnlyTool(&tool{opts: gnu("femnqsvz", "canonicalize", "canonicalize-existing",
		"canonicalize-missing", "no-newline", "quiet", "silent", "verbose", "zero"), argSafe: true}, "readlink")
	readOnlyTool(&tool{opts: gnu("LP", "logical", "physical"), argSafe: true}, "pwd")
	readOnlyTool(&tool{opts: gnu("bctzw", checksumLongs...), reads: true, argSafe: true},
		"md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum")
	readOnlyTool(&tool{opts: gnu("bctzwl:", append([]string{"length="}, checksumLongs...)...), reads: true, argSafe: true}, "b2sum")
	readOnlyTool(&tool{opts: gnu("a:bctl:zw", append([]string{"algorithm=", "length=", "base64",
		"raw", "untagged", "debug"}, checksumLongs...)...), reads: true, argSafe: true}, "cksum")
	readOnlyTool(&tool{opts: gnu("rs", "sysv"), reads: true, argSafe: true}, "sum")
	readOnlyTool(&tool{opts: gnu("b:c:d:f:nsz", "bytes=", "characters=", "delimiter=", "fields=",
		"complement", "only-delimited", "output-delimiter=", "zero-terminated"), reads: true, argSafe: true}, "cut")
	readOnlyTool(&tool{opts: gnu("cCdst", "complement", "delete", "squeeze-repeats", "truncate-set1"),
		reads: true, operands: func(*call, *getopt.Parsed) []*arg { return nil }, argSafe: true}, "tr")
	readOnlyTool(&tool{opts: gnu("123z", "check-order", "nocheck-order", "output-delimiter=",
		"total", "zero-terminated"), reads: true, argSafe: true}, "comm")
	readOnlyTool(&tool{opts: gnu("a:e:ij:o:t:v:1:2:z", "ignore-case", "check-order",
		"nocheck-order", "header", "zero-terminated"), reads: true, argSafe: true}, "join")
	readOnlyTool(&tool{opts: gnu("d:sz", "delimiters=", "serial", "zero-terminated"), reads: true, argSafe: true}, "paste")
	readOnlyTool(&tool{opts: gnu("bsw:0123456789", "bytes", "spaces", "width="), reads: true, argSafe: true}, "fold")
	readOnlyTool(&tool{opts: gnu("0123456789cp:stuw:g:", "crown-margin", "prefix=", "split-only",
		"tagged-paragraph", "uniform-spacing", "width=", "goal="), reads: true, argSafe: true}, "fmt")
	// util-linux column (2.40) and BSD column's -c -s -t -x.
	readOnlyTool(&tool{opts: getopt.New("tn:O:N:l:E:deH:R:T:W:LJr:i:p:c:o:s:xhVC:mS:", "table",
		"table-name=", "table-order=", "table-columns=", "table-columns-limit=",
		"table-noextreme=", "table-noheadings", "table-header-repeat", "table-hide=",
		"table-right=", "table-truncate=", "table-wrap=", "keep-empty-lines",
		"table-empty-lines", "json", "tree=", "tree-id=", "tree-parent=", "output-width=",
		"output-separator=", "separator=", "fillrows", "table-column=", "table-maxout",
		"use-spaces=", "help", "version"), reads: true, argSafe: true}, "column")
	readOnlyTool(&tool{opts: gnu("it:0123456789,", "initial", "tabs="), reads: true, argSafe: true}, "expand")
	readOnlyTool(&tool{opts: gnu("at:0123456789,", "all", "first-only", "tabs="), reads: true, argSafe: true}, "unexpand")
	readOnlyTool(&tool{opts: getopt.New("0hV", "zero", "help", "version"), reads: true, argSafe: true}, "rev")
	readOnlyTool(&tool{opts: gnu(diffShort, diffLongs...), reads: true, argSafe: true}, "diff")
	// zdiff passes its options to cmp or diff.
	readOnlyTool(&tool{opts: gnu(diffShort, append([]string{"print-bytes", "ignore-initial=",
		"verbose", "bytes=", "quiet", "silent"}, diffLongs...)...), reads: true, argSafe: true}, "zdiff")
	readOnlyTool(&tool{opts: gnu("bi:ln:sv", "print-bytes", "ignore-initial=", "verbose",
		"bytes=", "quiet", "silent"), reads: true, bound: optBound("-n", "--bytes"), argSafe: true}, "cmp")
	readOnlyTool(&tool{opts: gnu("A:aBbcDdeFfHhIij:LlN:OoS:st:vw::Xx", "address-radix=",
		"endian=", "skip-bytes=", "read-bytes=", "strings?", "format=", "output-duplicates",
		"width?", "traditional"), reads: true, bound: optBound("-N", "--read-bytes"), argSafe: true}, "od")
	readOnlyTool(&tool{opts: getopt.New("bcCdoxL::e:f:n:s:vhV", "one-byte-octal", "one-byte-char",
		"canonical", "two-bytes-decimal", "two-bytes-octal", "two-bytes-hex", "color?",
		"format=", "format-file=", "length=", "skip=", "no-squeezing", "help", "version"),
		reads: true, bound: optBound("-n", "--length"), argSafe: true}, "hexdump")
	readOnlyTool(&tool{opts: getopt.New("adfn:t:wT:e:oU:s:hvV0123456789", "all", "data",
		"print-file-name", "bytes=", "radix=", "include-all-whitespace", "target=", "encoding=",
		"unicode=", "output-separator=", "help", "version"), reads: true, argSafe: true}, "strings")
	readOnlyTool(&tool{opts: grepSpec, reads: true, operands: afterFirst("-e", "--regexp", "-f", "--file"), argSafe: true},
		"grep", "egrep", "fgrep", "zgrep")
	// zcat, bzcat and xzcat are their compressor with -cd: every option
	// writes to stdout (the compressors' specs are in rules_text.go).
	readOnlyTool(&tool{opts: gzipSpec, reads: true, argSafe: true}, "zcat")
	readOnlyTool(&tool{opts: bzip2Spec, reads: true, argSafe: true}, "bzcat")
	readOnlyTool(&tool{opts: xzSpec, reads: true, argSafe: true}, "xzcat")
	readOnlyTool(&tool{opts: gnu("d:z", "debug", "delimiter=", "field=", "format=", "from=",
		"from-unit=", "grouping", "header?", "invalid=", "padding=", "round=", "suffix=", "to=",
		"to-unit=", "unit-separator=", "zero-terminated"), reads: true, argSafe: true}, "numfmt")
	readOnlyTool(&tool{opts: gnu("w"), reads: true, argSafe: true}, "tsort")
	readOnlyTool(&tool{opts: gnu("0123456789acdD:e::Ffh:i::Jl:mN:n::o:rs::S::tTvw:W:", "columns=",
		"across", "show-control-chars", "double-space", "date-format=", "expand-tabs?",
		"form-feed", "header=", "output-tabs?", "join-lines", "length=", "merge",
		"number-lines?", "first-line-number=", "indent=", "no-file-warnings", "separator?",
		"sep-string?", "omit-header", "omit-pagination", "show-nonprinting", "width=",
		"page-width="), reads: true, argSafe: true}, "pr")
	readOnlyTool(&tool{opts: getopt.New("adft:hV", "alternative", "alphanum", "ignore-case",
		"terminate=", "help", "version"), reads: true, operands: afterFirst(), argSafe: true}, "look")
	readOnlyTool(&tool{opts: gnu("h", "exponents"), argSafe: true}, "factor")
	readOnlyTool(&tool{opts: gnu("aAeEiL:mTvx3X", "show-all", "ed", "show-overlap", "easy-only",
		"overlap-only", "merge", "text", "strip-trailing-cr", "initial-tab", "diff-program=",
		"label="), reads: true, runs: map[string]string{"--diff-program": "runs a program to compare the files"}}, "diff3")
	readOnlyTool(&tool{opts: gnu("o:iEZbWBI:awlstdHvw:", "output=", "ignore-case",
		"ignore-tab-expansion", "ignore-trailing-space", "ignore-space-change",
		"ignore-all-space", "ignore-blank-lines", "ignore-matching-lines=", "strip-trailing-cr",
		"text", "width=", "left-column", "suppress-common-lines", "expand-tabs", "tabsize=",
		"minimal", "speed-large-files", "diff-program="), reads: true,
		writes: map[string]string{"-o": "writes the merged file", "--output": "writes the merged file"},
		runs:   map[string]string{"--diff-program": "runs a program to compare the files"}}, "sdiff")
	readOnlyTool(&tool{opts: getopt.New("RVadlpv"), argSafe: true}, "lsattr")
	readOnlyTool(&tool{opts: getopt.New("xmolnvhV", "mountpoints", "modes", "owners", "long",
		"nosymlinks", "vertical", "help", "version"), argSafe: true}, "namei")
	readOnlyTool(&tool{opts: seqSpec, parse: seqParse, check: seqCheck, expansionsOK: true}, "seq")
	readOnlyTool(&tool{opts: jqSpec, reads: true, operands: jqFiles, check: jqCheck, expansionsOK: true}, "jq")
})

// seqSpec: GNU seq stops at its first operand ("+f:s:w").
var seqSpec = gnu("f:s:w", "format=", "separator=", "equal-width").StopAtOperand()

// seqParse: GNU seq takes a word such as -1 or -.5 as a number, and its
// options end there.
func seqParse(c *call, s *getopt.Spec) *getopt.Parsed {
	args := c.rest()
	k := len(args)
	for i, a := range args {
		if v := a.val; len(v) > 1 && v[0] == '-' && (v[1] == '.' || v[1] >= '0' && v[1] <= '9') {
			k = i
			break
		}
	}
	p := c.parseWords(args[:k], s)
	for j := k; j < len(args); j++ {
		p.Operands = append(p.Operands, j)
	}
	return p
}

// seqLimit is the longest sequence judged to end: a billion lines is
// gigabytes of output, which no caller waits for.
const seqLimit = 1e9

// seqCheck: seq inf, seq 1e100 and seq 0 1e-300 1 never end in practice.
func seqCheck(c *call, p *getopt.Parsed) {
	for _, i := range p.Operands {
		if a := c.rest()[i]; strings.HasPrefix(a.val, "--") {
			// GNU seq would refuse it as an extra operand; an option we do
			// not know fails closed all the same.
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("seq: option %s is not known to be read-only", a.val))
			return
		}
	}
	if len(p.Operands) == 0 || len(p.Operands) > 3 {
		return // seq refuses
	}
	nums := make([]float64, len(p.Operands))
	for i, idx := range p.Operands {
		a := c.rest()[idx]
		if !a.literal() {
			c.a.never(UnboundedStream, fmt.Sprintf("seq: the number %s comes from an expansion, so the sequence may never end", a.src))
			return
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(a.val), 64)
		if err != nil && !strings.Contains(err.Error(), "range") || math.IsNaN(f) {
			c.a.never(UnboundedStream, fmt.Sprintf("seq: %s is not a number classify can bound", a.val))
			return
		}
		nums[i] = f
	}
	first, incr, last := 1.0, 1.0, nums[len(nums)-1]
	if len(nums) >= 2 {
		first = nums[0]
	}
	if len(nums) == 3 {
		incr = nums[1]
	}
	if incr == 0 {
		return // seq refuses a zero increment
	}
	n := math.Floor((last-first)/incr) + 1
	if math.IsInf(first, 0) || math.IsInf(last, 0) || math.IsNaN(n) || n > seqLimit {
		c.a.never(UnboundedStream, fmt.Sprintf("seq %s prints more than a billion lines: it does not end in practice", joined(c.rest())))
	}
}

// jqSpec: jq parses its own options: exact long names (no abbreviations),
// short clusters (-nr), -L DIR or -LDIR. --arg, --argjson, --rawfile,
// --slurpfile and --argfile take two values (jqFiles checks the second).
var jqSpec = getopt.New("srjcCMaSRnfL:behV", "slurp", "raw-output", "raw-output0", "join-output",
	"compact-output", "color-output", "monochrome-output", "ascii-output", "unbuffered",
	"sort-keys", "raw-input", "null-input", "from-file", "library-path=", "binary", "tab",
	"indent=", "seq", "stream", "stream-errors", "exit-status", "args", "jsonargs", "arg=",
	"argjson=", "rawfile=", "slurpfile=", "argfile=", "debug-dump-disasm", "debug-trace?",
	"help", "version", "build-configuration", "run-tests").NoAbbreviations()

var jqTwoValues = map[string]bool{"--arg": true, "--argjson": true, "--rawfile": true, "--slurpfile": true, "--argfile": true}

// jqOperands splits jq's operands into its program and its files; ok is
// false when a two-value option's second value was parsed as something
// else (jq --arg x -n …): jq takes it as the value, and the rest of the
// line would be misread.
func jqOperands(c *call, p *getopt.Parsed) (prog *arg, files, second []*arg, ok bool) {
	skip := map[int]bool{}
	for _, o := range p.Opts {
		if !jqTwoValues[o.Name] {
			continue
		}
		if !o.SepValue {
			return nil, nil, nil, false // jq has no --arg=NAME
		}
		skip[o.Index+2] = true
		found := false
		for _, i := range p.Operands {
			found = found || i == o.Index+2
		}
		if !found {
			return nil, nil, nil, false
		}
		second = append(second, c.rest()[o.Index+2])
	}
	positional := len(c.rest())
	if o, ok := p.Get("--args", "--jsonargs"); ok {
		positional = o.Index
	}
	for _, i := range p.Operands {
		if skip[i] {
			continue
		}
		a := c.rest()[i]
		switch {
		case prog == nil:
			prog = a
		case i < positional:
			files = append(files, a)
		}
	}
	return prog, files, second, true
}

// jqFiles: jq reads its operands after the program (not --args strings),
// and the files of --rawfile and --slurpfile.
func jqFiles(c *call, p *getopt.Parsed) []*arg {
	prog, files, _, ok := jqOperands(c, p)
	if !ok {
		return nil
	}
	if p.Has("-f", "--from-file") && prog != nil {
		files = append(files, prog)
	}
	for _, o := range p.Opts {
		if o.Name == "--rawfile" || o.Name == "--slurpfile" || o.Name == "--argfile" {
			files = append(files, c.rest()[o.Index+2])
		}
	}
	return files
}

// jqCheck: jq cannot write files or run programs (it has no -i and no
// system()), but its programs can loop forever.
func jqCheck(c *call, p *getopt.Parsed) {
	prog, _, _, ok := jqOperands(c, p)
	if ok && prog != nil {
		// A word before the program that may expand into an option
		// (-L, --arg) changes which word is the program.
		for _, a := range c.rest() {
			if a == prog {
				break
			}
			if a.mayBeOption() {
				c.a.never(UnboundedStream, fmt.Sprintf("jq: %s may expand into an option that changes which word is the program, which may never end", a.src))
				return
			}
		}
	}
	switch {
	case !ok:
		c.a.never(UnboundedStream, "jq: the values of --arg, --rawfile and the like cannot be told apart from the program (jq takes the two words after the option, and no --arg=), which may never end")
		return
	case p.Has("--run-tests"):
		c.a.never(UnboundedStream, "jq --run-tests runs programs from a file classify cannot see, which may never end")
		return
	case p.Has("-f", "--from-file"):
		c.a.never(UnboundedStream, "jq -f runs a program from a file classify cannot see, which may never end")
		return
	case prog == nil:
		return // jq . on its input
	case !prog.literal():
		c.a.never(UnboundedStream, fmt.Sprintf("jq: the program %s comes from an expansion, and may never end", prog.src))
		return
	}
	if why, bad := jqProgramRisk(prog.val); bad {
		c.a.never(UnboundedStream, "jq: "+why)
	}
}

// jqToken is one token of a jq program.
type jqToken struct {
	text  string
	ident bool // a function name (not .field or $var)
	num   bool
}

// jqTokens splits a jq program into tokens, skipping comments and string
// bodies but not the code of \( … ) interpolations inside them. ok is false
// when the program could not be read (an unterminated string).
func jqTokens(s string) ([]jqToken, bool) {
	var toks []jqToken
	// interp counts the open parentheses of each \( … ) we are inside.
	var interp []int
	inString := false
	for i := 0; i < len(s); {
		ch := s[i]
		if inString {
			switch ch {
			case '\\':
				if i+1 < len(s) && s[i+1] == '(' {
					interp = append(interp, 0)
					inString = false
					toks = append(toks, jqToken{text: "("})
					i += 2
					continue
				}
				i += 2
			case '"':
				inString = false
				toks = append(toks, jqToken{text: `""`})
				i++
			default:
				i++
			}
			continue
		}
		switch {
		case ch == '"':
			inString = true
			i++
		case ch == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			i++
		case ch == '(':
			if len(interp) > 0 {
				interp[len(interp)-1]++
			}
			toks = append(toks, jqToken{text: "("})
			i++
		case ch == ')':
			toks = append(toks, jqToken{text: ")"})
			i++
			if len(interp) > 0 {
				if interp[len(interp)-1] == 0 {
					interp = interp[:len(interp)-1]
					inString = true
				} else {
					interp[len(interp)-1]--
				}
			}
		case ch >= '0' && ch <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			toks = append(toks, jqToken{text: s[i:j], num: true})
			i = j
		case isIdentStart(ch) || ch == '$' || ch == '@':
			j := i + 1
			for j < len(s) && (isIdentPart(s[j]) || s[j] == ':' && j+1 < len(s) && s[j+1] == ':' && j+2 < len(s) && isIdentStart(s[j+2])) {
				if s[j] == ':' {
					j++
				}
				j++
			}
			field := i > 0 && s[i-1] == '.' || ch == '$' || ch == '@'
			toks = append(toks, jqToken{text: s[i:j], ident: !field})
			i = j
		default:
			toks = append(toks, jqToken{text: s[i : i+1]})
			i++
		}
	}
	return toks, !inString && len(interp) == 0
}

// jqProgramRisk reports why a jq program may never end: repeat, while,
// until, infinite, range and recurse(f) beyond what can be bounded,
// functions that call themselves, and modules it would load. It errs
// towards unbounded (issue 14: jq programs with repeat, range(infinite),
// recursion or input loops): limit(3; repeat(1)) is reported too.
func jqProgramRisk(prog string) (string, bool) {
	toks, ok := jqTokens(prog)
	if !ok {
		return "the program could not be read", true
	}
	// Function definitions: name, and the token range of the body.
	type def struct {
		name       string
		start, end int
	}
	var open []def
	var defs []def
	depth := 0
	for i, t := range toks {
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case "def":
			if t.ident && i+1 < len(toks) {
				open = append(open, def{name: toks[i+1].text, start: i + 2})
			}
		case ";":
			if len(open) > 0 && depth == 0 {
				d := open[len(open)-1]
				open = open[:len(open)-1]
				if i < d.start {
					return "the program could not be read", true // "def;": no name and body
				}
				d.end = i
				defs = append(defs, d)
			}
		}
		if depth < 0 {
			return "the program could not be read", true
		}
	}
	for _, d := range defs {
		for _, t := range toks[d.start:d.end] {
			if t.ident && t.text == d.name {
				return fmt.Sprintf("the function %s calls itself, and may never end", d.name), true
			}
		}
	}
	for i, t := range toks {
		if !t.ident {
			continue
		}
		switch t.text {
		case "repeat":
			return "repeat never ends on its own", true
		case "while", "until":
			return t.text + " loops until a condition that may never hold", true
		case "infinite":
			return "infinite is an endless bound", true
		case "import", "include":
			return t.text + " loads a module classify cannot see, which may never end", true
		case "range":
			if why, bad := jqRangeRisk(jqArgs(toks, i+1)); bad {
				return why, true
			}
		case "recurse":
			args := jqArgs(toks, i+1)
			for _, a := range args {
				if !jqPathOnly(a) {
					return "recurse(f) with a step other than a path may never end", true
				}
			}
		}
	}
	return "", false
}

// jqArgs returns the arguments of a call whose '(' is at toks[i], split at
// the top-level ';'. A name without '(' has none.
func jqArgs(toks []jqToken, i int) [][]jqToken {
	if i >= len(toks) || toks[i].text != "(" {
		return nil
	}
	var args [][]jqToken
	var cur []jqToken
	depth := 0
	for j := i + 1; j < len(toks); j++ {
		t := toks[j]
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			if depth == 0 {
				return append(args, cur)
			}
			depth--
		case ";":
			if depth == 0 {
				args = append(args, cur)
				cur = nil
				continue
			}
		}
		cur = append(cur, t)
	}
	return append(args, cur)
}

// jqRangeRisk bounds range(N), range(A; B) and range(A; B; STEP): every
// number at most a billion, only length and + - between them, and a
// literal step of at least one.
func jqRangeRisk(args [][]jqToken) (string, bool) {
	for k, a := range args {
		if k == 2 {
			if len(a) != 1 || !a[0].num {
				return "range with a step classify cannot read may never end", true
			}
			f, err := strconv.ParseFloat(a[0].text, 64)
			if err != nil || f < 1 {
				return "range with a step below one may never end", true
			}
		}
		for _, t := range a {
			switch {
			case t.num:
				if f, err := strconv.ParseFloat(t.text, 64); err != nil || f > seqLimit {
					return "range(" + t.text + ") does not end in practice", true
				}
			case t.text == "length" || t.text == "-" || t.text == "+":
			default:
				return "range with a bound classify cannot read may never end", true
			}
		}
	}
	return "", false
}

// jqPathOnly reports a recurse step that only descends into its input
// (.[]?, .children[]): finite input has finite depth.
func jqPathOnly(a []jqToken) bool {
	if len(a) == 0 {
		return false
	}
	for _, t := range a {
		switch {
		case t.text == "." || t.text == "[" || t.text == "]" || t.text == "?" || t.text == `""` || t.text == "|":
		case !t.ident && !t.num && t.text != "" && isIdentStart(t.text[0]):
			// a .field name
		default:
			return false
		}
	}
	return true
}
