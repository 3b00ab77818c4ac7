package resolved

import (
	"strconv"
	"testing"
	"time"
)

// warm is a full default context (500 resources): 10 nodes with 49
// containers each, every container with two aliases. Three containers on
// node-0 were explicitly accessed, so routing has something to find.
func warm(b *testing.B) (*Context, []string) {
	c := New(DefaultConfig())
	var keys []string
	for h := range 10 {
		host := "node-" + strconv.Itoa(h)
		if _, err := c.Register(Registration{Kind: "node", ProviderUID: host, Name: host}, t0, false); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, host)
		for i := range 49 {
			uid := strconv.Itoa(100 + i)
			reg := Registration{Kind: "lxc", ProviderUID: uid, Name: host + "-ct-" + uid, Aliases: []string{host + "/" + uid, "ct" + uid + "." + host},
				HostUID: host, HostName: host}
			if _, err := c.Register(reg, t0, h == 0 && i < 3); err != nil {
				b.Fatal(err)
			}
			keys = append(keys, CanonicalID(reg), reg.Name, reg.Aliases[1])
		}
	}
	if c.Len() != 500 {
		b.Fatalf("warm context holds %d", c.Len())
	}
	return c, keys
}

func BenchmarkLookup(b *testing.B) {
	c, keys := warm(b)
	now := t0.Add(time.Minute)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := c.Lookup(keys[i%len(keys)], now); !ok {
			b.Fatal("miss")
		}
	}
}

func BenchmarkCheckRouting(b *testing.B) {
	for _, bc := range []struct {
		name, target string
		block        bool
	}{
		{"allow/child id", "lxc:node-3:120", false},
		{"allow/host without explicit children", "node-5", false},
		{"allow/unknown target", "/etc/hosts", false},
		{"block/host with explicit children", "node-0", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, _ := warm(b)
			now := t0.Add(time.Minute)
			b.ReportAllocs()
			for b.Loop() {
				if m := c.CheckRouting(bc.target, now); (m != nil) != bc.block {
					b.Fatalf("mismatch = %+v", m)
				}
			}
		})
	}
}

func BenchmarkRegister(b *testing.B) {
	b.Run("upsert", func(b *testing.B) {
		c, _ := warm(b)
		reg := Registration{Kind: "lxc", ProviderUID: "120", Name: "node-3-ct-120", Aliases: []string{"node-3/120", "ct120.node-3"}, HostUID: "node-3", HostName: "node-3"}
		now := t0.Add(time.Minute)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Register(reg, now, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("evict", func(b *testing.B) {
		// 4096 new resources cycle through a full context: every
		// registration is new and evicts the least recently used.
		c, _ := warm(b)
		regs := make([]Registration, 4096)
		for i := range regs {
			uid := strconv.Itoa(i)
			regs[i] = Registration{Kind: "docker_container", ProviderUID: uid, Name: "app-" + uid, Aliases: []string{"a" + uid}, HostUID: "node-9"}
		}
		now := t0.Add(time.Minute)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := c.Register(regs[i%len(regs)], now, false); err != nil {
				b.Fatal(err)
			}
		}
		if c.Len() != 500 {
			b.Fatalf("Len = %d", c.Len())
		}
	})
}
