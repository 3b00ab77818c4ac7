package resolved

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ContextSnapshot is a Context's state as data, for a front-end that runs
// one process per agent event (gate hook) and so must carry the session's
// memory from one process to the next.
//
// This is still seed 000's session-scoped context (Invariant 5; §10 "DO
// NOT: Persist ResolvedContext"): the snapshot is the one session's memory
// between its own events, never shared with another session or reused by a
// later one. The front-end deletes it when the session ends and treats it
// as gone once it has been idle longer than the TTL, so a resource is never
// trusted beyond the session that discovered it. Context.MarshalJSON keeps
// refusing, so a context cannot slip into some other serialized state by
// accident: only this explicit, bounded form exists.
//
// Everything eviction, expiry and routing decide from survives exactly: the
// LRU order, the access times, pins, explicit marks (their times) and which
// holder of a shared name, alias or host a lookup finds first.
type ContextSnapshot struct {
	// Now is the context's own clock, which may lag the session's: it
	// moves only when the context is called with a time.
	Now time.Time `json:"now"`
	// Times are the access times the resources name by index, each once,
	// in order of first use: bulk discovery gives hundreds of resources one
	// time, and writing and parsing it per resource was most of a
	// 500-resource snapshot's size and restore time.
	Times []time.Time `json:"times,omitempty"`
	// Resources are the unpinned resources in LRU order, most recently
	// used first, then the pinned ones sorted by canonical id.
	Resources []ResourceSnapshot `json:"resources"`
	// SharedNames, SharedAliases and SharedHosts list, for each name,
	// alias or host key held by more than one resource, the holders'
	// canonical ids, the one a lookup finds first (the latest) first.
	SharedNames   map[string][]string `json:"shared_names,omitempty"`
	SharedAliases map[string][]string `json:"shared_aliases,omitempty"`
	SharedHosts   map[string][]string `json:"shared_hosts,omitempty"`
}

// ResourceSnapshot is one resource of a ContextSnapshot. Its canonical id
// is not stored: it follows from the registration.
type ResourceSnapshot struct {
	Registration
	Pinned bool `json:"pinned,omitempty"`
	// LastAccessed is an index into Times.
	LastAccessed int `json:"at"`
	// ExplicitlyAccessed is an index into Times; nil when the resource was
	// never explicitly accessed.
	ExplicitlyAccessed *int `json:"explicit_at,omitempty"`
}

// Snapshot returns the context's state (see ContextSnapshot for why this
// is still session-scoped). It does not advance the clock, so a resource
// past its TTL that no call has dropped yet is kept, as the context keeps
// it. The snapshot shares the registrations' slices with the context, which
// never modifies them in place: encode it, do not modify it.
func (c *Context) Snapshot() ContextSnapshot {
	s := ContextSnapshot{Now: c.now, Resources: make([]ResourceSnapshot, 0, c.n)}
	// Consecutive resources mostly share a time: checking the last one
	// used first avoids most map lookups (a time.Time key compares its
	// location too: equal instants in two zones are two entries).
	index := make(map[time.Time]int, 4)
	at := func(t time.Time) int {
		if n := len(s.Times); n > 0 && s.Times[n-1] == t {
			return n - 1
		}
		i, ok := index[t]
		if !ok {
			i = len(s.Times)
			index[t] = i
			s.Times = append(s.Times, t)
		}
		return i
	}
	add := func(e *entry) {
		r := ResourceSnapshot{Registration: e.res.Reg, Pinned: e.res.Pinned, LastAccessed: at(e.res.LastAccessed)}
		if e.explicit {
			x := at(e.res.ExplicitlyAccessed)
			r.ExplicitlyAccessed = &x
		}
		s.Resources = append(s.Resources, r)
	}
	for e := c.lru.next; e != &c.lru; e = e.next {
		add(e)
	}
	if c.pinned > 0 {
		pinned := make([]*entry, 0, c.pinned)
		for _, e := range c.byID {
			if e.res.Pinned {
				pinned = append(pinned, e)
			}
		}
		slices.SortFunc(pinned, func(a, b *entry) int { return strings.Compare(a.res.ID, b.res.ID) })
		for _, e := range pinned {
			add(e)
		}
	}
	s.SharedNames = shared(c.byName)
	s.SharedAliases = shared(c.byAlias)
	s.SharedHosts = shared(c.byHost)
	return s
}

