package resolved

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// Resource is a registered resource as the context holds it. LastAccessed
// drives the LRU and the sliding TTL; ExplicitlyAccessed records user intent
// for routing. Seed 000 Invariant 7 keeps them apart (P-26): every
// registration and lookup renews LastAccessed, and only an explicit
// registration or MarkExplicitAccess sets ExplicitlyAccessed.
type Resource struct {
	ID                 string       `json:"id"`
	Reg                Registration `json:"registration"`
	Pinned             bool         `json:"pinned,omitempty"`
	LastAccessed       time.Time    `json:"last_accessed"`
	ExplicitlyAccessed time.Time    `json:"explicitly_accessed,omitzero"`
}

// Config sizes a context. A zero field takes its DefaultConfig value.
type Config struct {
	TTL            time.Duration // idle time after which an unpinned resource no longer resolves
	MaxEntries     int           // pinned ones included
	ExplicitWindow time.Duration // how long an explicit access steers routing
}

// DefaultConfig is seed 000 §5's: a 45-minute sliding TTL and 500 entries;
// an explicit access counts for routing as long as the TTL.
func DefaultConfig() Config {
	return Config{TTL: 45 * time.Minute, MaxEntries: 500, ExplicitWindow: 45 * time.Minute}
}

// ErrFull is Register's answer when the context holds MaxEntries resources
// and every one is pinned, so nothing may be evicted to make room.
var ErrFull = errors.New("resolved: context full of pinned resources")

// errNotPersisted keeps a context out of any serialized state.
var errNotPersisted = errors.New("resolved: a ResolvedContext is never serialized (seed 000 §10 DO NOT: Persist ResolvedContext)")

// Context is one session's ResolvedContext, indexed by canonical id, name
// and alias (seed 000 §5 Structure). It lives in memory only and refuses to
// be marshalled (P-10): a new session, or a restart, starts empty. Its one
// serialized form is Snapshot, the same session's memory between the
// processes of a one-process-per-event front-end (see ContextSnapshot).
//
// Collisions: a canonical id names one resource (registering it again
// updates that resource). Names and aliases may be shared: a lookup tries
// ids first, then names, then aliases, and within names (or aliases) the
// resource registered most recently wins; when it leaves, the name falls
// back to the previous holder still in the context. Keys match exactly
// (case and all).
//
// Time: the context's clock never runs backwards. A now earlier than one
// already seen is taken as the latest seen, so the LRU list stays in
// LastAccessed order, expiry stays exact, and replays of a log with
// out-of-order timestamps stay deterministic.
//
// Pinned resources are outside the LRU and the TTL: only Clear(false)
// removes them. A Context is not safe for concurrent use: the reducer owns it.
type Context struct {
	cfg     Config
	now     time.Time
	n       int
	pinned  int
	epoch   uint64 // CheckRouting's visit mark
	lru     entry  // sentinel of the unpinned list: lru.next most, lru.prev least recently used
	byID    map[string]*entry
	byName  map[string]*link
	byAlias map[string]*link
	byHost  map[string]*link // explicitly accessed resources, by host_uid and host_name
}

// entry is a resource with its places in the LRU list and the key indexes.
type entry struct {
	res        Resource
	prev, next *entry // LRU list; nil when pinned
	keys       []link // name first (when set), then each distinct alias
	nameKeys   int    // how many of keys are in byName (0 or 1)
	hosts      []link // byHost postings, only while explicit
	explicit   bool   // ExplicitlyAccessed was set (a zero now is a valid clock)
	mark       uint64
}

// link is one posting in a key index: a doubly linked list per key, head
// = most recent, so that removal is O(1) and a shared name falls back in
// order.
type link struct {
	key        string
	owner      *entry
	prev, next *link
}

