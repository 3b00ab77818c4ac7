// Package strictjson decodes one JSON value strictly and says what is wrong with the input in JSON's terms, never Go's.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/termtext"
)

// Kind is what rule an input broke. Callers map it to their answer (auditd:
// 400 invalid_body, 413 body_too_large).
type Kind int

const (
	Syntax   Kind = iota + 1 // not well-formed JSON, or it ends early
	Empty                    // nothing but white space
	Trailing                 // more than one JSON value
	Type                     // a member's value is not of the type it takes
	Unknown                  // a member the receiving type does not have
	TooLarge                 // over the reader's limit
	Invalid                  // a value its type's own decoder refused
)

// Error is an input refused, in terms a client understands: Path is the
// member at fault in JSON names ("tool.raw_command", "resource.tags[1]";
// "" for the value as a whole), Line and Column (1-based, 0 when unknown)
// where the JSON went wrong, and Msg what is wrong. Error() never names a
// Go type or field (issue 20: "No Go internals in user-facing errors").
type Error struct {
	Kind         Kind
	Path         string
	Line, Column int
	Msg          string
}

// Error is Msg, after the line and column when known.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return e.Msg
}

// Decode decodes data, one JSON value, into v (a pointer) as auditd takes
// request bodies: an unknown member is refused, as are white space only
// and data after the value. Every error is an *Error.
func Decode(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		panic("strictjson: Decode needs a pointer") // a programming error, never input's
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{Kind: Empty, Msg: "empty: expected " + Describe(t.Elem())}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Explain(err, data, t.Elem())
	}
	off := int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[off:], " \t\r\n"); len(rest) > 0 {
		at := len(data) - len(rest)
		line, col := position(data, at)
		return &Error{Kind: Trailing, Line: line, Column: col, Msg: "data after the JSON value (send one value)"}
	}
	return nil
}

// Read reads all of r, refusing more than limit bytes with a TooLarge
// *Error. r may be an http.MaxBytesReader (its error is taken as the limit
// reached) or any reader (Read stops one byte past limit).
func Read(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb), err == nil && int64(len(b)) > limit:
		return nil, TooLargeError(limit)
	case err != nil:
		return nil, err
	}
	return b, nil
}

// TooLargeError is the TooLarge *Error for a limit of limit bytes.
func TooLargeError(limit int64) *Error {
	return &Error{Kind: TooLarge, Msg: "larger than " + size(limit)}
}

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Explain maps err, from encoding/json decoding data into a value of type
// t, to an *Error; the one mapping of decoder errors to messages (issue
// 20). encoding/json names Go types and fields ("cannot unmarshal string
// into Go struct field DecisionRequest.tool of type govapi.Tool"), so a
// type error or an unknown member is found again by walking data against
// t, which names the member by its JSON path and says what it takes, in
// JSON's types: "tool must be an object {name, raw_command, parameters},
// not a string".
func Explain(err error, data []byte, t reflect.Type) error {
	return explain(err, data, t, false)
}

// ExplainLenient is Explain for a decoder that ignores members t does not
// name (no DisallowUnknownFields): the coding agents' hook events, which
// grow fields govkit need not know.
func ExplainLenient(err error, data []byte, t reflect.Type) error {
	return explain(err, data, t, true)
}

func explain(err error, data []byte, t reflect.Type, allowUnknown bool) error {
	if err == nil {
		return nil
	}
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
		pe *time.ParseError
		e  *Error
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &se):
		at := int(se.Offset) - 1 // the offset is past the byte at fault
		line, col := position(data, max(at, 0))
		return &Error{Kind: Syntax, Line: line, Column: col, Msg: se.Error()}
	case errors.Is(err, io.EOF) && len(bytes.TrimSpace(data)) == 0:
		return &Error{Kind: Empty, Msg: "empty: expected " + Describe(t)}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		line, col := position(data, len(data))
		return &Error{Kind: Syntax, Line: line, Column: col, Msg: "the JSON ends early (an unclosed string, object or array?)"}
	}
	if found := locate(data, t, allowUnknown); found != nil {
		return found
	}
	switch {
	case errors.As(err, &te):
		// Not found again (a type the walk does not model): say what came,
		// never the Go type it was meant for.
		return &Error{Kind: Type, Msg: fmt.Sprintf("a %s is not what the member at byte %d takes", jsonValueName(te.Value), te.Offset)}
	case errors.As(err, &pe):
		return &Error{Kind: Invalid, Msg: fmt.Sprintf("%q is not an RFC 3339 time such as 2006-01-02T15:04:05Z", termtext.Truncate(pe.Value, 40))}
	}
	// A type's own decoder refused a value; its message is ours
	// (govkit's types) but may carry encoding/json's prefix.
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.Contains(msg, "Go ") {
		msg = "a member's value is not what it takes"
	}
	return &Error{Kind: Invalid, Msg: msg}
}

// position is the 1-based line and column (in bytes) of data[at].
func position(data []byte, at int) (line, col int) {
	at = min(at, len(data))
	before := data[:at]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = at - bytes.LastIndexByte(before, '\n')
	return line, col
}

// jsonValueName turns encoding/json's description of a value ("string",
// "number 1.5", "bool") into JSON's words.
func jsonValueName(v string) string {
	switch {
	case v == "bool":
		return "boolean"
	case strings.HasPrefix(v, "number"):
		return "number"
	}
	return v
}
