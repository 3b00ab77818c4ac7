package resolved

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

var (
	homepage = Registration{Kind: "lxc", ProviderUID: "141", Name: "homepage-docker", Aliases: []string{"homepage", "141"}, HostUID: "delly", HostName: "delly"}
	delly    = Registration{Kind: "node", ProviderUID: "delly", Name: "delly"}
)

// mustRegister registers reg and fails the test on an error.
func mustRegister(t testing.TB, c *Context, reg Registration, now time.Time, explicit bool) *Resource {
	t.Helper()
	r, err := c.Register(reg, now, explicit)
	if err != nil {
		t.Fatalf("Register(%+v): %v", reg, err)
	}
	return r
}

// lxc is a generic child container with uid on host.
func lxc(host string, uid int) Registration {
	id := strconv.Itoa(uid)
	return Registration{Kind: "lxc", ProviderUID: id, Name: "ct-" + host + "-" + id, HostUID: host, HostName: host}
}

func TestDefaultConfig(t *testing.T) {
	want := Config{TTL: 45 * time.Minute, MaxEntries: 500, ExplicitWindow: 45 * time.Minute}
	if got := DefaultConfig(); got != want {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if got := New(Config{}).Config(); got != want {
		t.Errorf("New(Config{}).Config() = %+v, want %+v", got, want)
	}
	if got := New(Config{TTL: time.Minute}).Config(); got.ExplicitWindow != time.Minute || got.MaxEntries != 500 {
		t.Errorf("ExplicitWindow defaults to the TTL: %+v", got)
	}
}

// P-10: in memory only; a context refuses to be serialized, and a new one
// (a new session, a restart) resolves nothing.
func TestNeverPersisted(t *testing.T) {
	c := New(DefaultConfig())
	mustRegister(t, c, homepage, t0, true)
	if _, err := json.Marshal(c); err == nil {
		t.Error("json.Marshal(context) succeeded")
	}
	state := struct{ Resolved *Context }{c}
	if _, err := json.Marshal(state); err == nil {
		t.Error("json.Marshal of a state holding the context succeeded")
	}
	fresh := New(DefaultConfig())
	if _, ok := fresh.Lookup("homepage-docker", t0); ok || fresh.HasAny(t0) || fresh.Len() != 0 {
		t.Error("a new context is not empty")
	}
}

// P-12: a canonical id, the name and every alias resolve to the same resource.
func TestLookupByIDNameAlias(t *testing.T) {
	c := New(DefaultConfig())
	want := mustRegister(t, c, homepage, t0, false)
	for _, key := range []string{"lxc:delly:141", "homepage-docker", "homepage", "141"} {
		r, ok := c.Lookup(key, t0)
		if !ok || r != want || r.ID != "lxc:delly:141" {
			t.Errorf("Lookup(%q) = %v, %v", key, r, ok)
		}
	}
	for _, key := range []string{"", "delly", "lxc:delly:142", "Homepage-Docker", "lxc"} {
		if r, ok := c.Lookup(key, t0); ok {
			t.Errorf("Lookup(%q) = %s", key, r.ID)
		}
	}
}

// P-13: the TTL slides with every access; an idle entry past it is gone.
func TestSlidingTTL(t *testing.T) {
	c := New(DefaultConfig())
	mustRegister(t, c, homepage, t0, false)
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{44 * time.Minute, true},
		{88 * time.Minute, true},                   // renewed at 44
		{133 * time.Minute, true},                  // exactly 45 idle: still resolves
		{178*time.Minute + time.Nanosecond, false}, // 45 min + 1 ns idle
	}
	for _, s := range steps {
		_, ok := c.Lookup("homepage", at(s.at))
		if ok != s.want {
			t.Fatalf("Lookup at +%s = %v, want %v", s.at, ok, s.want)
		}
	}
	if c.Len() != 0 || c.HasAny(at(200*time.Minute)) {
		t.Errorf("expired entry still held: Len %d", c.Len())
	}
	// Register renews too.
	mustRegister(t, c, homepage, at(300*time.Minute), false)
	mustRegister(t, c, homepage, at(340*time.Minute), false)
	if _, ok := c.Lookup("homepage", at(380*time.Minute)); !ok {
		t.Error("Register did not renew LastAccessed")
	}
}

// The TTL is configurable and HasAny sees expiry without a lookup.
func TestHasAnyExpires(t *testing.T) {
	c := New(Config{TTL: time.Minute})
	if c.HasAny(t0) {
		t.Fatal("empty context has resources")
	}
	mustRegister(t, c, homepage, t0, false)
	if !c.HasAny(at(time.Minute)) {
		t.Error("HasAny false within the TTL")
	}
	if c.HasAny(at(2*time.Minute + 1)) {
		t.Error("HasAny true past the TTL")
	}
}

