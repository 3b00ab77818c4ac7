package audit

import (
	"encoding/json"
	"fmt"
	"github.com/govkit/govkit/pkg/termtext"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Canonical returns the RFC 8785 (JCS) canonical JSON of v: v is encoded
// with encoding/json and the result canonicalized. Numbers pass through
// float64, as JCS requires, so integers beyond ±2^53 lose precision.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return CanonicalizeJSON(raw)
}

// CanonicalizeJSON returns the RFC 8785 (JSON Canonicalization Scheme) form
// of one JSON text: no insignificant whitespace; object members sorted by
// their names' UTF-16 code units; strings with only '"', '\' and U+0000–U+001F
// escaped (\b \t \n \f \r, else \u00xx), everything else literal UTF-8;
// numbers as ECMAScript's Number.prototype.toString writes them.
//
// Input that is not I-JSON is refused: invalid UTF-8, an escaped lone
// surrogate, a duplicate member name (after unescaping), a number beyond
// float64's range, trailing data, or nesting deeper than 1000. Unicode
// noncharacters, which I-JSON also excludes, are accepted: tool output
// carries arbitrary text, and they are valid UTF-8 that every parser keeps.
func CanonicalizeJSON(raw []byte) ([]byte, error) {
	n, err := parseJSON(raw)
	if err != nil {
		return nil, err
	}
	return appendNode(make([]byte, 0, len(raw)), &n), nil
}

// SyntaxError is a CanonicalizeJSON (and DecodeEvent, ParseExportLine)
// refusal: the byte offset where the input stops being acceptable.
type SyntaxError struct {
	Offset int // bytes from the start of the input
	msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.msg)
}

// maxDepth bounds nesting, so hostile input cannot make the parser recurse
// without end.
const maxDepth = 1000

type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is a parsed JSON value. Object members are kept sorted by name in
// JCS order (keys[i] names elems[i]); names are unique.
type node struct {
	kind  kind
	str   string  // a string's value
	num   float64 // a number's value
	elems []node  // array elements, object member values
	keys  []string
}

// member returns the value of an object's member, or nil.
func (n *node) member(name string) *node {
	for i, k := range n.keys {
		if k == name {
			return &n.elems[i]
		}
	}
	return nil
}

// without returns an object node without the member name, sharing storage
// with n for everything else.
func (n *node) without(name string) node {
	out := node{kind: kindObject}
	for i, k := range n.keys {
		if k != name {
			out.keys = append(out.keys, k)
			out.elems = append(out.elems, n.elems[i])
		}
	}
	return out
}

func parseJSON(raw []byte) (node, error) {
	// Room for the members of a typical event (about one per 25 bytes)
	// without growing, and no more for small values.
	// The slabs (takeNodes) hold every value of a typical event (about
	// one per 16 bytes) at once.
	// The stacks and the first slabs share one allocation each.
	size, slab := min(len(raw)/25+1, 32), min(len(raw)/16+1, 64)
	nodes, names := make([]node, size+slab), make([]string, size+slab)
	p := parser{
		data: raw, src: string(raw),
		elems: nodes[:0:size], keys: names[:0:size],
		nodes: nodes[size:], names: names[size:], slab: slab,
	}
	p.skipSpace()
	n, err := p.value()
	if err != nil {
		return node{}, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return node{}, p.fail("unexpected data after the JSON value")
	}
	return n, nil
}

type parser struct {
	data []byte
	// src is data as one string: a string value without escapes is a
	// substring of it, so the names and values of a member cost no
	// allocation each (most of DecodeEvent's cost was those copies, on
	// auditd's ingest path).
	src   string
	pos   int
	depth int
	// Members and elements of the containers being parsed, innermost last:
	// each container takes an exactly sized copy of its own when it ends,
	// rather than growing a slice of its own member by member.
	elems []node
	keys  []string
	// nodes and names are free room that containers take their members
	// from, so that a parse allocates a few slabs rather than two slices
	// per container (issue 20: allocation was most of DecodeEvent's cost
	// on auditd's ingest path); slab is the size of the next one.
	nodes []node
	names []string
	slab  int
}

// takeNodes returns a copy of src in room of its own, exactly sized.
func (p *parser) takeNodes(src []node) []node {
	k := len(src)
	if len(p.nodes) < k {
		p.nodes = make([]node, max(k, p.slab))
		p.slab = min(2*p.slab, 1024)
	}
	out := p.nodes[:k:k]
	p.nodes = p.nodes[k:]
	copy(out, src)
	return out
}

// takeNames is takeNodes for member names.
func (p *parser) takeNames(src []string) []string {
	k := len(src)
	if len(p.names) < k {
		p.names = make([]string, max(k, p.slab))
	}
	out := p.names[:k:k]
	p.names = p.names[k:]
	copy(out, src)
	return out
}

