package atomicfile

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	for _, c := range []struct {
		data string
		perm os.FileMode
	}{{"first\n", 0o600}, {"second, longer than the first\n", 0o644}, {"", 0o600}} {
		if err := Write(path, []byte(c.data), c.perm); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != c.data {
			t.Fatalf("read back %q, %v; want %q", got, err, c.data)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != c.perm {
			t.Fatalf("mode %v, %v; want %v", fi.Mode().Perm(), err, c.perm)
		}
	}
	assertOnly(t, dir, "state")
}

// A failed replacement leaves the old file as it was and no temporary file.
func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := Write(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory in the way of the rename: everything before it succeeds.
	blocked := filepath.Join(dir, "blocked")
	if err := os.Mkdir(blocked, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blocked, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(blocked, []byte("new"), 0o600); err == nil {
		t.Fatal("rename over a non-empty directory succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("old file now %q", got)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	assertOnly(t, dir, "blocked", "state")
}

// Keep carries an existing file's mode over to its replacement; a new
// file gets Perm. Check sees the complete temporary file, with its final
// mode, and its error abandons the write.
func TestWriteWith(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old      os.FileMode // 0: no file
		o        Options
		check    error
		wantMode os.FileMode
		want     string
	}{
		{name: "new file", o: Options{Perm: 0o600, Keep: true}, wantMode: 0o600, want: "new"},
		{name: "keep", old: 0o640, o: Options{Perm: 0o600, Keep: true}, wantMode: 0o640, want: "new"},
		{name: "keep private", old: 0o400, o: Options{Perm: 0o644, Keep: true}, wantMode: 0o400, want: "new"},
		{name: "no keep", old: 0o640, o: Options{Perm: 0o600}, wantMode: 0o600, want: "new"},
		{name: "check passes", old: 0o640, o: Options{Perm: 0o600, Keep: true}, wantMode: 0o640, want: "new"},
		{name: "check fails", old: 0o640, o: Options{Perm: 0o600, Keep: true}, check: errors.New("disk on fire"), wantMode: 0o640, want: "old"},
		{name: "check fails on a new file", o: Options{Perm: 0o600, Keep: true}, check: errors.New("disk on fire")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "tokens.yaml")
			if tc.old != 0 {
				if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tc.old); err != nil {
					t.Fatal(err)
				}
			}
			var seen string
			tc.o.Check = func(tmp string) error {
				seen = tmp
				b, err := os.ReadFile(tmp)
				fi, serr := os.Stat(tmp)
				if err != nil || serr != nil || string(b) != "new" || fi.Mode().Perm() != cmp.Or(tc.wantMode, tc.o.Perm) {
					t.Errorf("temporary file: %q %v, %v; want new, mode %v", b, err, serr, tc.wantMode)
				}
				return tc.check
			}
			err := WriteWith(path, []byte("new"), tc.o)
			if !errors.Is(err, tc.check) || (tc.check == nil) != (err == nil) {
				t.Fatalf("WriteWith = %v, want %v", err, tc.check)
			}
			if filepath.Dir(seen) != dir {
				t.Errorf("temporary file %q is not beside the file", seen)
			}
			if tc.want == "" {
				assertOnly(t, dir)
				return
			}
			assertOnly(t, dir, "tokens.yaml")
			b, _ := os.ReadFile(path)
			fi, _ := os.Stat(path)
			if string(b) != tc.want || fi.Mode().Perm() != tc.wantMode {
				t.Errorf("file %q mode %v; want %q mode %v", b, fi.Mode().Perm(), tc.want, tc.wantMode)
			}
		})
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("directory holds %v, want %v", got, names)
	}
	for i := range names {
		if got[i] != names[i] {
			t.Fatalf("directory holds %v, want %v", got, names)
		}
	}
}
