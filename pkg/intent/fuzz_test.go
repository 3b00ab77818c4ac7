package intent

import (
	"testing"
)

// FuzzClassify: classification never panics, parse errors are always
// write_or_unknown, no input with a control character is ever read-only
// (DESIGN §9), and every result is internally consistent.
func FuzzClassify(f *testing.F) {
	for _, file := range []string{"testdata/commands.jsonl", "testdata/extra.jsonl"} {
		for _, c := range loadCorpus(f, file) {
			f.Add(c.Cmd)
		}
	}
	c := New(Options{})
	f.Fuzz(func(t *testing.T, cmd string) {
		r := c.Classify(cmd)
		if r.HasReason(CodeParseError) && r.Intent != WriteOrUnknown {
			t.Fatalf("parse error but %s", r.Intent)
		}
		if _, bad := badRune(cmd); bad && r.ReadOnly() {
			t.Fatalf("control character but %s", r.Intent)
		}
		if r.Intent == WriteOrUnknown && (r.Risk == RiskReadOnly || r.ActionClass == ActionRead) {
			t.Fatalf("write with risk %s action %s", r.Risk, r.ActionClass)
		}
		if !r.Bounded && r.Interactive == NotInteractive {
			t.Fatalf("unbounded without a category")
		}
		if r.SuggestedRewrite != "" {
			if rr := c.Classify(r.SuggestedRewrite); rr.Verdict() != VerdictReadOnly {
				t.Fatalf("rewrite %q is not read-only and bounded", r.SuggestedRewrite)
			}
		}
		// Prepending a read-only command never launders a write (P-44).
		if r.Verdict() == VerdictWrite {
			if rr := c.Classify("ls\n" + cmd); rr.Verdict() != VerdictWrite {
				t.Fatalf("ls + write is %d", rr.Verdict())
			}
		}
	})
}
