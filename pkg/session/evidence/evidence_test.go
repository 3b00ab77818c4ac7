package evidence

import (
	"strings"
	"testing"
)

// session is a fake Sources: what a session read and the receipts it
// issued.
type session struct {
	files    map[string]string
	receipts map[string]bool
	outputs  []string // receipted tool results
}

func (s session) Content(path string) (string, bool) { c, ok := s.files[path]; return c, ok }
func (s session) HasReceipt(id string) bool          { return s.receipts[id] }
func (s session) AnyContent(q string) bool {
	for _, o := range s.outputs {
		if strings.Contains(o, q) {
			return true
		}
	}
	return false
}

var src = session{
	files: map[string]string{
		"Story/SCN-01.md":      "# Scene 1\nThe door was locked.\nMara waited by the well.\n",
		"Story/SCN-outline.md": "1. Arrival\n2. The well\n3. Departure\n",
		"Canon.md":             "Mara is twenty-two.\nMara is twenty-two; Ilse is older.\n",
	},
	receipts: map[string]bool{"rcpt_00112233aabbccdd": true},
	outputs:  []string{"found 3 files: Story/SCN-01.md, Story/SCN-outline.md, Canon.md"},
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		bucket       string // "" accepted
		detail       string // a part of the detail
	}{
		// G-21: exactly one line, three label forms (acceptance test 2).
		{"plain label", "Mara waits.\nEvidence: \"Mara waited by the well.\" (Story/SCN-01.md)", "", ""},
		{"bold label", "Mara waits.\n**Evidence:** \"Mara waited by the well.\" (Story/SCN-01.md)", "", ""},
		{"underscore label", "Mara waits.\n__Evidence:__ \"Mara waited by the well.\" (Story/SCN-01.md)", "", ""},
		{"label case", "EVIDENCE: \"The door was locked.\" Story/SCN-01.md", "", ""},
		{"list marker", "- Evidence: \"The door was locked.\" Story/SCN-01.md", "", ""},
		{"crlf", "Mara waits.\r\nEvidence: \"The door was locked.\" Story/SCN-01.md\r\n", "", ""},
		{"no line", "Mara waits by the well.", EvidenceInvalid, "no Evidence line"},
		{"label mid-line", "My Evidence: \"The door was locked.\" Story/SCN-01.md", EvidenceInvalid, "no Evidence line"},
		{"bold outside colon", "**Evidence**: \"The door was locked.\" Story/SCN-01.md", EvidenceInvalid, "no Evidence line"},
		{"two lines", "Evidence: \"The door was locked.\" Story/SCN-01.md\nEvidence: Story/SCN-outline.md:L2 is the well", EvidenceInvalid, "2 Evidence lines"},
		{"empty", "Mara waits.\nEvidence:   ", EvidenceInvalid, "empty"},
		{"only separators", "Evidence: ; ;", EvidenceInvalid, "no claim"},

		// G-22: content claims quote verbatim (acceptance test 1).
		{"quote not in file", "Evidence: \"The door was open.\" (Story/SCN-01.md)", QuoteNotFound, `"The door was open." is not in "Story/SCN-01.md"`},
		{"quote case differs", "Evidence: \"the door was locked.\" (Story/SCN-01.md)", QuoteNotFound, ""},
		{"quote in another file", "Evidence: \"Mara is twenty-two.\" (Story/SCN-01.md)", QuoteNotFound, ""},
		{"quote in one of two files", "Evidence: \"Mara is twenty-two.\" (Story/SCN-01.md, Canon.md)", "", ""},
		{"curly quotes", "Evidence: “The door was locked.” — Story/SCN-01.md:L2", "", ""},
		{"two quotes", "Evidence: \"The door\" and \"the well\" in Story/SCN-01.md", "", ""},
		{"second quote missing", "Evidence: \"The door\" and \"the sea\" in Story/SCN-01.md", QuoteNotFound, `"the sea"`},
		{"quoted path cites", "Evidence: \"The door was locked.\" in \"Story/SCN-01.md\"", "", ""},
		{"quote cites no file", "Evidence: \"The door was locked.\"", EvidenceInvalid, "cites no file"},
		{"unread file", "Evidence: \"The door was locked.\" (Story/SCN-02.md)", EvidenceInvalid, `cites "Story/SCN-02.md", which this session did not read`},
		{"empty quote", "Evidence: \"\" (Story/SCN-01.md)", EvidenceInvalid, "empty quote"},
		{"unterminated", "Evidence: \"The door was locked. (Story/SCN-01.md)", EvidenceInvalid, "unterminated quote"},
		{"quote from tool output", "Evidence: \"found 3 files\" (receipt rcpt_00112233aabbccdd)", "", ""},
		{"quote not in tool output", "Evidence: \"found 4 files\" (receipt rcpt_00112233aabbccdd)", QuoteNotFound, "tool result"},
		{"explicit content without quote", "Evidence: content: Story/SCN-01.md:L2 says the door is locked", EvidenceInvalid, "direct quote"},

		// G-23: structural claims need a location (acceptance test 3).
		{"structural bare", "Evidence: the outline file lists three scenes in Story/SCN-outline.md", EvidenceInvalid, "line, section or outline"},
		{"structural outline entry", "Evidence: outline entry 2 of Story/SCN-outline.md is the well", "", ""},
		{"structural outline item", "Evidence: Story/SCN-outline.md, outline item Arrival, comes first", "", ""},
		{"structural no location", "Evidence: Story/SCN-01.md opens with the door scene", EvidenceInvalid, "line, section or outline"},
		{"structural path line", "Evidence: Story/SCN-01.md:L2 opens with the door", "", ""},
		{"structural path range", "Evidence: Story/SCN-01.md:2-3 sets the scene", "", ""},
		{"structural hash line", "Evidence: Story/SCN-01.md#L2 sets the scene", "", ""},
		{"structural line word", "Evidence: line 2 of Story/SCN-01.md sets the scene", "", ""},
		{"structural L word", "Evidence: Story/SCN-01.md, L2, sets the scene", "", ""},
		{"structural section", "Evidence: section Arrival of Story/SCN-outline.md comes first", "", ""},
		{"structural section sign", "Evidence: §2 of Story/SCN-outline.md is the well", "", ""},
		{"structural heading", "Evidence: heading \"Scene 1\" in Story/SCN-01.md", "", ""},
		{"structural line without number", "Evidence: the first line of Story/SCN-01.md is a heading", EvidenceInvalid, "line, section or outline"},
		{"structural nothing", "Evidence: trust me", EvidenceInvalid, "line, section or outline"},
		{"none is not evidence", "Evidence: none", EvidenceInvalid, "absence claim needs an explicit scope"},
		{"explicit structural quote", "Evidence: structural: \"Scene 1\" opens Story/SCN-01.md", EvidenceInvalid, "line, section or outline"},
		{"e.g. is not a file", "Evidence: Story/SCN-01.md:L2, e.g. the door", "", ""},
		{"version is not a file", "Evidence: v0.3 of Story/SCN-outline.md:L1", "", ""},
		{"url is not a file", "Evidence: https://example.com/a.md section 2", "", ""},

		// G-23: absence claims need an explicit scope.
		{"absence no scope", "Evidence: Ilse does not appear", EvidenceInvalid, "explicit scope"},
		{"absence no word", "Evidence: no mention of Ilse", EvidenceInvalid, "explicit scope"},
		{"absence checked", "Evidence: no mention of Ilse (checked scenes 1–4)", "", ""},
		{"absence file", "Evidence: \"Ilse\" not found in Story/SCN-01.md", "", ""},
		{"absence contradicted", "Evidence: no \"Mara\" in Story/SCN-01.md", EvidenceInvalid, "contradicted"},
		{"absence contraction", "Evidence: the outline doesn’t name Ilse (checked Story/SCN-outline.md)", "", ""},
		{"absence receipt", "Evidence: no matching issues (receipt rcpt_00112233aabbccdd)", "", ""},
		{"absence unread scope", "Evidence: no Ilse in Story/SCN-09.md", EvidenceInvalid, "did not read"},
		{"explicit absence", "Evidence: absence: Ilse (checked all scenes)", "", ""},

		// G-24, G-19: tool use needs a receipt this session issued.
		{"tool with receipt", "Evidence: file_locator found the outline (receipt rcpt_00112233aabbccdd)", "", ""},
		{"receipt word id", "Evidence: file_locator found the outline (receipt_id=rcpt_00112233aabbccdd)", "", ""},
		{"tool without receipt", "Evidence: the file_locator tool found the outline", EvidenceInvalid, "receipt id"},
		{"executed without receipt", "Evidence: executed canon_checker, all consistent", EvidenceInvalid, "receipt id"},
		{"unknown receipt", "Evidence: the tool found it (rcpt_ffffffffffffffff)", EvidenceInvalid, `"rcpt_ffffffffffffffff" was not issued`},
		{"model-made receipt id", "Evidence: the tool found it (receipt_id: 12345)", EvidenceInvalid, "no receipt id issued"},
		{"malformed receipt id", "Evidence: Story/SCN-01.md:L2 (rcpt_xyz)", EvidenceInvalid, `"rcpt_xyz" was not issued`},
		{"upper-case receipt id", "Evidence: tool: rcpt_00112233AABBCCDD", EvidenceInvalid, "was not issued"},
		{"receipt on a content claim", "Evidence: \"The door was locked.\" (Story/SCN-01.md, rcpt_00112233aabbccdd)", "", ""},
		{"bad receipt on a content claim", "Evidence: \"The door was locked.\" (Story/SCN-01.md, rcpt_0011223344556677)", EvidenceInvalid, "was not issued"},

		// Several claims: each must hold.
		{"claims all good", "Evidence: \"The door was locked.\" (Story/SCN-01.md); Story/SCN-outline.md:L2 is the well; no Ilse (checked scenes 1–3)", "", ""},
		{"claims one bad", "Evidence: \"The door was locked.\" (Story/SCN-01.md); the well comes second", EvidenceInvalid, "line, section or outline"},
		{"newline in quote", "Evidence: \"Scene 1\nThe\" (Story/SCN-01.md)", EvidenceInvalid, "unterminated"},
		{"semicolon in quote", "Evidence: \"twenty-two; Ilse\" (Canon.md)", "", ""},
		{"request access", "I cannot tell yet.\nEvidence: request access to Story/SCN-05.md", "", ""},
		{"long detail", "Evidence: \"" + strings.Repeat("x", 500) + "\" (Story/SCN-01.md)", QuoteNotFound, "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.answer, src)
			if tc.bucket == "" {
				if got != nil {
					t.Fatalf("rejected: %+v", *got)
				}
				return
			}
			if got == nil {
				t.Fatalf("accepted, want %s", tc.bucket)
			}
			if got.Bucket != tc.bucket || !strings.Contains(got.Detail, tc.detail) {
				t.Errorf("got %+v, want %s with %q", *got, tc.bucket, tc.detail)
			}
			if len(got.Detail) > 200 {
				t.Errorf("detail of %d bytes", len(got.Detail))
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	answer := "Mara waits by the well, as the outline says.\n**Evidence:** \"Mara waited by the well.\" (Story/SCN-01.md:L3); Story/SCN-outline.md:L2 is the well (receipt rcpt_00112233aabbccdd)"
	b.ReportAllocs()
	for b.Loop() {
		if r := Check(answer, src); r != nil {
			b.Fatal(*r)
		}
	}
}
