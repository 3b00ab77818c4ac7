package approvals

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
)

// isolate keeps the machine's config file and GOVKIT_* variables out of a
// test.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, k := range []string{"GOVKIT_CONFIG", "GOVKIT_AUDIT_URL", "GOVKIT_TOKEN", "GOVKIT_OUTPUT"} {
		t.Setenv(k, "")
	}
}

// parse runs argv through cli.Main on a root that has only the
// subcommand add builds, with runF capturing the options.
func parse[T any](t *testing.T, add func(*Options, func(T) error) *cobra.Command, args ...string) (got T, ran bool, code int, stderr string) {
	t.Helper()
	streams, _, _, errOut := cli.Test()
	opts := &Options{IO: streams, Now: time.Now, User: func() string { return "alice" }}
	root := newCmdRoot(opts)
	root.AddCommand(add(opts, func(o T) error { got, ran = o, true; return nil }))
	code = cli.Main("approvals", root, streams, args)
	return got, ran, code, errOut.String()
}

func TestRequestFlags(t *testing.T) {
	isolate(t)
	o, ran, code, stderr := parse(t, newCmdRequest, "request",
		"--resource", "database:prod-db:replica", "--action", "write", "--reason", "fix orders",
		"--tool", "psql", "--command", "psql -f fix.sql", "--tag", "production", "--tag", "pci,eu",
		"--ttl", "15m", "--wait", "30s")
	if !ran || code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if o.resType != "database" || o.resName != "prod-db:replica" || o.Action != "write" || o.Reason != "fix orders" ||
		o.Tool != "psql" || o.RawCommand != "psql -f fix.sql" || strings.Join(o.Tags, "|") != "production|pci|eu" ||
		o.TTL != 15*time.Minute || o.Wait != 30*time.Second {
		t.Fatalf("parsed %+v", o)
	}
	if o.URL != client.DefaultURL {
		t.Errorf("default --url %q", o.URL)
	}

	o, _, code, _ = parse(t, newCmdRequest, "request", "--resource", "k8s:web", "--action", "read")
	if code != 0 || o.TTL != 0 || o.Wait != 0 {
		t.Fatalf("defaults: exit %d, %+v", code, o)
	}
}