// New returns an empty context.
func New(cfg Config) *Context {
	def := DefaultConfig()
	if cfg.TTL <= 0 {
		cfg.TTL = def.TTL
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = def.MaxEntries
	}
	if cfg.ExplicitWindow <= 0 {
		cfg.ExplicitWindow = cfg.TTL
	}
	c := &Context{
		cfg:     cfg,
		byID:    make(map[string]*entry, min(cfg.MaxEntries, 1024)),
		byName:  make(map[string]*link, min(cfg.MaxEntries, 1024)),
		byAlias: map[string]*link{},
		byHost:  map[string]*link{},
	}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// Config returns the context's effective configuration (defaults filled in).
func (c *Context) Config() Config { return c.cfg }

// MarshalJSON refuses: seed 000 §10 "DO NOT: Persist ResolvedContext".
// Infrastructure changes between sessions, so a resolved resource is only
// ever trusted within the session that discovered it.
func (c *Context) MarshalJSON() ([]byte, error) { return nil, errNotPersisted }

// Register adds or updates a resource (an upsert by canonical id) and
// renews its LastAccessed. explicit marks a single-resource get, a user
// @mention or an explicit selection (seed 000 Invariant 7); bulk discovery
// registers with explicit false and never clears an earlier explicit mark.
// Past MaxEntries the least recently used unpinned resource is evicted, in
// O(1) (P-14). Aliases are kept deduplicated and without the name. The
// returned Resource belongs to the context: read it before the next call
// and do not modify it.
func (c *Context) Register(reg Registration, now time.Time, explicit bool) (*Resource, error) {
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	c.advance(now)
	// The id is built on the stack: re-registering a held resource, which
	// bulk discovery does all the time, allocates nothing.
	var buf [3*MaxFieldBytes + 2]byte
	id := appendID(buf[:0], reg)
	e := c.byID[string(id)]
	if e == nil {
		if c.n >= c.cfg.MaxEntries {
			if c.lru.prev == &c.lru {
				return nil, ErrFull
			}
			c.remove(c.lru.prev)
		}
		e = &entry{res: Resource{ID: string(id)}}
		c.byID[e.res.ID] = e
		c.n++
		c.pushFront(e)
		c.setKeys(e, reg)
	} else {
		c.update(e, reg)
		c.touch(e)
	}
	e.res.LastAccessed = c.now
	if explicit {
		c.markExplicit(e)
	}
	return &e.res, nil
}

// update replaces an existing resource's registration. Its names and
// aliases move to the head of their postings: the latest registration wins.
func (c *Context) update(e *entry, reg Registration) {
	old := e.res.Reg
	if old.Name == reg.Name && slices.Equal(old.Aliases, reg.Aliases) {
		for i := range e.keys {
			if l := &e.keys[i]; l.prev != nil { // not yet the latest holder of its key
				m := c.keyIndex(e, i)
				unlink(m, l)
				push(m, l)
			}
		}
	} else {
		c.unlinkKeys(e)
		c.setKeys(e, reg)
	}
	if e.explicit && (old.HostUID != reg.HostUID || old.HostName != reg.HostName) {
		c.unlinkHosts(e)
		e.res.Reg.HostUID, e.res.Reg.HostName = reg.HostUID, reg.HostName
		c.linkHosts(e)
	}
	if !slices.Equal(old.Executors, reg.Executors) {
		e.res.Reg.Executors = slices.Clone(reg.Executors)
	}
	e.res.Reg.HostUID, e.res.Reg.HostName = reg.HostUID, reg.HostName
}

// setKeys stores reg's name and aliases on e (aliases copied: the caller
// keeps its slice) and links them into the name and alias indexes.
func (c *Context) setKeys(e *entry, reg Registration) {
	aliases := make([]string, 0, len(reg.Aliases))
	for _, a := range reg.Aliases {
		if a != reg.Name && !slices.Contains(aliases, a) {
			aliases = append(aliases, a)
		}
	}
	if len(aliases) == 0 {
		aliases = nil
	}
	e.res.Reg = reg
	e.res.Reg.Aliases = aliases
	e.res.Reg.Executors = slices.Clone(reg.Executors)
	e.nameKeys = 0
	if reg.Name != "" {
		e.nameKeys = 1
	}
	e.keys = make([]link, e.nameKeys+len(aliases))
	if e.nameKeys == 1 {
		e.keys[0].key = reg.Name
	}
	for i, a := range aliases {
		e.keys[e.nameKeys+i].key = a
	}
	for i := range e.keys {
		e.keys[i].owner = e
		push(c.keyIndex(e, i), &e.keys[i])
	}
}

func (c *Context) keyIndex(e *entry, i int) map[string]*link {
	if i < e.nameKeys {
		return c.byName
	}
	return c.byAlias
}

func (c *Context) unlinkKeys(e *entry) {
	for i := range e.keys {
		unlink(c.keyIndex(e, i), &e.keys[i])
	}
}

// markExplicit records an explicit access and makes e visible to routing
// under its host.
func (c *Context) markExplicit(e *entry) {
	e.res.ExplicitlyAccessed = c.now
	e.explicit = true
	if len(e.hosts) == 0 {
		c.linkHosts(e)
	}
}

func (c *Context) linkHosts(e *entry) {
	r := e.res.Reg
	switch {
	case r.HostUID == "" && r.HostName == "":
		e.hosts = nil
		return
	case r.HostUID == "" || r.HostName == "" || r.HostUID == r.HostName:
		e.hosts = make([]link, 1)
		e.hosts[0].key = r.host()
	default:
		e.hosts = make([]link, 2)
		e.hosts[0].key, e.hosts[1].key = r.HostUID, r.HostName
	}
	for i := range e.hosts {
		e.hosts[i].owner = e
		push(c.byHost, &e.hosts[i])
	}
}

func (c *Context) unlinkHosts(e *entry) {
	for i := range e.hosts {
		unlink(c.byHost, &e.hosts[i])
	}
	e.hosts = nil
}

// Lookup finds a resource by canonical id, name or alias (P-12) and renews
// its LastAccessed (the sliding TTL, P-13). It never marks explicit access
// (P-26). A resource idle longer than the TTL no longer resolves and is
// removed. Allocation-free.
func (c *Context) Lookup(key string, now time.Time) (*Resource, bool) {
	c.advance(now)
	e := c.find(key)
	if e == nil {
		return nil, false
	}
	c.touch(e)
	return &e.res, true
}

// MarkExplicitAccess records an explicit access to the resource key names
// (a user @mention, a single-resource get, an explicit selection: seed 000
// Invariant 7); it is also an access for the LRU. false: key resolves to
// nothing.
func (c *Context) MarkExplicitAccess(key string, now time.Time) bool {
	c.advance(now)
	e := c.find(key)
	if e == nil {
		return false
	}
	c.touch(e)
	c.markExplicit(e)
	return true
}

// Pin protects the resource key names from eviction and expiry (seed 000
// §5 Pinning) until Clear(false). false: key resolves to nothing.
func (c *Context) Pin(key string, now time.Time) bool {
	c.advance(now)
	e := c.find(key)
	if e == nil {
		return false
	}
	c.touch(e)
	if !e.res.Pinned {
		c.unlinkLRU(e)
		e.res.Pinned = true
		c.pinned++
	}
	return true
}

// Len is the number of resources held. Expired ones leave at the next call
// that brings a clock.
func (c *Context) Len() int { return c.n }

// HasAny reports whether any resource resolves at now: strict resolution's
// scoped bypass lets reads through once one does (seed 000 §4).
func (c *Context) HasAny(now time.Time) bool {
	c.advance(now)
	return c.n > 0
}

// HasPinned reports whether a pinned resource remains, which is what a
// coherent reset with keepPinned asks (seed 000 §5 Coherent Reset).
func (c *Context) HasPinned() bool { return c.pinned > 0 }

// Clear empties the context, or with keepPinned every unpinned resource.
// It is the context half of seed 000's ClearSessionState (P-17): the
// caller resets its FSM in the same step, never one without the other.
func (c *Context) Clear(keepPinned bool) {
	if keepPinned {
		for c.lru.prev != &c.lru {
			c.remove(c.lru.prev)
		}
		return
	}
	clear(c.byID)
	clear(c.byName)
	clear(c.byAlias)
	clear(c.byHost)
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	c.n, c.pinned = 0, 0
}

// Resources lists the resources that resolve at now, sorted by ID: a
// read-only view for state effects and tests.
func (c *Context) Resources(now time.Time) []Resource {
	c.advance(now)
	out := make([]Resource, 0, c.n)
	for _, e := range c.byID {
		r := e.res
		r.Reg.Aliases = slices.Clone(r.Reg.Aliases)
		r.Reg.Executors = slices.Clone(r.Reg.Executors)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// find resolves key: canonical id, then name, then alias.
func (c *Context) find(key string) *entry {
	if e := c.byID[key]; e != nil {
		return e
	}
	if l := c.byName[key]; l != nil {
		return l.owner
	}
	if l := c.byAlias[key]; l != nil {
		return l.owner
	}
	return nil
}

// advance moves the clock forward to now (never back) and drops the
// unpinned resources idle longer than the TTL. The LRU list is in
// LastAccessed order, so they are all at its tail: amortized O(1).
func (c *Context) advance(now time.Time) {
	if now.After(c.now) {
		c.now = now
	}
	for t := c.lru.prev; t != &c.lru && c.now.Sub(t.res.LastAccessed) > c.cfg.TTL; t = c.lru.prev {
		c.remove(t)
	}
}

// touch renews e's LastAccessed and moves it to the LRU's head.
func (c *Context) touch(e *entry) {
	e.res.LastAccessed = c.now
	if !e.res.Pinned && c.lru.next != e {
		c.unlinkLRU(e)
		c.pushFront(e)
	}
}

func (c *Context) pushFront(e *entry) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (c *Context) unlinkLRU(e *entry) {
	if e.prev == nil {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// remove drops e from every index, in O(keys).
func (c *Context) remove(e *entry) {
	c.unlinkLRU(e)
	c.unlinkKeys(e)
	c.unlinkHosts(e)
	delete(c.byID, e.res.ID)
	c.n--
	if e.res.Pinned {
		c.pinned--
	}
}

// push makes l the head of its key's postings.
func push(m map[string]*link, l *link) {
	l.prev, l.next = nil, m[l.key]
	if l.next != nil {
		l.next.prev = l
	}
	m[l.key] = l
}

// unlink takes l out of its key's postings; the key leaves the index with
// its last posting.
func unlink(m map[string]*link, l *link) {
	switch {
	case l.prev != nil:
		l.prev.next = l.next
	case l.next != nil:
		m[l.key] = l.next
	default:
		if m[l.key] == l {
			delete(m, l.key)
		}
	}
	if l.next != nil {
		l.next.prev = l.prev
	}
	l.prev, l.next = nil, nil
}
