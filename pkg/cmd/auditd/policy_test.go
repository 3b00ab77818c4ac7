package auditd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdproc"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
)

const guardPolicy = `version: "1"
policies:
  - name: prod-db-guard
    resources:
      - type: database
        match: {tags: [production]}
    rules:
      - action: read
        effect: allow
      - action: write
        effect: allow
        conditions:
          require_approval: true
`

const freezePolicy = `version: "1"
default_effect: allow
policies:
  - name: freeze-everything
    resources: [{type: database}]
    rules:
      - action: [read, write, destructive]
        effect: deny
`

const infraDoc = `version: "1"
resources:
  - type: database
    name: prod-db
    tags: [production]
`

// The policy flags and their environment variables (DESIGN §3, seed 003
// "Environment Variables").
func TestPolicyFlagsAndEnvironment(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GOVKIT_POLICY_FILE", "/etc/govkit/policies.yaml")
	t.Setenv("GOVKIT_INFRA_CONFIG", "/etc/govkit/infra.yaml")
	t.Setenv("GOVKIT_POLICY_DRY_RUN", "true")
	t.Setenv("GOVKIT_DEFAULT_EFFECT", "require_approval")
	o, code, stderr := parse(t)
	if code != 0 || o == nil {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if o.PolicyFile != "/etc/govkit/policies.yaml" || o.InfraFile != "/etc/govkit/infra.yaml" || !o.PolicyDryRun || o.DefaultEffect != "require_approval" {
		t.Errorf("options %+v", o)
	}
	o, code, _ = parse(t, "--policy", "p.yaml", "--infra", "i.yaml", "--policy-dry-run=false", "--default-effect", "deny")
	if code != 0 || o.PolicyFile != "p.yaml" || o.InfraFile != "i.yaml" || o.PolicyDryRun || o.DefaultEffect != "deny" {
		t.Errorf("flags do not win: %+v", o)
	}
	_, code, stderr = parse(t, "--default-effect", "maybe")
	if code != 3 || !strings.Contains(stderr, `auditd: error: --default-effect "maybe" is not deny, allow or require_approval`) ||
		!strings.Contains(stderr, "auditd: hint: pass --default-effect deny") {
		t.Errorf("bad --default-effect: exit %d, %q", code, stderr)
	}
}

// A policy or infra file that does not load stops auditd at start with the
// loader's FILE:LINE error and a hint naming the flag, before any
// listener or database is opened.
func TestBadPolicyFileAtStart(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", guardPolicy)
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		policy, infra string
		want          []string
	}{
		{"unknown key", write("bad.yaml", "version: \"1\"\npolicies:\n  - name: x\n    bogus: 1\n"), "",
			[]string{"bad.yaml:4: policies[0].bogus: unknown key", "auditd: hint: fix the file named by --policy (or GOVKIT_POLICY_FILE); govexplain lint --policy " + filepath.Join(dir, "bad.yaml") + " checks it"}},
		{"missing policy", filepath.Join(dir, "missing.yaml"), "",
			[]string{"missing.yaml: no such file or directory", "auditd: hint: check --policy (or GOVKIT_POLICY_FILE)"}},
		// Not regular files (issue 13): refused, not waited on.
		{"fifo policy", fifo, "",
			[]string{"auditd: error: " + fifo + " is a named pipe (FIFO), not a regular file", "auditd: hint: check --policy (or GOVKIT_POLICY_FILE)"}},
		{"directory infra", good, dir,
			[]string{"auditd: error: " + dir + " is a directory, not a regular file", "auditd: hint: check --infra (or GOVKIT_INFRA_CONFIG)"}},
		{"bad infra", good, write("infra.yaml", "resources:\n  - type: database\n"),
			[]string{"infra.yaml:2: resources[0].name: required", "auditd: hint: fix the file named by --infra (or GOVKIT_INFRA_CONFIG)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(dir, "audit.db")
			streams, _, _, errOut := cli.Test()
			cmd := NewCmdAuditd(streams, nil)
			args := []string{"--db", db, "--addr", "127.0.0.1:0", "--policy", tc.policy}
			if tc.infra != "" {
				args = append(args, "--infra", tc.infra)
			}
			code := cli.Main("auditd", cmd, streams, args)
			if code != 3 {
				t.Fatalf("exit %d, want 3: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
			if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the database was touched: %v", err)
			}
		})
	}
}

// The real binary reloads its policy on SIGHUP: a good file replaces the
// policy at once, and recorded decisions keep their trace; a bad file
// keeps the old policy and says so in the log and in the status.
func TestPolicyReloadOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the auditd binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "auditd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/govkit/govkit/cmd/auditd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pol, infra := filepath.Join(dir, "policies.yaml"), filepath.Join(dir, "infra.yaml")
	writeFile(t, pol, guardPolicy)
	writeFile(t, infra, infraDoc)
	p, err := auditdproc.Start(bin, "--db", filepath.Join(dir, "audit.db"), "--addr", "127.0.0.1:0", "--policy", pol, "--infra", infra)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	c, err := client.New(p.URL, client.WithUser("alice"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !strings.Contains(p.Stderr(), "auditd: policy loaded from "+pol+" (1 policy, sha256 ") {
		t.Errorf("start log: %s", p.Stderr())
	}
	st0, err := c.Governance(ctx)
	if err != nil || !st0.Policy.Loaded || st0.Policy.File != pol || len(st0.Policy.SHA256) != 64 {
		t.Fatalf("status: %+v, %v", st0.Policy, err)
	}

	dec, err := c.Decide(ctx, govapi.DecisionRequest{Resource: govapi.Resource{Type: "database", Name: "prod-db"}, Action: "read"})
	if err != nil || dec.Decision.EnforcedEffect != policy.EffectAllow {
		t.Fatalf("decide: %+v, %v", dec.Decision, err)
	}

	hangup := func(wantLog string) {
		t.Helper()
		if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(p.Stderr(), wantLog) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log after SIGHUP:\n%s", wantLog, p.Stderr())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// A good file: in force at once.
	writeFile(t, pol, freezePolicy)
	hangup("auditd: policy reloaded from " + pol + " (1 policy, sha256 ")
	ex, err := c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "read"})
	if err != nil || ex.Decision.EnforcedEffect != policy.EffectDeny || ex.Decision.PolicyName != "freeze-everything" {
		t.Fatalf("after the reload: %+v, %v", ex.Decision, err)
	}
	st1, _ := c.Governance(ctx)
	if st1.Policy.SHA256 == st0.Policy.SHA256 || st1.Policy.ReloadError != "" || st1.Policy.DefaultEffect != "allow" {
		t.Errorf("status after the reload: %+v", st1.Policy)
	}
	// The recorded decision keeps the trace it was made with (H-58).
	old, err := c.ExplainEvent(ctx, dec.Event.EventID)
	if err != nil || old.Decision.EnforcedEffect != policy.EffectAllow || old.Decision.PolicyName != "prod-db-guard" || old.DecisionTrace.Explanation != dec.DecisionTrace.Explanation {
		t.Errorf("retrospective explain after the reload: %+v, %v", old.Decision, err)
	}

	// A bad file: the old one stays, and both the log and the status say so.
	writeFile(t, pol, "version: \"1\"\npolicies:\n  - name: x\n    rules: [{action: read, effect: allow}]\n    resources: [{type: database}]\n    enforcement: sometimes\n")
	hangup("auditd: error: reloading on SIGHUP: " + pol + ":6: policies[0].enforcement")
	if !strings.Contains(p.Stderr(), "keeping the policy loaded from "+pol) {
		t.Errorf("the log does not say the old policy stays:\n%s", p.Stderr())
	}
	st2, _ := c.Governance(ctx)
	if !st2.Policy.Loaded || st2.Policy.SHA256 != st1.Policy.SHA256 || !strings.Contains(st2.Policy.ReloadError, pol+":6: policies[0].enforcement") || st2.Policy.ReloadErrorAt == nil {
		t.Errorf("status after a failed reload: %+v", st2.Policy)
	}
	if ex, err := c.Explain(ctx, govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "read"}); err != nil || ex.Decision.PolicyName != "freeze-everything" {
		t.Errorf("the old policy is not in force: %+v, %v", ex.Decision, err)
	}

	// A FIFO at the path (issue 13): refused at once rather than waited
	// on, and the policy in force stays.
	fifo := pol + ".fifo"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, pol); err != nil {
		t.Fatal(err)
	}
	hangup("auditd: error: reloading on SIGHUP: " + pol + " is a named pipe (FIFO), not a regular file; keeping the policy loaded from " + pol)
	if st, _ := c.Governance(ctx); !st.Policy.Loaded || st.Policy.SHA256 != st1.Policy.SHA256 || !strings.Contains(st.Policy.ReloadError, "named pipe") {
		t.Errorf("status after a FIFO reload: %+v", st.Policy)
	}

	// Fixed again: the error clears.
	writeFile(t, pol, guardPolicy)
	hangup("auditd: policy reloaded from " + pol + " (1 policy, sha256 " + st0.Policy.SHA256)
	if st3, _ := c.Governance(ctx); st3.Policy.ReloadError != "" || st3.Policy.SHA256 != st0.Policy.SHA256 {
		t.Errorf("status after the fix: %+v", st3.Policy)
	}

	if err := p.Stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Stderr())
	}
}

func writeFile(t *testing.T, path, doc string) {
	t.Helper()
	// Written beside and renamed, as editors and config management do: a
	// SIGHUP never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
