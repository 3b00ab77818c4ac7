package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/sandbox"
)

func TestMain(m *testing.M) {
	// Sandboxed commands re-execute this test binary as their child.
	sandbox.MaybeChild()
	os.Exit(m.Run())
}

func TestShellText(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"ls", "-la"}, "ls -la"},
		{[]string{"grep", "a b", "f"}, "grep 'a b' f"},
		{[]string{"echo", "$HOME", "`x`"}, `echo '$HOME' '` + "`x`" + `'`},
		{[]string{"printf", "it's"}, `printf "it's"`},
	}
	for _, tt := range tests {
		got, err := shellText(tt.argv)
		if err != nil || got != tt.want {
			t.Errorf("shellText(%q) = %q, %v; want %q", tt.argv, got, err, tt.want)
		}
	}
	if _, err := shellText([]string{"echo", "a\x00b"}); err == nil {
		t.Error("a NUL byte must not become a shell word")
	}
}

func TestStreamBoundsAndHashes(t *testing.T) {
	var out, errOut bytes.Buffer
	b := &budget{left: 10}
	so, se := newStream(&out, b, false), newStream(&errOut, b, false)
	so.Write([]byte("123456"))
	se.Write([]byte("abcdef"))
	so.Write([]byte("789"))
	if out.String() != "123456" || errOut.String() != "abcd" {
		t.Fatalf("shown %q and %q, want the shared budget of 10 bytes", out.String(), errOut.String())
	}
	r := so.report(false)
	sum := sha256.Sum256([]byte("123456789"))
	if r.Bytes != 9 || r.Shown != 6 || !r.Truncated || r.SHA256 != hex.EncodeToString(sum[:]) || r.Excerpt != "123456789" {
		t.Errorf("report %+v", r)
	}
}

func TestStreamHoldsUntilDecided(t *testing.T) {
	var out bytes.Buffer
	s := newStream(&out, &budget{left: 4}, true)
	s.Write([]byte("DELETE 5\n"))
	if out.Len() != 0 {
		t.Fatal("held output reached the caller before the check")
	}
	if text, complete := s.heldText(); text != "DELETE 5\n" || !complete {
		t.Errorf("heldText = %q, %v: the parsers need all of it, not only what may be shown", text, complete)
	}
	s.release()
	if out.String() != "DELE" {
		t.Errorf("released %q, want the 4 bytes --max-output allows", out.String())
	}
	w := newStream(&out, &budget{left: 100}, true)
	w.Write([]byte("secret rows"))
	w.withhold()
	if r := w.report(true); r.Shown != 0 || r.Excerpt != "" || !r.Withheld || r.Bytes != 11 {
		t.Errorf("withheld report %+v", r)
	}
}

func TestExcerptStaysUTF8(t *testing.T) {
	s := newStream(nil, &budget{left: 0}, false)
	s.Write([]byte(strings.Repeat("a", ExcerptBytes-1) + "é"))
	if r := s.report(false); len(r.Excerpt) != ExcerptBytes-1 {
		t.Errorf("excerpt of %d bytes: a rune cut in half must be dropped", len(r.Excerpt))
	}
}

func TestLimitsOfDecidingRule(t *testing.T) {
	tr := policy.DecisionTrace{
		Decision: policy.Decision{PolicyName: "db", RuleIndex: 1},
		PoliciesEvaluated: []policy.PolicyTrace{
			{PolicyName: "other", Rules: []policy.RuleTrace{{Index: 1, Conditions: []policy.ConditionTrace{{Name: "max_rows_affected", Limit: 1}}}}},
			{PolicyName: "db", Rules: []policy.RuleTrace{
				{Index: 0, Conditions: []policy.ConditionTrace{{Name: "max_rows_affected", Limit: 2}}},
				{Index: 1, Conditions: []policy.ConditionTrace{{Name: "max_rows_affected", Limit: 10}, {Name: "max_pods_affected", Limit: 3}}},
			}},
		},
	}
	if l := limitsOf(tr); l.rows != 10 || l.pods != 3 {
		t.Errorf("limits %+v, want the deciding rule's: rows 10, pods 3", l)
	}
	tr.DefaultApplied = true
	if l := limitsOf(tr); l.any() {
		t.Errorf("default effect has no rule, got limits %+v", l)
	}
}

func TestSpoolPutPendingFlushOrder(t *testing.T) {
	s := Spool{Dir: filepath.Join(t.TempDir(), "spool")}
	for _, id := range []string{"evt_b", "evt_a"} {
		if _, err := s.Put(govapi.IncidentInput{IncidentID: id, Type: "governance_unavailable", Severity: "critical", Source: "gate", Message: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(s.Dir, ".incoming-123"), []byte("half"), 0o600)
	files, err := s.Pending()
	if err != nil || len(files) != 2 || filepath.Base(files[0]) != "evt_a.json" {
		t.Fatalf("pending %v, %v: want the two incidents, oldest id first, no temp files", files, err)
	}
	in, err := readSpooled(files[0])
	if err != nil || in.IncidentID != "evt_a" {
		t.Fatalf("readSpooled = %+v, %v", in, err)
	}
	// A file whose name and id disagree is not sent under another id.
	os.Rename(files[0], filepath.Join(s.Dir, "evt_z.json"))
	if _, err := readSpooled(filepath.Join(s.Dir, "evt_z.json")); err == nil {
		t.Error("a renamed spool file must be refused")
	}
	if _, err := s.Put(govapi.IncidentInput{}); err == nil {
		t.Error("an incident without an id cannot be flushed idempotently; Put must refuse it")
	}
}

// TestRunReadonly runs the pipeline through the Go API, without auditd.
func TestRunReadonly(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("hi\n"), 0o644)
	var out, errOut bytes.Buffer
	run := func(req Request) Result {
		t.Helper()
		out.Reset()
		errOut.Reset()
		req.Dir, req.Stdout, req.Stderr, req.Spool = dir, &out, &errOut, t.TempDir()
		res, err := Run(context.Background(), req)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res
	}
	res := run(Request{Argv: []string{"cat", "f"}})
	if res.ExitCode != 0 || out.String() != "hi\n" || !strings.HasPrefix(res.Sandbox, "landlock abi ") {
		t.Errorf("cat: exit %d, out %q, sandbox %q", res.ExitCode, out.String(), res.Sandbox)
	}
	res = run(Request{Shell: "echo x > g"})
	if res.ExitCode != ExitRefused || res.Code != CodeReadOnlyMode || !res.Blocked {
		t.Errorf("write in readonly: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "g")); err == nil {
		t.Error("the refused write ran")
	}
	res = run(Request{Argv: []string{"sleep", "30"}, Timeout: 100 * time.Millisecond})
	if res.ExitCode != ExitTimedOut || res.Status != StatusTimedOut {
		t.Errorf("timeout: %+v", res)
	}
	// The child looks the program up in the command's PATH: not found is
	// gate's failure (127), not an exit status of the command.
	res = run(Request{Argv: []string{"cat", "f"}, Env: []string{"PATH=/nonexistent"}})
	if res.ExitCode != ExitCannotRun || res.Code != CodeExecutionFailed || res.CommandExitCode != nil {
		t.Errorf("program not found in the sandbox: %+v", res)
	}
	if _, err := Run(context.Background(), Request{Mode: Fix, Argv: []string{"true"}}); err == nil {
		t.Error("fix mode without a resource must be a usage error")
	}
}
