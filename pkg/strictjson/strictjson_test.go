package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/govkit/govkit/pkg/strictjson"
)

type tool struct {
	Name       string          `json:"name,omitempty"`
	RawCommand string          `json:"raw_command,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

type base struct {
	EventID string `json:"event_id"`
}

type request struct {
	base
	Tool     *tool          `json:"tool,omitempty"`
	Tags     []string       `json:"tags"`
	Counts   map[string]int `json:"counts"`
	Rows     int            `json:"rows_affected"`
	Small    int8           `json:"small"`
	Ratio    float64        `json:"ratio"`
	Post     bool           `json:"post_execution"`
	At       time.Time      `json:"at"`
	Tools    []tool         `json:"tools"`
	Any      any            `json:"any"`
	Secret   string         `json:"-"`
	Untagged string
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name, in string
		kind     strictjson.Kind
		path     string
		msg      string
	}{
		{"ok", `{"tool":{"name":"psql"},"tags":["a"],"rows_affected":3}`, 0, "", ""},
		{"ok case-insensitive", `{"Tool":{"Name":"psql"}}`, 0, "", ""},
		{"null anywhere", `{"tool":null,"tags":[null],"rows_affected":null}`, 0, "", ""},
		{"the issue's example", `{"tool":"psql -c 'select 1'"}`, strictjson.Type, "tool",
			"tool must be an object {name, raw_command, parameters}, not a string"},
		{"nested string", `{"tool":{"raw_command":1}}`, strictjson.Type, "tool.raw_command",
			"tool.raw_command must be a string, not a number"},
		{"array element", `{"tags":["a",2]}`, strictjson.Type, "tags[1]", "tags[1] must be a string, not a number"},
		{"array", `{"tags":"a"}`, strictjson.Type, "tags", "tags must be an array of strings, not a string"},
		{"array of objects", `{"tools":[{},{"name":true}]}`, strictjson.Type, "tools[1].name", "tools[1].name must be a string, not a boolean"},
		{"array of objects whole", `{"tools":{}}`, strictjson.Type, "tools",
			"tools must be an array of objects {name, raw_command, parameters}, not an object"},
		{"map value", `{"counts":{"a":1,"b c":"x"}}`, strictjson.Type, `counts["b c"]`, `counts["b c"] must be a whole number, not a string`},
		{"fraction", `{"rows_affected":1.5}`, strictjson.Type, "rows_affected", "rows_affected must be a whole number, not 1.5"},
		{"overflow", `{"small":300}`, strictjson.Type, "small", "small must be a whole number from -128 to 127, not 300"},
		{"boolean", `{"post_execution":"yes"}`, strictjson.Type, "post_execution", "post_execution must be a boolean, not a string"},
		{"time", `{"at":5}`, strictjson.Type, "at", "at must be a string (an RFC 3339 time), not a number"},
		{"time text", `{"at":"yesterday"}`, strictjson.Invalid, "", `"yesterday" is not an RFC 3339 time such as 2006-01-02T15:04:05Z`},
		{"embedded member", `{"event_id":7}`, strictjson.Type, "event_id", "event_id must be a string, not a number"},
		{"root", `["x"]`, strictjson.Type, "", "the JSON value must be an object {event_id, tool, tags, counts, rows_affected, small, ratio, post_execution, at, tools, any, Untagged}, not an array"},
		{"unknown", `{"tool":{"name":"x","rawcommand":"y"}}`, strictjson.Unknown, "tool.rawcommand",
			`unknown field "tool.rawcommand": tool takes {name, raw_command, parameters} (did you mean "raw_command"?)`},
		{"unknown top", `{"nope":1}`, strictjson.Unknown, "nope", `unknown field "nope": the object takes {event_id, tool, tags, counts, rows_affected, small, ratio, post_execution, at, tools, any, Untagged}`},
		{"dash field is unknown", `{"Secret":"x"}`, strictjson.Unknown, "Secret", ""},
		{"first error in document order", `{"nope":1,"tool":"x"}`, strictjson.Unknown, "nope", ""},
		{"syntax", "{\n  \"tool\": {,\n}", strictjson.Syntax, "", "line 2, column 12: invalid character ',' looking for beginning of object key string"},
		{"ends early", `{"tool":{"name":"x"`, strictjson.Syntax, "", "line 1, column 20: the JSON ends early (an unclosed string, object or array?)"},
		{"empty", " \n", strictjson.Empty, "", ""},
		{"trailing", `{} {}`, strictjson.Trailing, "", "line 1, column 4: data after the JSON value (send one value)"},
		{"trailing brace", "{}\n}", strictjson.Trailing, "", "line 2, column 1: data after the JSON value (send one value)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v request
			err := strictjson.Decode([]byte(tt.in), &v)
			if tt.kind == 0 {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			var e *strictjson.Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode = %v (%T), want an *Error", err, err)
			}
			if e.Kind != tt.kind || e.Path != tt.path {
				t.Errorf("kind, path = %d, %q; want %d, %q (%s)", e.Kind, e.Path, tt.kind, tt.path, e.Msg)
			}
			if tt.msg != "" && e.Error() != tt.msg {
				t.Errorf("message\n got %s\nwant %s", e.Error(), tt.msg)
			}
			noGoInternals(t, e.Error())
		})
	}
}

// noGoInternals fails when msg names Go's types or encoding/json's terms.
func noGoInternals(t *testing.T, msg string) {
	t.Helper()
	for _, bad := range []string{"Go struct", "Go value", "govapi.", "main.", "strictjson_test.", "json:", "RawMessage", "int8", "float64", "[]string", "map["} {
		if strings.Contains(msg, bad) {
			t.Errorf("message %q shows Go internals (%q)", msg, bad)
		}
	}
}

// ExplainLenient serves decoders that ignore unknown members (hook
// events): an unknown member before the bad one is passed over, not
// reported, and the message is still JSON's, never Go's.
func TestExplainLenient(t *testing.T) {
	for in, want := range map[string]string{
		`{"future":{"x":1},"tool":{"raw_command":1}}`: "tool.raw_command must be a string, not a number",
		`{"tool":"psql"}`: "tool must be an object {name, raw_command, parameters}, not a string",
		`garbage`:         "line 1, column 1: invalid character 'g' looking for beginning of value",
	} {
		var r request
		err := strictjson.ExplainLenient(json.Unmarshal([]byte(in), &r), []byte(in), reflect.TypeOf(r))
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	if err := strictjson.ExplainLenient(nil, nil, reflect.TypeOf(request{})); err != nil {
		t.Errorf("nil error explained as %v", err)
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[*tool](), "an object {name, raw_command, parameters}"},
		{reflect.TypeFor[[]tool](), "an array of objects {name, raw_command, parameters}"},
		{reflect.TypeFor[[][]int](), "an array of arrays of whole numbers"},
		{reflect.TypeFor[map[string]string](), "an object"},
		{reflect.TypeFor[uint16](), "a whole number ≥ 0"},
		{reflect.TypeFor[[]byte](), "a string (base64)"},
		{reflect.TypeFor[json.RawMessage](), "any JSON value"},
		{reflect.TypeFor[time.Duration](), "a whole number"},
	}
	for _, tt := range tests {
		if got := strictjson.Describe(tt.typ); got != tt.want {
			t.Errorf("Describe(%v) = %q, want %q", tt.typ, got, tt.want)
		}
	}
}

func TestRead(t *testing.T) {
	b, err := strictjson.Read(strings.NewReader("12345"), 5)
	if err != nil || string(b) != "12345" {
		t.Fatalf("Read at the limit = %q, %v", b, err)
	}
	_, err = strictjson.Read(strings.NewReader("123456"), 5)
	var e *strictjson.Error
	if !errors.As(err, &e) || e.Kind != strictjson.TooLarge || e.Msg != "larger than 5 bytes" {
		t.Fatalf("Read over the limit = %v", err)
	}
	// An http.MaxBytesReader's own error is the limit reached.
	rec := httptest.NewRecorder()
	r := http.MaxBytesReader(rec, io.NopCloser(bytes.NewReader(make([]byte, 2<<20))), 1<<20)
	if _, err := strictjson.Read(r, 1<<20); !errors.As(err, &e) || e.Msg != "larger than 1048576 bytes (1 MiB)" {
		t.Fatalf("Read of a MaxBytesReader = %v", err)
	}
}

// FuzzDecode: Decode accepts exactly what a strict encoding/json decoder
// accepts, and every refusal is an *Error free of Go's names.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"tool":{"name":"x"}}`, `{"tool":"x"}`, `{"tags":[1]}`, `{"counts":{"a":"b"}}`, `{"nope":1}`, `{} {}`, `{"at":"2025-01-02T03:04:05Z"}`, `[`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v request
		err := strictjson.Decode(data, &v)
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var w request
		ref := dec.Decode(&w)
		if ref == nil && len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
			ref = errors.New("trailing")
		}
		if (err == nil) != (ref == nil) {
			t.Fatalf("Decode(%q) = %v; encoding/json: %v", data, err, ref)
		}
		if err == nil {
			return
		}
		var e *strictjson.Error
		if !errors.As(err, &e) {
			t.Fatalf("Decode(%q) = %T, want *Error", data, err)
		}
		noGoInternals(t, e.Error())
	})
}

