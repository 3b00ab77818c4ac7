package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/termtext"
)

// The shape of a Go type as JSON sees it: the member names of a struct
// come from its json tags (encoding/json's rules: an untagged field keeps
// its name, "-" drops it, an untagged embedded struct lends its members),
// so that a message lists exactly what the decoder takes and cannot drift
// from a hand-kept list.

// field is one JSON member of a struct type.
type field struct {
	name string
	typ  reflect.Type
}

var shapes sync.Map // shapeKey → []field

type shapeKey struct {
	t   reflect.Type
	tag string
}

// fieldsOf returns the JSON members of struct type t in declaration order.
func fieldsOf(t reflect.Type) []field { return taggedFields(t, "json") }

// taggedFields returns the members of struct type t named by its tag key
// (json, or yaml for ExplainYAML) in declaration order.
func taggedFields(t reflect.Type, key string) []field {
	if f, ok := shapes.Load(shapeKey{t, key}); ok {
		return f.([]field)
	}
	var out []field
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get(key)
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			ft := sf.Type
			if sf.Anonymous && name == "" || key == "yaml" && opts == "inline" {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
				if key == "yaml" { // yaml.v3 lower-cases an untagged name
					name = strings.ToLower(name)
				}
			}
			if seen[name] { // the shallower one wins, as in encoding/json
				continue
			}
			seen[name] = true
			out = append(out, field{name, ft})
		}
	}
	walk(t)
	shapes.Store(shapeKey{t, key}, out)
	return out
}

// lookup finds the member name of struct type t as encoding/json does:
// the exact name, else one that differs only in case.
func lookup(t reflect.Type, name string) (field, bool) {
	fields := fieldsOf(t)
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, name) {
			return f, true
		}
	}
	return field{}, false
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	rawType             = reflect.TypeFor[json.RawMessage]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Describe names what a value of type t is in JSON, with an article:
// "an object {name, raw_command, parameters}", "an array of strings",
// "a whole number", "a boolean".
func Describe(t reflect.Type) string {
	return describe(t, false, "json")
}

func describe(t reflect.Type, plural bool, key string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pick := func(one, many string) string {
		if plural {
			return many
		}
		return one
	}
	switch {
	case t == timeType:
		return pick("a string (an RFC 3339 time)", "strings (RFC 3339 times)")
	case t == rawType:
		return pick("any JSON value", "JSON values")
	case reflect.PointerTo(t).Implements(textUnmarshalerType) && !reflect.PointerTo(t).Implements(jsonUnmarshalerType):
		return pick("a string", "strings")
	}
	switch t.Kind() {
	case reflect.Struct:
		return pick("an object ", "objects ") + taggedList(t, key)
	case reflect.Map:
		return pick("an object", "objects")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return pick("a string (base64)", "strings (base64)")
		}
		return pick("an array of ", "arrays of ") + describe(t.Elem(), true, key)
	case reflect.String:
		return pick("a string", "strings")
	case reflect.Bool:
		return pick("a boolean", "booleans")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return pick("a whole number", "whole numbers")
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return pick("a whole number ≥ 0", "whole numbers ≥ 0")
	case reflect.Float32, reflect.Float64:
		return pick("a number", "numbers")
	}
	return pick("any JSON value", "JSON values")
}

// memberList is "{a, b, c}", the members of struct type t.
func memberList(t reflect.Type) string { return taggedList(t, "json") }

func taggedList(t reflect.Type, key string) string {
	fields := taggedFields(t, key)
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return "{" + strings.Join(names, ", ") + "}"
}

// locate walks data against t in document order, as encoding/json decodes
// it, and returns the first member whose value t does not take, or that t
// does not have; nil when it finds none (or data is not well-formed, which
// the decoder reports itself).
func locate(data []byte, t reflect.Type, allowUnknown bool) *Error {
	w := walker{allowUnknown: allowUnknown}
	return w.walk(bytes.TrimSpace(data), t, "")
}

// walker finds the first member of a value that its type does not take;
// with allowUnknown, members the type does not name are skipped (a
// decoder that ignores them, as for coding agents' hook events).
type walker struct{ allowUnknown bool }