// substr is data[i:j] as a string: a substring of src when the parser has
// one (parseJSON), else a copy.
func (p *parser) substr(i, j int) string {
	if len(p.src) == len(p.data) {
		return p.src[i:j]
	}
	return string(p.data[i:j])
}

func (p *parser) fail(msg string) error { return &SyntaxError{Offset: p.pos, msg: msg} }

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (node, error) {
	if p.pos >= len(p.data) {
		return node{}, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.string()
		return node{kind: kindString, str: s}, err
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true", kindTrue)
	case c == 'f':
		return p.literal("false", kindFalse)
	case c == 'n':
		return p.literal("null", kindNull)
	}
	return node{}, p.fail("unexpected character " + quoteByte(p.data[p.pos]))
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}

func (p *parser) literal(word string, k kind) (node, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return node{}, p.fail("invalid literal")
	}
	p.pos += len(word)
	return node{kind: k}, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail("nesting deeper than 1000")
	}
	return nil
}

func (p *parser) array() (node, error) {
	if err := p.enter(); err != nil {
		return node{}, err
	}
	p.pos++ // [
	n := node{kind: kindArray}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return n, nil
	}
	base := len(p.elems)
	for {
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return node{}, err
		}
		p.elems = append(p.elems, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return node{}, p.fail("unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			n.elems = p.takeNodes(p.elems[base:])
			p.elems = p.elems[:base]
			return n, nil
		default:
			return node{}, p.fail("expected ',' or ']' in array")
		}
	}
}

func (p *parser) object() (node, error) {
	if err := p.enter(); err != nil {
		return node{}, err
	}
	start := p.pos
	p.pos++ // {
	n := node{kind: kindObject}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return n, nil
	}
	base, keyBase := len(p.elems), len(p.keys)
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return node{}, p.fail("expected a member name")
		}
		k, err := p.string()
		if err != nil {
			return node{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return node{}, p.fail("expected ':' after a member name")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return node{}, err
		}
		p.keys = append(p.keys, k)
		p.elems = append(p.elems, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return node{}, p.fail("unexpected end of input in object")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] != '}' {
			return node{}, p.fail("expected ',' or '}' in object")
		}
		p.pos++
		p.depth--
		n.keys = p.takeNames(p.keys[keyBase:])
		n.elems = p.takeNodes(p.elems[base:])
		p.keys, p.elems = p.keys[:keyBase], p.elems[:base]
		if dup, ok := sortMembers(&n); !ok {
			return node{}, &SyntaxError{Offset: start, msg: "duplicate member name " + quoteName(dup)}
		}
		return n, nil
	}
}

// quoteName quotes an untrusted member name for an error message, bounded so
// that an error never echoes a whole hostile input.
func quoteName(s string) string { return termtext.Quote(s, 64) }

// sortMembers puts an object's members in JCS order and reports a duplicate
// name. Input that is sorted already (every canonical body) costs one pass.
func sortMembers(n *node) (dup string, ok bool) {
	sorted := true
	for i := 1; i < len(n.keys); i++ {
		c := compareNames(n.keys[i-1], n.keys[i])
		if c == 0 {
			return n.keys[i], false
		}
		if c > 0 {
			sorted = false
		}
	}
	if sorted {
		return "", true
	}
	if len(n.keys) <= 16 {
		// An event's objects, in their sender's order: sorted in place by
		// insertion, which for so few members costs less than the index
		// sort's three allocations. The first duplicate in sorted order is
		// the one reported, as below.
		for i := 1; i < len(n.keys); i++ {
			for j := i; j > 0 && compareNames(n.keys[j-1], n.keys[j]) > 0; j-- {
				n.keys[j-1], n.keys[j] = n.keys[j], n.keys[j-1]
				n.elems[j-1], n.elems[j] = n.elems[j], n.elems[j-1]
			}
		}
		for i := 1; i < len(n.keys); i++ {
			if n.keys[i] == n.keys[i-1] {
				return n.keys[i], false
			}
		}
		return "", true
	}
	idx := make([]int, len(n.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return compareNames(n.keys[a], n.keys[b]) })
	keys := make([]string, len(idx))
	elems := make([]node, len(idx))
	for i, j := range idx {
		keys[i], elems[i] = n.keys[j], n.elems[j]
		if i > 0 && keys[i] == keys[i-1] {
			return keys[i], false
		}
	}
	n.keys, n.elems = keys, elems
	return "", true
}

