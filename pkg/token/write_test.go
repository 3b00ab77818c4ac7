package token

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

func mustLoad(t *testing.T, path string) *File {
	t.Helper()
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func names(f *File) []string {
	var s []string
	for _, id := range f.Identities() {
		s = append(s, id.Name+"="+fmt.Sprint(id.Roles))
	}
	return s
}

// noTemps fails if a temporary file was left in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestCreateNewFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.yaml")
	tok, err := Create(path, "alice", []Role{Approver, Auditor}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "gk_") || len(tok) != 46 {
		t.Errorf("token %q", tok)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file: %v, mode %v", err, fi.Mode())
	}
	data, _ := os.ReadFile(path)
	want := newFileComment + "\ntokens:\n  - name: alice\n    sha256: " + hashOf(tok) + "\n    roles: [approver, auditor]\n"
	if string(data) != want {
		t.Errorf("file:\n%s\nwant:\n%s", data, want)
	}
	if strings.Contains(string(data), tok) {
		t.Error("the file holds the token itself")
	}
	id, ok := mustLoad(t, path).Lookup(tok)
	if !ok || id.Name != "alice" || !slices.Equal(id.Roles, []Role{Approver, Auditor}) {
		t.Errorf("Lookup(new token) = %v, %v", id, ok)
	}
	noTemps(t, dir)
}

// Create keeps the other entries, their order, comments and the mode.
func TestCreateAppends(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		mode     os.FileMode
	}{
		{"block list with comments", "# our tokens\ntokens:\n  # the CI agent\n  - name: ci\n    sha256: " + hashB + "\n    roles: [agent] # only events\n  - name: bob\n    sha256: " + hashA + "\n    roles:\n      - admin\n", 0o640},
		{"empty list", "tokens: []\n", 0o600},
		{"null list", "# nobody yet\ntokens:\n", 0o400},
		{"empty file", "", 0o644},
		{"empty mapping", "{}\n", 0o600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens.yaml")
			write(t, path, tc.in, tc.mode)
			before := names(mustLoad(t, path))
			tok, err := Create(path, "carol", []Role{Auditor}, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			f := mustLoad(t, path)
			if got, want := names(f), append(before, "carol=[auditor]"); !slices.Equal(got, want) {
				t.Errorf("tokens %v, want %v", got, want)
			}
			if id, ok := f.Lookup(tok); !ok || id.Name != "carol" {
				t.Errorf("Lookup(new token) = %v, %v", id, ok)
			}
			data, _ := os.ReadFile(path)
			for _, c := range []string{"# our tokens", "# the CI agent", "# only events", "# nobody yet"} {
				if strings.Contains(tc.in, c) && !strings.Contains(string(data), c) {
					t.Errorf("comment %q lost:\n%s", c, data)
				}
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != tc.mode {
				t.Errorf("mode %04o, want %04o", fi.Mode().Perm(), tc.mode)
			}
		})
	}
}

func TestCreateRefuses(t *testing.T) {
	existing := "tokens:\n  - name: alice\n    sha256: " + hashA + "\n    roles: [approver]\n"
	for _, tc := range []struct {
		name     string
		in       string // "" creates no file
		mode     os.FileMode
		tokName  string
		roles    []Role
		want     string
		sentinel error
	}{
		{"duplicate name", existing, 0o600, "alice", []Role{Agent},
			`tokens.yaml:2: a token named "alice" already exists`, ErrNameTaken},
		{"duplicate name in another case", existing, 0o600, "ALICE", []Role{Agent},
			`tokens.yaml:2: a token named "alice" already exists`, ErrNameTaken},
		{"empty name", existing, 0o600, "", []Role{Agent}, "token name is empty", nil},
		{"confusing name", existing, 0o600, "alice (admin)", []Role{Agent}, "may hold only letters, digits and . - _ @", nil},
		{"bad role", existing, 0o600, "bob", []Role{"root"}, `unknown role "root" (roles: agent, approver, auditor, admin, gateway)`, nil},
		{"no roles", existing, 0o600, "bob", nil, "no roles given", nil},
		{"role twice", existing, 0o600, "bob", []Role{Agent, Agent}, "role agent is listed twice", nil},
		{"group-writable file", existing, 0o660, "bob", []Role{Agent},
			"is writable by group or others (mode 0660): whoever can write it can mint an admin token", ErrUnsafeMode},
		{"world-writable file", existing, 0o606, "bob", []Role{Agent}, "is writable by group or others (mode 0606)", ErrUnsafeMode},
		{"invalid file", existing + "  - name: x\n", 0o600, "bob", []Role{Agent}, "tokens.yaml:5: tokens[1].sha256: required", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "tokens.yaml")
			write(t, path, tc.in, tc.mode)
			tok, err := Create(path, tc.tokName, tc.roles, rand.Reader)
			if err == nil || !strings.Contains(err.Error(), tc.want) || tok != "" {
				t.Fatalf("Create = %q, %v; want error %q", tok, err, tc.want)
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("error %v does not wrap %v", err, tc.sentinel)
			}
			if data, _ := os.ReadFile(path); string(data) != tc.in {
				t.Errorf("file changed:\n%s", data)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != tc.mode {
				t.Errorf("mode changed to %04o", fi.Mode().Perm())
			}
			noTemps(t, dir)
		})
	}
}

func TestCreateMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "tokens.yaml")
	_, err := Create(path, "a", []Role{Agent}, rand.Reader)
	if err == nil || err.Error() != "tokens file "+path+": directory: no such file or directory" {
		t.Errorf("Create = %v", err)
	}
}

// A failure at any point leaves the old file whole, with its mode, and no
// temporary file; a failed first Create leaves no file.
func TestCreateAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.yaml")
	in := "tokens:\n  - {name: alice, sha256: " + hashA + ", roles: [approver]}\n"
	write(t, path, in, 0o640)

	// The random source fails: nothing is written.
	if _, err := Create(path, "bob", []Role{Agent}, iotest.ErrReader(errors.New("entropy gone"))); err == nil ||
		err.Error() != "generating a token: entropy gone" {
		t.Errorf("Create with a broken random source = %v", err)
	}

	// The write fails after the temporary file is complete, before the rename.
	var tmpSeen string
	wantMode := os.FileMode(0o640)
	testHookBeforeRename = func(tmp string) error {
		tmpSeen = tmp
		if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm() != wantMode {
			t.Errorf("temporary file: %v, mode %v; want the old file's mode", err, fi.Mode())
		}
		return errors.New("disk on fire")
	}
	t.Cleanup(func() { testHookBeforeRename = nil })
	_, err := Create(path, "bob", []Role{Agent}, rand.Reader)
	if err == nil || err.Error() != "writing tokens file "+path+": disk on fire (it was left unchanged)" {
		t.Errorf("Create = %v", err)
	}
	if tmpSeen == "" || filepath.Dir(tmpSeen) != dir {
		t.Errorf("temporary file %q is not in the tokens file's directory", tmpSeen)
	}
	if data, _ := os.ReadFile(path); string(data) != in {
		t.Errorf("file changed:\n%s", data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %04o", fi.Mode().Perm())
	}
	noTemps(t, dir)

	newPath := filepath.Join(dir, "new.yaml")
	wantMode = 0o600
	if _, err := Create(newPath, "bob", []Role{Agent}, rand.Reader); err == nil {
		t.Error("Create succeeded despite the failing hook")
	}
	if _, err := os.Stat(newPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed first Create left %s: %v", newPath, err)
	}
	noTemps(t, dir)
}

// A symlinked tokens file stays a symlink; the file it names is replaced.
func TestCreateThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.yaml")
	link := filepath.Join(dir, "tokens.yaml")
	write(t, target, "tokens: []\n", 0o600)
	if err := os.Symlink("real.yaml", link); err != nil {
		t.Skip(err)
	}
	tok, err := Create(link, "a", []Role{Agent}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if _, ok := mustLoad(t, target).Lookup(tok); !ok {
		t.Error("the new token is not in the link's target")
	}
}

// Concurrent Creates all land: the directory lock keeps one from
// overwriting another's entry.
func TestCreateConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	const n = 12
	toks := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			if toks[i], err = Create(path, fmt.Sprintf("agent-%d", i), []Role{Agent}, rand.Reader); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	f := mustLoad(t, path)
	for i, tok := range toks {
		if id, ok := f.Lookup(tok); !ok || id.Name != fmt.Sprintf("agent-%d", i) {
			t.Errorf("token %d: %v, %v", i, id, ok)
		}
	}
}

func TestRevoke(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.yaml")
	in := "# header\ntokens:\n" +
		"  # alice is on call\n  - {name: alice, sha256: " + hashA + ", roles: [approver]}\n" +
		"  - {name: bob, sha256: " + hashB + ", roles: [agent]}\n"
	write(t, path, in, 0o640)

	for _, tc := range []struct{ name, want string }{
		{"carol", path + `: no token named "carol"`},
		{"Alice", path + `: no token named "Alice" (line 4 has "alice": names are exact here)`},
	} {
		err := Revoke(path, tc.name)
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrNoSuchName) {
			t.Errorf("Revoke(%s) = %v; want %q", tc.name, err, tc.want)
		}
	}
	if data, _ := os.ReadFile(path); string(data) != in {
		t.Errorf("a refused Revoke changed the file:\n%s", data)
	}

	if err := Revoke(path, "alice"); err != nil {
		t.Fatal(err)
	}
	f := mustLoad(t, path)
	if _, ok := f.Lookup("token-a"); ok || !slices.Equal(names(f), []string{"bob=[agent]"}) {
		t.Errorf("after revoking alice: %v", names(f))
	}
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte("# header")) || bytes.Contains(data, []byte("on call")) {
		t.Errorf("comments: want the header kept and alice's dropped:\n%s", data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %04o", fi.Mode().Perm())
	}

	if err := Revoke(path, "bob"); err != nil {
		t.Fatal(err)
	}
	if f := mustLoad(t, path); f.Len() != 0 {
		t.Errorf("%d tokens left", f.Len())
	}
	if err := Revoke(filepath.Join(dir, "missing.yaml"), "bob"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Revoke on a missing file = %v", err)
	}
	noTemps(t, dir)
}