type yamlRule struct {
	Name    string         `yaml:"name"`
	Targets []string       `yaml:"target_args"`
	Limits  map[string]int `yaml:"limits"`
}

type yamlConfig struct {
	Tools []yamlRule `yaml:"tools"`
	Mode  string
}

func TestExplainYAML(t *testing.T) {
	tests := []struct{ in, want string }{
		{"tool: []\n", `line 1: unknown field "tool": takes {tools, mode} (did you mean "tools"?)`},
		{"tols: []\n", `line 1: unknown field "tols": takes {tools, mode}`},
		{"tools:\n  - name: a\n    targetArgs: [x]\n", `line 3: unknown field "targetArgs": takes {name, target_args, limits} (did you mean "target_args"?)`},
		{"tools: 3\n", "line 1: expected an array of objects {name, target_args, limits}, not a number (3)"},
		{"tools:\n  - {name: a, limits: {x: lots}}\n", `line 2: expected a whole number, not a string ("lots")`},
		{"mode: [a]\n", "line 1: expected a string, not a list"},
	}
	for _, tt := range tests {
		var c yamlConfig
		dec := yaml.NewDecoder(strings.NewReader(tt.in))
		dec.KnownFields(true)
		err := strictjson.ExplainYAML(dec.Decode(&c), reflect.TypeFor[yamlConfig]())
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: %v\nwant %s", tt.in, err, tt.want)
		}
		if err != nil {
			noGoInternals(t, err.Error())
		}
	}
}
