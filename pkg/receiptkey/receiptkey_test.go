//go:build unix

package receiptkey

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var secret = []byte("SECRET-SECRET-SECRET-SECRET-1234")

func write(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func TestLoadOrCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "govkit")
	path := filepath.Join(dir, "receipt.key")
	key, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != Size || bytes.Equal(key, make([]byte, Size)) {
		t.Fatalf("key of %d bytes, or all zero", len(key))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("key directory mode %04o", di.Mode().Perm())
	}
	again, err := LoadOrCreate(path)
	if err != nil || !bytes.Equal(again, key) {
		t.Fatalf("second LoadOrCreate: %v, same key %v", err, bytes.Equal(again, key))
	}
	loaded, err := Load(path)
	if err != nil || !bytes.Equal(loaded, key) {
		t.Fatalf("Load: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestLoadOrCreateRace: processes that start together agree on one key.
func TestLoadOrCreateRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k", "receipt.key")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadOrCreate(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) {
			t.Fatal("two keys made for one path")
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		setup func(path string)
		want  string
	}{
		{"world readable", func(p string) { write(t, p, secret, 0o644) }, "is readable or writable by group or others (mode 0644); run: chmod 600 "},
		{"group readable", func(p string) { write(t, p, secret, 0o640) }, "chmod 600"},
		{"other writable", func(p string) { write(t, p, secret, 0o602) }, "chmod 600"},
		{"group executable", func(p string) { write(t, p, secret, 0o610) }, "chmod 600"},
		{"short", func(p string) { write(t, p, secret[:31], 0o600) }, "holds 31 bytes, want 32"},
		{"long", func(p string) { write(t, p, append(secret, '\n'), 0o600) }, "holds more than 32 bytes"},
		{"empty", func(p string) { write(t, p, nil, 0o600) }, "holds 0 bytes"},
		{"missing", func(string) {}, "no receipt key at"},
		{"directory", func(p string) { os.Mkdir(p, 0o700) }, "not a regular file"},
		{"fifo", func(p string) { syscall.Mkfifo(p, 0o600) }, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			tc.setup(path)
			key, err := Load(path)
			if err == nil {
				t.Fatalf("loaded %d bytes", len(key))
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q, want %q and the path", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error shows the key: %q", err)
			}
			if strings.Contains(tc.want, "chmod") && !errors.Is(err, ErrUnsafe) {
				t.Errorf("error %q does not wrap ErrUnsafe", err)
			}
			// LoadOrCreate never replaces a key it refuses.
			if _, err := LoadOrCreate(path); err == nil && tc.name != "missing" {
				t.Error("LoadOrCreate accepted it")
			}
		})
	}
}

func TestLoadOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give the file another owner")
	}
	path := filepath.Join(t.TempDir(), "receipt.key")
	write(t, path, secret, 0o600)
	if err := os.Chown(path, 4321, 4321); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "belongs to uid 4321, not you; use your own key, or as root run: chown 0 ") || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("error %v", err)
	}
}

func TestCreateRefusesOpenDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	_, err := LoadOrCreate(filepath.Join(dir, "receipt.key"))
	if err == nil || !strings.Contains(err.Error(), "run: chmod 700 "+dir) {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "receipt.key")); err == nil {
		t.Error("a key was created in a directory others may write")
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/lib/me")
	if p, err := DefaultPath(); err != nil || p != "/var/lib/me/govkit/receipt.key" {
		t.Errorf("DefaultPath = %q, %v", p, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative/dir")
	t.Setenv("HOME", "/home/me")
	if p, err := DefaultPath(); err != nil || p != "/home/me/.local/state/govkit/receipt.key" {
		t.Errorf("DefaultPath = %q, %v", p, err)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/.local/state/govkit/receipt.key": "/home/me/.local/state/govkit/receipt.key",
		"/tmp/a b":  "'/tmp/a b'",
		"/tmp/it's": `'/tmp/it'\''s'`,
		"":          "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
