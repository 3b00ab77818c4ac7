//go:build unix

package token

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Root rewriting auditd's tokens file keeps its owner, or auditd could no
// longer read it.
func TestCreateKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	write(t, path, "tokens: []\n", 0o600)
	if err := os.Chown(path, 4321, 4322); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, "a", []Role{Agent}, rand.Reader); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 4321 || st.Gid != 4322 || fi.Mode().Perm() != 0o600 {
		t.Errorf("owner %d:%d mode %04o; want 4321:4322 0600", st.Uid, st.Gid, fi.Mode().Perm())
	}
}
