package resolved

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// restored sends c through its snapshot and JSON, as gate hook does
// between processes.
func restored(t *testing.T, c *Context) *Context {
	t.Helper()
	b, err := json.Marshal(c.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var s ContextSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, err := RestoreContext(c.Config(), s)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	again, _ := json.Marshal(r.Snapshot())
	if string(again) != string(b) {
		t.Fatalf("the restored context snapshots differently:\n%s\n%s", b, again)
	}
	return r
}

// For random operations, a context restored from its snapshot after every
// operation answers every later one as the original does: eviction (LRU
// order), expiry (access times), pins, shared names and aliases (which
// holder wins, and the fallback), routing (explicit marks and their times).
func TestSnapshotEquivalence(t *testing.T) {
	regs := func(r *rand.Rand) Registration {
		reg := Registration{Kind: []string{"lxc", "node"}[r.IntN(2)], ProviderUID: fmt.Sprint(r.IntN(8)), Name: fmt.Sprint("n", r.IntN(4))}
		if r.IntN(2) == 0 {
			reg.Aliases = []string{fmt.Sprint("a", r.IntN(3)), fmt.Sprint("a", r.IntN(3))}
		}
		switch r.IntN(4) {
		case 0:
			reg.HostName = "delly"
		case 1:
			reg.HostUID, reg.HostName = "h1", "pve"
		case 2:
			reg.HostUID = "n1"
		}
		return reg
	}
	keys := []string{"n0", "n1", "n2", "a0", "a1", "delly", "pve", "h1", "lxc:delly:1", "node:2"}
	for seed := uint64(1); seed <= 100; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		cfg := Config{TTL: 10 * time.Minute, MaxEntries: 6}
		a, b := New(cfg), New(cfg)
		now := t0
		for i := 0; i < 120; i++ {
			now = now.Add(time.Duration(r.IntN(200)) * time.Second)
			var ga, gb any
			switch k := r.IntN(8); k {
			case 0, 1:
				reg, ex := regs(r), r.IntN(3) == 0
				ra, ea := a.Register(reg, now, ex)
				rb, eb := b.Register(reg, now, ex)
				ga, gb = []any{ra, ea}, []any{rb, eb}
			case 2:
				key := keys[r.IntN(len(keys))]
				ra, oka := a.Lookup(key, now)
				rb, okb := b.Lookup(key, now)
				ga, gb = []any{ra, oka}, []any{rb, okb}
			case 3:
				key := keys[r.IntN(len(keys))]
				ga, gb = a.MarkExplicitAccess(key, now), b.MarkExplicitAccess(key, now)
			case 4:
				key := keys[r.IntN(len(keys))]
				ga, gb = a.Pin(key, now), b.Pin(key, now)
			case 5:
				key := keys[r.IntN(len(keys))]
				ga, gb = a.CheckRouting(key, now), b.CheckRouting(key, now)
			case 6:
				if r.IntN(4) == 0 {
					keep := r.IntN(2) == 0
					a.Clear(keep)
					b.Clear(keep)
				}
			case 7:
				ga, gb = a.HasAny(now), b.HasAny(now)
			}
			if !reflect.DeepEqual(ga, gb) {
				t.Fatalf("seed %d op %d: %+v, restored %+v", seed, i, ga, gb)
			}
			if a.Len() != b.Len() || !reflect.DeepEqual(a.Resources(now), b.Resources(now)) {
				t.Fatalf("seed %d op %d: contexts differ", seed, i)
			}
			b = restored(t, b)
		}
	}
}

// The context itself still refuses to be marshalled (seed 000 §10): only
// its explicit snapshot exists.
func TestSnapshotKeepsMarshalRefusal(t *testing.T) {
	c := New(DefaultConfig())
	mustRegister(t, c, homepage, t0, true)
	if _, err := json.Marshal(c); err == nil {
		t.Fatal("json.Marshal(context) succeeded")
	}
	if _, err := json.Marshal(c.Snapshot()); err != nil {
		t.Fatal(err)
	}
}

