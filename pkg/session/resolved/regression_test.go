package resolved

import (
	"encoding/json"
	"testing"
	"time"
)

// Seed 000 Invariant 7's regression tests, at the package level (the
// reducer replays them as event logs): host "delly", its container
// "homepage-docker" = lxc:delly:141, and bulk-discovered siblings.

// discoverDelly is a bulk search returning the node and 40 of its
// containers, homepage-docker among them: none explicit.
func discoverDelly(t *testing.T, c *Context, now time.Time) {
	t.Helper()
	mustRegister(t, c, delly, now, false)
	mustRegister(t, c, homepage, now, false)
	for i := 100; i < 140; i++ {
		mustRegister(t, c, lxc("delly", i), now, false)
	}
}

// P-27: bulk discovery sets LastAccessed on every child, and must not make
// the host unreachable.
func TestRoutingValidation_BulkDiscoveryShouldNotPoisonRouting(t *testing.T) {
	c := New(DefaultConfig())
	discoverDelly(t, c, t0)
	for i := 100; i < 140; i++ { // the model reads some of them: LRU accesses, not intent
		c.Lookup(lxc("delly", i).Name, at(time.Minute))
	}
	for _, target := range []string{"delly", "node:delly"} {
		if m := c.CheckRouting(target, at(2*time.Minute)); m != nil {
			t.Errorf("CheckRouting(%q) after bulk discovery = %+v, want allowed", target, m)
		}
	}
}

// P-28: a single-resource get of a child marks explicit access, and the
// host is then blocked.
func TestRoutingValidation_ExplicitGetShouldMarkAccess(t *testing.T) {
	c := New(DefaultConfig())
	discoverDelly(t, c, t0)
	// pulse_query action=get → one resource, registered explicitly.
	r := mustRegister(t, c, homepage, at(time.Minute), true)
	if !r.ExplicitlyAccessed.Equal(at(time.Minute)) {
		t.Fatalf("explicit get did not mark access: %+v", r)
	}
	m := c.CheckRouting("delly", at(2*time.Minute))
	if m == nil {
		t.Fatal("CheckRouting(delly) after an explicit get = allowed, want ROUTING_MISMATCH")
	}
	if m.TargetResourceID != "lxc:delly:141" || len(m.MoreSpecificIDs) != 1 {
		t.Errorf("mismatch = %+v", m)
	}
}

// P-29, Appendix A Failure Mode 5: the user mentions @homepage-docker; a
// file edit aimed at the host delly is blocked with the child's id, and
// the retry on the child goes through.
func TestRoutingMismatch_RegressionHomepageScenario(t *testing.T) {
	c := New(DefaultConfig())
	discoverDelly(t, c, t0)
	// "add InfluxDB to my @homepage-docker config": the mention resolves.
	if !c.MarkExplicitAccess("homepage-docker", at(time.Minute)) {
		t.Fatal("@homepage-docker does not resolve")
	}
	// file_edit target_host="delly" path="/opt/homepage/config/services.yaml"
	m := c.CheckRouting("delly", at(2*time.Minute))
	if m == nil {
		t.Fatal("file edit on delly allowed")
	}
	b, err := json.Marshal(m.Response())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ok":false,"error":{"code":"ROUTING_MISMATCH","message":"target_host 'delly' is a host, but you recently referenced more specific resources on it: [homepage-docker].","blocked":true,` +
		`"details":{"auto_recoverable":true,"more_specific_resource_ids":["lxc:delly:141"],"more_specific_resources":["homepage-docker"],` +
		`"recovery_hint":"Retry with target_resource_id='lxc:delly:141'","target_host":"delly","target_resource_id":"lxc:delly:141"}}}`
	if string(b) != want {
		t.Errorf("response\n got %s\nwant %s", b, want)
	}
	if m.TargetKind != "node" || m.ChildKind != "lxc" {
		t.Errorf("metric labels target_kind=%q child_kind=%q", m.TargetKind, m.ChildKind)
	}
	// Blocks never wear down: the same call is blocked again.
	if c.CheckRouting("delly", at(3*time.Minute)) == nil {
		t.Error("second attempt on delly allowed")
	}
	// The retry with target_resource_id='lxc:delly:141' (and the legacy
	// target_host='homepage-docker') succeeds.
	for _, target := range []string{"lxc:delly:141", "homepage-docker"} {
		if m := c.CheckRouting(target, at(4*time.Minute)); m != nil {
			t.Errorf("retry on %q blocked: %+v", target, m)
		}
		if _, ok := c.Lookup(target, at(4*time.Minute)); !ok {
			t.Errorf("retry target %q does not resolve", target)
		}
	}
}
