package resolved

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// model is a naive ResolvedContext (linear scans, sequence numbers instead
// of linked lists) that the fuzzer holds the real one to, operation by
// operation.
type model struct {
	cfg   Config
	clock time.Time
	seq   int
	recs  []*mrec
}

type mrec struct {
	id       string
	reg      Registration
	pinned   bool
	last     time.Time
	touched  int // LRU order
	regSeq   int // latest registration wins a shared name or alias
	explicit bool
	expAt    time.Time
}

func (m *model) advance(now time.Time) {
	if now.After(m.clock) {
		m.clock = now
	}
	m.recs = slices.DeleteFunc(m.recs, func(r *mrec) bool { return !r.pinned && m.clock.Sub(r.last) > m.cfg.TTL })
}

func (m *model) touch(r *mrec) { m.seq++; r.touched = m.seq; r.last = m.clock }

func (m *model) find(key string) *mrec {
	for _, r := range m.recs {
		if r.id == key {
			return r
		}
	}
	var best *mrec
	for _, alias := range []bool{false, true} {
		for _, r := range m.recs {
			held := r.reg.Name == key && key != ""
			if alias {
				held = slices.Contains(r.reg.Aliases, key)
			}
			if held && (best == nil || r.regSeq > best.regSeq) {
				best = r
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}

func (m *model) register(reg Registration, now time.Time, explicit bool) error {
	m.advance(now)
	id := CanonicalID(reg)
	var aliases []string
	for _, a := range reg.Aliases {
		if a != reg.Name && !slices.Contains(aliases, a) {
			aliases = append(aliases, a)
		}
	}
	reg.Aliases = aliases
	var r *mrec
	for _, x := range m.recs {
		if x.id == id {
			r = x
		}
	}
	if r == nil {
		if len(m.recs) >= m.cfg.MaxEntries {
			var lru *mrec
			for _, x := range m.recs {
				if !x.pinned && (lru == nil || x.touched < lru.touched) {
					lru = x
				}
			}
			if lru == nil {
				return ErrFull
			}
			m.recs = slices.DeleteFunc(m.recs, func(x *mrec) bool { return x == lru })
		}
		r = &mrec{id: id}
		m.recs = append(m.recs, r)
	}
	r.reg = reg
	m.touch(r)
	r.regSeq = m.seq
	if explicit {
		r.explicit, r.expAt = true, m.clock
	}
	return nil
}

// routing is CheckRouting as its doc states it.
func (m *model) routing(target string, now time.Time) *Mismatch {
	m.advance(now)
	if target == "" {
		return nil
	}
	host := m.find(target)
	keys := []string{target}
	if host != nil {
		keys = append(keys, host.id, host.reg.ProviderUID, host.reg.Name)
		keys = append(keys, host.reg.Aliases...)
	}
	var kids []*mrec
	for _, r := range m.recs {
		if r == host || !r.explicit || m.clock.Sub(r.expAt) > m.cfg.ExplicitWindow {
			continue
		}
		if (r.reg.HostUID != "" && slices.Contains(keys, r.reg.HostUID)) || (r.reg.HostName != "" && slices.Contains(keys, r.reg.HostName)) {
			kids = append(kids, r)
		}
	}
	if len(kids) == 0 {
		return nil
	}
	slices.SortFunc(kids, func(a, b *mrec) int { return strings.Compare(a.id, b.id) })
	best := kids[0]
	for _, k := range kids[1:] {
		if k.expAt.After(best.expAt) {
			best = k
		}
	}
	if host != nil && host.explicit && !host.expAt.Before(best.expAt) {
		return nil
	}
	mm := &Mismatch{TargetHost: target, TargetResourceID: best.id, TargetKind: "host", ChildKind: best.reg.Kind,
		MoreSpecific: []string{}, MoreSpecificIDs: []string{}}
	if host != nil {
		mm.TargetKind = host.reg.Kind
	}
	for _, k := range kids {
		mm.MoreSpecificIDs = append(mm.MoreSpecificIDs, k.id)
		name := k.reg.Name
		if name == "" {
			name = k.id
		}
		mm.MoreSpecific = append(mm.MoreSpecific, name)
	}
	return mm
}

// fuzzKeys are the keys operations pick from: names, aliases, ids, hosts.
var fuzzKeys = []string{"a", "b", "c", "x", "y", "h1", "h2", "lxc:h1:1", "lxc:h1:2", "vm:h2:1", "lxc:1", "vm:3", "1", "zz", ""}

// fuzzReg decodes two bytes into a registration over a small universe, so
// that ids, names, aliases and hosts collide often.
func fuzzReg(b0, b1 byte) Registration {
	kinds := []string{"lxc", "vm"}
	hosts := [][2]string{{"", ""}, {"h1", "h1"}, {"h2", ""}, {"", "h1"}, {"h2", "h1"}}
	names := []string{"", "a", "b", "c", "h1"}
	r := Registration{Kind: kinds[b0&1], ProviderUID: []string{"1", "2", "3"}[(b0>>1)%3]}
	h := hosts[(b0>>3)%5]
	r.HostUID, r.HostName = h[0], h[1]
	r.Name = names[b1%5]
	for i, a := range []string{"a", "x", "y", "lxc:h1:1"} {
		if b1&(8<<i) != 0 {
			r.Aliases = append(r.Aliases, a)
		}
	}
	return r
}

// FuzzContext: a random sequence of registrations, lookups, explicit
// marks, pins, clock moves (forward and back), clears and routing checks
// gives the same answers as the naive model, and the context's structural
// invariants hold after every step.
func FuzzContext(f *testing.F) {
	f.Add([]byte{0, 3, 9, 1, 7, 4, 20, 6, 5})
	f.Add([]byte{0, 10, 200, 0, 11, 3, 0, 12, 255, 2, 0, 6, 5, 4, 90, 1, 2, 6, 6})
	f.Add([]byte{0, 0, 0, 0, 2, 1, 0, 4, 2, 3, 7, 0, 6, 0, 0, 8, 8, 4, 255, 4, 255, 1, 7, 5, 1, 1, 3})
	f.Add([]byte{0, 1, 9, 0, 9, 17, 0, 17, 25, 0, 25, 33, 0, 33, 41, 3, 1, 3, 2, 0, 41, 2, 4, 250, 6, 5, 6, 6})
	f.Fuzz(func(t *testing.T, ops []byte) {
		cfg := Config{TTL: 10 * time.Minute, MaxEntries: 4, ExplicitWindow: 5 * time.Minute}
		c := New(cfg)
		m := &model{cfg: cfg}
		now := t0
		next := func(i *int) byte {
			*i++
			if *i < len(ops) {
				return ops[*i]
			}
			return 0
		}
		for i := 0; i < len(ops); i++ {
			op := ops[i]
			switch op % 8 {
			case 0, 7:
				reg := fuzzReg(next(&i), next(&i))
				explicit := op&8 != 0
				_, err := c.Register(reg, now, explicit)
				if merr := m.register(reg, now, explicit); err != merr {
					t.Fatalf("op %d Register(%+v) = %v, model %v", i, reg, err, merr)
				}
			case 1:
				key := fuzzKeys[int(next(&i))%len(fuzzKeys)]
				r, ok := c.Lookup(key, now)
				m.advance(now)
				mr := m.find(key)
				if ok != (mr != nil) || ok && r.ID != mr.id {
					t.Fatalf("op %d Lookup(%q) = %v %v, model %v", i, key, r, ok, mr)
				}
				if mr != nil {
					m.touch(mr)
				}
			case 2:
				key := fuzzKeys[int(next(&i))%len(fuzzKeys)]
				ok := c.MarkExplicitAccess(key, now)
				m.advance(now)
				mr := m.find(key)
				if ok != (mr != nil) {
					t.Fatalf("op %d MarkExplicitAccess(%q) = %v", i, key, ok)
				}
				if mr != nil {
					m.touch(mr)
					mr.explicit, mr.expAt = true, m.clock
				}
			case 3:
				key := fuzzKeys[int(next(&i))%len(fuzzKeys)]
				ok := c.Pin(key, now)
				m.advance(now)
				mr := m.find(key)
				if ok != (mr != nil) {
					t.Fatalf("op %d Pin(%q) = %v", i, key, ok)
				}
				if mr != nil {
					m.touch(mr)
					mr.pinned = true
				}
			case 4:
				d := time.Duration(next(&i)) * 10 * time.Second
				if op&8 != 0 {
					d = -d
				}
				now = now.Add(d)
			case 5:
				keep := op&8 != 0
				c.Clear(keep)
				m.recs = slices.DeleteFunc(m.recs, func(r *mrec) bool { return !keep || !r.pinned })
			case 6:
				key := fuzzKeys[int(next(&i))%len(fuzzKeys)]
				got, want := c.CheckRouting(key, now), m.routing(key, now)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("op %d CheckRouting(%q):\n got %+v\nwant %+v", i, key, got, want)
				}
			}
			checkInvariants(t, c, m)
		}
	})
}

// checkInvariants holds the context to the model's contents and to its own
// structure: the LRU list holds exactly the unpinned entries in
// LastAccessed order, and every index posting points at a held entry.
func checkInvariants(t *testing.T, c *Context, m *model) {
	t.Helper()
	if c.Len() != len(m.recs) || c.Len() > c.cfg.MaxEntries {
		t.Fatalf("Len = %d, model %d", c.Len(), len(m.recs))
	}
	pinned := 0
	for _, r := range m.recs {
		if r.pinned {
			pinned++
		}
		e := c.byID[r.id]
		if e == nil || e.res.Pinned != r.pinned || e.explicit != r.explicit || !e.res.ExplicitlyAccessed.Equal(r.expAt) || !e.res.LastAccessed.Equal(r.last) {
			t.Fatalf("%s: context %+v, model %+v", r.id, e, r)
		}
	}
	if c.HasPinned() != (pinned > 0) || c.pinned != pinned {
		t.Fatalf("pinned = %d, model %d", c.pinned, pinned)
	}
	n := 0
	for e := c.lru.next; e != &c.lru; e = e.next {
		n++
		if e.res.Pinned || e.next.prev != e || (e.next != &c.lru && e.next.res.LastAccessed.After(e.res.LastAccessed)) {
			t.Fatalf("LRU list broken at %s", e.res.ID)
		}
	}
	if n != c.n-pinned {
		t.Fatalf("LRU list holds %d, want %d", n, c.n-pinned)
	}
	for name, idx := range map[string]map[string]*link{"name": c.byName, "alias": c.byAlias, "host": c.byHost} {
		for key, l := range idx {
			if l.prev != nil {
				t.Fatalf("%s %q: head has a prev", name, key)
			}
			for ; l != nil; l = l.next {
				if l.key != key || c.byID[l.owner.res.ID] != l.owner || (l.next != nil && l.next.prev != l) {
					t.Fatalf("%s %q: stale posting for %s", name, key, l.owner.res.ID)
				}
			}
		}
	}
}
