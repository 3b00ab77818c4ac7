// Package evidence checks the one Evidence line seed 002 requires of every
// grounded answer, against what the session actually read and the receipts
// it actually issued.
//
// # Grammar
//
// An answer carries exactly one Evidence line (seed 002 "Non-Negotiable
// Rules", G-21): a line that, after leading spaces and an optional list or
// quote marker ("- ", "* ", "> "), begins with one of the labels
//
//	Evidence:    **Evidence:**    __Evidence:__
//
// (the word in any case). None, two or more, or a label with nothing after
// it: evidence_invalid. The rest of the line is one or more claims
// separated by ";". A claim is made of quotes — text between "…" or “…” —
// and plain words; in the plain words:
//
//   - a citation is a word naming a file: a last path segment with an
//     extension (Story/SCN-outline.md, Canon.md), optionally with a location
//     suffix (:12, :L12, :L12-L30, #L12). A quote that is nothing but such a
//     name ("Story/a.md") is a citation too. Every cited file must be one
//     the session read (Sources.Content), or evidence_invalid: evidence
//     references real sources (seed 002 "Non-Negotiable Rules").
//   - a receipt reference is a word with "rcpt_": each must be a receipt id
//     the session issued ("rcpt_" and 16 hex digits, confirmed by
//     Sources.HasReceipt), or evidence_invalid (G-19, G-24). A claim that
//     says "receipt" or "receipt_id" but gives no such id is
//     evidence_invalid: an id the model made up is never a receipt.
//
// Each claim is one of four kinds, seed 002's "Evidence Types" plus tool
// use, and must carry the proof its kind needs. The kind is the claim's
// prefix "content:", "structural:", "absence:" or "tool:" when it has one;
// otherwise the first that fits of:
//
//   - absence: the plain words say something is not there — no, none,
//     nothing, nowhere, never, absent, missing, "not found", "not present",
//     "not mentioned", "does not", "do not", "did not" (and their
//     contractions). It needs an explicit scope (G-23): "checked …",
//     "searched …", "scanned …", "reviewed …" or "scope …", a cited file,
//     or a receipt. A quote in an absence claim is what is absent: if it
//     occurs in a cited file, the claim is contradicted (evidence_invalid).
//     Example: no mention of "Ilse" (checked scenes 1–4).
//   - content: the claim has a quote. Each quote must occur verbatim in one
//     of the claim's cited files, or quote_not_found (G-22, acceptance test
//     1). A quote with no cited file may come from a receipted tool result
//     (Sources.AnyContent) when the claim gives a receipt id; with neither,
//     evidence_invalid. Example: "the door was locked" (Story/SCN-01.md:L12).
//   - tool: the claim says receipt, receipt_id, tool, tools, executed or
//     invoked. It needs a receipt id (G-24). Example: file_locator found
//     the outline (receipt rcpt_00112233aabbccdd).
//   - structural: anything else. It needs a location (G-23, acceptance test
//     3): a cited file with a location suffix, L12, "line 12", "lines 3-9",
//     "section X", "§2", "heading X" or an outline entry ("outline entry
//     3", "outline item X", "outline 2", "outline #2").
//     Example: Story/SCN-outline.md:L4 lists the scenes in order.
//
// A line whose text is a request for access ("request access to
// Story/SCN-05.md") is accepted as it is: seed 002 lets evidence "request
// access" to sources instead of citing them.
//
// Check returns the first failure, in the seed's telemetry buckets (G-26).
// It expects the answer after the reducer stripped thinking tags.
package evidence

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/session/receipt"
	"github.com/govkit/govkit/pkg/termtext"
)

// Buckets, seed 002 "Telemetry (Rejections + Tokens)" (G-26). Check uses
// the first two; tool_syntax, cot_leak and format_error are the buckets of
// the envelope's rejections, named here so that every bucket has one home.
const (
	EvidenceInvalid = "evidence_invalid"
	QuoteNotFound   = "quote_not_found"
	ToolSyntax      = "tool_syntax"
	CotLeak         = "cot_leak"
	FormatError     = "format_error"
)

