package notekey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestLoad(t *testing.T) {
	skey, vkey, err := note.GenerateKey(strings.NewReader(strings.Repeat("k", 64)), "audit.example/log")
	if err != nil {
		t.Fatal(err)
	}
	_, vkey2, _ := note.GenerateKey(strings.NewReader(strings.Repeat("w", 64)), "witness.example")
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		arg     string
		want    []string
		wantErr string
	}{
		{vkey, []string{vkey}, ""},
		{" " + vkey + "\n", []string{vkey}, ""},
		{write("one.pub", vkey+"\n"), []string{vkey}, ""},
		{write("two.pub", "# the log\n"+vkey+"\n\n"+vkey2+"\n"), []string{vkey, vkey2}, ""},
		{write("private.key", skey+"\n"), nil, "line 1 is a private signing key"},
		{write("empty.pub", "\n# nothing\n"), nil, "holds no verifier key"},
		{write("junk.pub", "hello\n"), nil, "line 1 is not a verifier key"},
		{"nope+1234+abc", nil, "is neither a verifier key"},
		{skey, nil, "is a private signing key"},
		{filepath.Join(dir, "missing"), nil, "no such file"},
	} {
		got, err := Load(c.arg)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), skey) {
				t.Errorf("Load(%q) = %v, %v; want %q", c.arg, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("Load(%q) = %v, %v", c.arg, got, err)
		}
	}
}
