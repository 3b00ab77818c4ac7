// Package termtext makes untrusted text (names, reasons, messages from
// clients and events) safe and short enough to show on one terminal or log
// line.
package termtext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis marks where Truncate, Clean and Quote cut.
const Ellipsis = "…"

// A rune is shown as it is when unicode.IsPrint says so: letters, marks,
// numbers, punctuation, symbols and the ASCII space. Everything else can
// move the cursor or recolour the terminal (C0/C1 controls, ESC), forge a
// log line (CR, LF, U+2028, U+2029), reorder what the reader sees (the
// bidirectional controls of CVE-2021-42574, other format characters) or
// pass for a plain space (NBSP and the other Unicode spaces).
func shown(r rune) bool { return unicode.IsPrint(r) }

// safe reports whether s is valid UTF-8 made only of shown runes.
func safe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return safeSlow(s[i:]) // not plain printable ASCII
		}
	}
	return true
}

func safeSlow(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !shown(r) {
			return false
		}
	}
	return true
}

// OneLine is s when it is safe to show as it is, else s Go-quoted
// (strconv.Quote), so that a reader sees every control character and
// invalid byte as an escape and the line stays one line.
func OneLine(s string) string {
	if safe(s) {
		return s
	}
	return strconv.Quote(s)
}

// Quote is s Go-quoted, cut first to at most n bytes on a character
// boundary, with Ellipsis after the closing quote when cut: for echoing an
// untrusted value in an error without echoing all of it (DESIGN §3).
func Quote(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(Cut(s, n)) + Ellipsis
}

// Truncate cuts s to at most n bytes on a character boundary, marking the
// cut with Ellipsis (so the result has at most n+3 bytes). It does not
// repair s: valid UTF-8 stays valid; use Clean or OneLine for untrusted
// text.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + Ellipsis
}

// Cut is s cut to at most n bytes on a character boundary, unmarked: for a
// caller that says the cut its own way (a byte count, a closing quote).
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Printable is s with every rune that is not safe to show, and every
// invalid byte, replaced by U+FFFD: the text keeps its length in
// characters, and a reader sees where something was taken out.
func Printable(s string) string {
	return replace(s, unicode.ReplacementChar)
}

// Clean is s with every rune that is not safe to show, and every invalid
// byte, replaced by a space, then cut to n bytes by Truncate: one quiet
// line for a log.
func Clean(s string, n int) string {
	return Truncate(replace(s, ' '), n)
}

func replace(s string, with rune) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || !shown(r) {
			r = with
		}
		b.WriteRune(r)
		i += size
	}
	return b.String()
}
