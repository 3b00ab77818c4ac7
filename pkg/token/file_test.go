package token

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// hashOf returns the hex SHA-256 of tok, as a tokens file stores it.
func hashOf(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

var (
	hashA = hashOf("token-a")
	hashB = hashOf("token-b")
)

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Identity
	}{
		{"empty", "", nil},
		{"comment only", "# no tokens yet\n", nil},
		{"null document", "~\n", nil},
		{"empty list", "tokens: []\n", nil},
		{"null list", "tokens:\n", nil},
		{"one", "tokens:\n  - name: alice\n    sha256: " + hashA + "\n    roles: [approver, auditor]\n",
			[]Identity{{Name: "alice", Roles: []Role{Approver, Auditor}}}},
		{"flow style, upper-case hex, any field order", "{tokens: [{roles: [admin], sha256: " + strings.ToUpper(hashA) + ", name: root}]}",
			[]Identity{{Name: "root", Roles: []Role{Admin}}}},
		{"with a principal", "tokens:\n  - name: ci\n    sha256: " + hashA + "\n    roles: [agent]\n    principal: {user_id: deploy-bot, roles: [deployer, dba], service: ci}\n",
			[]Identity{{Name: "ci", Roles: []Role{Agent}, Principal: &Principal{UserID: "deploy-bot", Roles: []string{"deployer", "dba"}, Service: "ci"}}}},
		{"numeric name, order kept", "tokens:\n- {name: bob, sha256: " + hashB + ", roles: [agent]}\n- {name: 007, sha256: " + hashA + ", roles: [auditor]}\n",
			[]Identity{{Name: "bob", Roles: []Role{Agent}}, {Name: "007", Roles: []Role{Auditor}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.in), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := f.Identities()
			if f.Len() != len(tc.want) || !slices.EqualFunc(got, tc.want, func(a, b Identity) bool {
				return a.Name == b.Name && slices.Equal(a.Roles, b.Roles)
			}) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// Every error names the file and the line, and none echoes a hash.
func TestParseErrors(t *testing.T) {
	entry := func(name, hash, roles string) string {
		return "  - name: " + name + "\n    sha256: " + hash + "\n    roles: " + roles + "\n"
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"unknown top field", "tokens: []\nversion: 1\n",
			`t.yaml:2: unknown field "version" (the fields of the document: tokens)`},
		{"unknown entry field", "tokens:\n  - name: a\n    sha256: " + hashA + "\n    roles: [agent]\n    role: admin\n",
			`t.yaml:5: tokens[0]: unknown field "role" (the fields of a token: name, sha256, roles, principal)`},
		{"duplicate field", "tokens:\n  - name: a\n    name: b\n    sha256: " + hashA + "\n    roles: [agent]\n",
			"t.yaml:3: tokens[0].name: given twice (first at line 2)"},
		{"duplicate top field", "tokens: []\ntokens: []\n", "t.yaml:2: tokens: given twice (first at line 1)"},
		{"duplicate name", "tokens:\n" + entry("alice", hashA, "[agent]") + entry("alice", hashB, "[admin]"),
			`t.yaml:5: tokens[1].name: duplicate name "alice" (first at line 2; names are compared without case)`},
		{"duplicate name in another case", "tokens:\n" + entry("alice", hashA, "[agent]") + entry("Alice", hashB, "[admin]"),
			`t.yaml:5: tokens[1].name: duplicate name "Alice" (first at line 2`},
		{"duplicate hash", "tokens:\n" + entry("alice", hashA, "[agent]") + entry("bob", hashA, "[admin]"),
			"t.yaml:5: tokens[1].sha256: the same hash as the token at line 2"},
		{"short hash", "tokens:\n" + entry("a", hashA[:63], "[agent]"),
			"t.yaml:3: tokens[0].sha256: must be 64 hexadecimal digits, the SHA-256 of the token (got 63 characters)"},
		{"raw token as hash", "tokens:\n" + entry("a", "gk_abc", "[agent]"),
			"t.yaml:3: tokens[0].sha256: must be 64 hexadecimal digits, the SHA-256 of the token (got 6 characters)"},
		{"not hex", "tokens:\n" + entry("a", "z"+hashA[1:], "[agent]"),
			"t.yaml:3: tokens[0].sha256: must be 64 hexadecimal digits, the SHA-256 of the token (found a character that is not one)"},
		{"unknown role", "tokens:\n" + entry("a", hashA, "[agent, aprover]"),
			`t.yaml:4: tokens[0].roles[1]: unknown role "aprover" (roles: agent, approver, auditor, admin, gateway)`},
		{"role twice", "tokens:\n" + entry("a", hashA, "[agent, agent]"),
			"t.yaml:4: tokens[0].roles[1]: role agent is listed twice"},
		{"empty roles", "tokens:\n" + entry("a", hashA, "[]"),
			"t.yaml:4: tokens[0].roles: must list at least one role (roles: agent, approver, auditor, admin, gateway)"},
		{"null roles", "tokens:\n" + entry("a", hashA, ""),
			"t.yaml:4: tokens[0].roles: must list at least one role"},
		{"roles as a string", "tokens:\n" + entry("a", hashA, "agent,admin"),
			"t.yaml:4: tokens[0].roles: must be a list of roles, e.g. [approver, auditor]"},
		{"no roles field", "tokens:\n  - name: a\n    sha256: " + hashA + "\n",
			"t.yaml:2: tokens[0].roles: required"},
		{"no name", "tokens:\n  - sha256: " + hashA + "\n    roles: [agent]\n",
			"t.yaml:2: tokens[0].name: required"},
		{"no sha256", "tokens:\n  - name: a\n    roles: [agent]\n",
			"t.yaml:2: tokens[0].sha256: required"},
		{"empty name", "tokens:\n" + entry(`""`, hashA, "[agent]"),
			"t.yaml:2: tokens[0].name: must not be empty"},
		{"bad name", "tokens:\n" + entry(`"alice smith"`, hashA, "[agent]"),
			`t.yaml:2: tokens[0].name: token name "alice smith" may hold only letters, digits and . - _ @`},
		{"name a list", "tokens:\n" + entry("[a]", hashA, "[agent]"),
			"t.yaml:2: tokens[0].name: must be a single value"},
		{"entry a string", "tokens:\n  - alice\n",
			"t.yaml:2: tokens[0]: must be a mapping with the fields name, sha256 and roles"},
		{"tokens a mapping", "tokens:\n  alice: x\n", "t.yaml:2: tokens: must be a list of tokens"},
		{"document a list", "- a\n", "t.yaml:1: must be a mapping with a tokens field (tokens: [])"},
		{"alias", "x: &r [admin]\n", `t.yaml:1: unknown field "x"`},
		{"alias use", "tokens:\n  - name: a\n    sha256: " + hashA + "\n    roles: &r [agent]\n  - name: b\n    sha256: " + hashB + "\n    roles: *r\n",
			"t.yaml:7: tokens[1].roles: aliases (*name) are not allowed in a tokens file"},
		{"two documents", "tokens: []\n---\ntokens: []\n", "t.yaml:2: more than one YAML document"},
		{"bad indent", "tokens:\n  - name: a\n   sha256: x\n", "t.yaml:2: invalid YAML: did not find expected '-' indicator"},
		{"unclosed list", "tokens:\n  - name: a\n    roles: [\n", "t.yaml:3: invalid YAML: did not find expected node content"},
		{"tab indent", "tokens:\n\t- name: a\n", "t.yaml:2: invalid YAML: found character that cannot start any token"},
		{"too large", "#" + strings.Repeat("x", MaxFileSize), "t.yaml: larger than 1048576 bytes (1 MiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.in), "t.yaml")
			if err == nil {
				t.Fatalf("parsed, %d tokens; want error %q", f.Len(), tc.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("error:\n%s\nwant prefix:\n%s", msg, tc.want)
			}
			for _, line := range strings.Split(msg, "\n") {
				if tc.name != "too large" && !regexp.MustCompile(`^t\.yaml:[1-9][0-9]*: `).MatchString(line) {
					t.Errorf("error line %q does not start with FILE:LINE:", line)
				}
			}
			for _, h := range []string{hashA, hashB, hashA[:63], hashA[1:]} {
				if strings.Contains(strings.ToLower(msg), h) {
					t.Errorf("error echoes a hash: %s", msg)
				}
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "t.yaml" {
				t.Errorf("error is not a *ParseError for t.yaml: %#v", err)
			}
		})
	}
}

func TestParseManyErrors(t *testing.T) {
	in := "tokens:\n" + strings.Repeat("  - name: a\n    sha256: x\n    roles: [agent]\n", 20)
	_, err := Parse([]byte(in), "t.yaml")
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxErrors+1 || !strings.HasSuffix(lines[maxErrors], ": too many errors") {
		t.Errorf("got %d error lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestLookup(t *testing.T) {
	in := "tokens:\n" +
		"  - {name: alice, sha256: " + hashA + ", roles: [approver, auditor]}\n" +
		"  - {name: bot, sha256: " + hashB + ", roles: [agent]}\n"
	f, err := Parse([]byte(in), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bearer string
		name   string
		roles  []Role
	}{
		{"token-a", "alice", []Role{Approver, Auditor}},
		{"token-b", "bot", []Role{Agent}},
		{"token-c", "", nil},
		{"token-a ", "", nil},
		{"TOKEN-A", "", nil},
		{"", "", nil},
		{hashA, "", nil}, // the hash is not the token
		{strings.Repeat("x", maxBearer+1), "", nil},
	} {
		id, ok := f.Lookup(tc.bearer)
		if ok != (tc.name != "") || id.Name != tc.name || !slices.Equal(id.Roles, tc.roles) {
			t.Errorf("Lookup(%.20q) = %v, %v; want %s %v", tc.bearer, id, ok, tc.name, tc.roles)
		}
	}
	// The identity is a copy: changing it changes nothing in the file.
	id, _ := f.Lookup("token-b")
	id.Roles[0] = Admin
	if id, _ := f.Lookup("token-b"); id.Roles[0] != Agent {
		t.Error("Lookup returned the file's own roles slice")
	}
	var empty *File
	if _, ok := empty.Lookup("token-a"); ok {
		t.Error("a nil File authenticated a token")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "tokens.yaml")
	write(t, good, "tokens:\n  - {name: a, sha256: "+hashA+", roles: [agent]}\n", 0o600)
	if f, err := Load(good); err != nil || f.Len() != 1 {
		t.Fatalf("Load = %v, %v", f, err)
	}
	write(t, filepath.Join(dir, "readable"), "tokens: []\n", 0o644)
	if _, err := Load(filepath.Join(dir, "readable")); err != nil {
		t.Errorf("a file others may read (only hashes) was refused: %v", err)
	}

	big := filepath.Join(dir, "big")
	write(t, big, "#"+strings.Repeat("x", MaxFileSize), 0o600)
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "missing"), "tokens file: stat " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{dir, "tokens file " + dir + " is not a regular file"},
		{big, big + ": larger than 1048576 bytes (1 MiB)"},
	} {
		if _, err := Load(tc.path); err == nil || err.Error() != tc.want {
			t.Errorf("Load(%s) = %v; want %q", tc.path, err, tc.want)
		}
	}
	for _, mode := range []os.FileMode{0o620, 0o602, 0o666} {
		p := filepath.Join(dir, "unsafe")
		write(t, p, "tokens: []\n", mode)
		_, err := Load(p)
		if !errors.Is(err, ErrUnsafeMode) || !strings.Contains(err.Error(), "whoever can write it can mint an admin token") {
			t.Errorf("mode %04o: Load = %v", mode, err)
		}
	}
}

// write writes a file with exactly mode (no umask).
func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestBearer: the scheme's name in any case (RFC 7235 §2.1), the
// credential trimmed; anything else is no credential.
func TestBearer(t *testing.T) {
	for header, want := range map[string]string{
		"Bearer gk_abc":      "gk_abc",
		"bearer gk_abc":      "gk_abc",
		"BEARER  gk_abc ":    "gk_abc",
		"Bearer ":            "",
		"Bearer":             "",
		"Basic dXNlcjpwdw==": "",
		"gk_abc":             "",
		"":                   "",
	} {
		if got := Bearer(header); got != want {
			t.Errorf("Bearer(%q) = %q, want %q", header, got, want)
		}
	}
}
