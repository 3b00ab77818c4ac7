package notekey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/internal/notekeytest"
)

func TestLoad(t *testing.T) {
	skey, vkey := notekeytest.Generate(t, "audit.example/log", 1)
	_, vkey2 := notekeytest.Generate(t, "witness.example", 2)
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

// FuzzParseFile: every key a file yields is a verifier key, and an error
// never quotes the file's content.
func FuzzParseFile(f *testing.F) {
	_, vkey := notekeytest.Generate(f, "audit.example/log", 1)
	for _, s := range []string{vkey + "\n", "# c\n\n" + vkey, "PRIVATE+KEY+a+b+c\n", "x+1+y\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := parseFile("k.pub", data)
		if err != nil {
			if line := strings.TrimSpace(string(data)); len(line) > 8 && strings.Contains(err.Error(), line) {
				t.Fatalf("error quotes the content: %v", err)
			}
			return
		}
		for _, k := range keys {
			if _, err := note.NewVerifier(k); err != nil {
				t.Fatalf("key %q: %v", k, err)
			}
		}
	})
}

func TestLoadAll(t *testing.T) {
	_, vkey := notekeytest.Generate(t, "audit.example/log", 1)
	skey, vkey2 := notekeytest.Generate(t, "witness.example", 2)
	file := filepath.Join(t.TempDir(), "two.pub")
	if err := os.WriteFile(file, []byte(vkey+"\n"+vkey2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadAll([]string{vkey2, file}); err != nil || strings.Join(got, " ") != strings.Join([]string{vkey2, vkey, vkey2}, " ") {
		t.Errorf("LoadAll = %v, %v; want the keys in order", got, err)
	}
	if got, err := LoadAll(nil); err != nil || got != nil {
		t.Errorf("LoadAll(nil) = %v, %v", got, err)
	}
	if _, err := LoadAll([]string{vkey, skey}); err == nil || !strings.Contains(err.Error(), "is a private signing key") {
		t.Errorf("a signer key among them: %v", err)
	}
}