// Sources is what the session can vouch for: the content it read, by path
// (Content), the receipts it issued and that verify (HasReceipt), and
// whether any content it read through a receipted tool result contains a
// quote (AnyContent).
type Sources interface {
	Content(path string) (string, bool)
	HasReceipt(id string) bool
	AnyContent(quote string) bool
}

// Rejection says which bucket an answer's evidence falls in, and why, in
// words fit to show the model. Detail never holds more than a short
// excerpt of the answer.
type Rejection struct {
	Bucket string `json:"bucket"`
	Detail string `json:"detail"`
}

// Labels are the accepted forms of the Evidence line's label.
var labels = []string{"evidence:", "**evidence:**", "__evidence:__"}

// Check validates answer's Evidence line against src; nil means accepted.
func Check(answer string, src Sources) *Rejection {
	body, n := evidenceLine(answer)
	switch {
	case n == 0:
		return invalid("no Evidence line: end the answer with one line \"Evidence: …\" (or **Evidence:** or __Evidence:__)")
	case n > 1:
		return invalid(strconv.Itoa(n) + " Evidence lines: give exactly one")
	}
	body = strings.TrimSpace(body)
	if body == "" {
		return invalid("the Evidence line is empty")
	}
	if isAccessRequest(body) {
		return nil
	}
	claims, rej := split(body)
	if rej != nil {
		return rej
	}
	for i := range claims {
		if rej := checkClaim(&claims[i], src); rej != nil {
			return rej
		}
	}
	return nil
}

// evidenceLine returns the text after the label of the last Evidence line
// and how many lines carry a label.
func evidenceLine(answer string) (body string, n int) {
	for len(answer) > 0 {
		line := answer
		if i := strings.IndexByte(answer, '\n'); i >= 0 {
			line, answer = answer[:i], answer[i+1:]
		} else {
			answer = ""
		}
		s := strings.TrimLeft(line, " \t\r")
		for _, m := range []string{"- ", "* ", "> "} {
			if strings.HasPrefix(s, m) {
				s = strings.TrimLeft(s[len(m):], " \t")
				break
			}
		}
		for _, l := range labels {
			if len(s) >= len(l) && strings.EqualFold(s[:len(l)], l) {
				body = strings.TrimRight(s[len(l):], "\r")
				n++
				break
			}
		}
	}
	return body, n
}

var accessRequests = []string{"request access", "requesting access", "need access", "needs access", "access requested", "access needed"}

func isAccessRequest(body string) bool {
	b := strings.ToLower(strings.Trim(body, " *_"))
	for _, p := range accessRequests {
		if strings.HasPrefix(b, p) {
			return true
		}
	}
	return false
}

type kind uint8

const (
	kindAuto kind = iota
	kindContent
	kindStructural
	kindAbsence
	kindTool
)

// claim is one ";"-separated part of the Evidence line.
type claim struct {
	kind   kind
	words  []string // plain words, lower-cased, outer punctuation trimmed
	raw    []string // the same words as written (for paths and ids)
	quotes []string
	cites  []cite
}

type cite struct {
	path     string
	located  bool // a :L12-style suffix
	fromWord bool
}

// split cuts body into claims at ";" outside quotes and each claim into
// quotes and plain words.
func split(body string) ([]claim, *Rejection) {
	var claims []claim
	var plain strings.Builder
	cur := claim{}
	flush := func() {
		text := strings.TrimSpace(plain.String())
		for _, p := range prefixes {
			if len(text) >= len(p.label) && strings.EqualFold(text[:len(p.label)], p.label) {
				cur.kind, text = p.kind, text[len(p.label):]
				break
			}
		}
		cur.words, cur.raw = words(text)
		plain.Reset()
		if len(cur.words) > 0 || len(cur.quotes) > 0 {
			claims = append(claims, cur)
		}
		cur = claim{}
	}
	for i := 0; i < len(body); {
		r, size := utf8.DecodeRuneInString(body[i:])
		switch r {
		case ';':
			flush()
		case '"', '“':
			closer := '"'
			if r == '“' {
				closer = '”'
			}
			j := strings.IndexRune(body[i+size:], closer)
			if j < 0 {
				return nil, invalid("unterminated quote " + excerpt(body[i:]))
			}
			q := body[i+size : i+size+j]
			if _, _, ok := pathWord(q); ok {
				plain.WriteString(" " + q + " ") // a quoted file name cites it
			} else {
				cur.quotes = append(cur.quotes, q)
				plain.WriteString(" ")
			}
			i += size + j + utf8.RuneLen(closer)
			continue
		default:
			plain.WriteRune(r)
		}
		i += size
	}
	flush()
	if len(claims) == 0 {
		return nil, invalid("the Evidence line has no claim")
	}
	return claims, nil
}