// compareNames orders member names by their UTF-16 code units (RFC 8785
// §3.2.3). For valid UTF-8 that is code point order except that characters
// beyond U+FFFF (surrogate pairs, D800–DBFF first) sort before U+E000–U+FFFF.
func compareNames(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	for i > 0 && !utf8.RuneStart(a[i]) { // a[:i] == b[:i]: same rune start
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	if ua, ub := firstUnit(ra), firstUnit(rb); ua != ub {
		return int(ua) - int(ub)
	}
	return int(ra) - int(rb) // same high surrogate: the low ones follow code point order
}

func firstUnit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

// string parses a JSON string at p.pos (which holds '"') and returns its
// value, refusing control characters, invalid UTF-8 and lone surrogates.
func (p *parser) string() (string, error) {
	p.pos++ // "
	start := p.pos
	// Fast path: no escape up to the closing quote; a substring of src once
	// any non-ASCII run is known to be valid UTF-8.
	ascii := true
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			if ascii || utf8.Valid(p.data[start:p.pos]) {
				s := p.substr(start, p.pos)
				p.pos++
				return s, nil
			}
			break // invalid UTF-8: the slow path names the byte
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
		p.pos++
	}
	if !ascii {
		p.pos = start // the slow path checks non-ASCII runs as it copies them
	}
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.fail("control character in string")
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", p.fail("invalid UTF-8 in string")
			}
			buf = append(buf, p.data[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
	return "", p.fail("unterminated string")
}

// escape decodes the escape sequence at p.pos (which holds '\').
func (p *parser) escape() (rune, error) {
	if p.pos+1 >= len(p.data) {
		return 0, p.fail("unterminated string")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, ok := p.hex4()
		if !ok {
			return 0, p.fail(`invalid \u escape`)
		}
		if r < 0xD800 || r > 0xDFFF {
			return r, nil
		}
		if r >= 0xDC00 {
			return 0, p.fail("lone low surrogate in string")
		}
		if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
			p.pos += 2
			lo, ok := p.hex4()
			if ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), nil
			}
		}
		return 0, p.fail("lone high surrogate in string")
	}
	p.pos--
	return 0, p.fail("invalid escape in string")
}

