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
	Pinned       bool      `json:"pinned,omitempty"`
	LastAccessed time.Time `json:"last_accessed"`
	// Explicit is whether ExplicitlyAccessed was ever set: a zero time is
	// a valid clock.
	Explicit           bool      `json:"explicit,omitempty"`
	ExplicitlyAccessed time.Time `json:"explicitly_accessed,omitzero"`
}

// Snapshot returns the context's state (see ContextSnapshot for why this
// is still session-scoped). It does not advance the clock, so a resource
// past its TTL that no call has dropped yet is kept, as the context keeps
// it. The snapshot shares the registrations' slices with the context, which
// never modifies them in place: encode it, do not modify it.
func (c *Context) Snapshot() ContextSnapshot {
	s := ContextSnapshot{Now: c.now, Resources: make([]ResourceSnapshot, 0, c.n)}
	for e := c.lru.next; e != &c.lru; e = e.next {
		s.Resources = append(s.Resources, e.snapshot())
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
			s.Resources = append(s.Resources, e.snapshot())
		}
	}
	s.SharedNames = shared(c.byName)
	s.SharedAliases = shared(c.byAlias)
	s.SharedHosts = shared(c.byHost)
	return s
}

func (e *entry) snapshot() ResourceSnapshot {
	return ResourceSnapshot{
		Registration:       e.res.Reg,
		Pinned:             e.res.Pinned,
		LastAccessed:       e.res.LastAccessed,
		Explicit:           e.explicit,
		ExplicitlyAccessed: e.res.ExplicitlyAccessed,
	}
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
	c.now = s.Now
	var newer *entry // the previous unpinned resource: LastAccessed may not rise towards the tail
	pinnedSeen := false
	for i := range s.Resources {
		r := &s.Resources[i]
		if err := restoreProblem(r, s.Now); err != nil {
			err.Field = "resources[" + strconv.Itoa(i) + "]" + err.Field
			return nil, err
		}
		id := CanonicalID(r.Registration)
		if _, dup := c.byID[id]; dup {
			return nil, &SnapshotError{"resources[" + strconv.Itoa(i) + "]", "duplicate resource " + strconv.Quote(id)}
		}
		e := &entry{res: Resource{ID: id, Pinned: r.Pinned, LastAccessed: r.LastAccessed}}
		if r.Pinned {
			pinnedSeen = true
			c.pinned++
		} else {
			if pinnedSeen {
				return nil, &SnapshotError{"resources[" + strconv.Itoa(i) + "].pinned", "an unpinned resource after the pinned ones"}
			}
			if newer != nil && r.LastAccessed.After(newer.res.LastAccessed) {
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
		if r.Explicit {
			e.res.ExplicitlyAccessed = r.ExplicitlyAccessed
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
// can hold; Field is relative to the resource.
func restoreProblem(r *ResourceSnapshot, now time.Time) *SnapshotError {
	if err := r.Registration.Validate(); err != nil {
		fe := err.(*FieldError)
		return &SnapshotError{"." + fe.Field, fe.Problem}
	}
	for j, a := range r.Aliases {
		if a == r.Name || slices.Contains(r.Aliases[:j], a) {
			return &SnapshotError{".aliases[" + strconv.Itoa(j) + "]", "repeats the name or an earlier alias"}
		}
	}
	if r.Aliases != nil && len(r.Aliases) == 0 {
		return &SnapshotError{".aliases", "empty list"}
	}
	switch {
	case r.LastAccessed.After(now):
		return &SnapshotError{".last_accessed", "after the context's clock"}
	case !r.Explicit && !r.ExplicitlyAccessed.IsZero():
		return &SnapshotError{".explicitly_accessed", "set on a resource never explicitly accessed"}
	case r.ExplicitlyAccessed.After(r.LastAccessed):
		return &SnapshotError{".explicitly_accessed", "after last_accessed (an explicit access is an access)"}
	}
	return nil
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
