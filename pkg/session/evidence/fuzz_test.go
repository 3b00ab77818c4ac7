package evidence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheck: no answer panics; the verdict is the same twice; a rejection
// is one of Check's two buckets with a short, non-empty detail; an accepted
// answer has exactly one Evidence line; and an answer accepted against a
// session stays accepted against one that read more files and issued more
// receipts, unless it makes an absence claim (more content can contradict
// one).
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob("testdata/fuzz/answers/*.txt")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("Evidence: \"The door was locked.\" (Story/SCN-01.md:L2)")
	f.Add("**Evidence:** Story/SCN-outline.md:L2; no Ilse (checked scenes 1–3); tool: rcpt_00112233aabbccdd")
	f.Add("__Evidence:__ “twenty-two; Ilse” Canon.md#L2 rcpt_")
	f.Add("Evidence: request access to a.md\nEvidence:")
	more := session{
		files:    map[string]string{"a.md": "x", "Story/SCN-02.md": "The door was open."},
		receipts: map[string]bool{"rcpt_ffffffffffffffff": true},
		outputs:  src.outputs,
	}
	for k, v := range src.files {
		more.files[k] = v
	}
	for k := range src.receipts {
		more.receipts[k] = true
	}
	f.Fuzz(func(t *testing.T, answer string) {
		got := Check(answer, src)
		again := Check(answer, src)
		if (got == nil) != (again == nil) || got != nil && *got != *again {
			t.Fatalf("two verdicts: %v, %v", got, again)
		}
		if got != nil {
			if got.Bucket != EvidenceInvalid && got.Bucket != QuoteNotFound {
				t.Fatalf("bucket %q", got.Bucket)
			}
			if got.Detail == "" || len(got.Detail) > 300 || !utf8.ValidString(got.Detail) {
				t.Fatalf("detail %q", got.Detail)
			}
			return
		}
		if _, n := evidenceLine(answer); n != 1 {
			t.Fatalf("accepted with %d Evidence lines", n)
		}
		if r := Check(answer, more); r != nil && !strings.Contains(r.Detail, "contradicted") {
			t.Fatalf("accepted, then rejected with more sources: %+v", *r)
		}
	})
}
