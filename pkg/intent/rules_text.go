package intent

import (
	"fmt"
	"strings"
)

// Per-command rules for dual-use text and file tools (DESIGN §4).
func registerTextRules() {
	rules["find"] = findRule
	rules["sed"] = sedRule
	for _, n := range []string{"awk", "gawk", "mawk", "nawk", "busybox-awk"} {
		rules[n] = awkRule
	}
	rules["sort"] = sortRule
	rules["uniq"] = uniqRule
	rules["tee"] = teeRule
	rules["dd"] = ddRule
	rules["base64"] = base64Rule
	rules["rg"] = rgRule
	rules["tail"] = tailRule
	for _, n := range []string{"less", "more", "most", "pg"} {
		rules[n] = pagerRule
	}
	for _, n := range []string{"vi", "vim", "nvim", "view", "nano", "pico", "emacs", "joe", "micro", "ed", "ex", "mcedit", "kak", "hx"} {
		rules[n] = editorRule
	}
	rules["file"] = optionWrites(spec("bcEhiklLNnprsvz0C", "mime", "brief", "compile"), "-C", "--compile")
	rules["tree"] = optionWrites(spec("adlfxLPIoJXshDgupqNrtvUcSnCiF:", "help", "version", "noreport", "charset=", "filelimit=", "timefmt=", "sort=", "dirsfirst", "prune", "du", "si", "inodes", "device", "fromfile", "gitignore", "info", "output="), "-o", "--output")
	rules["shuf"] = optionWrites(spec("ein:o:rz", "echo", "input-range=", "head-count=", "output=", "random-source=", "repeat", "zero-terminated", "help", "version"), "-o", "--output")
	rules["xxd"] = xxdRule
	rules["sleep"] = sleepRule
	rules["yes"] = func(c *call) { c.a.never(UnboundedStream, "yes prints forever") }
	for _, n := range []string{"gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "lzma", "compress", "uncompress"} {
		rules[n] = compressRule
	}
	rules["tar"] = tarRule
	rules["unzip"] = unzipRule
}

// optionWrites: read-only unless one of the named options is given.
func optionWrites(s *optSpec, names ...string) rule {
	return func(c *call) {
		p := c.parse(s)
		if !c.strict(p) {
			return
		}
		if o, ok := p.get(names...); ok {
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("%s %s writes a file", c.name, o.name))
		}
	}
}

// findArity is the number of arguments each of GNU find's (4.10) and BSD
// find's expression words takes; -exec and friends take words up to ";" or
// "+". find parses its expression itself, one word at a time (no clusters,
// no abbreviations): the argument of -name is never an action, so
// find . -name -delete only looks for files named "-delete" (issue 14). A
// word it does not know fails closed.
var findArity = map[string]int{
	// Operators and positional options.
	"(": 0, ")": 0, "!": 0, ",": 0, "-not": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0,
	"-daystart": 0, "-depth": 0, "-d": 0, "-follow": 0, "-ignore_readdir_race": 0,
	"-noignore_readdir_race": 0, "-mount": 0, "-noleaf": 0, "-xdev": 0, "-x": 0, "-warn": 0,
	"-nowarn": 0, "-help": 0, "--help": 0, "-version": 0, "--version": 0,
	"-maxdepth": 1, "-mindepth": 1, "-regextype": 1, "-files0-from": 1,
	// Tests.
	"-amin": 1, "-anewer": 1, "-atime": 1, "-cmin": 1, "-cnewer": 1, "-ctime": 1, "-empty": 0,
	"-executable": 0, "-false": 0, "-fstype": 1, "-gid": 1, "-group": 1, "-ilname": 1,
	"-iname": 1, "-inum": 1, "-ipath": 1, "-iregex": 1, "-iwholename": 1, "-links": 1,
	"-lname": 1, "-mmin": 1, "-mtime": 1, "-name": 1, "-newer": 1, "-nogroup": 0, "-nouser": 0,
	"-path": 1, "-perm": 1, "-readable": 0, "-regex": 1, "-samefile": 1, "-size": 1,
	"-true": 0, "-type": 1, "-uid": 1, "-used": 1, "-user": 1, "-wholename": 1, "-writable": 0,
	"-xtype": 1, "-context": 1, "-Bmin": 1, "-Bnewer": 1, "-Btime": 1, "-acl": 0, "-flags": 1,
	"-sparse": 0, "-xattr": 0, "-xattrname": 1,
	// Actions.
	"-delete": 0, "-ls": 0, "-print": 0, "-print0": 0, "-printf": 1, "-prune": 0, "-quit": 0,
	"-fls": 1, "-fprint": 1, "-fprint0": 1, "-fprintf": 2,
}

