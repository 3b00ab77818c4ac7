package gitconfig

import (
	"reflect"
	"strings"
	"testing"
)

// e builds an expected Entry.
func e(key, value string, line int) Entry { return Entry{Key: key, Value: value, Line: line} }

// flag builds an expected Entry written without a value.
func flag(key string, line int) Entry { return Entry{Key: key, Line: line, NoValue: true} }

var parseTests = []struct {
	name string
	in   string
	want []Entry
	err  string // substring of the error; "" for success
}{
	{"empty", "", nil, ""},
	{"section", "[core]\n\tfsmonitor = /bin/x\n", []Entry{e("core.fsmonitor", "/bin/x", 2)}, ""},
	{"case folding", "[CoRe]\n  FsMonitor = A\n", []Entry{e("core.fsmonitor", "A", 2)}, ""},
	{"subsection keeps case", `[Diff "FoO"]` + "\nTextConv = x\n", []Entry{e("diff.FoO.textconv", "x", 2)}, ""},
	{"subsection escapes", `[diff "a\"b\\c\d"]` + "\nk=1\n", []Entry{e(`diff.a"b\cd.k`, "1", 2)}, ""},
	{"subsection with dots and spaces", "[diff  \"a.b c\"]\nk=1\n", []Entry{e("diff.a.b c.k", "1", 2)}, ""},
	{"legacy subsection lower-cased", "[Diff.FoO]\nk=1\n", []Entry{e("diff.foo.k", "1", 2)}, ""},
	{"key after header", "[core] pager = less\n", []Entry{e("core.pager", "less", 1)}, ""},
	{"no value", "[core]\nbare\n  k2  \n", []Entry{flag("core.bare", 2), flag("core.k2", 3)}, ""},
	{"empty value", "[core]\nk =\n", []Entry{e("core.k", "", 2)}, ""},
	{"key chars", "[a]\nk-1 = v\n", []Entry{e("a.k-1", "v", 2)}, ""},
	{"whitespace", "[a]\nk =  x \t y\t \n", []Entry{e("a.k", "x   y", 2)}, ""},
	{"quotes", "[a]\nk = \" x \"y\" ; z\" \n", []Entry{e("a.k", " x y ; z", 2)}, ""},
	{"quoted comment chars", "[a]\nk = \"#;\"\n", []Entry{e("a.k", "#;", 2)}, ""},
	{"escapes", `[a]` + "\n" + `k = a\tb\nc\bd\"e\\f` + "\n", []Entry{e("a.k", "a\tb\nc\bd\"e\\f", 2)}, ""},
	{"continuation", "[a]\nk = one \\\n  two\nj = 3\n", []Entry{e("a.k", "one   two", 2), e("a.j", "3", 4)}, ""},
	{"continuation in quotes", "[a]\nk = \"x\\\ny\"\n", []Entry{e("a.k", "xy", 2)}, ""},
	{"comments", "# c\n; c\n[a] # c\nk = v # c \\\nj = w;c\n", []Entry{e("a.k", "v", 4), e("a.j", "w", 5)}, ""},
	{"crlf", "[a]\r\nk = v\r\nj = \"x\\\r\ny\"\r\n", []Entry{e("a.k", "v", 2), e("a.j", "xy", 3)}, ""},
	{"lone cr is space", "[a]\nk = x\ry\r\n", []Entry{e("a.k", "x y", 2)}, ""},
	{"bom", "\xef\xbb\xbf[a]\nk = v\n", []Entry{e("a.k", "v", 2)}, ""},
	{"no final newline", "[a]\nk = v", []Entry{e("a.k", "v", 2)}, ""},
	{"includes are entries", "[include]\npath = x\n[includeIf \"gitdir:/y/\"]\npath = y\n",
		[]Entry{e("include.path", "x", 2), e("includeif.gitdir:/y/.path", "y", 4)}, ""},

	{"unterminated quote", "[a]\nk = v\nj = \"x\nl = 1\n", nil, "gitconfig: test:3: unterminated quote"},
	{"unterminated quote at eof", "[a]\nj = \"x", nil, "gitconfig: test:2: unterminated quote"},
	{"bad escape", "[a]\n\nk = \\x\n", nil, "gitconfig: test:3: bad escape"},
	{"bad header", "[a\nk=1\n", nil, "gitconfig: test:1: bad section header"},
	{"bad header char", "[a_b]\n", nil, "gitconfig: test:1: bad section header"},
	{"unquoted subsection", "[a b]\n", nil, "gitconfig: test:1: bad section header"},
	{"space after subsection", "[a \"b\" ]\n", nil, "gitconfig: test:1: bad section header"},
	{"unterminated subsection", "[a \"b]\n", nil, "gitconfig: test:1: bad section header"},
	{"empty section", "[]\n", nil, "gitconfig: test:1: bad section header"},
	{"empty section name", "[ \"x\"]\nk=1\n", nil, "gitconfig: test:1: bad section header"},
	{"legacy empty section", "[.x]\nk=1\n", nil, "gitconfig: test:1: bad section header"},
	{"key outside section", "k = v\n", nil, "gitconfig: test:1: key outside a section"},
	{"key starts with digit", "[a]\n1k = v\n", nil, "gitconfig: test:2: invalid key name"},
	{"key with underscore", "[a]\nk_1 = v\n", nil, "gitconfig: test:2: invalid key name"},
	{"dotted key", "[a]\nb.c = v\n", nil, "gitconfig: test:2: invalid key name"},
	{"comment after flag", "[a]\nk # c\n", nil, "gitconfig: test:2: expected '='"},
	{"nul byte", "[a]\nk = x\x00y\n", nil, "gitconfig: test:2: NUL byte"},
	{"nul byte in subsection", "[core \"fsmonitor\x00x\"]\nk = v\n", nil, "gitconfig: test:1: NUL byte"},
	{"partial bom", "\xef\xbb[a]\n", nil, "gitconfig: test:1: invalid key name"},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("test", []byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) error = %v, want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) =\n%#v\nwant\n%#v", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := Parse("fuzz", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "gitconfig: fuzz:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, e := range entries {
			first := strings.IndexByte(e.Key, '.')
			last := strings.LastIndexByte(e.Key, '.')
			if first <= 0 || last == len(e.Key)-1 {
				t.Fatalf("key %q lacks a section or name", e.Key)
			}
			section, name := e.Key[:first], e.Key[last+1:]
			if section != strings.ToLower(section) || name != strings.ToLower(name) {
				t.Fatalf("key %q is not canonical", e.Key)
			}
			if e.Line < 1 {
				t.Fatalf("key %q has line %d", e.Key, e.Line)
			}
		}
	})
}
