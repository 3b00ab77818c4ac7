package intent

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// arg is one shell word after quote removal (DESIGN §4: normalize argv before
// matching flags), with what the shell may still do to it at run time.
type arg struct {
	val string // the value after quote and backslash removal; expansions contribute nothing
	src string // the word as written

	start, end int // byte offsets of the word in the walker's source

	expands bool // contains $var, $(…), `…`, $((…)) or <(…): its value is unknown
	glob    bool // an unquoted *, ? or [ that may match file names
	brace   bool // an unquoted {a,b} or {1..3} brace expansion
	ansiC   bool // contains $'…' or $"…" quoting
	procSub bool // the whole word is a process substitution: a pipe, not a file
}

// literal reports whether the shell passes the word through unchanged.
func (a *arg) literal() bool { return !a.expands && !a.glob && !a.brace }

// mayBeOption reports whether the word could reach the program as an option
// it does not look like here: an expansion, or a glob or brace expansion that
// can produce "-…" (a file named "--in-place=.txt" matches *.txt).
func (a *arg) mayBeOption() bool {
	if a.expands || a.brace {
		return true
	}
	return a.glob && (a.val == "" || strings.ContainsRune("*?[", rune(a.val[0])))
}

// newArg normalizes a parsed word.
func newArg(src string, w *syntax.Word) *arg {
	a := &arg{}
	a.fill(src, w)
	return a
}

// plainLiteral reports whether an unquoted literal has none of \ * ? [ {,
// so that it is its own value.
func plainLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '*', '?', '[', '{':
			return false
		}
	}
	return true
}

// fill normalizes w into a, overwriting all of it. The common case, one
// plain literal, allocates nothing.
func (a *arg) fill(src string, w *syntax.Word) {
	// Every field is written (a is not zeroed first: see takeWords), in
	// one store where the word is plain.
	start, end := int(w.Pos().Offset()), int(w.End().Offset())
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && plainLiteral(l.Value) {
			*a = arg{val: l.Value, src: wordSource(src, start, end), start: start, end: end}
			return
		}
	}
	*a = arg{src: wordSource(src, start, end), start: start, end: end}
	var b strings.Builder
	braces := false
	bracket := -1 // offset in b of the first unquoted '['
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			braces = braces || strings.IndexByte(p.Value, '{') >= 0
			unescapeUnquoted(p.Value, &b, a, &bracket)
		case *syntax.SglQuoted:
			if p.Dollar {
				a.ansiC = true
				b.WriteString(decodeANSIC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				a.ansiC = true
			}
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDouble(l.Value))
				} else {
					a.expands = true
				}
			}
		case *syntax.ExtGlob:
			a.glob = true
		case *syntax.ProcSubst:
			a.expands = true
			a.procSub = len(w.Parts) == 1
		default: // ParamExp, CmdSubst, ArithmExp
			a.expands = true
		}
	}
	a.val = b.String()
	// An unquoted '[' starts a glob bracket expression only when a ']'
	// follows (bash matches a lone '[' literally): the word "[" of
	// [ -f x ] is the test command, not a pattern (issue 14). A ']' may
	// also come from an expansion, so a word that expands stays a glob.
	if bracket >= 0 && (a.expands || strings.IndexByte(a.val[bracket+1:], ']') >= 0) {
		a.glob = true
	}
	if braces {
		a.brace = hasBraceExpansion(braceSkeleton(w))
	}
}

// braceSkeleton is the word with every quoted or expanded part replaced by
// "x" and escaped characters too, leaving only the braces bash would expand.
func braceSkeleton(w *syntax.Word) string {
	var skel strings.Builder
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			skel.WriteByte('x')
			continue
		}
		for i := 0; i < len(l.Value); i++ {
			if l.Value[i] == '\\' && i+1 < len(l.Value) {
				i++
				skel.WriteByte('x')
				continue
			}
			skel.WriteByte(l.Value[i])
		}
	}
	return skel.String()
}

func wordSource(src string, s, e int) string {
	if s < 0 || e > len(src) || s > e {
		return ""
	}
	return src[s:e]
}

// unescapeUnquoted removes backslashes from an unquoted literal, noting
// unescaped glob characters (and where the first '[' is, which is a glob
// only if a ']' follows).
func unescapeUnquoted(s string, b *strings.Builder, a *arg, bracket *int) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			b.WriteByte(s[i])
			continue
		}
		switch c {
		case '*', '?':
			a.glob = true
		case '[':
			if *bracket < 0 {
				*bracket = b.Len()
			}
		}
		b.WriteByte(c)
	}
}

// unescapeDouble applies bash's backslash rules inside double quotes: only
// $ ` " \ and newline are escapable.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hasBraceExpansion reports an unquoted {x,y} or {a..b} in the skeleton.
func hasBraceExpansion(s string) bool {
	for {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			return false
		}
		rest := s[open+1:]
		close := strings.IndexByte(rest, '}')
		if close < 0 {
			return false
		}
		body := rest[:close]
		if j := strings.LastIndexByte(body, '{'); j >= 0 {
			body = body[j+1:]
		}
		if strings.Contains(body, ",") || strings.Contains(body, "..") {
			return true
		}
		s = rest[close+1:]
	}
}

// decodeANSIC decodes the body of $'…' the way bash does, so that an option
// spelled $'-i' is still seen as -i.
func decodeANSIC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i]]
			j := i + 1
			for j < len(s) && j < i+1+max && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(s[i])
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if s[i] == 'x' {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// badRune reports the first character that classify refuses anywhere in a
// command: ASCII control characters other than tab and newline, C1 controls,
// Unicode bidirectional overrides and line separators (they make the text a
// reviewer sees differ from what the shell runs), and invalid UTF-8.
func badRune(s string) (string, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
				return strconv.QuoteRune(rune(c)), true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return "invalid UTF-8", true
		}
		switch {
		case r >= 0x80 && r <= 0x9f,
			r >= 0x200b && r <= 0x200f, // zero-width and direction marks
			r >= 0x202a && r <= 0x202e, // bidi embeddings and overrides
			r >= 0x2066 && r <= 0x2069, // bidi isolates
			r == 0x2028 || r == 0x2029 || r == 0x061c || r == 0xfeff:
			return strconv.QuoteRune(r), true
		}
		i += n
	}
	return "", false
}

// isASCII reports whether s is pure ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// shellQuote renders s as one shell word, preferring no quotes, then double
// quotes (so rewrites read like the seed's templates), then single quotes.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./=:,+@%", c) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	if !strings.ContainsAny(s, "\"$`\\!") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