// P-14: past MaxEntries the least recently used unpinned entry goes;
// pinned entries stay whatever their age.
func TestLRUEviction(t *testing.T) {
	c := New(Config{MaxEntries: 3})
	for i := 1; i <= 3; i++ {
		mustRegister(t, c, lxc("delly", i), at(time.Duration(i)*time.Second), false)
	}
	c.Lookup("ct-delly-1", at(4*time.Second)) // 2 is now the least recently used
	mustRegister(t, c, lxc("delly", 4), at(5*time.Second), false)
	if _, ok := c.Lookup("lxc:delly:2", at(5*time.Second)); ok {
		t.Error("least recently used entry not evicted")
	}
	for _, id := range []string{"lxc:delly:1", "lxc:delly:3", "lxc:delly:4"} {
		if _, ok := c.Lookup(id, at(6*time.Second)); !ok {
			t.Errorf("%s evicted", id)
		}
	}
	// Pin the least recently used (1): 3 goes next instead.
	if !c.Pin("lxc:delly:1", at(7*time.Second)) {
		t.Fatal("Pin failed")
	}
	mustRegister(t, c, lxc("delly", 5), at(8*time.Second), false)
	if _, ok := c.Lookup("lxc:delly:3", at(9*time.Second)); ok {
		t.Error("lxc:delly:3 not evicted")
	}
	if _, ok := c.Lookup("lxc:delly:1", at(9*time.Second)); !ok {
		t.Error("pinned lxc:delly:1 evicted")
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d, want 3", c.Len())
	}
}

func TestDefaultCapacity(t *testing.T) {
	c := New(DefaultConfig())
	mustRegister(t, c, lxc("delly", 0), t0, false)
	c.Pin("lxc:delly:0", t0)
	for i := 1; i <= 500; i++ {
		mustRegister(t, c, lxc("delly", i), at(time.Duration(i)*time.Millisecond), false)
	}
	if c.Len() != 500 {
		t.Fatalf("Len = %d, want 500", c.Len())
	}
	if _, ok := c.Lookup("lxc:delly:1", at(time.Second)); ok {
		t.Error("entry 501 did not evict the least recently used")
	}
	if _, ok := c.Lookup("lxc:delly:0", at(time.Second)); !ok {
		t.Error("pinned entry evicted")
	}
}

func TestFullOfPinned(t *testing.T) {
	c := New(Config{MaxEntries: 2})
	for i := 1; i <= 2; i++ {
		mustRegister(t, c, lxc("delly", i), t0, false)
		c.Pin(lxc("delly", i).Name, t0)
	}
	if _, err := c.Register(lxc("delly", 3), t0, false); !errors.Is(err, ErrFull) {
		t.Errorf("Register into a context full of pinned = %v, want ErrFull", err)
	}
	// An upsert of a held resource needs no room.
	if _, err := c.Register(lxc("delly", 1), t0, true); err != nil {
		t.Errorf("upsert: %v", err)
	}
}

func TestPinnedOutlivesTTL(t *testing.T) {
	c := New(DefaultConfig())
	mustRegister(t, c, homepage, t0, false)
	mustRegister(t, c, delly, t0, false)
	if !c.Pin("homepage", t0) || !c.Pin("homepage", t0) {
		t.Fatal("Pin failed")
	}
	if c.Pin("nothing", t0) {
		t.Error("Pin of an unknown key succeeded")
	}
	if r, ok := c.Lookup("homepage", at(24*time.Hour)); !ok || !r.Pinned {
		t.Error("pinned resource expired")
	}
	if _, ok := c.Lookup("delly", at(24*time.Hour)); ok {
		t.Error("unpinned resource did not expire")
	}
	if !c.HasPinned() || c.Len() != 1 {
		t.Errorf("HasPinned %v Len %d", c.HasPinned(), c.Len())
	}
}

