package govkit_test

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// expand PATH: replace $VAR and ${VAR} in the file PATH, or in every file
// under the directory PATH, with the script's environment ($WORK above
// all): hook events carry absolute paths, which a txtar cannot know.
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: expand PATH")
	}
	err := filepath.WalkDir(ts.MkAbs(args[0]), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(path, []byte(os.Expand(string(b), ts.Getenv)), 0o644)
	})
	ts.Check(err)
}