// shared lists the keys of m with more than one holder, holders in
// posting order (head first).
func shared(m map[string]*link) map[string][]string {
	var out map[string][]string
	for key, l := range m {
		if l.next == nil {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		var ids []string
		for ; l != nil; l = l.next {
			ids = append(ids, l.owner.res.ID)
		}
		out[key] = ids
	}
	return out
}

// SnapshotError names the field of a snapshot that cannot be restored.
type SnapshotError struct {
	Field   string // e.g. "resources[3].last_accessed"
	Problem string
}

func (e *SnapshotError) Error() string {
	return "resolved: snapshot field " + e.Field + ": " + e.Problem
}

// RestoreContext rebuilds a context of cfg from a snapshot Snapshot made.
// Every field is checked, as untrusted input: more resources than
// cfg.MaxEntries, an invalid or duplicate registration, aliases not as the
// context keeps them (deduplicated, without the name), times after the
// snapshot's clock or out of LRU order, a shared key whose holders do not
// match: each is an error naming the field, and no context is returned.
func RestoreContext(cfg Config, s ContextSnapshot) (*Context, error) {
	c := New(cfg)
	if len(s.Resources) > c.cfg.MaxEntries {
		return nil, &SnapshotError{"resources", strconv.Itoa(len(s.Resources)) + " entries; the context holds at most " + strconv.Itoa(c.cfg.MaxEntries)}
	}
	if len(s.Times) > 2*len(s.Resources) {
		return nil, &SnapshotError{"times", "more than two per resource"}
	}
	c.now = s.Now
	var newer *entry // the previous unpinned resource: LastAccessed may not rise towards the tail
	pinnedSeen := false
	for i := range s.Resources {
		r := &s.Resources[i]
		last, explicit, err := restoreProblem(r, &s)
		if err != nil {
			err.Field = "resources[" + strconv.Itoa(i) + "]" + err.Field
			return nil, err
		}
		id := CanonicalID(r.Registration)
		if _, dup := c.byID[id]; dup {
			return nil, &SnapshotError{"resources[" + strconv.Itoa(i) + "]", "duplicate resource " + strconv.Quote(id)}
		}
		e := &entry{res: Resource{ID: id, Pinned: r.Pinned, LastAccessed: last}}
		if r.Pinned {
			pinnedSeen = true
			c.pinned++
		} else {
			if pinnedSeen {
				return nil, &SnapshotError{"resources[" + strconv.Itoa(i) + "].pinned", "an unpinned resource after the pinned ones"}
			}
			if newer != nil && last.After(newer.res.LastAccessed) {
				return nil, &SnapshotError{"resources[" + strconv.Itoa(i) + "].last_accessed", "later than the resource before it: not in LRU order"}
			}
			newer = e
			// Listed head first, so each goes to the tail.
			e.next, e.prev = &c.lru, c.lru.prev
			c.lru.prev.next = e
			c.lru.prev = e
		}
		c.byID[id] = e
		c.n++
		c.setKeys(e, r.Registration)
		if r.ExplicitlyAccessed != nil {
			e.res.ExplicitlyAccessed = explicit
			e.explicit = true
			c.linkHosts(e)
		}
	}
	for _, idx := range [...]struct {
		field  string
		m      map[string]*link
		order  map[string][]string
		holder func(e *entry, key string) *link
	}{
		{"shared_names", c.byName, s.SharedNames, nameLink},
		{"shared_aliases", c.byAlias, s.SharedAliases, aliasLink},
		{"shared_hosts", c.byHost, s.SharedHosts, hostLink},
	} {
		if err := c.reorder(idx.m, idx.order, idx.holder); err != nil {
			err.Field = idx.field + err.Field
			return nil, err
		}
		for key, l := range idx.m {
			if l.next != nil && idx.order[key] == nil {
				return nil, &SnapshotError{idx.field, strconv.Quote(key) + " is held by more than one resource, and their order is missing"}
			}
		}
	}
	return c, nil
}

// restoreProblem checks one resource of a snapshot against what a context
// can hold and returns its times; Field is relative to the resource.
func restoreProblem(r *ResourceSnapshot, s *ContextSnapshot) (last, explicit time.Time, err *SnapshotError) {
	if err := r.Registration.Validate(); err != nil {
		fe := err.(*FieldError)
		return last, explicit, &SnapshotError{"." + fe.Field, fe.Problem}
	}
	for j, a := range r.Aliases {
		if a == r.Name || slices.Contains(r.Aliases[:j], a) {
			return last, explicit, &SnapshotError{".aliases[" + strconv.Itoa(j) + "]", "repeats the name or an earlier alias"}
		}
	}
	if r.LastAccessed < 0 || r.LastAccessed >= len(s.Times) {
		return last, explicit, &SnapshotError{".at", "not an index into times"}
	}
	last = s.Times[r.LastAccessed]
	if last.After(s.Now) {
		return last, explicit, &SnapshotError{".at", "after the context's clock"}
	}
	if x := r.ExplicitlyAccessed; x != nil {
		if *x < 0 || *x >= len(s.Times) {
			return last, explicit, &SnapshotError{".explicit_at", "not an index into times"}
		}
		explicit = s.Times[*x]
		if explicit.After(last) {
			return last, explicit, &SnapshotError{".explicit_at", "after at (an explicit access is an access)"}
		}
	}
	return last, explicit, nil
}

func nameLink(e *entry, key string) *link {
	if e.nameKeys == 1 && e.keys[0].key == key {
		return &e.keys[0]
	}
	return nil
}

func aliasLink(e *entry, key string) *link {
	for i := e.nameKeys; i < len(e.keys); i++ {
		if e.keys[i].key == key {
			return &e.keys[i]
		}
	}
	return nil
}

func hostLink(e *entry, key string) *link {
	for i := range e.hosts {
		if e.hosts[i].key == key {
			return &e.hosts[i]
		}
	}
	return nil
}

// reorder puts the postings of each key in order as listed (head first).
// The list must name exactly the key's holders.
func (c *Context) reorder(m map[string]*link, order map[string][]string, holder func(*entry, string) *link) *SnapshotError {
	if len(order) == 0 {
		return nil
	}
	keys := make([]string, 0, len(order))
	for k := range order {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad key named is always the same one
	links := make([]*link, 0, 4)
	for _, key := range keys {
		ids := order[key]
		field := "[" + strconv.Quote(key) + "]"
		if len(ids) < 2 {
			return &SnapshotError{field, "fewer than two holders"}
		}
		held := 0
		for l := m[key]; l != nil; l = l.next {
			held++
		}
		if held != len(ids) {
			return &SnapshotError{field, fmt.Sprintf("lists %d holders; %d resources hold it", len(ids), held)}
		}
		c.epoch++
		links = links[:0]
		for j, id := range ids {
			e := c.byID[id]
			var l *link
			if e != nil {
				l = holder(e, key)
			}
			if l == nil || e.mark == c.epoch {
				return &SnapshotError{field + "[" + strconv.Itoa(j) + "]", strconv.Quote(id) + " is not a holder, or is listed twice"}
			}
			e.mark = c.epoch
			links = append(links, l)
		}
		for j := len(links) - 1; j >= 0; j-- {
			unlink(m, links[j])
			push(m, links[j])
		}
	}
	return nil
}
