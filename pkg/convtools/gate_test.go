package convtools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/session/response"
)

// workdirPolicy lets commands in a conversation's directory write, and
// denies destructive ones.
const workdirPolicy = `version: "1"
default_effect: allow
policies:
  - name: conversations
    resources:
      - type: workdir
    rules:
      - action: [read, write]
        effect: allow
      - action: destructive
        effect: deny
        message: agents do not delete in conversations
`

// TestUnrestrictedBashThroughGate: with auditd, unrestricted bash goes
// through gate run's pipeline in fix mode (B-14c: still subject to
// policy): a write runs and gets a receipt, a destructive command is
// refused by the policy and does not run.
func TestUnrestrictedBashThroughGate(t *testing.T) {
	d := auditdtest.Start(t, auditdtest.Options{
		Policy: auditdtest.LoadPolicy(t, workdirPolicy, ""),
		Config: func(c *auditd.Config) { c.VerifyOnStart = false },
	})
	c, err := client.New(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "keep.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Client: c, Spool: t.TempDir()}
	ctx := context.Background()

	res := r.Run(ctx, bashCall(cwd, "echo governed > out.txt && cat out.txt", false))
	t.Logf("write: %+v", res)
	if !res.OK || res.Output != "governed\n" || res.Receipt == "" {
		t.Fatalf("result %+v, want the write run with a receipt", res)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "out.txt")); string(b) != "governed\n" {
		t.Errorf("out.txt = %q", b)
	}

	res = r.Run(ctx, bashCall(cwd, "rm -rf keep.txt", false))
	t.Logf("destructive: %+v", res)
	if res.OK || res.Code != response.PolicyBlocked || !strings.Contains(res.Error, "policy denied") {
		t.Errorf("result %+v, want POLICY_BLOCKED", res)
	}
	if _, err := os.Stat(filepath.Join(cwd, "keep.txt")); err != nil {
		t.Errorf("the denied command ran: %v", err)
	}

	// gate kills the process group on cancel too (B-05b): once Run
	// returns, none of it runs.
	g := startGroup(t, r, cwd, false)
	if res := g.cancelled(t); !res.Cancelled {
		t.Errorf("result %+v, want cancelled", res)
	}
	if left := g.left(); len(left) > 0 {
		t.Errorf("processes %v of the group %v still run after Run returned", left, g.pids)
	}

	// Restricted bash is the mode's, not the policy's: isolated even with
	// auditd.
	needIsolated(t)
	res = r.Run(ctx, bashCall(cwd, "echo x > new.txt", true))
	if res.OK || !strings.Contains(res.Sandbox, "tcp denied") {
		t.Errorf("restricted with auditd: %+v", res)
	}
}