// findNewerXY matches -newerXY (-newermt, -newerBt …): one argument.
func findNewerXY(w string) bool {
	if len(w) != 8 || !strings.HasPrefix(w, "-newer") {
		return false
	}
	return strings.IndexByte("aBcm", w[6]) >= 0 && strings.IndexByte("aBcmt", w[7]) >= 0
}

// findRule: -delete deletes, -exec/-ok run programs, -fprint*/-fls write
// files (DESIGN §4).
func findRule(c *call) {
	args := c.rest()
	i := 0
	// A word that may expand can turn into any primary, -delete and -exec
	// too: fail closed on it wherever it stands.
	expands := func(a *arg) bool {
		if a.mayBeOption() {
			c.a.writes(CodeDynamicCommand, RiskMediumWrite, fmt.Sprintf("find: argument %s may expand into an expression", a.src))
		}
		return a.mayBeOption()
	}
	// Global options: -H -L -P, -D debugopts, -Olevel.
	for ; i < len(args); i++ {
		v := args[i].val
		if expands(args[i]) {
			return
		}
		if v == "-H" || v == "-L" || v == "-P" || v == "-E" || v == "-X" || v == "-s" || strings.HasPrefix(v, "-O") && len(v) > 2 {
			continue
		}
		if v == "-D" || v == "-f" { // GNU -D debugopts; BSD -f path
			i++
			continue
		}
		if v == "--" {
			i++
		}
		break
	}
	// Starting points: up to the first word that starts an expression.
	for ; i < len(args); i++ {
		a := args[i]
		if expands(a) {
			return
		}
		if strings.HasPrefix(a.val, "-") || a.val == "(" || a.val == "!" {
			break
		}
	}
	for ; i < len(args); i++ {
		a := args[i]
		if expands(a) {
			return
		}
		switch a.val {
		case "-delete":
			c.a.writes(CodeWriteOption, RiskHighWrite, "find -delete deletes what it finds")
			c.a.destroys("find -delete deletes what it finds")
			continue
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(args) && args[end].val != ";" && !(args[end].val == "+" && args[end-1].val == "{}") {
				end++
			}
			c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("find %s runs a program for every match", a.val))
			c.inner(args[i+1:end], stmtCtx{})
			i = end
			continue
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			target := ""
			if i+1 < len(args) {
				target = args[i+1].val
			}
			if !isSinkPath(target) {
				c.a.writes(CodeWriteOption, RiskHighWrite, fmt.Sprintf("find %s %s writes a file", a.val, target))
			}
		}
		n, ok := findArity[a.val]
		if !ok && findNewerXY(a.val) {
			n, ok = 1, true
		}
		if !ok {
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("find: %s is not known to be read-only", a.val))
			return
		}
		for _, v := range args[i+1 : min(i+1+n, len(args))] {
			if v.mayBeOption() {
				// Unquoted, $x may split into words that are actions.
				c.a.writes(CodeDynamicCommand, RiskMediumWrite, fmt.Sprintf("find: argument %s may expand into an expression", v.src))
				return
			}
		}
		if a.val == "-files0-from" && i+1 < len(args) && endlessDevice(args[i+1].val) {
			c.a.never(UnboundedStream, "find -files0-from "+args[i+1].val+" reads a device that never ends")
		}
		i += n
	}
}

var sedSpec = spec("nrsuzEbe:f:i::l:", "quiet", "silent", "debug", "expression=", "file=",
	"follow-symlinks", "in-place?", "line-length=", "null-data", "zero-terminated", "posix",
	"regexp-extended", "sandbox", "separate", "unbuffered", "binary", "help", "version")

