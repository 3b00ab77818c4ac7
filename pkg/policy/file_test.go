package policy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A policy or infra path that is not a regular file is refused, naming
// what it is, and never blocks (issue 13): opening a FIFO for reading
// waits for a writer.
func TestReadFileRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "policies.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	good := filepath.Join(dir, "infra.yaml")
	if err := os.WriteFile(good, []byte("version: \"1\"\nresources: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{fifo, fifo + " is a named pipe (FIFO), not a regular file"},
		{dir, dir + " is a directory, not a regular file"},
		{"/dev/zero", "/dev/zero is a device, not a regular file"},
	} {
		for name, load := range map[string]func(string) error{
			"ReadFile":      func(p string) error { _, err := ReadFile(p); return err },
			"LoadFile":      func(p string) error { _, err := LoadFile(p); return err },
			"LoadInfraFile": func(p string) error { _, err := LoadInfraFile(p); return err },
		} {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skipf("%s: %v", tc.path, err)
			}
			if err := load(tc.path); err == nil || err.Error() != tc.want {
				t.Errorf("%s(%s): %v, want %q", name, tc.path, err, tc.want)
			}
		}
	}
	if _, err := LoadInfraFile(good); err != nil {
		t.Errorf("a regular file: %v", err)
	}
}

// A file over MaxInputSize is reported as too large, not read whole.
func TestLoadFileTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, []byte("# "+strings.Repeat("x", MaxInputSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(p); err == nil || !strings.Contains(err.Error(), "exceeds the input size limit") {
		t.Fatalf("LoadFile of %d bytes: %v", MaxInputSize+3, err)
	}
}
