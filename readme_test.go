package govkit_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/intent"
)

const (
	codesBegin = "<!-- BEGIN reason-codes: generated from intent.Codes by `go test . -run TestREADMEReasonCodes -update` (make docs) -->\n"
	codesEnd   = "<!-- END reason-codes -->\n"
)

// reasonCodesTable renders intent.Codes as README's Markdown table.
func reasonCodesTable() string {
	var b strings.Builder
	b.WriteString("| code | meaning |\n|---|---|\n")
	for _, c := range intent.Codes {
		fmt.Fprintf(&b, "| `%s` | %s |\n", c.Code, strings.ReplaceAll(c.Meaning, "|", `\|`))
	}
	return b.String()
}

// TestREADMEReasonCodes keeps README's reason-code table equal to
// intent.Codes, so that the documentation of a contract cannot drift from it.
func TestREADMEReasonCodes(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	begin := bytes.Index(readme, []byte(codesBegin))
	end := bytes.Index(readme, []byte(codesEnd))
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the generated reason-code table between\n%s and\n%s", codesBegin, codesEnd)
	}
	start := begin + len(codesBegin)
	got, want := string(readme[start:end]), reasonCodesTable()
	if got == want {
		return
	}
	if *update {
		updated := append(append(append([]byte{}, readme[:start]...), want...), readme[end:]...)
		if err := os.WriteFile("README.md", updated, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, c := range intent.Codes {
		if !strings.Contains(got, "`"+string(c.Code)+"`") {
			t.Errorf("README.md does not document reason code %s", c.Code)
		}
	}
	t.Errorf("README.md's reason-code table differs from intent.Codes; run: go test . -run TestREADMEReasonCodes -update\n got:\n%s\nwant:\n%s", got, want)
}
