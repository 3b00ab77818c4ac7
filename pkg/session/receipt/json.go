package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting Canonical walks: tool inputs are flat in
// practice, and a deeper value is recorded as a string, not refused.
const maxDepth = 256

var errDuplicate = errors.New("duplicate key")

// Canonical returns the canonical JSON of raw (see the package doc): keys
// sorted, no insignificant space, encoding/json's escapes, numbers as
// written; "null" for empty input; and the JSON string of raw's bytes when
// raw is not exactly one JSON value or repeats a key.
func Canonical(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null")
	}
	// Inputs the reducer marshalled itself are canonical already: checking
	// that costs no allocation, where re-encoding costs dozens.
	if isCanonical(raw) {
		return raw
	}
	return canonicalSlow(raw)
}

func canonicalSlow(raw json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	out, err := canonValue(dec, make([]byte, 0, len(raw)), 0)
	if err == nil {
		if _, err = dec.Token(); err == io.EOF {
			return out
		}
	}
	// validUTF8 first: json.Marshal would write an invalid byte as the
	// escape \ufffd, which reads back as a character it writes literally.
	return appendString(nil, validUTF8(string(raw)))
}

// isCanonical reports, without allocating, whether raw is certainly in
// canonical form: valid JSON, no space outside strings, object keys in
// strictly increasing byte order, and strings that need no escape other
// than \" \\ \n \r \t and hold no <, >, &, U+2028 or U+2029. False means
// "not sure", and Canonical takes the slow path.
func isCanonical(raw []byte) bool {
	if !json.Valid(raw) || !utf8.Valid(raw) {
		return false
	}
	const maxStack = 32
	var (
		inObject [maxStack]bool   // the container at each depth is an object
		lastKey  [maxStack][]byte // the previous key at each object depth
		expKey   [maxStack]bool   // the next string at this depth is a key
		depth    = -1
	)
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case ' ', '\t', '\n', '\r':
			return false
		case '{', '[':
			depth++
			if depth >= maxStack {
				return false
			}
			inObject[depth], lastKey[depth], expKey[depth] = c == '{', nil, c == '{'
		case '}', ']':
			depth--
		case ',':
			if depth >= 0 && inObject[depth] {
				expKey[depth] = true
			}
		case '"':
			start := i + 1
			for i++; raw[i] != '"'; i++ {
				switch raw[i] {
				case '\\':
					i++
					switch raw[i] {
					case '"', '\\', 'n', 'r', 't':
					default:
						return false
					}
				case '<', '>', '&':
					return false
				case 0xe2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
					if i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xa8 || raw[i+2] == 0xa9) {
						return false
					}
				}
			}
			if depth >= 0 && expKey[depth] {
				key := raw[start:i]
				if bytes.IndexByte(key, '\\') >= 0 || lastKey[depth] != nil && bytes.Compare(lastKey[depth], key) >= 0 {
					return false
				}
				lastKey[depth], expKey[depth] = key, false
			}
		}
	}
	return true
}

func canonValue(dec *json.Decoder, buf []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errors.New("too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			type member struct {
				key string
				val []byte
			}
			var members []member
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := canonValue(dec, nil, depth+1)
				if err != nil {
					return nil, err
				}
				members = append(members, member{k, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
			buf = append(buf, '{')
			for i, m := range members {
				if i > 0 {
					if members[i-1].key == m.key {
						return nil, errDuplicate
					}
					buf = append(buf, ',')
				}
				buf = appendString(buf, m.key)
				buf = append(buf, ':')
				buf = append(buf, m.val...)
			}
			return append(buf, '}'), nil
		case '[':
			buf = append(buf, '[')
			for n := 0; dec.More(); n++ {
				if n > 0 {
					buf = append(buf, ',')
				}
				if buf, err = canonValue(dec, buf, depth+1); err != nil {
					return nil, err
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return append(buf, ']'), nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return appendString(buf, t), nil
	case json.Number:
		return append(buf, t...), nil
	case bool:
		if t {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	case nil:
		return append(buf, "null"...), nil
	}
	return nil, fmt.Errorf("unexpected token %T", tok)
}

func appendString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}

// fields are a receipt's JSON keys, exactly as spelled: encoding/json
// matches keys case-insensitively and keeps the last of two, so Parse
// checks names and duplicates itself before a tampered key can hide.
var fields = map[string]bool{
	"receipt_id": true, "session_id": true, "turn_id": true, "agent_id": true,
	"tool_id": true, "call_id": true, "ok": true, "inputs": true, "outputs": true,
	"excerpt": true, "sha256": true, "full_size": true, "truncated": true,
	"error": true, "file_refs": true, "timestamp": true, "signature_alg": true,
	"signature": true,
}

var refFields = map[string]bool{"path": true, "excerpt_sha256": true}

// required are the fields without which a JSON object is not a receipt.
var required = []string{"receipt_id", "signature_alg", "signature"}

// Parse reads one receipt from its JSON object, strictly: every key one of
// the receipt's fields exactly as spelled (file_refs' entries too), none
// twice, the types right, and receipt_id, signature_alg and signature
// present. Errors name the field. Parse checks the shape only; Verify
// checks the signature.
func Parse(data []byte) (Receipt, error) {
	var r Receipt
	seen, err := objectKeys(data, fields, "")
	if err != nil {
		return r, err
	}
	for _, f := range required {
		if _, ok := seen[f]; !ok {
			return r, fmt.Errorf("missing field %q", f)
		}
	}
	if raw, ok := seen["file_refs"]; ok {
		var refs []json.RawMessage
		if err := json.Unmarshal(raw, &refs); err != nil {
			return r, fmt.Errorf("field %q: want an array of objects", "file_refs")
		}
		for i, ref := range refs {
			if _, err := objectKeys(ref, refFields, fmt.Sprintf("file_refs[%d].", i)); err != nil {
				return r, err
			}
		}
	}
	if err := json.Unmarshal(data, &r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return r, fmt.Errorf("field %q: want %s, got %s", te.Field, te.Type, te.Value)
		}
		return r, err
	}
	return r, nil
}

// objectKeys checks that data is one JSON object whose keys are all in
// allowed, none twice, and returns its members' raw values by key.
func objectKeys(data []byte, allowed map[string]bool, prefix string) (map[string]json.RawMessage, error) {
	if !json.Valid(data) {
		var v any
		var se *json.SyntaxError
		if err := json.Unmarshal(data, &v); errors.As(err, &se) {
			return nil, fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
		}
		return nil, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		if prefix != "" {
			return nil, fmt.Errorf("field %q: want an object", strings.TrimSuffix(prefix, "."))
		}
		return nil, errors.New("not a JSON object")
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		if !allowed[k] {
			return nil, fmt.Errorf("unknown field %q", prefix+k)
		}
		if _, dup := members[k]; dup {
			return nil, fmt.Errorf("duplicate field %q", prefix+k)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		members[k] = v
	}
	return members, nil
}