// P-26: bulk registration and lookups renew LastAccessed only; explicit
// registration and MarkExplicitAccess set ExplicitlyAccessed.
func TestExplicitAccessIsSeparate(t *testing.T) {
	c := New(DefaultConfig())
	r := mustRegister(t, c, homepage, t0, false)
	c.Lookup("homepage", at(time.Minute))
	if !r.ExplicitlyAccessed.IsZero() || !r.LastAccessed.Equal(at(time.Minute)) {
		t.Fatalf("after bulk + lookup: %+v", r)
	}
	if !c.MarkExplicitAccess("homepage-docker", at(2*time.Minute)) {
		t.Fatal("MarkExplicitAccess failed")
	}
	if !r.ExplicitlyAccessed.Equal(at(2*time.Minute)) || !r.LastAccessed.Equal(at(2*time.Minute)) {
		t.Fatalf("after MarkExplicitAccess: %+v", r)
	}
	// Bulk rediscovery and lookups keep the explicit mark where it was.
	mustRegister(t, c, homepage, at(3*time.Minute), false)
	c.Lookup("141", at(4*time.Minute))
	if !r.ExplicitlyAccessed.Equal(at(2*time.Minute)) || !r.LastAccessed.Equal(at(4*time.Minute)) {
		t.Fatalf("after rediscovery: %+v", r)
	}
	r2 := mustRegister(t, c, delly, at(5*time.Minute), true)
	if !r2.ExplicitlyAccessed.Equal(at(5 * time.Minute)) {
		t.Errorf("explicit Register: %+v", r2)
	}
	if c.MarkExplicitAccess("nothing", at(5*time.Minute)) {
		t.Error("MarkExplicitAccess of an unknown key succeeded")
	}
}

// Upsert: the canonical id is the identity; a new name replaces the old
// one in the index, pin and explicit marks survive, the caller's slices
// are copied.
func TestUpsert(t *testing.T) {
	c := New(DefaultConfig())
	reg := homepage
	reg.Aliases = []string{"homepage", "homepage-docker", "homepage"} // name and duplicates dropped
	r := mustRegister(t, c, reg, t0, true)
	if got := r.Reg.Aliases; len(got) != 1 || got[0] != "homepage" {
		t.Errorf("aliases = %q", got)
	}
	reg.Aliases[0] = "mutated"
	if _, ok := c.Lookup("homepage", t0); !ok {
		t.Error("the caller's slice is shared")
	}
	c.Pin("homepage", t0)
	renamed := homepage
	renamed.Name, renamed.Aliases, renamed.Executors = "dashboard", []string{"dash"}, []string{"pct-exec"}
	r2 := mustRegister(t, c, renamed, at(time.Minute), false)
	if r2 != r || c.Len() != 1 || !r.Pinned || r.ExplicitlyAccessed != t0 || r.Reg.Executors[0] != "pct-exec" {
		t.Fatalf("upsert: %+v", r2)
	}
	for key, want := range map[string]bool{"homepage-docker": false, "homepage": false, "dashboard": true, "dash": true, "lxc:delly:141": true} {
		if _, ok := c.Lookup(key, at(time.Minute)); ok != want {
			t.Errorf("Lookup(%q) = %v, want %v", key, ok, want)
		}
	}
}

// Names and aliases shared between resources: ids first, then names,
// then aliases; the latest registration wins, and the name falls back
// when it leaves.
func TestKeyCollisions(t *testing.T) {
	c := New(Config{MaxEntries: 10, TTL: time.Hour})
	a := Registration{Kind: "lxc", ProviderUID: "1", Name: "web", Aliases: []string{"w"}, HostUID: "h1"}
	b := Registration{Kind: "lxc", ProviderUID: "2", Name: "web", Aliases: []string{"w"}, HostUID: "h2"}
	d := Registration{Kind: "vm", ProviderUID: "3", Name: "db", Aliases: []string{"web", "lxc:h1:1"}, HostUID: "h2"}
	steps := []struct {
		do   func()
		key  string
		want string // "" = not found
	}{
		{func() { mustRegister(t, c, a, at(0), false) }, "web", "lxc:h1:1"},
		{func() { mustRegister(t, c, b, at(time.Minute), false) }, "web", "lxc:h2:2"},
		{func() {}, "w", "lxc:h2:2"},
		{func() { mustRegister(t, c, d, at(2*time.Minute), false) }, "web", "lxc:h2:2"},  // a name beats an alias
		{func() {}, "lxc:h1:1", "lxc:h1:1"},                                              // an id beats an alias
		{func() { mustRegister(t, c, a, at(3*time.Minute), false) }, "web", "lxc:h1:1"},  // re-registration wins again
		{func() { c.Lookup("web", at(62*time.Minute+30*time.Second)) }, "w", "lxc:h1:1"}, // b and d expire; a stays
		{func() {}, "web", "lxc:h1:1"},
		{func() { mustRegister(t, c, b, at(65*time.Minute), false) }, "web", "lxc:h2:2"},
		{func() { mustRegister(t, c, a, at(126*time.Minute), false) }, "web", "lxc:h1:1"}, // both expired: a registers anew
		{func() { c.Clear(false) }, "web", ""},
	}
	for i, s := range steps {
		s.do()
		r, ok := c.Lookup(s.key, c.now)
		got := ""
		if ok {
			got = r.ID
		}
		if got != s.want {
			t.Fatalf("step %d: Lookup(%q) = %q, want %q", i, s.key, got, s.want)
		}
	}
	// When the latest holder leaves, the name falls back to the previous one.
	c = New(Config{MaxEntries: 10})
	mustRegister(t, c, a, at(0), false)
	mustRegister(t, c, b, at(time.Minute), false)
	c.Lookup("lxc:h1:1", at(2*time.Minute))
	mustRegister(t, c, d, at(46*time.Minute+30*time.Second), false) // b expires, a (touched at 2) stays
	if r, ok := c.Lookup("web", at(46*time.Minute+30*time.Second)); !ok || r.ID != "lxc:h1:1" {
		t.Errorf("fallback: %v %v", r, ok)
	}
}

