package token

import (
	"crypto/sha256"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, errors name the file, and whatever parses
// holds valid identities that survive Create's and Revoke's rewrites: the
// rewritten file parses to the same tokens plus or minus exactly one, and a
// token added to it is found by Lookup.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"tokens: []\n",
		"tokens:\n",
		"{}",
		"# c\ntokens:\n  # alice\n  - name: alice\n    sha256: " + hashA + "\n    roles: [approver, auditor] # x\n",
		"tokens: [{name: b, sha256: " + hashB + ", roles: [agent]}, {name: A.b-c_d@e, sha256: " + strings.ToUpper(hashA) + ", roles: [admin]}]\n",
		"tokens:\n- name: fuzz-new\n  sha256: " + hashA + "\n  roles:\n  - agent\n",
		"tokens: &a []\n",
		"tokens:\n  - name: x\n    sha256: x\n",
		"tokens: [\n",
		"- a\n",
		"tokens: []\n---\n",
	} {
		f.Add([]byte(s))
	}
	const newTok = "gk_fuzz"
	newSum := sha256.Sum256([]byte(newTok))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "f.yaml")
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.yaml:") {
					t.Fatalf("error line %q does not name the file", line)
				}
			}
			return
		}
		ids := file.Identities()
		if file.Len() != len(ids) {
			t.Fatalf("Len %d, %d identities", file.Len(), len(ids))
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if err := CheckName(id.Name); err != nil || seen[strings.ToLower(id.Name)] {
				t.Fatalf("identity %q: %v (or a duplicate)", id.Name, err)
			}
			seen[strings.ToLower(id.Name)] = true
			if len(id.Roles) == 0 {
				t.Fatalf("identity %q has no roles", id.Name)
			}
			for i, r := range id.Roles {
				if !r.Valid() || slices.Contains(id.Roles[:i], r) {
					t.Fatalf("identity %q: roles %v", id.Name, id.Roles)
				}
			}
		}
		if _, ok := file.Lookup(""); ok {
			t.Fatal("the empty token authenticates")
		}

		out, err := appendEntry(data, "f.yaml", entry{name: "fuzz-new", hash: newSum, roles: []Role{Agent}})
		if seen["fuzz-new"] {
			if !errors.Is(err, ErrNameTaken) {
				t.Fatalf("append of a taken name: %v", err)
			}
		} else {
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			g, err := Parse(out, "f.yaml")
			if err != nil {
				t.Fatalf("appended file does not parse: %v\n%s", err, out)
			}
			if !sameIdentities(g.Identities(), append(ids, Identity{Name: "fuzz-new", Roles: []Role{Agent}})) {
				t.Fatalf("append changed the tokens:\n%s", out)
			}
			if id, ok := g.Lookup(newTok); !ok || id.Name != "fuzz-new" {
				t.Fatalf("Lookup(new token) = %v, %v", id, ok)
			}
		}

		if len(ids) > 0 {
			out, err := removeEntry(data, "f.yaml", ids[0].Name)
			if err != nil {
				t.Fatalf("remove: %v", err)
			}
			g, err := Parse(out, "f.yaml")
			if err != nil {
				t.Fatalf("file after remove does not parse: %v\n%s", err, out)
			}
			if !sameIdentities(g.Identities(), ids[1:]) {
				t.Fatalf("remove changed other tokens:\n%s", out)
			}
		}
	})
}

func sameIdentities(a, b []Identity) bool {
	return slices.EqualFunc(a, b, func(x, y Identity) bool {
		return x.Name == y.Name && slices.Equal(x.Roles, y.Roles) && reflect.DeepEqual(x.Principal, y.Principal)
	})
}