func (w walker) walk(raw []byte, t reflect.Type, path string) *Error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil // null is every type's zero value to encoding/json
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	got := kindOf(raw[0])
	wrong := func() *Error {
		return &Error{Kind: Type, Path: path, Msg: fmt.Sprintf("%s must be %s, not %s", subject(path), Describe(t), got)}
	}
	pt := reflect.PointerTo(t)
	switch {
	case t == timeType:
		if got != "a string" {
			return wrong()
		}
		return nil
	case t == rawType, t.Kind() == reflect.Interface, pt.Implements(jsonUnmarshalerType):
		return nil // any value; the type's own decoder judges it
	case pt.Implements(textUnmarshalerType):
		if got != "a string" {
			return wrong()
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if got != "an object" {
			return wrong()
		}
		return members(raw, path, func(key string, val []byte) *Error {
			f, ok := lookup(t, key)
			if !ok && w.allowUnknown {
				return nil
			}
			if !ok {
				e := &Error{Kind: Unknown, Path: join(path, key)}
				e.Msg = fmt.Sprintf("unknown field %q: %s takes %s", e.Path, takerName(path), memberList(t))
				if len(fieldsOf(t)) == 0 {
					e.Msg = fmt.Sprintf("unknown field %q: %s takes no members", e.Path, takerName(path))
				}
				if hint := nearest(t, key); hint != "" {
					e.Msg += fmt.Sprintf(" (did you mean %q?)", hint)
				}
				return e
			}
			return w.walk(val, f.typ, join(path, f.name))
		})
	case reflect.Map:
		if got != "an object" {
			return wrong()
		}
		return members(raw, path, func(key string, val []byte) *Error {
			return w.walk(val, t.Elem(), join(path, key))
		})
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			if got != "a string" {
				return wrong()
			}
			return nil
		}
		if got != "an array" {
			return wrong()
		}
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return nil
		}
		for i, el := range elems {
			if e := w.walk(bytes.TrimSpace(el), t.Elem(), path+"["+strconv.Itoa(i)+"]"); e != nil {
				return e
			}
		}
		return nil
	case reflect.String:
		if got != "a string" {
			return wrong()
		}
	case reflect.Bool:
		if got != "a boolean" {
			return wrong()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if got != "a number" {
			return wrong()
		}
		if !fitsInteger(string(raw), t) {
			return &Error{Kind: Type, Path: path, Msg: fmt.Sprintf("%s must be %s%s, not %s", subject(path), Describe(t), intRange(t), termtext.Truncate(string(raw), 40))}
		}
	case reflect.Float32, reflect.Float64:
		if got != "a number" {
			return wrong()
		}
		if _, err := strconv.ParseFloat(string(raw), t.Bits()); err != nil {
			return &Error{Kind: Type, Path: path, Msg: fmt.Sprintf("%s is out of range: %s", subject(path), termtext.Truncate(string(raw), 40))}
		}
	}
	return nil
}

// members calls f for each member of the JSON object raw, in order.
func members(raw []byte, path string, f func(key string, val []byte) *Error) *Error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if dec.Decode(&val) != nil {
			return nil
		}
		if e := f(key, bytes.TrimSpace(val)); e != nil {
			return e
		}
	}
	return nil
}

func kindOf(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func fitsInteger(s string, t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		_, err := strconv.ParseUint(s, 10, t.Bits())
		return err == nil
	}
	_, err := strconv.ParseInt(s, 10, t.Bits())
	return err == nil
}

func intRange(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf(" up to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	}
	if t.Bits() == 64 {
		return ""
	}
	return fmt.Sprintf(" from %d to %d", -(int64(1) << (t.Bits() - 1)), int64(1)<<(t.Bits()-1)-1)
}

// join appends member key to path: "tool" + "name" is "tool.name"; a key
// that is not a plain name is quoted ("details[\"a b\"]").
func join(path, key string) string {
	if !plainName(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// subject names the member at path in a sentence.
func subject(path string) string {
	if path == "" {
		return "the JSON value"
	}
	return path
}

// takerName names the object holding an unknown member.
func takerName(path string) string {
	if path == "" {
		return "the object"
	}
	return path
}

// nearest is the member of struct type t that key most likely meant
// (closeName).
func nearest(t reflect.Type, key string) string { return nearestTagged(t, key, "json") }

func nearestTagged(t reflect.Type, key, tag string) string {
	for _, f := range taggedFields(t, tag) {
		if closeName(f.name, key) {
			return f.name
		}
	}
	return ""
}

// closeName reports whether a and b are the same name but for case, '_'
// and '-' and a plural "s" ("rawCommand", "raw-command", "tool" for
// raw_command, raw_command, tools).
func closeName(a, b string) bool {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	a, b = norm(a), norm(b)
	return a == b || a+"s" == b || a == b+"s"
}