// sedRule: -i edits in place; the script's e, w, W, r, R commands and the
// s///e and s///w flags run programs or touch files (DESIGN §4).
func sedRule(c *call) {
	p := c.parse(sedSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.get("-i", "--in-place"); ok {
		c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("sed %s edits files in place", o.name))
		return
	}
	if p.has("-f", "--file") {
		c.a.writes(CodeRunsProgram, RiskMediumWrite, "sed -f runs a script file classify cannot see")
		return
	}
	scripts, ok := c.programWords(p, "-e", "--expression")
	if !ok {
		return
	}
	if p.has("--sandbox") {
		return // GNU sed refuses e, w and r in sandbox mode
	}
	for _, s := range scripts {
		if code, detail, bad := sedScriptRisk(s); bad {
			c.a.writes(code, RiskHighWrite, "sed "+detail)
			return
		}
	}
}

// sedScriptRisk scans a sed script for commands that run programs or open
// files. It tracks addresses, s/// and y/// bodies and text arguments so that
// a "w" inside a regex is not mistaken for a command; anything it cannot
// follow is reported (fail closed).
func sedScriptRisk(s string) (Code, string, bool) {
	i := 0
	skipRegex := func(delim byte) bool {
		for i < len(s) {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case '\n':
				return false
			case delim:
				i++
				return true
			}
			i++
		}
		return false
	}
	restOfLine := func() string {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = len(s) - i
		}
		v := s[i : i+j]
		i += j
		return strings.TrimSpace(v)
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '{' || c == '}' || c == '!':
			i++
			continue
		case c == '#':
			restOfLine()
			continue
		case c >= '0' && c <= '9' || c == '$' || c == ',' || c == '~' || c == '+':
			i++
			continue
		case c == '/':
			i++
			if !skipRegex('/') {
				return CodeRunsProgram, "script could not be read: unterminated address", true
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
			continue
		case c == '\\':
			if i+1 >= len(s) {
				return CodeRunsProgram, "script could not be read", true
			}
			d := s[i+1]
			i += 2
			if !skipRegex(d) {
				return CodeRunsProgram, "script could not be read: unterminated address", true
			}
			continue
		}
		i++ // the command letter
		switch c {
		case 's', 'y':
			if i >= len(s) || s[i] == '\\' || s[i] == '\n' {
				return CodeRunsProgram, "script could not be read: bad s command", true
			}
			d := s[i]
			i++
			if !skipRegex(d) || !skipRegex(d) {
				return CodeRunsProgram, "script could not be read: unterminated s command", true
			}
			if c == 'y' {
				continue
			}
			for i < len(s) && strings.IndexByte("gpiImMe0123456789w", s[i]) >= 0 {
				switch s[i] {
				case 'e':
					return CodeRunsProgram, "s///e runs the pattern space as a command", true
				case 'w':
					i++
					if f := restOfLine(); !isSinkPath(f) {
						return CodeWriteOption, "s///w " + f + " writes a file", true
					}
					continue
				}
				i++
			}
		case 'e':
			return CodeRunsProgram, "e runs a command", true
		case 'w', 'W':
			if f := restOfLine(); !isSinkPath(f) {
				return CodeWriteOption, string(c) + " " + f + " writes a file", true
			}
		case 'r', 'R':
			return CodeWriteOption, string(c) + " opens a file named inside the script", true
		case 'a', 'i', 'c':
			// GNU one-liner text: the rest of the line, with \ continuations.
			for {
				t := restOfLine()
				if !strings.HasSuffix(t, `\`) || i >= len(s) {
					break
				}
				i++
			}
		case 'b', 't', 'T', ':', 'l', 'L', 'q', 'Q':
			for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				i++
			}
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'v':
			for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				i++
			}
		default:
			return CodeRunsProgram, fmt.Sprintf("script has an unknown command %q", c), true
		}
	}
	return "", "", false
}

// awkSpec is gawk 5.3's options (a superset of mawk's, busybox awk's and
// POSIX awk's), with getopt_long's abbreviations.
var awkSpec = spec("F:v:f:e:i:l:E:bcCd::D::ghIkL::MnNo::Op::PrsStVW:", "field-separator=",
	"assign=", "file=", "source=", "include=", "load=", "exec=", "characters-as-bytes",
	"traditional", "compat", "copyright", "dump-variables?", "debug?", "gen-pot", "help",
	"lint?", "bignum", "use-lc-numeric", "non-decimal-data", "pretty-print?", "optimize",
	"profile?", "posix", "re-interval", "no-optimize", "sandbox", "lint-old", "version", "csv",
	"trace")

// awkW lists the -W options (gawk's -W NAME is --NAME; mawk's own are
// version, dump, interactive, exec, sprintf, posix_space, random, usage)
// that only read. Any other -W fails closed: -W exec FILE runs a program
// file, and -W NAME VALUE takes a word we cannot place.
var awkW = map[string]bool{
	"version": true, "help": true, "usage": true, "copyright": true, "traditional": true,
	"compat": true, "posix": true, "re-interval": true, "characters-as-bytes": true,
	"use-lc-numeric": true, "non-decimal-data": true, "sandbox": true, "optimize": true,
	"no-optimize": true, "lint": true, "lint-old": true, "bignum": true, "csv": true,
	"gen-pot": true, "trace": true, "interactive": true, "posix_space": true, "dump": true,
	"sprintf": true, "random": true,
}

// awkRule: system(), pipes, output redirection, getline and program files
// can run programs or write (DESIGN §4).
func awkRule(c *call) {
	p := c.parse(awkSpec)
	if !c.strict(p) {
		return
	}
	sandbox := p.has("-S", "--sandbox")
	for _, o := range p.opts {
		if o.name == "-W" {
			name, _, _ := strings.Cut(o.value, "=")
			if full, _, ok := awkSpec.lookupLong(name); ok && awkW[full] {
				name = full
			}
			if !awkW[name] || !c.rest()[o.index].literal() || o.sepValue && !c.rest()[o.index+1].literal() {
				c.a.writes(CodeRunsProgram, RiskMediumWrite, fmt.Sprintf("awk -W %s is not known to be read-only (-W exec and -W source run programs)", o.value))
				return
			}
			sandbox = sandbox || name == "sandbox"
			continue
		}
		switch o.name {
		case "-D", "--debug":
			c.a.writes(CodeRunsProgram, RiskMediumWrite, fmt.Sprintf("awk %s starts the debugger, which runs the awk commands it reads", o.name))
			return
		case "-f", "--file", "-i", "--include", "-E", "--exec":
			c.a.writes(CodeRunsProgram, RiskMediumWrite, fmt.Sprintf("awk %s runs a program file classify cannot see", o.name))
			return
		case "-l", "--load":
			c.a.writes(CodeRunsProgram, RiskHighWrite, "awk --load loads a shared library")
			return
		case "-d", "--dump-variables", "-o", "--pretty-print", "-p", "--profile":
			c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("awk %s writes a file", o.name))
			return
		}
	}
	progs, ok := c.programWords(p, "-e", "--source")
	if !ok {
		return
	}
	for _, prog := range progs {
		if code, detail, bad := awkProgramRisk(prog); bad && !(sandbox && code == CodeWriteOption) {
			c.a.writes(code, RiskHighWrite, "awk "+detail)
			return
		}
	}
}

// programWords returns the program a sed- or awk-like tool runs: the values
// of the named options, or else its first operand. A program that comes
// from an expansion (sed -e "$S") cannot be read: it fails closed, and ok
// is false (issue 14).
func (c *call) programWords(p *parsedArgs, names ...string) (texts []string, ok bool) {
	var words []*arg
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				w := c.rest()[o.index] // -e'…', --expression=…
				if o.sepValue {
					w = c.rest()[o.index+1]
				}
				words = append(words, w)
				texts = append(texts, o.value)
			}
		}
	}
	if len(words) == 0 {
		if a, found := c.operand(p, 0); found {
			words, texts = append(words, a), append(texts, a.val)
		}
	}
	for _, w := range words {
		if !w.literal() {
			c.a.writes(CodeDynamicCommand, RiskHighWrite, fmt.Sprintf("%s: the program %s comes from an expansion, which classify cannot read", c.name, w.src))
			return nil, false
		}
	}
	return texts, true
}

// awkProgramRisk scans an awk program's tokens (strings, regexes and
// comments skipped) for system(), pipes, getline, @load/@include, and output
// redirection inside print statements.
func awkProgramRisk(s string) (Code, string, bool) {
	inPrint, depth, printDepth := false, 0, 0
	prevSignificant := byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return CodeRunsProgram, "program could not be read: unterminated string", true
			}
			i = j
			prevSignificant = '"'
			continue
		case ch == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			inPrint = false
			continue
		case ch == '/' && regexCanStart(prevSignificant):
			j := i + 1
			for j < len(s) && s[j] != '/' && s[j] != '\n' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			i = j
			prevSignificant = '/'
			continue
		case ch == '@':
			return CodeRunsProgram, "@load/@include loads code", true
		case ch == '|':
			if i+1 < len(s) && s[i+1] == '|' {
				i++
				break
			}
			return CodeRunsProgram, "a pipe runs a shell command", true
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case ch == ';' || ch == '\n' || ch == '{' || ch == '}':
			inPrint = false
		case ch == '>':
			if inPrint && depth <= printDepth {
				j := i + 1
				if j < len(s) && s[j] == '>' {
					j++
				}
				rest := strings.TrimLeft(s[j:], " \t")
				if strings.HasPrefix(rest, `"/dev/stderr"`) || strings.HasPrefix(rest, `"/dev/stdout"`) {
					break
				}
				return CodeWriteOption, "print > FILE writes a file", true
			}
		case isIdentStart(ch):
			j := i
			for j < len(s) && isIdentPart(s[j]) {
				j++
			}
			switch s[i:j] {
			case "system":
				return CodeRunsProgram, "system() runs a shell command", true
			case "getline":
				return CodeRunsProgram, "getline reads from commands or files named at run time", true
			case "print", "printf":
				inPrint, printDepth = true, depth
			}
			i = j - 1
			prevSignificant = 'a'
			continue
		}
		if ch != ' ' && ch != '\t' {
			prevSignificant = ch
		}
	}
	return "", "", false
}

// regexCanStart reports whether a '/' after prev starts a regex rather than
// dividing.
func regexCanStart(prev byte) bool {
	switch {
	case prev == 0, strings.IndexByte("(,{};!~&|=<>+-*%^?:\n", prev) >= 0:
		return true
	}
	return false
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }

var sortSpec = spec("bcCdfghik:mMnNo:rRsS:t:T:uVz", "ignore-leading-blanks", "check?",
	"dictionary-order", "ignore-case", "general-numeric-sort", "human-numeric-sort",
	"ignore-nonprinting", "key=", "merge", "month-sort", "numeric-sort", "output=", "random-sort",
	"random-source=", "reverse", "sort=", "stable", "buffer-size=", "field-separator=",
	"temporary-directory=", "unique", "version-sort", "zero-terminated", "batch-size=",
	"compress-program=", "debug", "files0-from=", "parallel=", "help", "version")

func sortRule(c *call) {
	p := c.parse(sortSpec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.get("-o", "--output"); ok && !isSinkPath(o.value) {
		c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("sort %s %s writes a file", o.name, o.value))
	}
	if p.has("--compress-program") {
		c.a.writes(CodeRunsProgram, RiskHighWrite, "sort --compress-program runs a program")
	}
}

var uniqSpec = spec("cdDf:is:uw:z", "count", "repeated", "all-repeated?", "skip-fields=",
	"group?", "ignore-case", "skip-chars=", "unique", "zero-terminated", "check-chars=", "help", "version")

// uniqRule: uniq IN OUT writes OUT.
func uniqRule(c *call) {
	p := c.parse(uniqSpec)
	if !c.strict(p) {
		return
	}
	if out, ok := c.operand(p, 1); ok && !isStdStream(out.val) {
		c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("uniq writes its output to %s", out.val))
	}
}

var teeSpec = spec("aip", "append", "ignore-interrupts", "output-error?", "help", "version")

// teeRule: every file operand is written (P-51: tee is high_write); a
// process substitution operand is a pipe.
func teeRule(c *call) {
	p := c.parse(teeSpec)
	if !c.strict(p) {
		return
	}
	for _, i := range p.operands {
		a := c.rest()[i]
		if a.procSub || isSinkPath(a.val) {
			continue
		}
		c.a.writes(CodeOutputRedirect, RiskHighWrite, fmt.Sprintf("tee writes the file %s", a.src))
	}
}

// ddRule: of= writes; of=/dev/… overwrites a device (DESIGN §4 destructive).
func ddRule(c *call) {
	for _, a := range c.rest() {
		if !a.literal() {
			c.a.writes(CodeDynamicCommand, RiskHighWrite, fmt.Sprintf("dd: operand %s is computed at run time", a.src))
			return
		}
		if out, ok := strings.CutPrefix(a.val, "of="); ok && !isSinkPath(out) {
			c.a.writes(CodeWriteOption, RiskHighWrite, "dd of="+out+" writes a file")
			if isDiskDevice(out) {
				c.a.destroys("dd of=" + out + " overwrites a device")
			}
		}
	}
}

var base64Spec = spec("dDinw:o:b:", "decode", "ignore-garbage", "wrap=", "output=", "input=", "break=", "help", "version")

// base64Rule: BSD base64 -o writes a file.
func base64Rule(c *call) {
	p := c.parse(base64Spec)
	if !c.strict(p) {
		return
	}
	if o, ok := p.get("-o", "--output"); ok && !isStdStream(o.value) {
		c.a.writes(CodeWriteOption, RiskMediumWrite, fmt.Sprintf("base64 %s %s writes a file", o.name, o.value))
	}
}

// rgSpec lists only what tokenizing needs: the options that take values.
// Any other option is harmless to ripgrep's read-only-ness.
var rgSpec = func() *optSpec {
	s := spec("ABCEMTdefgjmrt")
	for _, c := range "ABCEMTdefgjmrt" {
		s.short[byte(c)] = needsValue
	}
	for _, l := range []string{"after-context", "before-context", "context", "encoding", "max-columns",
		"type-not", "max-depth", "regexp", "file", "glob", "iglob", "threads", "max-count", "replace",
		"type", "type-add", "type-clear", "color", "colors", "context-separator", "dfa-size-limit",
		"engine", "field-context-separator", "field-match-separator", "hyperlink-format",
		"ignore-file", "max-filesize", "path-separator", "pre", "pre-glob", "regex-size-limit",
		"sort", "sortr", "hostname-bin", "generate"} {
		s.long[l] = needsValue
	}
	s.noAbbrev = true
	return s
}()

// rgRule: --pre and --hostname-bin run programs; -z runs decompressors
// (DESIGN §4).
func rgRule(c *call) {
	p := c.parse(rgSpec)
	if len(p.dynamic) > 0 {
		c.strict(p)
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "--pre", "--hostname-bin":
			c.a.writes(CodeRunsProgram, RiskHighWrite, fmt.Sprintf("rg %s runs the program %s", o.name, o.value))
		case "-z", "--search-zip":
			c.a.writes(CodeRunsProgram, RiskMediumWrite, "rg -z runs decompression programs")
		}
	}
	for _, u := range p.unknown {
		if u == "-z" || u == "--search-zip" {
			c.a.writes(CodeRunsProgram, RiskMediumWrite, "rg -z runs decompression programs")
		}
	}
}

// tailSpec: digits are the obsolete count form (tail -50).
var tailSpec = spec("c:fFn:qs:vz0123456789", "bytes=", "follow?", "lines=", "max-unchanged-stats=", "pid=",
	"quiet", "silent", "retry", "sleep-interval=", "verbose", "zero-terminated", "help", "version", "debug")

// tailRule: -f, -F and --follow never end on their own; a line count does
// not stop a follow (DESIGN §4). Rewrite: tail -f F → tail -n 200 F (seed 000).
func tailRule(c *call) {
	args := c.rest()
	// The obsolete first-argument form: tail -20f file, tail +5f file.
	if len(args) > 0 && len(args[0].val) > 1 && (args[0].val[0] == '-' || args[0].val[0] == '+') {
		v := strings.TrimLeft(args[0].val[1:], "0123456789")
		if len(v) < len(args[0].val[1:]) || args[0].val[0] == '+' {
			if v == "f" || v == "lf" || v == "cf" || v == "bf" {
				c.a.never(UnboundedStream, "tail "+args[0].val+" follows forever")
				return
			}
		}
	}
	p := c.parse(tailSpec)
	if !c.strict(p) {
		return
	}
	follow := func(o opt) bool { return o.name == "-f" || o.name == "-F" || o.name == "--follow" }
	for _, o := range p.opts {
		if follow(o) {
			c.a.never(UnboundedStream, "tail "+o.name+" follows forever; a line count does not stop it")
			var extra []string
			if !p.has("-n", "--lines", "-c", "--bytes") {
				extra = []string{"-n", "200"}
			}
			c.rewrite(c.srcExcept(p, 1, func(o opt) bool { return follow(o) || o.name == "--retry" }, extra...)...)
			return
		}
	}
}

var lessSpec = spec("bhjkoOpPtTxyz", "log-file=", "LOG-FILE=")

// pagerRule: less and more wait for a key press (seed 000 [pager]); less -o
// writes a log file. Rewrite: less F → cat F.
func pagerRule(c *call) {
	for i, a := range c.rest() {
		v := a.val
		if strings.HasPrefix(v, "-o") || strings.HasPrefix(v, "-O") || strings.HasPrefix(v, "--log-file") || strings.HasPrefix(v, "--LOG-FILE") {
			c.a.writes(CodeWriteOption, RiskMediumWrite, c.name+" "+v+" writes a log file")
			return
		}
		if a.mayBeOption() && i >= 0 {
			c.a.writes(CodeDynamicCommand, RiskMediumWrite, fmt.Sprintf("%s: argument %s may expand into an option", c.name, a.src))
			return
		}
	}
	c.a.never(Pager, c.name+" waits for key presses")
	var files []string
	for _, a := range c.rest() {
		if strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+") {
			return // options we would have to translate: no rewrite
		}
		files = append(files, a.src)
	}
	if len(files) > 0 {
		c.rewrite(append([]string{"cat"}, files...)...)
	}
}

// editorRule: editors exist to change files, and wait for a terminal.
func editorRule(c *call) {
	c.a.writes(CodeWriteCommand, RiskMediumWrite, c.name+" is an editor that modifies files")
	c.a.never(Pager, c.name+" waits for a terminal")
}

// xxdRule: xxd IN OUT writes OUT.
func xxdRule(c *call) {
	n := 0
	for i := 0; i < len(c.rest()); i++ {
		a := c.rest()[i]
		switch {
		case a.val == "-s" || a.val == "-l" || a.val == "-c" || a.val == "-g" || a.val == "-o" || a.val == "-n" || a.val == "-C" || a.val == "-seek" || a.val == "-len" || a.val == "-cols" || a.val == "-groupsize" || a.val == "-offset" || a.val == "-name":
			i++
		case strings.HasPrefix(a.val, "-") && a.val != "-":
		default:
			n++
			if n == 2 && !isStdStream(a.val) {
				c.a.writes(CodeWriteOption, RiskMediumWrite, "xxd writes its output to "+a.val)
			}
		}
	}
}

// sleepRule: sleep infinity never ends.
func sleepRule(c *call) {
	for _, a := range c.rest() {
		if a.val == "infinity" || a.val == "inf" || !a.literal() {
			c.a.never(UnboundedStream, "sleep "+a.src+" may never end")
		}
	}
}

// compressRule: compressors replace files unless they write to stdout or
// only list/test.
func compressRule(c *call) {
	toStdout := strings.HasPrefix(c.name, "zcat")
	for _, a := range c.rest() {
		v := a.val
		switch {
		case v == "-c" || v == "--stdout" || v == "--to-stdout" || v == "-l" || v == "--list" || v == "-t" || v == "--test":
			toStdout = true
		case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.ContainsAny(v[1:], "clt"):
			toStdout = true
		}
	}
	if !toStdout {
		c.a.writes(CodeWriteCommand, RiskMediumWrite, c.name+" replaces files with their (de)compressed form")
	}
}
