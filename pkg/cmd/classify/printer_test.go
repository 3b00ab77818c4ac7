package classify

import (
	"strings"
	"testing"
)

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
