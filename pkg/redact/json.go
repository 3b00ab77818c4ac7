package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/audit"
)

// maxJSONDepth bounds nesting; deeper input is redacted as text.
const maxJSONDepth = 256

// RedactJSON redacts a JSON value such as a tool call's parameters, and
// returns the kinds it replaced (nil, and raw itself, when none):
//
//   - the value of a member whose key names a secret (password, passwd,
//     secret, token, api_key, apikey, access_key, private_key,
//     authorization, client_secret …, compared as keyKind does) is
//     replaced whole by the string "[REDACTED:kind]", unless it is null, a
//     boolean, an empty string, {} or [];
//   - every other string is redacted as text (Redact);
//   - an array of strings is also read as an argument vector, so that
//     ["psql", "--password", "x"] and ["mysql", "-px"] lose their secrets.
//
// Everything else is copied byte for byte: key order, numbers, spacing.
// The output is valid JSON when raw is; raw that is not valid JSON is
// redacted as text (Redact), so nothing in it escapes.
func (r *Redactor) RedactJSON(raw json.RawMessage) (json.RawMessage, []string) {
	// The pre-filter, on the raw bytes: a secret-named key is a trigger too
	// ("password": is a key before ':'). Escapes could hide a trigger
	// (\u0070assword, hooks.slack.com\/services), so text with \u or \/
	// is always walked.
	if (r == nil || len(r.extra) == 0) && triggers(raw) == 0 &&
		!bytes.Contains(raw, []byte(`\u`)) && !bytes.Contains(raw, []byte(`\/`)) {
		return raw, nil
	}
	w := jsonWalker{r: r, src: raw}
	i, ok := w.value(w.space(0), 0)
	if ok && w.space(i) != len(raw) {
		ok = false
	}
	if !ok {
		s, kinds := r.Redact(string(raw))
		if kinds == nil {
			return raw, nil
		}
		return json.RawMessage(s), kinds
	}
	if w.out == nil {
		return raw, nil
	}
	w.out = append(w.out, raw[w.last:]...)
	return w.out, sortKinds(w.kinds)
}

// jsonWalker copies src to out lazily: out stays nil until the first
// replacement, and last is how much of src out holds.
type jsonWalker struct {
	r     *Redactor
	src   []byte
	out   []byte
	last  int
	kinds []string
	quiet bool // only check the grammar (skip)
}

func (w *jsonWalker) replace(start, end int, repl []byte, kinds ...string) {
	if w.quiet {
		return
	}
	if w.out == nil {
		w.out = make([]byte, 0, len(w.src)+32)
	}
	w.out = append(w.out, w.src[w.last:start]...)
	w.out = append(w.out, repl...)
	w.last = end
	w.kinds = append(w.kinds, kinds...)
}

