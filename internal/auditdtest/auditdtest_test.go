package auditdtest_test

import (
	"context"
	"net"
	"testing"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
)

// A daemon serves HTTP and its socket, and comes back after Stop on the
// same URL, socket and database.
func TestRestart(t *testing.T) {
	d := auditdtest.Start(t, auditdtest.Options{Config: func(c *auditd.Config) { c.VerifyOnStart = false }})
	c, err := client.New(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ev := audit.Event{EventType: audit.TypeToolExecution, Agent: "a", ActionClass: audit.ActionRead, Tool: &audit.Tool{Name: "ls"}}
	if _, err := c.Append(ctx, ev); err != nil {
		t.Fatal(err)
	}
	url, sock := d.URL, d.Socket
	d.Stop()
	d.Stop() // a second Stop does nothing
	if _, err := c.Health(ctx); err == nil {
		t.Fatal("a stopped auditd answers")
	}
	d.Start()
	if d.URL != url || d.Socket != sock {
		t.Errorf("restarted on %s %s, want %s %s", d.URL, d.Socket, url, sock)
	}
	h, err := c.Health(ctx)
	if err != nil || h.HeadSeq != 1 {
		t.Fatalf("after the restart: %+v, %v", h, err)
	}
	conn, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatalf("the stream socket: %v", err)
	}
	conn.Close()
}

// The policy helpers require approval, with the quorum asked for.
func TestRequireApproval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      *auditd.Policy
		res    audit.Resource
		quorum int
	}{
		{"everything", auditdtest.RequireApproval(t), audit.Resource{Type: "kubernetes", Name: "web"}, 1},
		{"quorum, its resource", auditdtest.RequireQuorum(t, "database", "prod-db", 3), audit.Resource{Type: "database", Name: "prod-db"}, 3},
		{"quorum, another resource", auditdtest.RequireQuorum(t, "database", "prod-db", 3), audit.Resource{Type: "database", Name: "other-db"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := auditdtest.Start(t, auditdtest.Options{Policy: tc.p, Config: func(c *auditd.Config) { c.VerifyOnStart = false }})
			c, err := client.New(d.URL, client.WithUser("agent-7"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.RequestApproval(context.Background(), approval.Input{Resource: tc.res, Action: "write"})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != approval.Pending || r.Quorum != tc.quorum || r.RequestedBy != "agent-7" {
				t.Errorf("request %+v", r)
			}
		})
	}
}