// words splits plain text at spaces and trims outer punctuation, keeping a
// lower-cased copy for matching.
func words(s string) (lower, raw []string) {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '–' || r == '—' }) {
		w = strings.TrimFunc(w, func(r rune) bool {
			return strings.ContainsRune("()[]{},;!?`'*_<>", r) || r == '‘' || r == '’'
		})
		w = strings.TrimRight(w, ".:")
		if w == "" {
			continue
		}
		raw = append(raw, w)
		lower = append(lower, strings.ToLower(strings.ReplaceAll(w, "’", "'")))
	}
	return lower, raw
}

// prefixes declare a claim's kind explicitly.
var prefixes = []struct {
	label string
	kind  kind
}{{"content:", kindContent}, {"structural:", kindStructural}, {"absence:", kindAbsence}, {"tool:", kindTool}}

func checkClaim(c *claim, src Sources) *Rejection {
	// Receipt references: every rcpt_ word must be an id this session
	// issued; a claim about receipts must give one (G-19, G-24).
	receipts, mentions := 0, false
	for i, w := range c.words {
		if j := strings.Index(w, "rcpt_"); j >= 0 {
			id := c.raw[i][j:]
			if k := strings.IndexFunc(id, func(r rune) bool { return !isIDRune(r) }); k >= 0 {
				id = id[:k]
			}
			if !receipt.IsID(id) || !src.HasReceipt(id) {
				return invalid("receipt " + excerpt(id) + " was not issued in this session")
			}
			receipts++
			continue
		}
		switch strings.TrimRight(w, "s:=") {
		case "receipt", "receipt_id":
			mentions = true
		}
	}
	if mentions && receipts == 0 {
		return invalid("the claim names a receipt but gives no receipt id issued in this session (rcpt_…)")
	}
	// Citations: every cited file must be one the session read.
	var located, scoped, toolWord bool
	for i, w := range c.words {
		if p, loc, ok := pathWord(c.raw[i]); ok {
			if _, read := src.Content(p); !read {
				return invalid("cites " + excerpt(p) + ", which this session did not read")
			}
			c.cites = append(c.cites, cite{path: p, located: loc, fromWord: true})
			located = located || loc
			continue
		}
		if isLocation(c.words, i) {
			located = true
		}
		switch w {
		case "checked", "searched", "scanned", "reviewed", "scope":
			scoped = scoped || i+1 < len(c.words)
		case "tool", "tools", "executed", "invoked", "receipt", "receipts", "receipt_id":
			toolWord = true
		}
	}
	if c.kind == kindAuto {
		switch {
		case isAbsence(c.words):
			c.kind = kindAbsence
		case len(c.quotes) > 0:
			c.kind = kindContent
		case toolWord || receipts > 0:
			c.kind = kindTool
		default:
			c.kind = kindStructural
		}
	}
	switch c.kind {
	case kindAbsence:
		if !scoped && len(c.cites) == 0 && receipts == 0 {
			return invalid("an absence claim needs an explicit scope (\"checked …\", a file, or a receipt)")
		}
		for _, q := range c.quotes {
			for _, ct := range c.cites {
				if content, _ := src.Content(ct.path); q != "" && strings.Contains(content, q) {
					return invalid("absence claim contradicted: " + excerpt(q) + " occurs in " + excerpt(ct.path))
				}
			}
		}
	case kindContent:
		if len(c.quotes) == 0 {
			return invalid("a content claim needs a direct quote")
		}
		for _, q := range c.quotes {
			if strings.TrimSpace(q) == "" {
				return invalid("empty quote")
			}
			if len(c.cites) == 0 {
				if receipts == 0 {
					return invalid("the quote " + excerpt(q) + " cites no file")
				}
				if !src.AnyContent(q) {
					return &Rejection{Bucket: QuoteNotFound, Detail: "quote " + excerpt(q) + " is not in any tool result of this session"}
				}
				continue
			}
			found := false
			for _, ct := range c.cites {
				if content, _ := src.Content(ct.path); strings.Contains(content, q) {
					found = true
					break
				}
			}
			if !found {
				return &Rejection{Bucket: QuoteNotFound, Detail: "quote " + excerpt(q) + " is not in " + excerpt(c.cites[0].path)}
			}
		}
	case kindTool:
		if receipts == 0 {
			return invalid("a claim of tool use needs the receipt id of that tool call (rcpt_…)")
		}
	case kindStructural:
		if !located {
			return invalid("a structural claim needs a line, section or outline reference (e.g. path:L12)")
		}
	}
	return nil
}