func (w *jsonWalker) space(i int) int {
	for i < len(w.src) {
		switch w.src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value walks the value at i and returns its end.
func (w *jsonWalker) value(i, depth int) (int, bool) {
	if i >= len(w.src) || depth > maxJSONDepth {
		return 0, false
	}
	switch c := w.src[i]; {
	case c == '{':
		return w.object(i, depth)
	case c == '[':
		return w.array(i, depth)
	case c == '"':
		s, end, ok := w.str(i)
		if !ok {
			return 0, false
		}
		if w.quiet {
			return end, true
		}
		if red, kinds := w.r.Redact(s); kinds != nil {
			w.replace(i, end, audit.AppendJCSString(nil, red), kinds...)
		}
		return end, true
	default:
		return w.scalar(i)
	}
}

// scalar checks the number or literal at i and returns its end.
func (w *jsonWalker) scalar(i int) (int, bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(w.src[i:], []byte(lit)) {
			return i + len(lit), true
		}
	}
	j := i
	for j < len(w.src) && strings.IndexByte("+-0123456789.eE", w.src[j]) >= 0 {
		j++
	}
	if j == i || !json.Valid(w.src[i:j]) {
		return 0, false
	}
	return j, true
}

func (w *jsonWalker) object(i, depth int) (int, bool) {
	i = w.space(i + 1)
	if i < len(w.src) && w.src[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(w.src) || w.src[i] != '"' {
			return 0, false
		}
		key, end, ok := w.str(i)
		if !ok {
			return 0, false
		}
		i = w.space(end)
		if i >= len(w.src) || w.src[i] != ':' {
			return 0, false
		}
		vs := w.space(i + 1)
		kind := keyKind(key, false)
		if kind != "" {
			ve, ok := w.skip(vs, depth+1)
			if !ok {
				return 0, false
			}
			if replaceable(w.src[vs:ve], key) {
				w.replace(vs, ve, audit.AppendJCSString(nil, Marker+kind+"]"), kind)
			}
			i = ve
		} else if i, ok = w.value(vs, depth+1); !ok {
			return 0, false
		}
		i = w.space(i)
		if i < len(w.src) && w.src[i] == '}' {
			return i + 1, true
		}
		if i >= len(w.src) || w.src[i] != ',' {
			return 0, false
		}
		i = w.space(i + 1)
	}
}

// replaceable reports whether v, the value of a secret-named key, holds
// something to redact.
func replaceable(v []byte, key string) bool {
	switch string(v) {
	case "null", "true", "false", `""`, "{}", "[]":
		return false
	}
	if bytes.HasPrefix(v, []byte(`"`+Marker)) {
		return false
	}
	// {"pwd": "/home/u"} is a working directory (keyKind's PWD).
	return !(len(v) > 1 && v[1] == '/' && equalFold(lastSegment(key), "pwd"))
}

// skip walks the value at i without redacting it (its key's whole value
// is replaced) and returns its end.
func (w *jsonWalker) skip(i, depth int) (int, bool) {
	quiet := w.quiet
	w.quiet = true
	end, ok := w.value(i, depth)
	w.quiet = quiet
	return end, ok
}

func (w *jsonWalker) array(i, depth int) (int, bool) {
	i = w.space(i + 1)
	if i < len(w.src) && w.src[i] == ']' {
		return i + 1, true
	}
	var argv argvState
	for {
		if i < len(w.src) && w.src[i] == '"' {
			s, end, ok := w.str(i)
			if !ok {
				return 0, false
			}
			if !w.quiet {
				if red, kinds := argv.next(w.r, s); kinds != nil {
					w.replace(i, end, audit.AppendJCSString(nil, red), kinds...)
				}
			}
			i = end
		} else {
			argv.pending = ""
			var ok bool
			if i, ok = w.value(i, depth+1); !ok {
				return 0, false
			}
		}
		i = w.space(i)
		if i < len(w.src) && w.src[i] == ']' {
			return i + 1, true
		}
		if i >= len(w.src) || w.src[i] != ',' {
			return 0, false
		}
		i = w.space(i + 1)
	}
}

// argvState reads an array of strings as an argument vector, element by
// element: the commands seen so far (for -p) and whether the previous
// element was a flag whose value is a secret.
type argvState struct {
	ctx     int
	pending string // the kind of the secret this element is
}

// next returns element s redacted, and the kinds replaced.
func (a *argvState) next(r *Redactor, s string) (string, []string) {
	if kind := a.pending; kind != "" {
		a.pending = ""
		if s != "" && s[0] != '-' && !isVarRef(s) && !strings.HasPrefix(s, Marker) {
			if strings.HasPrefix(s, "pass:") {
				return "pass:" + Marker + kind + "]", []string{kind}
			}
			return Marker + kind + "]", []string{kind}
		}
	}
	if len(s) >= 2 && s[0] == '-' {
		switch {
		case s == "-p" && a.ctx&cmdSSHPass != 0, s == "-a" && a.ctx&cmdRedis != 0:
			a.pending = KindPassword
		case s[1] == 'p' && len(s) > 2 && a.ctx&(cmdMySQL|cmdSSHPass) != 0 && !strings.HasPrefix(s[2:], Marker),
			s[1] == 'a' && len(s) > 2 && a.ctx&cmdRedis != 0 && !strings.HasPrefix(s[2:], Marker):
			return s[:2] + Marker + KindPassword + "]", []string{KindPassword}
		case !strings.Contains(s, "="):
			ns, ne := flagName(s, 0)
			if ne == len(s) && ne-ns > 1 {
				a.pending = flagKind(s[ns:ne])
			}
		}
	}
	a.ctx |= commandOf(s)
	return r.Redact(s)
}

// str decodes the JSON string at i and returns it and its end.
func (w *jsonWalker) str(i int) (string, int, bool) {
	src := w.src
	j := i + 1
	for j < len(src) && src[j] != '"' && src[j] != '\\' && src[j] >= 0x20 {
		j++
	}
	if j < len(src) && src[j] == '"' {
		return string(src[i+1 : j]), j + 1, true
	}
	buf := append([]byte(nil), src[i+1:j]...)
	for j < len(src) {
		c := src[j]
		switch {
		case c == '"':
			return string(buf), j + 1, true
		case c < 0x20:
			return "", 0, false
		case c != '\\':
			buf = append(buf, c)
			j++
			continue
		}
		if j+1 >= len(src) {
			return "", 0, false
		}
		switch e := src[j+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(src, j+2)
			if !ok {
				return "", 0, false
			}
			j += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(src, j+2); ok && j+1 < len(src) && src[j] == '\\' && src[j+1] == 'u' {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						buf = utf8.AppendRune(buf, d)
						j += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			buf = utf8.AppendRune(buf, r)
			continue
		default:
			return "", 0, false
		}
		j += 2
	}
	return "", 0, false
}

func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	var r rune
	for _, c := range src[i : i+4] {
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
