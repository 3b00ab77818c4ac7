package phantom

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: no input panics; an error names the entry or the file; a set
// that parses detects each of its own patterns (in any case) and survives
// a round trip through its JSON.
func FuzzParse(f *testing.F) {
	f.Add(defaultPatterns)
	f.Add([]byte(`{"patterns": [{"category": "state", "text": "is up"}]}`))
	f.Add([]byte(`{"patterns": [{"category": "fake_tool", "text": "İ("}, {"category": "metrics", "text": "ǅ"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			if d != nil || !strings.HasPrefix(err.Error(), "patterns") && !strings.HasPrefix(err.Error(), "phantom patterns: ") {
				t.Fatalf("error %q does not name the entry or the file", err)
			}
			return
		}
		ps := d.Patterns()
		for _, p := range ps {
			if _, ok := d.Detect(p.Text); !ok {
				t.Fatalf("pattern %q does not detect itself", p.Text)
			}
			if _, ok := d.Detect(strings.ToUpper(p.Text)); !ok && utf8.ValidString(p.Text) && isASCII(p.Text) {
				t.Fatalf("pattern %q does not detect its upper case", p.Text)
			}
		}
		b, err := json.Marshal(map[string]any{"patterns": ps})
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(b)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if got := again.Patterns(); len(got) != len(ps) {
			t.Fatalf("round trip: %d patterns, want %d", len(got), len(ps))
		}
	})
}

// FuzzDetect: Detect agrees with the seed's definition (lower-case the
// answer, look for each lower-case pattern), ignores ASCII case, and a
// tool-name match is at a word start.
func FuzzDetect(f *testing.F) {
	for _, p := range seedPatterns {
		f.Add("So: " + strings.ToUpper(p.Text) + " 42")
	}
	f.Add("spread(x) then read(y)")
	f.Add("Which host do you mean?")
	f.Add("İ")
	d := Default()
	tools := Default().WithToolNames([]string{"read", "pulse_control"})
	f.Fuzz(func(t *testing.T, text string) {
		m, ok := d.Detect(text)
		lower := strings.ToLower(text)
		want := false
		for _, p := range seedPatterns {
			if strings.Contains(lower, strings.ToLower(p.Text)) {
				want = true
				break
			}
		}
		if ok != want {
			t.Fatalf("Detect(%q) = %v, %v; the seed's check says %v", text, m, ok, want)
		}
		if ok && !strings.Contains(lower, strings.ToLower(m.Pattern)) {
			t.Fatalf("Detect(%q) matched %q, which it does not hold", text, m.Pattern)
		}
		if isASCII(text) {
			m2, ok2 := d.Detect(strings.ToUpper(text))
			if m2 != m || ok2 != ok {
				t.Fatalf("case changes the result: %v, %v vs %v, %v", m, ok, m2, ok2)
			}
		}
		if tm, ok := tools.Detect(text); ok && !strings.Contains(lower, strings.ToLower(tm.Pattern)) {
			t.Fatalf("tool detector matched %q in %q", tm.Pattern, text)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