func isIDRune(r rune) bool {
	return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
}

// pathWord reports whether w names a file: its last segment has an
// extension (1–10 letters or digits, at least one letter) after a
// non-empty name. A location suffix (:12, :L12, :L12-L30, #L12) is cut off
// and reported.
func pathWord(w string) (path string, located, ok bool) {
	if strings.Contains(w, "://") || strings.ContainsAny(w, "@ \t\n") {
		return "", false, false
	}
	if i := strings.LastIndexAny(w, ":#"); i > 0 && isLineRange(w[i+1:]) {
		w, located = w[:i], true
	}
	seg := w[strings.LastIndexByte(w, '/')+1:]
	dot := strings.LastIndexByte(seg, '.')
	if dot <= 0 || dot == len(seg)-1 || len(seg)-dot-1 > 10 {
		return "", false, false
	}
	letter := false
	for _, r := range seg[dot+1:] {
		switch {
		case unicode.IsLetter(r) && r < utf8.RuneSelf:
			letter = true
		case '0' <= r && r <= '9':
		default:
			return "", false, false
		}
	}
	switch strings.ToLower(w) {
	case "e.g", "i.e", "a.m", "p.m", "et.al", "vs":
		return "", false, false
	}
	return w, located, letter
}

// isLineRange matches 12, L12, 12-30, L12-L30, L12-30.
func isLineRange(s string) bool {
	a, b, rng := strings.Cut(s, "-")
	if rng && !isLine(b) {
		return false
	}
	return isLine(a)
}

func isLine(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "L"), "l")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// isLocation reports whether words[i] begins a line, section or outline
// reference.
func isLocation(words []string, i int) bool {
	w := words[i]
	next := i+1 < len(words)
	switch w {
	case "line", "lines", "ln":
		return next && words[i+1] != "" && '0' <= words[i+1][0] && words[i+1][0] <= '9'
	case "section", "sections", "heading", "§":
		return next
	case "outline":
		// An outline entry: "outline entry 3", "outline item Arrival",
		// "outline 2", "outline #2" — not any mention of the outline.
		if !next {
			return false
		}
		n := words[i+1]
		return n == "entry" || n == "item" || n[0] == '#' || '0' <= n[0] && n[0] <= '9'
	}
	if strings.HasPrefix(w, "§") && len(w) > len("§") {
		return true
	}
	return len(w) > 1 && w[0] == 'l' && isLineRange(w)
}

var absenceWords = map[string]bool{
	"no": true, "none": true, "nothing": true, "nowhere": true, "never": true,
	"absent": true, "missing": true, "doesn't": true, "don't": true, "didn't": true,
}

var absencePairs = map[[2]string]bool{
	{"not", "found"}: true, {"not", "present"}: true, {"not", "mentioned"}: true,
	{"does", "not"}: true, {"do", "not"}: true, {"did", "not"}: true,
}

func isAbsence(words []string) bool {
	for i, w := range words {
		if absenceWords[w] || i > 0 && absencePairs[[2]string{words[i-1], w}] {
			return true
		}
	}
	return false
}

func invalid(detail string) *Rejection {
	return &Rejection{Bucket: EvidenceInvalid, Detail: detail}
}

// excerpt quotes at most 60 bytes of s, cut at a character boundary: a
// rejection names what it refuses without echoing the answer (DESIGN §3).
func excerpt(s string) string { return strconv.Quote(termtext.Truncate(s, 60)) }