// RestoreContext refuses what a context cannot hold, naming the field.
func TestRestoreContextRefuses(t *testing.T) {
	c := New(Config{MaxEntries: 3})
	mustRegister(t, c, homepage, at(0), true)
	mustRegister(t, c, delly, at(time.Second), false)
	mustRegister(t, c, Registration{Kind: "vm", ProviderUID: "1", Name: "delly"}, at(2*time.Second), false)
	good := c.Snapshot()
	if good.SharedNames == nil {
		t.Fatal("want a shared name in the fixture")
	}
	mod := func(f func(s *ContextSnapshot)) ContextSnapshot {
		b, _ := json.Marshal(good)
		var s ContextSnapshot
		json.Unmarshal(b, &s)
		f(&s)
		return s
	}
	one := 1
	for _, tc := range []struct {
		name string
		s    ContextSnapshot
		want string
	}{
		{"too many", mod(func(s *ContextSnapshot) {
			s.Resources = append(s.Resources, ResourceSnapshot{Registration: Registration{Kind: "x", ProviderUID: "y"}})
		}), "resources: 4 entries; the context holds at most 3"},
		{"registration", mod(func(s *ContextSnapshot) { s.Resources[1].Kind = "a:b" }), "resources[1].kind: contains ':'"},
		{"duplicate", mod(func(s *ContextSnapshot) { s.Resources[1] = s.Resources[0] }), "resources[1]: duplicate resource"},
		{"alias repeats name", mod(func(s *ContextSnapshot) { s.Resources[2].Aliases = []string{"homepage-docker"} }), "resources[2].aliases[0]"},
		{"time index", mod(func(s *ContextSnapshot) { s.Resources[0].LastAccessed = 9 }), "resources[0].at: not an index"},
		{"explicit index", mod(func(s *ContextSnapshot) { s.Resources[0].ExplicitlyAccessed = &one; s.Resources[0].LastAccessed = 2 }), "resources[0].explicit_at: after at"},
		{"clock", mod(func(s *ContextSnapshot) { s.Now = t0 }), "resources[0].at: after the context's clock"},
		{"lru order", mod(func(s *ContextSnapshot) { s.Resources[0], s.Resources[1] = s.Resources[1], s.Resources[0] }), "not in LRU order"},
		{"pinned first", mod(func(s *ContextSnapshot) { s.Resources[0].Pinned = true }), "resources[1].pinned: an unpinned resource after the pinned ones"},
		{"shared missing", mod(func(s *ContextSnapshot) { s.SharedNames = nil }), `shared_names: "delly" is held by more than one resource`},
		{"shared wrong", mod(func(s *ContextSnapshot) { s.SharedNames["delly"][1] = "lxc:delly:141" }), `shared_names["delly"][1]: "lxc:delly:141" is not a holder`},
		{"shared count", mod(func(s *ContextSnapshot) { s.SharedNames["delly"] = s.SharedNames["delly"][:1] }), "fewer than two holders"},
		{"times", mod(func(s *ContextSnapshot) { s.Times = make([]time.Time, 7) }), "times: more than two per resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := RestoreContext(Config{MaxEntries: 3}, tc.s)
			if err == nil || c != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RestoreContext: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// FuzzRestoreContext: any JSON, as a snapshot, is refused or restores to a
// context that snapshots to the same bytes again and takes further calls
// without panicking.
func FuzzRestoreContext(f *testing.F) {
	c := New(Config{MaxEntries: 4})
	mustRegister(f, c, homepage, at(0), true)
	mustRegister(f, c, delly, at(time.Second), false)
	mustRegister(f, c, Registration{Kind: "vm", ProviderUID: "1", Name: "delly", Aliases: []string{"homepage"}, HostName: "delly"}, at(2*time.Second), true)
	c.Pin("delly", at(3*time.Second))
	b, _ := json.Marshal(c.Snapshot())
	f.Add(b)
	f.Add([]byte(`{"now":"2025-01-01T00:00:00Z","times":["2025-01-01T00:00:00Z"],"resources":[{"kind":"a","provider_uid":"b","at":0,"explicit_at":0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s ContextSnapshot
		if json.Unmarshal(data, &s) != nil {
			return
		}
		c, err := RestoreContext(Config{MaxEntries: 4}, s)
		if err != nil {
			return
		}
		a, _ := json.Marshal(c.Snapshot())
		var s2 ContextSnapshot
		json.Unmarshal(a, &s2)
		c2, err := RestoreContext(Config{MaxEntries: 4}, s2)
		if err != nil {
			t.Fatalf("a snapshot of a restored context does not restore: %v\n%s", err, a)
		}
		if b, _ := json.Marshal(c2.Snapshot()); string(a) != string(b) {
			t.Fatalf("snapshot → restore → snapshot changed:\n%s\n%s", a, b)
		}
		now := s.Now.Add(time.Minute)
		for _, k := range []string{"delly", "homepage", "lxc:delly:141", "b", "a:b"} {
			c.CheckRouting(k, now)
			c.Lookup(k, now)
			c.MarkExplicitAccess(k, now)
		}
		c.Register(Registration{Kind: "n", ProviderUID: "new", Name: "delly", HostName: "delly"}, now, true)
		c.Register(Registration{Kind: "n", ProviderUID: "new2"}, now, false)
		c.Clear(true)
		c.HasAny(now.Add(time.Hour))
	})
}
