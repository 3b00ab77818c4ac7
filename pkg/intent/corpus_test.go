package intent

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// corpusCase is one labelled row of testdata/commands.jsonl (copied from
// the shared corpus) or of our own files beside it (testdata/*.jsonl).
type corpusCase struct {
	Cmd         string `json:"cmd"`
	Expect      string `json:"expect"` // read_only | write | unbounded | not_read_only
	Destructive bool   `json:"destructive"`
	Rewrite     bool   `json:"rewrite"`
	Note        string `json:"note"`
}

func loadCorpus(t testing.TB, path string) []corpusCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/*.jsonl")
	if err != nil || len(files) < 2 {
		t.Fatalf("testdata/*.jsonl: %v, %d files", err, len(files))
	}
	for _, file := range files {
		for _, tc := range loadCorpus(t, file) {
			t.Run(tc.Cmd, func(t *testing.T) { checkCase(t, tc) })
		}
	}
}

func checkCase(t *testing.T, tc corpusCase) {
	t.Helper()
	r := Classify(tc.Cmd)
	v := r.Verdict()
	ok := false
	switch tc.Expect {
	case "read_only":
		ok = v == VerdictReadOnly
	case "write":
		ok = v == VerdictWrite
	case "unbounded":
		ok = v == VerdictUnbounded
	case "not_read_only":
		ok = v == VerdictWrite || v == VerdictUnbounded
	default:
		t.Fatalf("unknown expectation %q", tc.Expect)
	}
	if !ok {
		t.Errorf("%q: verdict %d, want %s\n%+v", tc.Cmd, v, tc.Expect, r)
	}
	if tc.Destructive && r.ActionClass != ActionDestructive {
		t.Errorf("%q: action_class %s, want destructive\n%+v", tc.Cmd, r.ActionClass, r)
	}
	if tc.Rewrite {
		if r.SuggestedRewrite == "" || !r.AutoRecoverable {
			t.Errorf("%q: no rewrite\n%+v", tc.Cmd, r)
		} else if rr := Classify(r.SuggestedRewrite); rr.Verdict() != VerdictReadOnly {
			t.Errorf("%q: rewrite %q is not read-only and bounded: %+v", tc.Cmd, r.SuggestedRewrite, rr)
		}
	}
	// Invariants that hold for every result.
	if r.Intent == WriteOrUnknown && r.Risk == RiskReadOnly {
		t.Errorf("%q: write with risk read_only", tc.Cmd)
	}
	if r.Intent != WriteOrUnknown && (r.Risk != RiskReadOnly || r.ActionClass != ActionRead) {
		t.Errorf("%q: read-only with risk %s / action %s", tc.Cmd, r.Risk, r.ActionClass)
	}
	if !r.Bounded && r.Interactive == NotInteractive {
		t.Errorf("%q: unbounded without a category", tc.Cmd)
	}
}
