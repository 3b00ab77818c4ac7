package termtext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain name", "plain name"},
		{"naïve café 日本", "naïve café 日本"},
		{"\uFFFD as text", "\uFFFD as text"},
		{"line\nbreak", `"line\nbreak"`},
		{"tab\there", `"tab\there"`},
		{"esc\x1b[31mred", `"esc\x1b[31mred"`},
		{"zero\u200bwid", `"zero\u200bwid"`},
		{"bidi\u202eevil", `"bidi\u202eevil"`},
		{"sep\u2028line", `"sep\u2028line"`},
		{"nb\u00a0sp", `"nb\u00a0sp"`},
		{"c1\u009bcsi", `"c1\u009bcsi"`},
		{"bad\xffbyte", `"bad\xffbyte"`}, // once passed through as it was
	} {
		if got := OneLine(tc.in); got != tc.want {
			t.Errorf("OneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"ééé", 3, "é…"}, // never half a character
		{"ééé", 1, "…"},
		{"abc", 0, "…"},
		{"abc", -1, "…"},
		{"", 0, ""},
	} {
		if got := Truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"name", 40, `"name"`},
		{"", 40, `""`},
		{`say "hi"`, 40, `"say \"hi\""`},
		{"a\nb", 40, `"a\nb"`},
		{"abcdef", 3, `"abc"…`},
		{"ééé", 3, `"é"…`},
		{"\x1b\x1b\x1b", 2, `"\x1b\x1b"…`},
	} {
		if got := Quote(tc.s, tc.n); got != tc.want {
			t.Errorf("Quote(%q, %d) = %s, want %s", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"agent-1", "agent-1"},
		{"日本", "日本"},
		{"a\nb", "a\uFFFDb"},
		{"\x1b[2Jx", "\uFFFD[2Jx"},
		{"r\u202etl", "r\uFFFDtl"},
		{"bad\xff\xfe", "bad\uFFFD\uFFFD"},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"plain", 10, "plain"},
		{"a\nb\x1bc\x00", 10, "a b c "},
		{"bad \xff x", 20, "bad   x"},
		{"ééééé", 5, "éé…"},
		{"\u2066hidden\u2069", 20, " hidden "},
		{"a\r\nb", 1, "a…"},
	} {
		if got := Clean(tc.in, tc.n); got != tc.want {
			t.Errorf("Clean(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// allShown reports whether s is valid UTF-8 of runes a terminal shows as
// they are: in particular no ESC, no other control character, no line break.
func allShown(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsPrint(r) || unicode.IsControl(r)
	})
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "plain", "a\nb", "\x1b[31m", "ééé", "bad\xff", "\u202e", "\u00a0", "\"q\""} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 1 << 10
		if n < 0 {
			n = -n
		}
		if got := OneLine(s); !allShown(got) || safe(s) != (got == s) {
			t.Errorf("OneLine(%q) = %q", s, got)
		}
		if got := Printable(s); !allShown(got) || utf8.RuneCountInString(got) != utf8.RuneCountInString(s) {
			t.Errorf("Printable(%q) = %q", s, got)
		}
		if got := Clean(s, n); !allShown(got) || len(got) > n+len(Ellipsis) {
			t.Errorf("Clean(%q, %d) = %q", s, n, got)
		}
		// strconv.Quote writes at most 4 bytes a byte (\x00); then the
		// quotes and the ellipsis.
		if got := Quote(s, n); !allShown(got) || len(got) > 4*n+2+len(Ellipsis) {
			t.Errorf("Quote(%q, %d) = %q", s, n, got)
		}
		if got := Cut(s, n); len(got) > n || !strings.HasPrefix(s, got) || utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q", s, n, got)
		}
		got := Truncate(s, n)
		if len(got) > n+len(Ellipsis) || !strings.HasPrefix(s, strings.TrimSuffix(got, Ellipsis)) ||
			utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q", s, n, got)
		}
	})
}
