package classify

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestUnescapeHTML(t *testing.T) {
	for _, s := range []string{
		"ls && cat a > b < c",
		`literal \u003c stays`,
		`\\u003e and \\\u0026`,
		"quote \" backslash \\ tab \t newline \n",
		"unicode é \u2028 \x1b",
		"",
		"<>&",
	} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := unescapeHTML(b)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("unescapeHTML(%s) = %s: not JSON: %v", b, got, err)
		}
		if back != s {
			t.Errorf("round trip of %q through %s gives %q", s, got, back)
		}
		if strings.Contains(string(got), `\u003c`) && !strings.Contains(s, `\u003c`) {
			t.Errorf("unescapeHTML(%s) = %s still has an HTML escape", b, got)
		}
	}
}

func TestShown(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ls -la", "ls -la"},
		{"grep 'é' f", "grep 'é' f"},
		{"a\tb", `"a\tb"`},
		{"ls\r", `"ls\r"`},
		{"echo \x1b]0;owned\x07", `"echo \x1b]0;owned\a"`},
		{"rm \u202egnp.exe", `"rm \u202egnp.exe"`},
		{strings.Repeat("x", maxShown+10), strings.Repeat("x", maxShown) + "… (522 bytes)"},
		{strings.Repeat("x", maxShown-1) + "é", strings.Repeat("x", maxShown-1) + "… (513 bytes)"},
	}
	for _, tt := range tests {
		if got := shown(tt.in); got != tt.want {
			t.Errorf("shown(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
