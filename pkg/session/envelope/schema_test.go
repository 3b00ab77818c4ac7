package envelope

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestNewSchemaErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools map[string]map[string]ArgSpec
		want  string
	}{
		{"unknown type", map[string]map[string]ArgSpec{"t": {"a": {Type: "integer"}}}, `tool "t": arg "a": type "integer" is not one of`},
		{"no type", map[string]map[string]ArgSpec{"t": {"a": {}}}, `tool "t": arg "a": type ""`},
		{"enum on int", map[string]map[string]ArgSpec{"t": {"a": {Type: TypeInt, Enum: []string{"1"}}}}, `arg "a": enum is only for string`},
		{"duplicate enum value", map[string]map[string]ArgSpec{"t": {"a": {Type: TypeString, Enum: []string{"x", "x"}}}}, `enum value "x" listed twice`},
		{"empty enum", map[string]map[string]ArgSpec{"t": {"a": {Type: TypeString, Enum: []string{}}}}, "empty enum"},
		{"empty arg name", map[string]map[string]ArgSpec{"t": {"": {Type: TypeString}}}, `tool "t": empty arg name`},
		{"empty tool id", map[string]map[string]ArgSpec{"": nil}, `tool "": invalid tool id`},
		{"tool id with a blank", map[string]map[string]ArgSpec{"a b": nil}, `tool "a b": invalid tool id`},
		{"every error, sorted", map[string]map[string]ArgSpec{"z": {"a": {Type: "x"}}, "b": {"a": {Type: "y"}}}, "tool \"b\": arg \"a\": type \"y\" is not one of string, int, number, bool, string[]\ntool \"z\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSchema(tc.tools)
			if err == nil || s != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSchemaLookups(t *testing.T) {
	s := seedSchema(t)
	want := []string{"canon_checker", "file_locator", "free_form", "outline_analyzer", "ping", "search_issues", "task_router"}
	if got := s.Names(); !slices.Equal(got, want) {
		t.Fatalf("names %v", got)
	}
	if !s.Has("ping") || s.Has("Ping") || s.Has("") {
		t.Fatal("Has")
	}
	var none *Schema
	if none.Has("ping") || none.Names() != nil {
		t.Fatal("nil schema")
	}
	// The caller's enum slice is not the schema's.
	enum := []string{"a"}
	s2, err := NewSchema(map[string]map[string]ArgSpec{"t": {"m": {Type: TypeString, Enum: enum}}})
	if err != nil {
		t.Fatal(err)
	}
	enum[0] = "b"
	if _, rej := Parse(call("t", `{"m":"a"}`), nonce, s2, false); rej != nil {
		t.Fatalf("schema changed with the caller's slice: %+v", *rej)
	}
}

// TestPublishedSchemas: the embedded JSON Schemas say what Parse enforces
// (G-31): the same fields, all required, nothing else allowed.
func TestPublishedSchemas(t *testing.T) {
	type obj struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
		OneOf                []json.RawMessage          `json:"oneOf"`
	}
	check := func(name string, raw json.RawMessage, fields ...string) {
		t.Helper()
		var o obj
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var keys []string
		for k := range o.Properties {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		req := slices.Clone(o.Required)
		slices.Sort(req)
		want := slices.Sorted(slices.Values(fields))
		if !slices.Equal(keys, want) || !slices.Equal(req, want) || o.AdditionalProperties == nil || *o.AdditionalProperties {
			t.Fatalf("%s: properties %v required %v additionalProperties %v", name, keys, o.Required, o.AdditionalProperties)
		}
	}
	check("tool call", ToolCallSchemaJSON(), "tool", "args", "nonce")
	var d obj
	if err := json.Unmarshal(DecisionSchemaJSON(), &d); err != nil || len(d.OneOf) != 2 {
		t.Fatalf("decision: %v %d", err, len(d.OneOf))
	}
	check("decision tool", d.OneOf[0], "action", "tool", "args", "nonce")
	check("decision final", d.OneOf[1], "action", "nonce")

	// A copy each time: the caller cannot change the package's.
	b := ToolCallSchemaJSON()
	b[0] = 'x'
	if ToolCallSchemaJSON()[0] != '{' {
		t.Fatal("ToolCallSchemaJSON shares its bytes")
	}
}

// TestSessionSchemas: a registry's own schemas, pinned by golden files
// (go test -run TestSessionSchemas -update), are deterministic and valid
// JSON; the nonce is a constant when given.
func TestSessionSchemas(t *testing.T) {
	s := seedSchema(t)
	for _, tc := range []struct {
		file string
		got  []byte
	}{
		{"testdata/tool_call_session.schema.json", s.ToolCallSchema(nonce)},
		{"testdata/decision_session.schema.json", s.DecisionSchema(nonce)},
	} {
		if !json.Valid(tc.got) || !bytes.Contains(tc.got, []byte(`{"const":"`+nonce+`"}`)) {
			t.Fatalf("%s: %s", tc.file, tc.got)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, tc.got, "", "  "); err != nil {
			t.Fatal(err)
		}
		pretty.WriteByte('\n')
		if *update {
			if err := os.WriteFile(tc.file, pretty.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(tc.file)
		if err != nil || !bytes.Equal(pretty.Bytes(), want) {
			t.Errorf("%s differs (go test -run TestSessionSchemas -update): %v", tc.file, err)
		}
	}
	if !bytes.Equal(s.ToolCallSchema(nonce), seedSchema(t).ToolCallSchema(nonce)) {
		t.Fatal("not deterministic")
	}
	// One tool: the object itself, no oneOf; no nonce: any non-empty string.
	one, err := NewSchema(map[string]map[string]ArgSpec{"ping": {}})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(one.ToolCallSchema(""), &doc); err != nil {
		t.Fatal(err)
	}
	props, _ := doc["properties"].(map[string]any)
	if doc["oneOf"] != nil || !reflect.DeepEqual(props["nonce"], map[string]any{"type": "string", "minLength": 1.0}) ||
		!reflect.DeepEqual(props["args"], map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}) {
		t.Fatalf("%v", doc)
	}
	// No tools: nothing is a valid call.
	empty, _ := NewSchema(nil)
	if got := string(empty.ToolCallSchema(nonce)); !strings.Contains(got, `"not":{}`) {
		t.Fatal(got)
	}
}
