package token

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParseRoles(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Role
		err  string
	}{
		{"approver", []Role{Approver}, ""},
		{"approver,auditor", []Role{Approver, Auditor}, ""},
		{" agent , admin ", []Role{Agent, Admin}, ""},
		{"agent,approver,auditor,admin,gateway", allRoles, ""},
		{"", nil, "no roles given (roles: agent, approver, auditor, admin, gateway)"},
		{"  ", nil, "no roles given"},
		{"approver,", nil, "empty role name (roles: agent, approver, auditor, admin, gateway)"},
		{"aprover", nil, `unknown role "aprover" (roles: agent, approver, auditor, admin, gateway)`},
		{"Admin", nil, `unknown role "Admin"`},
		{"agent,agent", nil, "role agent is listed twice"},
	} {
		got, err := ParseRoles(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRoles(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseRoles(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"alice", "A", "7", "ci-bot@build.example", "a_b.c-d@e", strings.Repeat("x", 64)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for name, want := range map[string]string{
		"":                      "token name is empty",
		strings.Repeat("x", 65): "token name is 65 bytes long; the limit is 64",
		"-alice":                `token name "-alice" must start with a letter or a digit`,
		"@alice":                "must start with a letter or a digit",
		"alice smith":           `token name "alice smith" may hold only letters, digits and . - _ @`,
		"alice\nbob":            `"alice\nbob" may hold only`,
		"alice\x1b[31m":         "may hold only",
		"аlice":                 "must start with a letter or a digit", // Cyrillic а
		"al/ice":                "may hold only",
		`al"ice`:                "may hold only",
		"alice:approver":        "may hold only",
	} {
		err := CheckName(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckName(%q) = %v; want %q", name, err, want)
		}
	}
}

func TestIdentityHas(t *testing.T) {
	for _, tc := range []struct {
		roles []Role
		has   []Role
	}{
		{nil, nil},
		{[]Role{Agent}, []Role{Agent}},
		{[]Role{Approver, Auditor}, []Role{Approver, Auditor}},
		// Admin has every role but gateway: acting for others is granted
		// by name (DESIGN §11).
		{[]Role{Admin}, []Role{Agent, Approver, Auditor, Admin}},
		{[]Role{Gateway}, []Role{Gateway}},
		{[]Role{Admin, Gateway}, allRoles},
	} {
		id := Identity{Name: "x", Roles: tc.roles}
		for _, r := range allRoles {
			if got, want := id.Has(r), slices.Contains(tc.has, r); got != want {
				t.Errorf("%v.Has(%s) = %v, want %v", tc.roles, r, got, want)
			}
		}
	}
}

func TestActsFor(t *testing.T) {
	own := Identity{Name: "agent-7", Roles: []Role{Agent}}
	if got := own.ActsFor(); got.UserID != "agent-7" || got.Roles != nil {
		t.Errorf("ActsFor without a principal = %+v, want the token's name and no roles", got)
	}
	p := &Principal{UserID: "alice", Roles: []string{"dba"}}
	id := Identity{Name: "ci", Roles: []Role{Agent}, Principal: p}
	got := id.ActsFor()
	got.Roles[0] = "changed"
	if p.Roles[0] != "dba" {
		t.Error("ActsFor shares its roles with the identity")
	}
}

func TestCheckPrincipal(t *testing.T) {
	for _, tc := range []struct {
		p   Principal
		err string
	}{
		{Principal{UserID: "alice@example.com", Roles: []string{"dba", "sre"}, Service: "db-agent"}, ""},
		{Principal{}, "principal user_id is empty"},
		{Principal{UserID: "alice smith"}, "may hold only"},
		{Principal{UserID: "a", Roles: []string{"dba", "dba"}}, "listed twice"},
		{Principal{UserID: "a", Roles: []string{"db a"}}, "principal role"},
		{Principal{UserID: "a", Service: "-x"}, "must start with"},
	} {
		err := CheckPrincipal(tc.p)
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("CheckPrincipal(%+v) = %v, want %q", tc.p, err, tc.err)
		}
	}
}

func TestNewToken(t *testing.T) {
	random := bytes.NewReader(bytes.Repeat([]byte{0xfb}, 64))
	tok, sum, err := newToken(random)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^gk_[A-Za-z0-9_-]{43}$`).MatchString(tok) {
		t.Errorf("token %q is not gk_ and 43 base64url characters", tok)
	}
	if sum != sha256.Sum256([]byte(tok)) {
		t.Errorf("hash %s is not the SHA-256 of the token", hex.EncodeToString(sum[:]))
	}
	if _, _, err := newToken(bytes.NewReader(make([]byte, 31))); err == nil {
		t.Error("a short random source made a token")
	}
}
