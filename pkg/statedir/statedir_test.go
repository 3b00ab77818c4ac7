package statedir

import (
	"path/filepath"
	"testing"
)

func TestDir(t *testing.T) {
	for _, tc := range []struct{ xdg, home, want string }{
		{"/var/state", "/home/u", "/var/state/govkit"},
		{"relative/state", "/home/u", "/home/u/.local/state/govkit"},
		{"", "/home/u", "/home/u/.local/state/govkit"},
	} {
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		t.Setenv("HOME", tc.home)
		got, err := Dir()
		if err != nil || got != filepath.FromSlash(tc.want) {
			t.Errorf("XDG_STATE_HOME=%q HOME=%q: %q, %v; want %q", tc.xdg, tc.home, got, err, tc.want)
		}
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	if _, err := Dir(); err == nil {
		t.Error("no HOME and no XDG_STATE_HOME: no error")
	}
}
