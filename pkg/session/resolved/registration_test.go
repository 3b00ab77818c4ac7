package resolved

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonicalID(t *testing.T) {
	// Seed 000 Invariant 7's examples (P-15), plus the host_name fallback.
	for _, tc := range []struct {
		reg  Registration
		want string
	}{
		{Registration{Kind: "lxc", ProviderUID: "141", HostUID: "delly"}, "lxc:delly:141"},
		{Registration{Kind: "vm", ProviderUID: "203", HostUID: "minipc"}, "vm:minipc:203"},
		{Registration{Kind: "docker_container", ProviderUID: "abc123", HostUID: "server1"}, "docker_container:server1:abc123"},
		{Registration{Kind: "node", ProviderUID: "delly"}, "node:delly"},
		{Registration{Kind: "lxc", ProviderUID: "141", HostName: "delly"}, "lxc:delly:141"},
		{Registration{Kind: "lxc", ProviderUID: "141", HostUID: "pve-1", HostName: "delly"}, "lxc:pve-1:141"},
		{Registration{Kind: "image", ProviderUID: "sha256:ab", HostUID: "server1"}, "image:server1:sha256:ab"},
	} {
		if got := CanonicalID(tc.reg); got != tc.want {
			t.Errorf("CanonicalID(%+v) = %q, want %q", tc.reg, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("x", MaxFieldBytes+1)
	ok := Registration{Kind: "lxc", ProviderUID: "141", Name: "homepage-docker", HostUID: "delly"}
	with := func(f func(*Registration)) Registration { r := ok; f(&r); return r }
	many := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = "a" + strings.Repeat("b", i)
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		reg   Registration
		field string // "" = valid
	}{
		{"valid", ok, ""},
		{"no name is fine", with(func(r *Registration) { r.Name = "" }), ""},
		{"global", Registration{Kind: "node", ProviderUID: "delly"}, ""},
		{"provider_uid may hold ':'", with(func(r *Registration) { r.ProviderUID = "sha256:ab" }), ""},
		{"host_name may hold ':' behind a host_uid", with(func(r *Registration) { r.HostName = "fe80::1" }), ""},
		{"bounds are inclusive", with(func(r *Registration) {
			r.Name = long[1:]
			r.Aliases = many(MaxAliases)
			r.Executors = many(MaxExecutors)
		}), ""},
		{"kind required", with(func(r *Registration) { r.Kind = "" }), "kind"},
		{"provider_uid required", with(func(r *Registration) { r.ProviderUID = "" }), "provider_uid"},
		{"long kind", with(func(r *Registration) { r.Kind = long }), "kind"},
		{"long provider_uid", with(func(r *Registration) { r.ProviderUID = long }), "provider_uid"},
		{"long name", with(func(r *Registration) { r.Name = long }), "name"},
		{"long host_uid", with(func(r *Registration) { r.HostUID = long }), "host_uid"},
		{"long host_name", with(func(r *Registration) { r.HostName = long }), "host_name"},
		{"control character", with(func(r *Registration) { r.Name = "a\nb" }), "name"},
		{"DEL", with(func(r *Registration) { r.HostName = "a\x7f" }), "host_name"},
		{"invalid UTF-8", with(func(r *Registration) { r.ProviderUID = "\xff" }), "provider_uid"},
		{"':' in kind", with(func(r *Registration) { r.Kind = "lxc:delly" }), "kind"},
		{"':' in host_uid", with(func(r *Registration) { r.HostUID = "a:b" }), "host_uid"},
		{"':' in host_name as the id's host", with(func(r *Registration) { r.HostUID, r.HostName = "", "a:b" }), "host_name"},
		{"too many aliases", with(func(r *Registration) { r.Aliases = many(MaxAliases + 1) }), "aliases"},
		{"empty alias", with(func(r *Registration) { r.Aliases = []string{"a", ""} }), "aliases[1]"},
		{"long alias", with(func(r *Registration) { r.Aliases = []string{long} }), "aliases[0]"},
		{"too many executors", with(func(r *Registration) { r.Executors = many(MaxExecutors + 1) }), "executors"},
		{"control character in an executor", with(func(r *Registration) { r.Executors = []string{"ssh", "a\tb"} }), "executors[1]"},
	} {
		err := tc.reg.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.field)
			continue
		}
		if !strings.Contains(err.Error(), "field "+tc.field+":") {
			t.Errorf("%s: message %q does not name the field", tc.name, err)
		}
	}
}
