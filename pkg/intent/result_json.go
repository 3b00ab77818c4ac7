package intent

import (
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends r as MarshalJSON encodes it, without reflection and
// without a second pass: batch mode encodes every result, and
// encoding/json re-scanning what MarshalJSON produced was about a third of
// its CPU (issue 14). The bytes are exactly encoding/json's with HTML
// escaping off (FuzzAppendJSON checks), so a script sees no difference.
func (r *Result) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"schema_version":1,"command":`...)
	dst = appendJSONString(dst, r.Command)
	dst = append(dst, `,"intent":`...)
	dst = appendJSONString(dst, string(r.Intent))
	dst = append(dst, `,"bounded":`...)
	dst = strconv.AppendBool(dst, r.Bounded)
	dst = append(dst, `,"interactive":`...)
	dst = appendJSONString(dst, string(r.Interactive))
	dst = append(dst, `,"risk":`...)
	dst = appendJSONString(dst, r.Risk.String())
	dst = append(dst, `,"action_class":`...)
	dst = appendJSONString(dst, string(r.ActionClass))
	dst = append(dst, `,"reasons":[`...)
	for i, reason := range r.Reasons {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"code":`...)
		dst = appendJSONString(dst, string(reason.Code))
		dst = append(dst, `,"detail":`...)
		dst = appendJSONString(dst, reason.Detail)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"suggested_rewrite":`...)
	dst = appendJSONString(dst, r.SuggestedRewrite)
	dst = append(dst, `,"auto_recoverable":`...)
	dst = strconv.AppendBool(dst, r.AutoRecoverable)
	return append(dst, '}')
}

// jsonPlain marks the ASCII bytes a JSON string holds as they are.
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// plainWord reports whether all eight bytes packed in v are ASCII that a
// JSON string holds as they are: none is 0x80 or above, below 0x20, '"' or
// '\\'. The tests are the classic "has a zero byte" bit tricks, which may
// report a byte that is fine (then the caller looks byte by byte) but never
// miss one that is not.
func plainWord(v uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(x uint64) bool { return (x-ones)&^x&highs != 0 }
	return v&highs == 0 && // all ASCII
		(v-0x20*ones)&^v&highs == 0 && // none below 0x20
		!hasZero(v^('"'*ones)) && !hasZero(v^('\\'*ones))
}

// appendJSONString appends s as encoding/json writes a string with HTML
// escaping off: '"', '\\' and control characters escaped, invalid UTF-8
// replaced by U+FFFD, and U+2028 and U+2029 escaped (JavaScript reads them
// as line ends).
func appendJSONString(dst []byte, s string) []byte {
	// Most strings need no escaping at all (every code, intent and risk,
	// most commands and details): find the first byte that may, eight
	// bytes at a time, and copy the whole string when there is none. This
	// function was 5% of batch mode's instructions byte by byte (issue 14).
	i := 0
	for len(s)-i >= 8 {
		w := s[i : i+8] // one bounds check; the eight loads become one
		if !plainWord(uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56) {
			break
		}
		i += 8
	}
	for i < len(s) && s[i] < utf8.RuneSelf && jsonPlain[s[i]] {
		i++
	}
	dst = append(dst, '"')
	if i == len(s) {
		dst = append(dst, s...)
		return append(dst, '"')
	}
	return appendJSONEscaped(dst, s, i)
}

// appendJSONEscaped appends the rest of s, from i on, escaping what needs
// it (the opening quote is written, s[:i] needs nothing), and the closing
// quote.
func appendJSONEscaped(dst []byte, s string, i int) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonPlain[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
