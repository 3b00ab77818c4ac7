package approvals

import (
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
)

// --action in any case is the action, as the policy engine matches it
// (issue 20: --action READ was refused); the request carries it in lower
// case.
func TestRequestActionAnyCase(t *testing.T) {
	isolate(t)
	for _, tc := range []struct{ in, want string }{
		{"read", "read"}, {"READ", "read"}, {"Write", "write"}, {"WRITE", "write"}, {"DeStRuCtIvE", "destructive"},
	} {
		o, ran, code, stderr := parse(t, newCmdRequest, "request", "--resource", "database:prod-db", "--action", tc.in)
		if !ran || code != 0 || o.Action != tc.want {
			t.Errorf("--action %s: ran %v, exit %d, action %q, want %q; stderr %q", tc.in, ran, code, o.Action, tc.want, stderr)
		}
	}
	for _, bad := range []string{"REED", "writes", "ＷＲＩＴＥ"} {
		_, ran, code, stderr := parse(t, newCmdRequest, "request", "--resource", "database:prod-db", "--action", bad)
		if ran || code != 3 || !strings.Contains(stderr, "--action "+bad+" is not one of read, write, destructive") {
			t.Errorf("--action %s: ran %v, exit %d, stderr %q", bad, ran, code, stderr)
		}
	}
}

// A request asked for as WRITE binds the write an execution records: its
// action and action_hash are those of "write", so consuming it with the
// hash an enforcement point computes for the write it runs (its
// action_class is always lower case) releases it.
func TestRequestActionAnyCaseReleasesTheAction(t *testing.T) {
	isolate(t)
	url := startAuditd(t, nil)
	r := approvals(t, url, "alice", "request", "--resource", "database:prod-db", "--action", "WRITE",
		"--tool", "psql", "--command", "psql -f fix.sql", "--reason", "fix orders", "-o", "json")
	r.want(t, 0)
	req := r.request(t)
	hash := approval.ActionHash(audit.Resource{Type: "database", Name: "prod-db"}, "write", "psql", "psql -f fix.sql")
	if req.Action != "write" || req.ActionHash != hash {
		t.Fatalf("request action %q hash %s, want write %s", req.Action, req.ActionHash, hash)
	}
	approvals(t, url, "bob", "approve", req.ID).want(t, 0)
	c := approvals(t, url, "alice", "consume", req.ID, "--action-hash", hash, "-o", "json")
	c.want(t, 0)
	if got := c.request(t); got.Status != approval.Consumed {
		t.Errorf("consumed: %+v", got)
	}
}
