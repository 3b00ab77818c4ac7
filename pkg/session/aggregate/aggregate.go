// Package aggregate is seed 004's auto-aggregation: consecutive read outputs
// are de-duplicated and structurally compressed, never summarized, so that the
// same reads always give the same context (seed 004 4) Auto-Aggregation).
package aggregate

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
)

// Output is one read's contribution to the context. Text holds whole lines,
// each ending in "\n", within the aggregator's character budget (bytes).
type Output struct {
	Text string `json:"text"`
	// DedupedLines were delivered earlier in the run and replaced by a
	// marker naming path and range.
	DedupedLines int `json:"deduped_lines"`
	// CompressedLines were folded into a neighbour: extra blank lines, and
	// repeats in a run of three or more identical lines.
	CompressedLines int  `json:"compressed_lines"`
	Truncated       bool `json:"truncated"`
	// ContextBundleID names the set of lines delivered in the run so far:
	// the same set, whatever order it arrived in, has the same id.
	ContextBundleID string `json:"context_bundle_id,omitempty"`
}

// Aggregator holds the current run of consecutive reads of one session. It
// is not safe for concurrent use: the session reducer owns it.
type Aggregator struct {
	maxChars  int
	delivered map[string][]span // per path: sorted, merged, disjoint
}

type span struct{ lo, hi int }

// New starts an aggregator whose outputs carry at most maxChars bytes of
// text each; maxChars ≤ 0 means no limit.
func New(maxChars int) *Aggregator {
	return &Aggregator{maxChars: maxChars, delivered: make(map[string][]span)}
}

// Break ends the run of consecutive reads (a non-read tool call came in
// between): what was delivered before is no longer de-duplicated against.
func (a *Aggregator) Break() { clear(a.delivered) }

// piece is one output line (or a compressed block) and the source lines it
// delivers; a dedup marker delivers none.
type piece struct {
	text   string
	lo, hi int
	fresh  bool
}

// identicalRun is how many equal lines fold into one (seed 004 "structurally
// compressed"); two equal lines stay as they are.
const identicalRun = 3

// Add aggregates the content of a read of path starting at startLine (1 if
// less): lines already delivered in this run become one marker per range,
// runs of blank lines become one, runs of three or more identical lines
// become the line and "(N identical lines)", and the text is cut at a line
// boundary to the budget. Only lines that made it into Text count as
// delivered.
func (a *Aggregator) Add(path string, startLine int, content string) Output {
	var out Output
	startLine = max(startLine, 1)
	lines := splitLines(content)
	have := a.delivered[path]

	pieces := make([]piece, 0, len(lines))
	for i := 0; i < len(lines); {
		n := startLine + i
		if covered(have, n) {
			j := i + 1
			for j < len(lines) && covered(have, startLine+j) {
				j++
			}
			out.DedupedLines += j - i
			pieces = append(pieces, piece{text: marker(path, n, startLine+j-1), lo: n, hi: startLine + j - 1})
			i = j
			continue
		}
		// A run of fresh lines equal to lines[i] (blank counts as equal to blank).
		blank := strings.TrimSpace(lines[i]) == ""
		j := i + 1
		for j < len(lines) && !covered(have, startLine+j) &&
			(blank && strings.TrimSpace(lines[j]) == "" || !blank && lines[j] == lines[i]) {
			j++
		}
		k := j - i
		switch {
		case blank && k > 1:
			out.CompressedLines += k - 1
			pieces = append(pieces, piece{text: "", lo: n, hi: n + k - 1, fresh: true})
		case k >= identicalRun:
			out.CompressedLines += k - 1
			pieces = append(pieces, piece{text: lines[i] + "\n(" + strconv.Itoa(k) + " identical lines)", lo: n, hi: n + k - 1, fresh: true})
		default:
			j = i + 1
			pieces = append(pieces, piece{text: lines[i], lo: n, hi: n, fresh: true})
		}
		i = j
	}

	var b strings.Builder
	size := len(content) + 1
	if a.maxChars > 0 {
		size = min(size, a.maxChars)
	}
	b.Grow(size)
	for _, p := range pieces {
		if a.maxChars > 0 && b.Len()+len(p.text)+1 > a.maxChars {
			out.Truncated = true
			if b.Len() == 0 {
				// Not even one line fits: a cut at a UTF-8 boundary, and the
				// line does not count as delivered.
				b.WriteString(termtext.Cut(p.text, a.maxChars))
			}
			break
		}
		b.WriteString(p.text)
		b.WriteByte('\n')
		if p.fresh {
			have = insert(have, span{p.lo, p.hi})
		}
	}
	if len(have) > 0 {
		a.delivered[path] = have
	}
	out.Text = b.String()
	out.ContextBundleID = a.bundleID()
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func marker(path string, lo, hi int) string {
	r := strconv.Itoa(lo)
	if hi != lo {
		r += "-" + strconv.Itoa(hi)
	}
	return "[" + path + ":" + r + " already shown above]"
}

// covered: binary search over sorted disjoint spans.
func covered(spans []span, n int) bool {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].hi >= n })
	return i < len(spans) && spans[i].lo <= n
}

// insert adds s to sorted disjoint spans, merging touching ones.
func insert(spans []span, s span) []span {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].hi >= s.lo-1 })
	j := i
	for j < len(spans) && spans[j].lo <= s.hi+1 {
		s.lo, s.hi = min(s.lo, spans[j].lo), max(s.hi, spans[j].hi)
		j++
	}
	if i == j {
		spans = append(spans, span{})
		copy(spans[i+1:], spans[i:])
		spans[i] = s
		return spans
	}
	spans[i] = s
	return append(spans[:i+1], spans[j:]...)
}

// bundleID hashes the delivered set, paths sorted: "ctx_" and 12 hex digits
// of SHA-256; "" while nothing was delivered.
func (a *Aggregator) bundleID() string {
	if len(a.delivered) == 0 {
		return ""
	}
	paths := make([]string, 0, len(a.delivered))
	for p := range a.delivered {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	var buf []byte
	for _, p := range paths {
		buf = append(buf[:0], p...)
		buf = append(buf, 0)
		for _, s := range a.delivered[p] {
			buf = strconv.AppendInt(buf, int64(s.lo), 10)
			buf = append(buf, '-')
			buf = strconv.AppendInt(buf, int64(s.hi), 10)
			buf = append(buf, ',')
		}
		buf = append(buf, 0)
		h.Write(buf)
	}
	return "ctx_" + hex.EncodeToString(h.Sum(nil))[:12]
}