func (p *parser) hex4() (rune, bool) {
	if len(p.data)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

// number parses a JSON number (RFC 8259 grammar) into its float64 value.
func (p *parser) number() (node, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return node{}, p.fail("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return node{}, p.fail("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return node{}, p.fail("invalid number")
		}
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
	if err != nil || math.IsInf(f, 0) {
		p.pos = start
		return node{}, p.fail("number out of the range JSON readers hold (beyond ±1.8e308)")
	}
	return node{kind: kindNumber, num: f}, nil
}

// appendNumber appends f as ECMAScript's Number.prototype.toString writes it
// (ECMA-262 Number::toString, which RFC 8785 §3.2.2.3 adopts): the shortest
// digits that round-trip, in fixed notation for 1e-7 <= |f| < 1e21 and in
// exponent notation ("1e+21", "1.5e-7") otherwise. strconv's 'g' format
// differs in where it switches and in writing "e+07"-style exponents. f must
// be finite.
func appendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // also -0
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	if f < 1<<53 && f == math.Trunc(f) {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	// Shortest round-trip digits d1.d2…dk and exponent e: f = 0.d1…dk × 10^n
	// with n = e+1 in the specification's terms.
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	mant, exp := b, 0
	for i, c := range b {
		if c == 'e' {
			mant = b[:i]
			exp, _ = strconv.Atoi(string(b[i+1:]))
			break
		}
	}
	var digitBuf [24]byte
	digits := digitBuf[:0]
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// appendNode appends n's canonical form.
func appendNode(dst []byte, n *node) []byte {
	switch n.kind {
	case kindNull:
		return append(dst, "null"...)
	case kindFalse:
		return append(dst, "false"...)
	case kindTrue:
		return append(dst, "true"...)
	case kindNumber:
		return appendNumber(dst, n.num)
	case kindString:
		return appendString(dst, n.str)
	case kindArray:
		dst = append(dst, '[')
		for i := range n.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendNode(dst, &n.elems[i])
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	for i := range n.elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, n.keys[i])
		dst = append(dst, ':')
		dst = appendNode(dst, &n.elems[i])
	}
	return append(dst, '}')
}

// AppendJCSString appends s, valid UTF-8, as an RFC 8785 string: for
// packages that write canonical JSON themselves (pkg/redact).
func AppendJCSString(dst []byte, s string) []byte { return appendString(dst, s) }

// appendString appends s as a JCS string (RFC 8785 §3.2.2.2): only '"',
// '\' and control characters are escaped; "<", ">", "&" and U+2028 stay
// literal, unlike encoding/json.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// isCanonical reports whether raw is certainly its own canonical form, so
// that CanonicalizeJSON would return it unchanged: Seal and Prepare then
// keep a JSON-valued field as it is instead of parsing and writing it again
// (issue 20: DecodeEvent has made it canonical already, and auditd's ingest
// paid for a second parse). It may answer false for canonical input (a
// member name with an escape), never true for input that is not:
// FuzzIsCanonical checks that against CanonicalizeJSON.
func isCanonical(raw []byte) bool {
	c := canonicalCheck{data: raw}
	return c.value(0) && c.pos == len(raw)
}

// canonicalCheck scans one JSON value, refusing anything that
// CanonicalizeJSON would write differently or refuse.
type canonicalCheck struct {
	data []byte
	pos  int
}

func (c *canonicalCheck) value(depth int) bool {
	if c.pos >= len(c.data) {
		return false
	}
	switch b := c.data[c.pos]; {
	case b == '{':
		return c.object(depth + 1)
	case b == '[':
		return c.array(depth + 1)
	case b == '"':
		_, ok := c.string()
		return ok
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	}
	return false
}

func (c *canonicalCheck) literal(word string) bool {
	if len(c.data)-c.pos < len(word) || string(c.data[c.pos:c.pos+len(word)]) != word {
		return false
	}
	c.pos += len(word)
	return true
}

func (c *canonicalCheck) array(depth int) bool {
	if depth > maxDepth {
		return false
	}
	c.pos++ // [
	if c.pos < len(c.data) && c.data[c.pos] == ']' {
		c.pos++
		return true
	}
	for {
		if !c.value(depth) || c.pos >= len(c.data) {
			return false
		}
		switch c.data[c.pos] {
		case ',':
			c.pos++
		case ']':
			c.pos++
			return true
		default:
			return false
		}
	}
}

func (c *canonicalCheck) object(depth int) bool {
	if depth > maxDepth {
		return false
	}
	c.pos++ // {
	if c.pos < len(c.data) && c.data[c.pos] == '}' {
		c.pos++
		return true
	}
	var prev []byte
	for i := 0; ; i++ {
		if c.pos >= len(c.data) || c.data[c.pos] != '"' {
			return false
		}
		name, ok := c.string()
		// A name with an escape would need unescaping to be ordered: left
		// to CanonicalizeJSON. Names must be in strictly increasing order,
		// which also rules out duplicates.
		if !ok || name == nil || i > 0 && compareNames(string(prev), string(name)) >= 0 {
			return false
		}
		prev = name
		if c.pos >= len(c.data) || c.data[c.pos] != ':' {
			return false
		}
		c.pos++
		if !c.value(depth) || c.pos >= len(c.data) {
			return false
		}
		switch c.data[c.pos] {
		case ',':
			c.pos++
		case '}':
			c.pos++
			return true
		default:
			return false
		}
	}
}

// string scans a string as appendString writes it: only '"', '\' and
// control characters escaped, each in its shortest form, and valid UTF-8.
// It returns the string's bytes when it holds no escape, else nil.
func (c *canonicalCheck) string() (plain []byte, ok bool) {
	c.pos++ // "
	start := c.pos
	escaped, ascii := false, true
	for c.pos < len(c.data) {
		b := c.data[c.pos]
		switch {
		case b == '"':
			if !ascii && !utf8.Valid(c.data[start:c.pos]) {
				return nil, false
			}
			c.pos++
			if escaped {
				return nil, true
			}
			return c.data[start : c.pos-1], true
		case b < 0x20:
			return nil, false
		case b == '\\':
			if !c.escape() {
				return nil, false
			}
			escaped = true
			continue
		case b >= utf8.RuneSelf:
			ascii = false
		}
		c.pos++
	}
	return nil, false
}

// escape accepts the escapes appendString writes: \" \\ \b \t \n \f \r,
// and \u00xx (lowercase hex) for the other control characters.
func (c *canonicalCheck) escape() bool {
	if c.pos+1 >= len(c.data) {
		return false
	}
	switch c.data[c.pos+1] {
	case '"', '\\', 'b', 't', 'n', 'f', 'r':
		c.pos += 2
		return true
	case 'u':
		const hex = "0123456789abcdef"
		if len(c.data)-c.pos < 6 || c.data[c.pos+2] != '0' || c.data[c.pos+3] != '0' {
			return false
		}
		hi, lo := c.data[c.pos+4], c.data[c.pos+5]
		if hi != '0' && hi != '1' || strings.IndexByte(hex, lo) < 0 {
			return false
		}
		switch r := (hi-'0')<<4 | byte(strings.IndexByte(hex, lo)); r {
		case '\b', '\t', '\n', '\f', '\r':
			return false // written short
		}
		c.pos += 6
		return true
	}
	return false
}

// number accepts a number exactly as appendNumber writes its value.
func (c *canonicalCheck) number() bool {
	start := c.pos
	for c.pos < len(c.data) {
		b := c.data[c.pos]
		if !(b >= '0' && b <= '9' || b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E') {
			break
		}
		c.pos++
	}
	tok := c.data[start:c.pos]
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	var buf [32]byte
	return string(appendNumber(buf[:0], f)) == string(tok)
}
