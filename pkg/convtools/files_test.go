package convtools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/govkit/govkit/pkg/session/response"
)

// tree makes a working directory with files (name → content), and beside
// it an "outside" directory holding secret.txt, for the escapes.
func tree(t *testing.T, files map[string]string) (cwd, outside string) {
	t.Helper()
	base := t.TempDir()
	cwd, outside = filepath.Join(base, "work"), filepath.Join(base, "outside")
	for _, d := range []string{cwd, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(cwd, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Symlinks: one out of the working directory (to a file and to a
	// directory), one within it.
	for link, target := range map[string]string{
		"out.txt": filepath.Join(outside, "secret.txt"),
		"outdir":  outside,
		"in.txt":  "a.txt",
	} {
		if err := os.Symlink(target, filepath.Join(cwd, link)); err != nil {
			t.Fatal(err)
		}
	}
	return cwd, outside
}

func call(cwd, name string, args any) Call {
	raw, _ := json.Marshal(args)
	return Call{ID: "c", Name: name, Args: raw, Cwd: cwd}
}

var numbered = func() string {
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}()

func TestReadFile(t *testing.T) {
	cwd, outside := tree(t, map[string]string{
		"a.txt":     numbered,
		"sub/b.txt": "héllo\nwörld", // no newline at the end
		"bin.dat":   "ab\x00cd\n",
		"empty.txt": "",
	})
	if err := syscall.Mkfifo(filepath.Join(cwd, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		args         map[string]any
		refPath      string
		output       string // exact, when ok
		lines, chars int
		code, err    string // when refused
		runner       Runner
		truncated    bool
	}{
		{name: "whole file", args: map[string]any{"path": "a.txt"}, output: numbered, lines: 10, chars: len(numbered)},
		{name: "a range", args: map[string]any{"path": "a.txt", "start_line": 3, "end_line": 5}, output: "line 3\nline 4\nline 5\n", lines: 3, chars: 21},
		{name: "from a line to the end", args: map[string]any{"path": "a.txt", "start_line": 9}, output: "line 9\nline 10\n", lines: 2, chars: 15},
		{name: "end past the end", args: map[string]any{"path": "a.txt", "start_line": 10, "end_line": 99}, output: "line 10\n", lines: 1, chars: 8},
		{name: "chars count runes", args: map[string]any{"path": "sub/b.txt"}, output: "héllo\nwörld", lines: 2, chars: 11},
		{name: "absolute inside", args: map[string]any{"path": filepath.Join(cwd, "sub", "b.txt"), "end_line": 1}, output: "héllo\n", lines: 1, chars: 6},
		{name: "symlink inside", args: map[string]any{"path": "in.txt", "end_line": 1}, output: "line 1\n", lines: 1, chars: 7},
		{name: "dot segments inside", args: map[string]any{"path": "sub/../a.txt", "end_line": 1}, output: "line 1\n", lines: 1, chars: 7},
		{name: "empty file", args: map[string]any{"path": "empty.txt"}, output: ""},
		{name: "candidate ref", args: map[string]any{"candidate_id": "cand_0123"}, refPath: "a.txt", output: numbered, lines: 10, chars: len(numbered)},
		{name: "bounded", runner: Runner{MaxOutput: 10}, args: map[string]any{"path": "a.txt"}, truncated: true, lines: 2, chars: 10,
			output: "line 1\nlin\n[truncated after 10 bytes: read a narrower range with start_line and end_line]"},

		{name: "dotdot", args: map[string]any{"path": "../outside/secret.txt"}, code: response.InvalidInput, err: "outside the working directory"},
		{name: "absolute outside", args: map[string]any{"path": filepath.Join(outside, "secret.txt")}, code: response.InvalidInput, err: "outside the working directory"},
		{name: "etc passwd", args: map[string]any{"path": "/etc/passwd"}, code: response.InvalidInput, err: "outside the working directory"},
		{name: "symlink out", args: map[string]any{"path": "out.txt"}, code: response.InvalidInput, err: "leads outside the working directory"},
		{name: "through a symlinked dir out", args: map[string]any{"path": "outdir/secret.txt"}, code: response.InvalidInput, err: "leads outside the working directory"},
		{name: "missing", args: map[string]any{"path": "nope.txt"}, code: response.NotFound, err: "does not exist"},
		{name: "directory", args: map[string]any{"path": "sub"}, code: response.ExecutionFailed, err: "not a regular file"},
		{name: "fifo", args: map[string]any{"path": "fifo"}, code: response.ExecutionFailed, err: "not a regular file"},
		{name: "binary", args: map[string]any{"path": "bin.dat"}, code: response.InvalidInput, err: "binary"},
		{name: "start past the end", args: map[string]any{"path": "a.txt", "start_line": 11}, code: response.InvalidInput, err: "has 10 lines"},
		{name: "range backwards", args: map[string]any{"path": "a.txt", "start_line": 5, "end_line": 4}, code: response.InvalidInput, err: "before start_line"},
		{name: "line zero", args: map[string]any{"path": "a.txt", "start_line": 0}, code: response.InvalidInput, err: "count from 1"},
		{name: "unknown ref", args: map[string]any{"candidate_id": "cand_0123"}, code: response.CandidateRefRequired, err: "search first"},
		{name: "no path", args: map[string]any{}, code: response.InvalidInput, err: "give path"},
		{name: "unknown argument", args: map[string]any{"path": "a.txt", "offset": 3}, code: response.InvalidInput, err: `"offset"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := call(cwd, ReadFile, tt.args)
			c.RefPath = tt.refPath
			res := tt.runner.Run(context.Background(), c)
			if tt.code != "" {
				if res.OK || res.Code != tt.code || !strings.Contains(res.Error, tt.err) {
					t.Fatalf("result %+v, want %s naming %q", res, tt.code, tt.err)
				}
				if strings.Contains(res.Output+res.Error, "secret needle") {
					t.Errorf("the refusal shows the outside file: %+v", res)
				}
				return
			}
			if !res.OK || res.Output != tt.output || res.Lines != tt.lines || res.Chars != tt.chars || res.Truncated != tt.truncated {
				t.Errorf("result %+v; want output %q, %d lines, %d chars", res, tt.output, tt.lines, tt.chars)
			}
		})
	}
}

func TestSearch(t *testing.T) {
	many := strings.Repeat("hit here\n", 150)
	cwd, _ := tree(t, map[string]string{
		"a.txt":        numbered,
		"sub/b.go":     "x := a.b(c)\nneedle one\nneedle two\n",
		"sub/c.md":     "a needle\n",
		"many.txt":     many,
		".git/config":  "needle in git\n",
		"bin.dat":      "needle\x00\n",
		"long.txt":     strings.Repeat("é", 300) + "needle\n",
		"deep/x/y.txt": "deep needle\n",
	})
	tests := []struct {
		name      string
		args      map[string]any
		runner    Runner
		output    string
		paths     []string
		truncated bool
		code, err string
		check     func(t *testing.T, res Result)
	}{
		{name: "literal, not a pattern", args: map[string]any{"query": "a.b(c)"}, output: "sub/b.go:1: x := a.b(c)\n", paths: []string{"sub/b.go"}},
		{name: "files by matches, lines in walk order", args: map[string]any{"query": "needle"},
			output: "deep/x/y.txt:1: deep needle\nlong.txt:1: " + strings.Repeat("é", 120) + "…\nsub/b.go:2: needle one\nsub/b.go:3: needle two\nsub/c.md:1: a needle\n",
			paths:  []string{"sub/b.go", "deep/x/y.txt", "long.txt", "sub/c.md"}},
		{name: "under a path", args: map[string]any{"query": "needle", "path": "sub"},
			output: "sub/b.go:2: needle one\nsub/b.go:3: needle two\nsub/c.md:1: a needle\n", paths: []string{"sub/b.go", "sub/c.md"}},
		{name: "one file", args: map[string]any{"query": "line 1", "path": "a.txt"}, output: "a.txt:1: line 1\na.txt:10: line 10\n", paths: []string{"a.txt"}},
		{name: "no match", args: map[string]any{"query": "absent"}, output: "no match for \"absent\" in 8 files under .", paths: []string{}},
		{name: "bounded in count", args: map[string]any{"query": "hit"}, truncated: true, paths: []string{"many.txt"}, check: func(t *testing.T, res Result) {
			if n := strings.Count(res.Output, "many.txt:"); n != MaxSearchMatches {
				t.Errorf("%d matches shown, want %d", n, MaxSearchMatches)
			}
			if !strings.HasSuffix(res.Output, "[stopped at 100 matches: narrow the query or the path]\n") {
				t.Errorf("no note at the end: %q", res.Output[len(res.Output)-80:])
			}
		}},
		{name: "bounded in bytes", runner: Runner{MaxOutput: 100}, args: map[string]any{"query": "hit"}, truncated: true, paths: []string{"many.txt"}, check: func(t *testing.T, res Result) {
			body, _, _ := strings.Cut(res.Output, "[stopped")
			if len(body) > 100 || strings.Count(body, "\n") != 4 {
				t.Errorf("%d bytes, %d lines before the note: %q", len(body), strings.Count(body, "\n"), body)
			}
		}},
		{name: "symlinked dir out is not followed", args: map[string]any{"query": "secret"}, output: "no match for \"secret\" in 8 files under .", paths: []string{}},
		{name: "path outside", args: map[string]any{"query": "secret", "path": "../outside"}, code: response.InvalidInput, err: "outside the working directory"},
		{name: "path through a symlink out", args: map[string]any{"query": "secret", "path": "outdir"}, code: response.InvalidInput, err: "leads outside"},
		{name: "missing path", args: map[string]any{"query": "x", "path": "nope"}, code: response.NotFound, err: "does not exist"},
		{name: "empty query", args: map[string]any{"query": ""}, code: response.InvalidInput, err: "query is empty"},
		{name: "multi-line query", args: map[string]any{"query": "a\nb"}, code: response.InvalidInput, err: "spans lines"},
		{name: "no query", args: map[string]any{"path": "sub"}, code: response.InvalidInput, err: `"query"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.runner.Run(context.Background(), call(cwd, Search, tt.args))
			if tt.code != "" {
				if res.OK || res.Code != tt.code || !strings.Contains(res.Error, tt.err) {
					t.Fatalf("result %+v, want %s naming %q", res, tt.code, tt.err)
				}
				return
			}
			if !res.OK || res.Truncated != tt.truncated || !reflect.DeepEqual(res.Paths, tt.paths) {
				t.Errorf("ok=%v truncated=%v paths %q; want truncated=%v paths %q", res.OK, res.Truncated, res.Paths, tt.truncated, tt.paths)
			}
			if tt.output != "" && res.Output != tt.output {
				t.Errorf("output\n%s\nwant\n%s", res.Output, tt.output)
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func TestSearchCancelled(t *testing.T) {
	cwd, _ := tree(t, map[string]string{"a.txt": numbered})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := (&Runner{}).Run(ctx, call(cwd, Search, map[string]any{"query": "line"}))
	if res.OK || !res.Cancelled {
		t.Errorf("result %+v, want cancelled", res)
	}
}

func TestPatch(t *testing.T) {
	tests := []struct {
		name       string
		args       map[string]any
		restricted bool
		file       string // the file to look at afterwards
		want       string // its content afterwards ("" with code: unchanged)
		output     string
		code, err  string
	}{
		{name: "one occurrence", args: map[string]any{"path": "a.txt", "old_text": "line 3\n", "new_text": "third\nline\n"}, file: "a.txt",
			want: strings.Replace(numbered, "line 3\n", "third\nline\n", 1), output: "patched a.txt: 1 replacement (1 lines replaced by 2)"},
		{name: "delete text", args: map[string]any{"path": "a.txt", "old_text": "line 10\n", "new_text": ""}, file: "a.txt", want: strings.TrimSuffix(numbered, "line 10\n")},
		{name: "absolute inside", args: map[string]any{"path": "ABS/sub/b.txt", "old_text": "b", "new_text": "B"}, file: "sub/b.txt", want: "B\n"},
		{name: "create", args: map[string]any{"path": "new/dir/n.txt", "old_text": "", "new_text": "fresh\n"}, file: "new/dir/n.txt", want: "fresh\n", output: "created new/dir/n.txt (1 lines)"},

		{name: "no occurrence", args: map[string]any{"path": "a.txt", "old_text": "line 11", "new_text": "x"}, file: "a.txt", code: response.InvalidInput, err: "matches 0 times"},
		{name: "many occurrences", args: map[string]any{"path": "a.txt", "old_text": "line 1", "new_text": "x"}, file: "a.txt", code: response.InvalidInput, err: "matches 2 times"},
		{name: "overlapping occurrences", args: map[string]any{"path": "aaa.txt", "old_text": "aa", "new_text": "b"}, file: "aaa.txt", code: response.InvalidInput, err: "matches 2 times"},
		{name: "create over an existing file", args: map[string]any{"path": "a.txt", "old_text": "", "new_text": "x"}, file: "a.txt", code: response.InvalidInput, err: "exists"},
		{name: "missing file", args: map[string]any{"path": "nope.txt", "old_text": "a", "new_text": "b"}, code: response.NotFound, err: "does not exist"},
		{name: "dotdot", args: map[string]any{"path": "../outside/secret.txt", "old_text": "secret", "new_text": "x"}, code: response.InvalidInput, err: "outside the working directory"},
		{name: "create via dotdot", args: map[string]any{"path": "../outside/new.txt", "old_text": "", "new_text": "x"}, code: response.InvalidInput, err: "outside the working directory"},
		{name: "absolute outside", args: map[string]any{"path": "OUT/secret.txt", "old_text": "secret", "new_text": "x"}, code: response.InvalidInput, err: "outside the working directory"},
		{name: "symlink out", args: map[string]any{"path": "out.txt", "old_text": "secret", "new_text": "x"}, code: response.InvalidInput, err: "symbolic link"},
		{name: "create through a symlinked dir out", args: map[string]any{"path": "outdir/new.txt", "old_text": "", "new_text": "x"}, code: response.InvalidInput, err: "leads outside"},
		{name: "edit through a symlinked dir out", args: map[string]any{"path": "outdir/secret.txt", "old_text": "secret", "new_text": "x"}, code: response.InvalidInput, err: "leads outside"},
		{name: "the directory itself", args: map[string]any{"path": ".", "old_text": "", "new_text": "x"}, code: response.InvalidInput, err: "working directory itself"},
		{name: "restricted", restricted: true, args: map[string]any{"path": "a.txt", "old_text": "line 3\n", "new_text": "x"}, file: "a.txt",
			code: response.ActionNotAllowed, err: "request_mode_upgrade"},
		{name: "missing new_text", args: map[string]any{"path": "a.txt", "old_text": "line 3"}, code: response.InvalidInput, err: `"new_text"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cwd, outside := tree(t, map[string]string{"a.txt": numbered, "sub/b.txt": "b\n", "aaa.txt": "aaa\n"})
			if err := os.Chmod(filepath.Join(cwd, "a.txt"), 0o640); err != nil {
				t.Fatal(err)
			}
			before := ""
			if tt.file != "" {
				b, _ := os.ReadFile(filepath.Join(cwd, tt.file))
				before = string(b)
			}
			if p, ok := tt.args["path"].(string); ok {
				p = strings.Replace(p, "ABS", cwd, 1)
				tt.args["path"] = strings.Replace(p, "OUT", outside, 1)
			}
			c := call(cwd, Patch, tt.args)
			c.Restricted = tt.restricted
			res := (&Runner{}).Run(context.Background(), c)
			if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret needle\n" {
				t.Fatalf("the file outside was changed: %q", b)
			}
			if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
				t.Fatal("a file was created outside")
			}
			var after string
			if tt.file != "" {
				b, err := os.ReadFile(filepath.Join(cwd, tt.file))
				if err != nil && tt.code == "" {
					t.Fatal(err)
				}
				after = string(b)
			}
			if tt.code != "" {
				if res.OK || res.Code != tt.code || !strings.Contains(res.Error, tt.err) {
					t.Fatalf("result %+v, want %s naming %q", res, tt.code, tt.err)
				}
				if after != before {
					t.Errorf("a refused patch changed %s: %q", tt.file, after)
				}
				return
			}
			if !res.OK || after != tt.want || (tt.output != "" && res.Output != tt.output) {
				t.Errorf("result %+v; %s now %q, want %q", res, tt.file, after, tt.want)
			}
			if tt.file == "a.txt" {
				if fi, _ := os.Stat(filepath.Join(cwd, "a.txt")); fi.Mode().Perm() != 0o640 {
					t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
				}
			}
			if ents, _ := filepath.Glob(filepath.Join(cwd, ".*.patch-*")); len(ents) != 0 {
				t.Errorf("temp files left: %v", ents)
			}
		})
	}
}

func TestOccurrences(t *testing.T) {
	tests := []struct {
		s, old string
		want   int
	}{
		{"abc", "b", 1}, {"abc", "x", 0}, {"aaa", "aa", 2}, {"abab", "ab", 2}, {"", "a", 0}, {"a", "a", 1},
	}
	for _, tt := range tests {
		if got := occurrences(tt.s, tt.old); got != tt.want {
			t.Errorf("occurrences(%q, %q) = %d, want %d", tt.s, tt.old, got, tt.want)
		}
	}
}
