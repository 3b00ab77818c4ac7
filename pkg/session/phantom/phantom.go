// Package phantom detects a final answer that claims tool results the
// turn never fetched (seed 000 Invariant 4, §8 Phantom Detection), from a
// pattern set that is data: embedded, extendable per session.
package phantom

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/termtext"
)

// Categories of seed 000's hasPhantomExecution.
const (
	Metrics    = "metrics"     // concrete values that must come from a tool
	State      = "state"       // claims of infrastructure state
	FakeTool   = "fake_tool"   // tool-call syntax written as prose
	PastAction = "past_action" // past-tense claims of specific actions
)

// SafeMessage replaces a phantom answer: factual, no narrative (seed 000
// §10 "DO NOT: Add Prompts to Error Recovery"), and it tells the user what
// to do.
const SafeMessage = "No tool was called in this turn, so the results this answer described could not be verified and it was withheld. Retry the request so that the data is fetched with a tool call."

// Bounds on configured patterns: detection runs every pattern over every
// phantom-eligible answer, and a session's config is not trusted to be
// small.
const (
	MaxPatterns   = 1000
	MaxPatternLen = 256
)

// Pattern is one phrase whose presence, ignoring case, marks an answer
// without tool calls as a phantom.
type Pattern struct {
	Category string `json:"category"`
	Text     string `json:"text"`
}

// Match names the pattern an answer matched, as declared.
type Match struct {
	Category string `json:"category"`
	Pattern  string `json:"pattern"`
}

// Detector holds a pattern set. It is immutable: With and WithToolNames
// return new detectors.
type Detector struct {
	patterns []pattern
	seen     map[string]bool // lower-cased texts, to drop duplicates
}

type pattern struct {
	Pattern
	lower string
	// word: a tool-name pattern must start a word, so that tool "read"
	// matches "read(" but not "spread(" or "thread(".
	word bool
}

//go:embed patterns.json
var defaultPatterns []byte

var defaultDetector = mustParse(defaultPatterns)

func mustParse(data []byte) *Detector {
	d, err := Parse(data)
	if err != nil {
		panic("phantom: embedded patterns.json: " + err.Error())
	}
	return d
}

// Default is seed 000's pattern set, the four categories (P-09).
func Default() *Detector { return defaultDetector }

// Parse reads a pattern file, {"patterns": [{"category", "text"}, …]}.
// Unknown fields are refused; errors name the entry and field
// ("patterns[3].text: …"). A file must hold at least one pattern: an empty
// set would switch detection off (seed 000 §10 "DO NOT: Remove Phantom
// Detection").
func Parse(data []byte) (*Detector, error) {
	var file struct {
		Patterns []json.RawMessage `json:"patterns"`
	}
	if err := decodeStrict(data, &file); err != nil {
		return nil, fmt.Errorf("phantom patterns: %w", err)
	}
	if len(file.Patterns) == 0 {
		return nil, errors.New("patterns: missing or empty")
	}
	ps := make([]Pattern, len(file.Patterns))
	for i, raw := range file.Patterns {
		if err := decodeStrict(raw, &ps[i]); err != nil {
			return nil, fmt.Errorf("patterns[%d]: %w", i, err)
		}
	}
	d := &Detector{seen: map[string]bool{}}
	if err := d.add(ps, "patterns"); err != nil {
		return nil, err
	}
	return d, nil
}

// decodeStrict decodes exactly one JSON value with no unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// With returns d extended by a session's own patterns
// (session_start.config.phantom_patterns); errors name the entry and
// field ("phantom_patterns[1].category: …"). Duplicates, ignoring case,
// are dropped.
func (d *Detector) With(extra []Pattern) (*Detector, error) {
	n := d.orDefault().clone()
	if err := n.add(extra, "phantom_patterns"); err != nil {
		return nil, err
	}
	return n, nil
}

// WithToolNames returns d extended by a fake_tool pattern "<name>(" per
// registered tool (P-09: the seed's "pulse_query(" made generic), matched
// only at the start of a word. Empty names are skipped.
func (d *Detector) WithToolNames(names []string) *Detector {
	n := d.orDefault().clone()
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for _, name := range slices.Compact(sorted) {
		if name == "" {
			continue
		}
		text := name + "("
		lower := strings.ToLower(text)
		if n.seen[lower] {
			continue
		}
		n.seen[lower] = true
		n.patterns = append(n.patterns, pattern{Pattern: Pattern{Category: FakeTool, Text: text}, lower: lower, word: true})
	}
	return n
}

// orDefault: a nil *Detector is the default set, never no detection
// (seed 000 §10 "DO NOT: Remove Phantom Detection").
func (d *Detector) orDefault() *Detector {
	if d == nil {
		return defaultDetector
	}
	return d
}

func (d *Detector) clone() *Detector {
	n := &Detector{patterns: slices.Clone(d.patterns), seen: make(map[string]bool, len(d.seen))}
	for k := range d.seen {
		n.seen[k] = true
	}
	return n
}

func (d *Detector) add(ps []Pattern, field string) error {
	if len(d.patterns)+len(ps) > MaxPatterns {
		return fmt.Errorf("%s: more than %d patterns", field, MaxPatterns)
	}
	for i, p := range ps {
		at := fmt.Sprintf("%s[%d]", field, i)
		switch p.Category {
		case Metrics, State, FakeTool, PastAction:
		case "":
			return fmt.Errorf("%s.category: missing (one of metrics, state, fake_tool, past_action)", at)
		default:
			return fmt.Errorf("%s.category: %q is not one of metrics, state, fake_tool, past_action", at, clip(p.Category))
		}
		switch {
		case strings.TrimSpace(p.Text) == "":
			// A blank pattern would match every answer.
			return fmt.Errorf("%s.text: empty", at)
		case len(p.Text) > MaxPatternLen:
			return fmt.Errorf("%s.text: longer than %d bytes", at, MaxPatternLen)
		case !utf8.ValidString(p.Text):
			return fmt.Errorf("%s.text: not valid UTF-8", at)
		}
		lower := strings.ToLower(p.Text)
		if d.seen[lower] {
			continue
		}
		d.seen[lower] = true
		d.patterns = append(d.patterns, pattern{Pattern: p, lower: lower})
	}
	return nil
}

// Detect reports the first pattern, in the set's order, that text holds,
// ignoring case as the seed does (it lower-cases the answer).
func (d *Detector) Detect(text string) (Match, bool) {
	d = d.orDefault()
	lower := toLower(text)
	for i := range d.patterns {
		p := &d.patterns[i]
		if p.word && containsWord(lower, p.lower) || !p.word && strings.Contains(lower, p.lower) {
			return Match{Category: p.Category, Pattern: p.Text}, true
		}
	}
	return Match{}, false
}

// Patterns lists the set in detection order.
func (d *Detector) Patterns() []Pattern {
	d = d.orDefault()
	out := make([]Pattern, len(d.patterns))
	for i, p := range d.patterns {
		out[i] = p.Pattern
	}
	return out
}

// containsWord: s holds sub at a position not preceded by a letter, digit
// or underscore.
func containsWord(s, sub string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return false
		}
		i += off
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); i == 0 || !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return true
		}
		off = i + 1
	}
}

// toLower is strings.ToLower without the copy when s is lower-case ASCII.
func toLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// clip bounds an echoed config value in an error.
func clip(s string) string { return termtext.Truncate(s, 64) }
