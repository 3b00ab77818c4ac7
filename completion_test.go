package govkit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/internal/cmdtree"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
)

// complete runs `prog __complete args...`, as a shell's completion script
// does, on a fresh command tree, and returns the offered values and the
// directive line (":4" is ShellCompDirectiveNoFileComp).
func complete(t *testing.T, prog string, args ...string) (values []string, directive string) {
	t.Helper()
	streams, _, out, _ := cli.Test()
	if code := cli.Main(prog, cmdtree.Root(streams, prog), streams, append([]string{cobra.ShellCompRequestCmd}, args...)); code != 0 {
		t.Fatalf("%s __complete %q: exit %d", prog, args, code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, l := range lines[:len(lines)-1] {
		if strings.HasPrefix(l, "Completion ended") {
			continue
		}
		v, _, _ := strings.Cut(l, "\t")
		values = append(values, v)
	}
	return values, lines[len(lines)-1]
}

// TestCompletionApprovalIDs: approvals approve|deny|show|wait complete
// the pending approvals' IDs from a real auditd (issue 20), with --url or
// GOVKIT_URL; with auditd gone, nothing and no file names.
func TestCompletionApprovalIDs(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, k := range []string{"GOVKIT_URL", "GOVKIT_AUDIT_URL", "GOVKIT_APPROVALS_URL", "GOVKIT_TOKEN", "GOVKIT_CONFIG"} {
		t.Setenv(k, "")
	}
	d := auditdtest.Start(t, auditdtest.Options{Policy: auditdtest.RequireApproval(t)})
	c, err := client.New(d.URL, client.WithUser("agent-7"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"prod-db", "billing-db"} {
		req, err := c.RequestApproval(context.Background(), approval.Input{
			Resource: audit.Resource{Type: "database", Name: name}, Action: "write", Reason: "fix", TTL: "10m",
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, req.ID)
	}

	for _, verb := range []string{"approve", "deny", "show", "wait"} {
		got, directive := complete(t, "approvals", verb, "--url", d.URL, "")
		if directive != ":4" || !sameSet(got, ids) {
			t.Errorf("approvals %s <Tab>: %q %s, want %q :4", verb, got, directive, ids)
		}
	}
	// A prefix narrows the list; an ID already given ends it.
	if got, _ := complete(t, "approvals", "show", "--url", d.URL, ids[1][:len(ids[1])-1]); !sameSet(got, ids[1:]) {
		t.Errorf("a prefix of %s offers %q", ids[1], got)
	}
	if got, _ := complete(t, "approvals", "show", "--url", d.URL, ids[0], ""); len(got) != 0 {
		t.Errorf("a second argument offers %q", got)
	}
	// The URL from the environment, as a run reads it.
	t.Setenv("GOVKIT_URL", d.URL)
	if got, _ := complete(t, "approvals", "approve", ""); !sameSet(got, ids) {
		t.Errorf("with GOVKIT_URL: %q, want %q", got, ids)
	}
	// An approval decided is no longer offered.
	bob, _ := client.New(d.URL, client.WithUser("bob"))
	if _, err := bob.Deny(context.Background(), ids[0], "no"); err != nil {
		t.Fatal(err)
	}
	if got, _ := complete(t, "approvals", "deny", ""); !sameSet(got, ids[1:]) {
		t.Errorf("after a deny: %q, want %q", got, ids[1:])
	}

	d.Stop()
	if got, directive := complete(t, "approvals", "approve", ""); len(got) != 0 || directive != ":4" {
		t.Errorf("auditd stopped: %q %s, want nothing, :4", got, directive)
	}
}

// TestCompletionFlagValues walks every command of every binary: each
// --output, --mode and --agent flag completes its known values, never
// file names (issue 20).
func TestCompletionFlagValues(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	want := map[string][]string{
		"output": {"text", "json"},
		"mode":   nil, // per command: readonly, fix; restricted, unrestricted
		"agent":  nil, // the coding agents gate and classify speak to
	}
	streams, _, _, _ := cli.Test()
	checked := 0
	for _, root := range cmdtree.Roots(streams) {
		cli.VisitCommands(root, func(c *cobra.Command) {
			c.LocalFlags().VisitAll(func(f *pflag.Flag) {
				values, ok := want[f.Name]
				if !ok || f.Hidden {
					return
				}
				path := strings.Fields(c.CommandPath())
				args := append(path[1:], "--"+f.Name, "")
				got, directive := complete(t, root.Name(), args...)
				if len(got) == 0 || directive != ":4" || (values != nil && !sameSet(got, values)) {
					t.Errorf("%s --%s <Tab>: %q %s", c.CommandPath(), f.Name, got, directive)
				}
				checked++
			})
		})
	}
	t.Logf("%d flags checked", checked)
	if checked < 10 {
		t.Errorf("only %d flags checked", checked)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}