func TestRequestValidation(t *testing.T) {
	isolate(t)
	base := []string{"request", "--resource", "database:prod-db", "--action", "write"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no resource", []string{"request", "--action", "write"}, []string{
			"approvals: error: --resource is required\n", "approvals: hint: pass --resource TYPE:NAME"}},
		{"resource without type", []string{"request", "--resource", "prod-db", "--action", "write"}, []string{
			"approvals: error: --resource prod-db is not TYPE:NAME\n", "hint: pass --resource TYPE:NAME, e.g. --resource database:prod-db"}},
		{"resource without name", []string{"request", "--resource", "database:", "--action", "write"}, []string{
			"--resource database: is not TYPE:NAME"}},
		{"no action", []string{"request", "--resource", "database:prod-db"}, []string{
			"approvals: error: --action is required\n", "hint: pass --action read, write, destructive"}},
		{"bad action", []string{"request", "--resource", "database:prod-db", "--action", "drop"}, []string{
			"--action drop is not one of read, write, destructive"}},
		// The quorum comes from the policy (DESIGN §11), never from the requester.
		{"quorum", append(base, "--quorum", "2"), []string{"unknown flag: --quorum"}},
		{"ttl too short", append(base, "--ttl", "500ms"), []string{"--ttl 500ms is not between 1s and 168h0m0s"}},
		{"negative wait", append(base, "--wait", "-1s"), []string{"--wait -1s is negative"}},
		{"bad wait", append(base, "--wait", "soon"), []string{`invalid argument "soon" for "--wait"`}},
		{"argument", append(base, "extra"), []string{`unknown command "extra"`}},
		{"bad output", append(base, "-o", "yaml"), []string{"output format must be text or json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ran, code, stderr := parse(t, newCmdRequest, tc.args...)
			if ran || code != 3 {
				t.Fatalf("ran %v, exit %d: %s", ran, code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestDecideAndShowArgs(t *testing.T) {
	isolate(t)
	deny := func(o *Options, runF func(*DecideOptions) error) *cobra.Command {
		return newCmdDecide(o, verbDeny, runF)
	}
	approve := func(o *Options, runF func(*DecideOptions) error) *cobra.Command {
		return newCmdDecide(o, verbApprove, runF)
	}

	o, ran, code, stderr := parse(t, deny, "deny", "evt_1", "--reason", "not now")
	if !ran || code != 0 || o.ID != "evt_1" || o.Reason != "not now" || o.Verb != verbDeny {
		t.Fatalf("deny: exit %d, %+v: %s", code, o, stderr)
	}
	o, ran, code, _ = parse(t, approve, "approve", "evt_1")
	if !ran || code != 0 || o.Reason != "" || o.Verb != verbApprove {
		t.Fatalf("approve: exit %d, %+v", code, o)
	}

	for _, tc := range []struct {
		name string
		run  func() (bool, int, string)
		want []string
	}{
		{"deny without reason", func() (bool, int, string) {
			_, ran, code, stderr := parse(t, deny, "deny", "evt_1")
			return ran, code, stderr
		}, []string{"approvals: error: deny needs a reason\n", "approvals: hint: pass --reason TEXT: the requester reads it (approvals deny evt_1 --reason TEXT)"}},
		{"deny with a blank reason", func() (bool, int, string) {
			_, ran, code, stderr := parse(t, deny, "deny", "evt_1", "--reason", "  ")
			return ran, code, stderr
		}, []string{"deny needs a reason"}},
		{"approve without ID", func() (bool, int, string) {
			_, ran, code, stderr := parse(t, approve, "approve")
			return ran, code, stderr
		}, []string{"approvals: error: approve needs the ID of an approval request\n", "hint: 'approvals list --pending' shows the IDs"}},
		{"approve with an unquoted reason", func() (bool, int, string) {
			_, ran, code, stderr := parse(t, approve, "approve", "evt_1", "--reason", "looks", "fine")
			return ran, code, stderr
		}, []string{"approve takes one ID, got 2 arguments", `quote a reason: --reason "two words"`}},
		{"show without ID", func() (bool, int, string) {
			_, ran, code, stderr := parse(t, newCmdShow, "show")
			return ran, code, stderr
		}, []string{"show needs the ID of an approval request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran, code, stderr := tc.run()
			if ran || code != 3 {
				t.Fatalf("ran %v, exit %d: %s", ran, code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestListFlags(t *testing.T) {
	isolate(t)
	o, ran, code, _ := parse(t, newCmdList, "list", "--status", "denied", "--limit", "20")
	if !ran || code != 0 || o.Status != "denied" || o.Limit != 20 || o.Pending {
		t.Fatalf("exit %d, %+v", code, o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "--status", "open"}, `--status "open" is not pending, approved, denied, expired, cancelled or consumed
approvals: hint: pass --status pending, approved, denied, expired, cancelled or consumed`},
		{[]string{"list", "--status", "consumed"}, ""},
		{[]string{"list", "--pending", "--status", "denied"}, "--pending and --status denied cannot be used together"},
		{[]string{"list", "--limit", "5000"}, "--limit 5000 is not between 1 and 1000"},
	} {
		_, ran, code, stderr := parse(t, newCmdList, tc.args...)
		if tc.want == "" {
			if !ran || code != 0 {
				t.Errorf("%v: exit %d: %s", tc.args, code, stderr)
			}
			continue
		}
		if ran || code != 3 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: ran %v, exit %d: %s", tc.args, ran, code, stderr)
		}
	}
	if _, ran, code, _ := parse(t, newCmdList, "list", "--pending", "--status", "pending"); !ran || code != 0 {
		t.Errorf("--pending --status pending: exit %d", code)
	}
}

// --url, --token and -o come from flags (anywhere on the line), then
// GOVKIT_AUDIT_URL, GOVKIT_TOKEN and GOVKIT_OUTPUT, then a config file.
func TestCommonFlags(t *testing.T) {
	isolate(t)
	o, _, code, _ := parse(t, newCmdList, "list")
	if code != 0 || o.URL != client.DefaultURL || o.Token != "" || o.Output != cli.FormatAuto || o.urlFromFlag != "" {
		t.Fatalf("defaults: exit %d, %+v", code, o.Options)
	}
	t.Setenv("GOVKIT_AUDIT_URL", "http://127.0.0.1:7000")
	t.Setenv("GOVKIT_TOKEN", "tok-env")
	t.Setenv("GOVKIT_OUTPUT", "json")
	o, _, code, _ = parse(t, newCmdList, "list")
	if code != 0 || o.URL != "http://127.0.0.1:7000" || o.Token != "tok-env" || o.Output != cli.FormatJSON || o.urlFromFlag != "" {
		t.Fatalf("environment: exit %d, %+v", code, o.Options)
	}
	o, _, code, _ = parse(t, newCmdList, "--url", "http://127.0.0.1:8000", "list", "--token", "tok-flag", "-o", "text")
	if code != 0 || o.URL != "http://127.0.0.1:8000" || o.Token != "tok-flag" || o.Output != cli.FormatText ||
		o.urlFromFlag != "http://127.0.0.1:8000" {
		t.Fatalf("flags: exit %d, %+v", code, o.Options)
	}
	if got := o.command("approve evt_1"); got != "approvals approve evt_1 --url http://127.0.0.1:8000" {
		t.Errorf("command: %q", got)
	}
}

func TestRelativeTimes(t *testing.T) {
	now := time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)
	r := approval.Request{Status: approval.Pending, CreatedAt: now.Add(-3 * time.Minute), ExpiresAt: now.Add(2 * time.Minute)}
	if got := ago(r.CreatedAt, now); got != "3m ago" {
		t.Errorf("ago: %q", got)
	}
	if got := ago(now.Add(time.Second), now); got != "just now" {
		t.Errorf("ago of a time ahead of the clock: %q", got)
	}
	if got := expires(r, now); got != "in 2m" {
		t.Errorf("pending: %q", got)
	}
	r.ExpiresAt = now.Add(-time.Minute)
	if got := expires(r, now); got != "expired 1m ago" {
		t.Errorf("pending past expiry: %q", got)
	}
	r.Status = approval.Expired
	if got := expires(r, now); got != "expired 1m ago" {
		t.Errorf("expired: %q", got)
	}
	r.Status = approval.Approved
	if got := expires(r, now); got != "-" {
		t.Errorf("approved: %q", got)
	}
}

// Text from requests is shown so that it cannot drive the terminal
// (termtext.OneLine, line by line).
func TestUntrustedText(t *testing.T) {
	if got := lines("SELECT 1;\n\tDELETE\x07"); len(got) != 2 || got[0] != "SELECT 1;" || got[1] != `"    DELETE\a"` {
		t.Errorf("lines: %q", got)
	}
	if got := flatten("not\nnow  please"); got != "not now please" {
		t.Errorf("flatten: %q", got)
	}
}

func TestChangeLines(t *testing.T) {
	now := time.Date(2026, 3, 9, 12, 1, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	r := approval.Request{
		ID: "evt_1", Status: approval.Pending, RequestedBy: "agent-7", Action: "write",
		Resource: audit.Resource{Type: "database", Name: "prod-db"}, Quorum: 2,
		CreatedAt: now, ExpiresAt: at(5 * time.Minute), Votes: []approval.Vote{},
	}
	check := func(name string, r approval.Request, initial bool, want string) {
		t.Helper()
		if got := changeLine(r, initial, now); got != want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	check("requested", r, false, "12:01:05 requested evt_1 write database:prod-db by agent-7 (quorum 2, expires in 5m)")
	check("initial", r, true, "12:01:05 pending evt_1 write database:prod-db by agent-7 (0 of 2 approvals, expires in 5m)")
	r.Votes = []approval.Vote{{By: "bob", Decision: approval.Approve, At: at(25 * time.Second)}}
	check("voted", r, false, "12:01:30 voted evt_1 write database:prod-db: bob approved (1 of 2; waiting for 1 more)")
	r.Votes = append(r.Votes, approval.Vote{By: "carol", Decision: approval.Approve, At: at(35 * time.Second)})
	r.Status, r.DecidedAt = approval.Approved, &r.Votes[1].At
	check("approved", r, false, "12:01:40 approved evt_1 write database:prod-db by bob, carol (2 of 2)")
	r.Votes = []approval.Vote{{By: "bob", Decision: approval.Deny, Reason: "not\nnow", At: at(35 * time.Second)}}
	r.Status = approval.Denied
	check("denied", r, false, "12:01:40 denied evt_1 write database:prod-db by bob: not now")
	r.Votes, r.Status, r.DecidedAt = []approval.Vote{}, approval.Expired, &r.ExpiresAt
	check("expired", r, false, "12:06:05 expired evt_1 write database:prod-db (0 of 2 approvals)")
}

func TestPolicyLines(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      []string
	}{
		{"none", "", nil},
		{"decision", `{"effect":"require_approval","policy_name":"prod-writes","rule_index":0,"message":"writes to production need a DBA"}`,
			[]string{"require_approval by policy prod-writes, rule 0: writes to production need a DBA"}},
		{"trace", `{"decision":{"effect":"require_approval","policy_name":"prod-writes","rule_index":1},"explanation":"Policy prod-writes matched.\nRule 1 requires approval.\n"}`,
			[]string{"require_approval by policy prod-writes, rule 1", "Policy prod-writes matched.", "Rule 1 requires approval."}},
		{"audit-only deny, approval enforced", `{"decision":{"effect":"deny","enforced_effect":"require_approval","policy_name":"trial","rule_index":0,"approval_quorum":2,"dry_run":true}}`,
			[]string{"require_approval (enforced); audit-only: deny by policy trial, rule 0"}},
		{"unknown shape", `{"verdict":"ask"}`, []string{`{"verdict":"ask"}`}},
	} {
		got := policyLines(json.RawMessage(tc.raw))
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNoCommand(t *testing.T) {
	isolate(t)
	streams, _, out, errOut := cli.Test()
	code := cli.Main("approvals", NewCmdApprovals(streams), streams, nil)
	if code != 3 || out.Len() != 0 || !strings.HasPrefix(errOut.String(), "approvals: error: no command given\n") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestOutageLine(t *testing.T) {
	o := &Options{URL: "http://127.0.0.1:1199"}
	if got := o.outage(&client.Error{StatusCode: 503, Message: "auditd is stopping"}); got != "auditd at http://127.0.0.1:1199 is unavailable (503: auditd is stopping)" {
		t.Errorf("503: %q", got)
	}
}