// P-17, context half: Clear(false) empties; Clear(true) keeps the pinned,
// and HasAny/HasPinned tell the FSM where to go.
func TestClear(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pin         bool
		keepPinned  bool
		wantLen     int
		wantPinned  bool
		wantResolve bool
	}{
		{"full reset", true, false, 0, false, false},
		{"keep pinned", true, true, 1, true, true},
		{"keep pinned, none pinned", false, true, 0, false, false},
	} {
		c := New(DefaultConfig())
		mustRegister(t, c, homepage, t0, true)
		mustRegister(t, c, delly, t0, false)
		mustRegister(t, c, lxc("delly", 7), t0, true)
		if tc.pin {
			c.Pin("homepage", t0)
		}
		c.Clear(tc.keepPinned)
		if c.Len() != tc.wantLen || c.HasPinned() != tc.wantPinned || c.HasAny(t0) != (tc.wantLen > 0) {
			t.Errorf("%s: Len %d HasPinned %v", tc.name, c.Len(), c.HasPinned())
		}
		if _, ok := c.Lookup("homepage", t0); ok != tc.wantResolve {
			t.Errorf("%s: homepage resolves = %v", tc.name, ok)
		}
		for _, key := range []string{"delly", "node:delly", "ct-delly-7"} {
			if _, ok := c.Lookup(key, t0); ok {
				t.Errorf("%s: %s survived", tc.name, key)
			}
		}
		if m := c.CheckRouting("delly", t0); (m != nil) != tc.wantResolve {
			t.Errorf("%s: routing after clear = %+v", tc.name, m)
		}
		// The context is usable again.
		mustRegister(t, c, delly, t0, false)
		if _, ok := c.Lookup("delly", t0); !ok {
			t.Errorf("%s: register after clear", tc.name)
		}
	}
}

// A clock that runs backwards is taken as the latest seen: nothing
// un-expires and the LRU order holds.
func TestClockNeverRunsBackwards(t *testing.T) {
	c := New(Config{TTL: time.Minute, MaxEntries: 2})
	mustRegister(t, c, lxc("h", 1), at(10*time.Minute), false)
	r := mustRegister(t, c, lxc("h", 2), at(5*time.Minute), false)
	if !r.LastAccessed.Equal(at(10 * time.Minute)) {
		t.Errorf("LastAccessed = %s, want the latest clock", r.LastAccessed)
	}
	mustRegister(t, c, lxc("h", 3), at(0), false)
	if _, ok := c.Lookup("lxc:h:1", at(0)); ok {
		t.Error("LRU order broken by an earlier clock")
	}
	if _, ok := c.Lookup("lxc:h:2", at(12*time.Minute)); ok {
		t.Error("expired entry resolves")
	}
}

func TestResources(t *testing.T) {
	c := New(DefaultConfig())
	if got := c.Resources(t0); len(got) != 0 {
		t.Fatalf("empty: %v", got)
	}
	mustRegister(t, c, lxc("delly", 2), t0, false)
	mustRegister(t, c, homepage, t0, true)
	mustRegister(t, c, delly, t0, false)
	got := c.Resources(t0)
	ids := []string{}
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	want := []string{"lxc:delly:141", "lxc:delly:2", "node:delly"}
	if len(ids) != 3 || ids[0] != want[0] || ids[1] != want[1] || ids[2] != want[2] {
		t.Errorf("ids = %q, want %q", ids, want)
	}
	got[0].Reg.Aliases[0] = "mutated"
	if _, ok := c.Lookup("homepage", t0); !ok {
		t.Error("Resources shares the context's slices")
	}
	if b, err := json.Marshal(got[2]); err != nil || string(b) != `{"id":"node:delly","registration":{"kind":"node","provider_uid":"delly","name":"delly"},"last_accessed":"2025-01-02T03:04:05Z"}` {
		t.Errorf("json = %s, %v", b, err)
	}
}

func TestRegisterRejectsInvalid(t *testing.T) {
	c := New(DefaultConfig())
	if _, err := c.Register(Registration{Kind: "lxc"}, t0, true); err == nil {
		t.Error("invalid registration accepted")
	}
	if c.Len() != 0 {
		t.Error("invalid registration held")
	}
}
