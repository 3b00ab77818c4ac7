package envelope

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting so that a hostile message cannot make the decoder
// recurse without limit; no tool argument needs more.
const maxDepth = 64

// decoder is a strict RFC 8259 reader over one message: no trailing commas,
// no single quotes, no comments, no duplicate keys, valid UTF-8 and no lone
// surrogates (seed 002: "no lenient parsing"). encoding/json keeps the last
// of two duplicate keys and repairs bad UTF-8 silently, so a call could mean
// one thing to this gate and another to the tool; hence a reader of our own.
// Strings without escapes are sub-strings of the message: no copy.
type decoder struct {
	s     string
	pos   int
	depth int
	err   string // why decoding stopped (fixed text)
	key   string // the duplicate key, when err is errDuplicate
}

const errDuplicate = "duplicate key"

func (d *decoder) fail(msg string) bool {
	if d.err == "" {
		d.err = msg
	}
	return false
}

func (d *decoder) ws() {
	for d.pos < len(d.s) {
		switch d.s[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// next skips whitespace and reports the byte there (0 at the end).
func (d *decoder) next() byte {
	d.ws()
	if d.pos >= len(d.s) {
		return 0
	}
	return d.s[d.pos]
}

func (d *decoder) value() (any, bool) {
	switch c := d.next(); {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == 0 && d.pos >= len(d.s):
		return nil, d.fail("unexpected end of JSON")
	default:
		return nil, d.fail("unexpected character")
	}
}

func (d *decoder) literal(word string) bool {
	if len(d.s)-d.pos < len(word) || d.s[d.pos:d.pos+len(word)] != word {
		return d.fail("invalid literal")
	}
	d.pos += len(word)
	return true
}

// enter and leave bound the nesting depth.
func (d *decoder) enter() bool {
	d.depth++
	if d.depth > maxDepth {
		return d.fail("nesting too deep")
	}
	return true
}

func (d *decoder) leave() { d.depth-- }

// members walks an object's members at d.pos ('{'), calling member with each
// key; member reads the value. It checks the commas and braces, nothing else.
func (d *decoder) members(member func(key string, at int) bool) bool {
	if !d.enter() {
		return false
	}
	defer d.leave()
	d.pos++ // '{'
	if d.next() == '}' {
		d.pos++
		return true
	}
	for {
		if d.next() != '"' {
			return d.fail("expected a string key")
		}
		at := d.pos
		key, ok := d.str()
		if !ok {
			return false
		}
		if d.next() != ':' {
			return d.fail("expected ':'")
		}
		d.pos++
		if !member(key, at) {
			return false
		}
		switch d.next() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return true
		default:
			return d.fail("expected ',' or '}'")
		}
	}
}

func (d *decoder) object() (any, bool) {
	m := map[string]any{}
	ok := d.members(func(key string, _ int) bool {
		if _, dup := m[key]; dup {
			d.key = key
			return d.fail(errDuplicate)
		}
		v, ok := d.value()
		m[key] = v
		return ok
	})
	return m, ok
}

func (d *decoder) array() (any, bool) {
	if !d.enter() {
		return nil, false
	}
	defer d.leave()
	d.pos++ // '['
	out := []any{}
	if d.next() == ']' {
		d.pos++
		return out, true
	}
	for {
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		switch d.next() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return out, true
		default:
			return nil, d.fail("expected ',' or ']'")
		}
	}
}

// str reads a string at d.pos ('"'). The common case, no escapes, returns a
// sub-string of the message.
func (d *decoder) str() (string, bool) {
	start := d.pos + 1
	for i := start; i < len(d.s); i++ {
		switch c := d.s[i]; {
		case c == '"':
			s := d.s[start:i]
			if !utf8.ValidString(s) {
				return "", d.fail("invalid UTF-8 in string")
			}
			d.pos = i + 1
			return s, true
		case c == '\\':
			return d.strEscaped(start, i)
		case c < 0x20:
			return "", d.fail("control character in string")
		}
	}
	return "", d.fail("unterminated string")
}

func (d *decoder) strEscaped(start, i int) (string, bool) {
	b := make([]byte, 0, i-start+16)
	b = append(b, d.s[start:i]...)
	for i < len(d.s) {
		c := d.s[i]
		switch {
		case c == '"':
			if !utf8.Valid(b) {
				return "", d.fail("invalid UTF-8 in string")
			}
			d.pos = i + 1
			return string(b), true
		case c < 0x20:
			return "", d.fail("control character in string")
		case c != '\\':
			b = append(b, c)
			i++
			continue
		}
		if i+1 >= len(d.s) {
			break
		}
		switch e := d.s[i+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := d.hex4(i + 2)
			if !ok {
				return "", d.fail("invalid \\u escape")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by a low one makes a
				// character; a lone half is refused, not replaced.
				lo, ok := rune(-1), false
				if i+1 < len(d.s) && d.s[i] == '\\' && d.s[i+1] == 'u' {
					lo, ok = d.hex4(i + 2)
				}
				if !ok {
					return "", d.fail("lone surrogate in string")
				}
				r = utf16.DecodeRune(r, lo)
				if r == utf8.RuneError {
					return "", d.fail("lone surrogate in string")
				}
				i += 6
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			return "", d.fail("invalid escape")
		}
		i += 2
	}
	return "", d.fail("unterminated string")
}

func (d *decoder) hex4(i int) (rune, bool) {
	if i+4 > len(d.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(d.s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads an RFC 8259 number as a float64, as encoding/json does, so
// args look the same whichever path (llm_text or tool_call) they came by.
func (d *decoder) number() (any, bool) {
	s, i := d.s, d.pos
	digits := func() bool {
		n := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > n
	}
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return nil, d.fail("invalid number")
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return nil, d.fail("invalid number")
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return nil, d.fail("invalid number")
		}
	}
	f, err := strconv.ParseFloat(s[d.pos:i], 64)
	if err != nil {
		return nil, d.fail("number out of range")
	}
	d.pos = i
	return f, true
}
