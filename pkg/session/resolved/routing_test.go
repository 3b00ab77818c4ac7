package resolved

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/session/response"
)

// op is one step of a routing scenario.
type op struct {
	reg      *Registration // Register(reg, explicit)
	explicit bool
	mark     string // MarkExplicitAccess(mark)
	at       time.Duration
}

func TestCheckRouting(t *testing.T) {
	web := Registration{Kind: "docker_container", ProviderUID: "abc123", Name: "web", HostUID: "homepage-docker"}
	pveUID := Registration{Kind: "lxc", ProviderUID: "150", Name: "media", HostUID: "pve-7", HostName: "delly"}
	node7 := Registration{Kind: "node", ProviderUID: "pve-7", Name: "delly-node", Aliases: []string{"dn"}}
	ct := func(uid int) *Registration { r := lxc("delly", uid); return &r }
	for _, tc := range []struct {
		name   string
		cfg    Config
		ops    []op
		target string
		at     time.Duration
		want   *Mismatch
	}{
		{name: "empty context", target: "delly"},
		{name: "bulk discovery only (P-27)", ops: []op{{reg: &homepage}, {reg: ct(2)}, {reg: &delly}}, target: "delly"},
		{name: "lookups never count (P-26)", ops: []op{{reg: &homepage}, {mark: "nothing"}}, target: "delly"},
		{
			name: "explicit child, unregistered host (P-28)", ops: []op{{reg: &homepage, explicit: true}}, target: "delly",
			want: &Mismatch{TargetHost: "delly", MoreSpecific: []string{"homepage-docker"}, MoreSpecificIDs: []string{"lxc:delly:141"},
				TargetResourceID: "lxc:delly:141", TargetKind: "host", ChildKind: "lxc"},
		},
		{
			name: "registered host by its canonical id", ops: []op{{reg: &delly}, {reg: &homepage}, {mark: "homepage"}}, target: "node:delly",
			want: &Mismatch{TargetHost: "node:delly", MoreSpecific: []string{"homepage-docker"}, MoreSpecificIDs: []string{"lxc:delly:141"},
				TargetResourceID: "lxc:delly:141", TargetKind: "node", ChildKind: "lxc"},
		},
		{name: "the child itself", ops: []op{{reg: &homepage, explicit: true}}, target: "lxc:delly:141"},
		{name: "the child by name (legacy retry)", ops: []op{{reg: &homepage, explicit: true}}, target: "homepage-docker"},
		{name: "another host", ops: []op{{reg: &homepage, explicit: true}, {reg: ct(3)}}, target: "minipc"},
		{name: "unknown target", ops: []op{{reg: &homepage, explicit: true}}, target: "/etc/hosts"},
		{name: "empty target", ops: []op{{reg: &homepage, explicit: true}}, target: ""},
		{
			name: "window still open at its end", ops: []op{{reg: &homepage, explicit: true}, {reg: &delly, at: 44 * time.Minute}},
			target: "delly", at: 45 * time.Minute,
			want: &Mismatch{TargetHost: "delly", MoreSpecific: []string{"homepage-docker"}, MoreSpecificIDs: []string{"lxc:delly:141"},
				TargetResourceID: "lxc:delly:141", TargetKind: "node", ChildKind: "lxc"},
		},
		{
			name: "window over, child still resolves", cfg: Config{ExplicitWindow: 10 * time.Minute},
			ops: []op{{reg: &homepage, explicit: true}, {reg: &homepage, at: 20 * time.Minute}}, target: "delly", at: 21 * time.Minute,
		},
		{name: "child expired", ops: []op{{reg: &homepage, explicit: true}, {reg: &delly, at: 50 * time.Minute}}, target: "delly", at: 50 * time.Minute},
		{
			name:   "several children: sorted by id, target the most recent",
			ops:    []op{{reg: ct(9), explicit: true}, {reg: &homepage, explicit: true, at: time.Minute}, {reg: ct(20), explicit: true}, {reg: ct(5)}},
			target: "delly", at: 2 * time.Minute,
			want: &Mismatch{TargetHost: "delly", MoreSpecific: []string{"homepage-docker", "ct-delly-20", "ct-delly-9"},
				MoreSpecificIDs: []string{"lxc:delly:141", "lxc:delly:20", "lxc:delly:9"}, TargetResourceID: "lxc:delly:141", TargetKind: "host", ChildKind: "lxc"},
		},
		{
			name: "tie on time: the smallest id",
			ops:  []op{{reg: ct(9), explicit: true}, {reg: ct(20), explicit: true}}, target: "delly",
			want: &Mismatch{TargetHost: "delly", MoreSpecific: []string{"ct-delly-20", "ct-delly-9"},
				MoreSpecificIDs: []string{"lxc:delly:20", "lxc:delly:9"}, TargetResourceID: "lxc:delly:20", TargetKind: "host", ChildKind: "lxc"},
		},
		{
			name: "host explicitly accessed after the child: the user means the host",
			ops:  []op{{reg: &homepage, explicit: true}, {reg: &delly, explicit: true, at: time.Minute}}, target: "delly",
		},
		{
			name: "child explicitly accessed after the host",
			ops:  []op{{reg: &delly, explicit: true}, {reg: &homepage}, {mark: "homepage", at: time.Minute}}, target: "delly", at: time.Minute,
			want: &Mismatch{TargetHost: "delly", MoreSpecific: []string{"homepage-docker"}, MoreSpecificIDs: []string{"lxc:delly:141"},
				TargetResourceID: "lxc:delly:141", TargetKind: "node", ChildKind: "lxc"},
		},
		{
			name: "host_uid and host_name both name the host",
			ops:  []op{{reg: &pveUID, explicit: true}}, target: "pve-7",
			want: &Mismatch{TargetHost: "pve-7", MoreSpecific: []string{"media"}, MoreSpecificIDs: []string{"lxc:pve-7:150"},
				TargetResourceID: "lxc:pve-7:150", TargetKind: "host", ChildKind: "lxc"},
		},
		{
			name: "a host resource reached by an alias; its child counted once",
			ops:  []op{{reg: &node7}, {reg: &pveUID, explicit: true}}, target: "dn",
			want: &Mismatch{TargetHost: "dn", MoreSpecific: []string{"media"}, MoreSpecificIDs: []string{"lxc:pve-7:150"},
				TargetResourceID: "lxc:pve-7:150", TargetKind: "node", ChildKind: "lxc"},
		},
		{
			name: "nested: a container is the host of its docker containers",
			ops:  []op{{reg: &homepage}, {reg: &web, explicit: true}}, target: "lxc:delly:141",
			want: &Mismatch{TargetHost: "lxc:delly:141", MoreSpecific: []string{"web"}, MoreSpecificIDs: []string{"docker_container:homepage-docker:abc123"},
				TargetResourceID: "docker_container:homepage-docker:abc123", TargetKind: "lxc", ChildKind: "docker_container"},
		},
		{
			name: "an unnamed child is listed by id",
			ops:  []op{{reg: &Registration{Kind: "vm", ProviderUID: "203", HostUID: "minipc"}, explicit: true}}, target: "minipc",
			want: &Mismatch{TargetHost: "minipc", MoreSpecific: []string{"vm:minipc:203"}, MoreSpecificIDs: []string{"vm:minipc:203"},
				TargetResourceID: "vm:minipc:203", TargetKind: "host", ChildKind: "vm"},
		},
		{
			name: "a moved child routes by its new host",
			ops: []op{{reg: &homepage, explicit: true},
				{reg: &Registration{Kind: "lxc", ProviderUID: "141", Name: "homepage-docker", HostName: "delly"}, at: time.Minute}},
			target: "minipc", at: time.Minute,
		},
	} {
		c := New(tc.cfg)
		for _, o := range tc.ops {
			if o.reg != nil {
				mustRegister(t, c, *o.reg, at(o.at), o.explicit)
			} else {
				c.MarkExplicitAccess(o.mark, at(o.at))
			}
		}
		got := c.CheckRouting(tc.target, at(tc.at))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// A child that changes host moves with it in the routing index.
func TestRoutingFollowsHostChange(t *testing.T) {
	c := New(DefaultConfig())
	mustRegister(t, c, homepage, t0, true)
	moved := homepage
	moved.HostName = "delly-old" // the id's host (host_uid) is unchanged
	mustRegister(t, c, moved, t0, false)
	if c.CheckRouting("delly-old", t0) == nil {
		t.Error("new host_name not indexed")
	}
	if c.CheckRouting("delly", t0) == nil {
		t.Error("host_uid no longer indexed")
	}
	moved.HostUID, moved.HostName = "delly", "delly"
	mustRegister(t, c, moved, t0, false)
	if c.CheckRouting("delly-old", t0) != nil {
		t.Error("old host_name still indexed")
	}
}

// P-23, P-24: the ROUTING_MISMATCH envelope, as seed 000 Invariant 7 shows it
// with the generic "host" wording and the id-only hint.
func TestMismatchResponse(t *testing.T) {
	m := &Mismatch{TargetHost: "delly", MoreSpecific: []string{"homepage-docker", "ct-delly-9"},
		MoreSpecificIDs: []string{"lxc:delly:141", "lxc:delly:9"}, TargetResourceID: "lxc:delly:141", TargetKind: "node", ChildKind: "lxc"}
	b, err := json.Marshal(m.Response())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ok":false,"error":{"code":"ROUTING_MISMATCH","message":"target_host 'delly' is a host, but you recently referenced more specific resources on it: [homepage-docker, ct-delly-9].","blocked":true,` +
		`"details":{"auto_recoverable":true,"more_specific_resource_ids":["lxc:delly:141","lxc:delly:9"],"more_specific_resources":["homepage-docker","ct-delly-9"],` +
		`"recovery_hint":"Retry with target_resource_id='lxc:delly:141'","target_host":"delly","target_resource_id":"lxc:delly:141"}}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// P-02, P-21: the STRICT_RESOLUTION envelope of seed 000 §4.
func TestStrictResolution(t *testing.T) {
	for _, tc := range []struct {
		id, action, msg string
	}{
		{"web-1", "restart", "action 'restart' on resource 'web-1' is blocked: the resource was not discovered in this session"},
		{"web-1", "", "resource 'web-1' was not discovered in this session"},
		{"", "restart", "action 'restart' names no resource discovered in this session"},
		{"", "", "the call names no resource discovered in this session"},
	} {
		r := StrictResolution(tc.id, tc.action)
		if r.OK || r.Error == nil || r.Error.Code != response.StrictResolution || !r.Error.Blocked || r.Error.Message != tc.msg {
			t.Errorf("StrictResolution(%q, %q) = %+v", tc.id, tc.action, r.Error)
			continue
		}
		d := r.Error.Details
		if d["resource_id"] != tc.id || d["action"] != tc.action || d["auto_recoverable"] != true ||
			!strings.HasPrefix(d["recovery_hint"].(string), "Discover it first") {
			t.Errorf("details = %v", d)
		}
	}
	b, _ := json.Marshal(StrictResolution("lxc:delly:999", "restart"))
	want := `{"ok":false,"error":{"code":"STRICT_RESOLUTION","message":"action 'restart' on resource 'lxc:delly:999' is blocked: the resource was not discovered in this session","blocked":true,` +
		`"details":{"action":"restart","auto_recoverable":true,"recovery_hint":"Discover it first with a resolve tool (a search or get that returns it), then retry","resource_id":"lxc:delly:999"}}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	// An untrusted id is echoed bounded, cut at a rune boundary.
	long := strings.Repeat("é", 1000)
	id := StrictResolution(long, "x").Error.Details["resource_id"].(string)
	if len(id) > maxEcho+len("…") || !strings.HasSuffix(id, "é…") {
		t.Errorf("echoed id: %d bytes, suffix %q", len(id), id[len(id)-8:])
	}
}
