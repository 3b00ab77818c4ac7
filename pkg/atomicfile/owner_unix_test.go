//go:build unix

package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Keep keeps the owner and group: root rewriting a daemon's file leaves it
// the daemon's.
func TestWriteWithKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 4321, 4322); err != nil {
		t.Fatal(err)
	}
	if err := WriteWith(path, []byte("new"), Options{Perm: 0o644, Keep: true}); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 4321 || st.Gid != 4322 || fi.Mode().Perm() != 0o600 {
		t.Errorf("owner %d:%d mode %04o; want 4321:4322 0600", st.Uid, st.Gid, fi.Mode().Perm())
	}
	// Without Keep the writer owns the new file.
	if err := Write(path, []byte("newer"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(path)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode().Perm() != 0o644 {
		t.Errorf("owner %d mode %04o; want 0 0644", st.Uid, fi.Mode().Perm())
	}
}
