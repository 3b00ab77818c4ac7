package convtools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/session/response"
)

// TestDefinitions: the four tools' parameters are closed JSON Schemas whose
// required members exist, and nothing in them depends on the mode
// (REQ-BED-017, B-17b): Definitions takes none, and answers the same every
// time.
func TestDefinitions(t *testing.T) {
	defs := Definitions()
	wantKinds := map[string]string{Bash: "write", ReadFile: "read", Search: "search", Patch: "write"}
	if len(defs) != len(wantKinds) {
		t.Fatalf("%d definitions, want %d", len(defs), len(wantKinds))
	}
	for _, d := range defs {
		t.Run(d.Name, func(t *testing.T) {
			if wantKinds[d.Name] != d.Kind {
				t.Errorf("kind %q, want %q", d.Kind, wantKinds[d.Name])
			}
			if strings.TrimSpace(d.Description) == "" {
				t.Error("no description")
			}
			var schema struct {
				Type                 string                     `json:"type"`
				Properties           map[string]json.RawMessage `json:"properties"`
				Required             []string                   `json:"required"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
			}
			dec := json.NewDecoder(strings.NewReader(string(d.Parameters)))
			if err := dec.Decode(&schema); err != nil || dec.More() {
				t.Fatalf("parameters are not one JSON object: %v\n%s", err, d.Parameters)
			}
			if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
				t.Errorf("want a closed object schema, got type %q additionalProperties %v", schema.Type, schema.AdditionalProperties)
			}
			for _, r := range schema.Required {
				if _, ok := schema.Properties[r]; !ok {
					t.Errorf("required %q is not a property", r)
				}
			}
			for name, p := range schema.Properties {
				var prop struct {
					Type        string `json:"type"`
					Description string `json:"description"`
				}
				if err := json.Unmarshal(p, &prop); err != nil || prop.Type == "" || prop.Description == "" {
					t.Errorf("property %q: %s (%v)", name, p, err)
				}
			}
			// Every property is one the decoder takes: the schema and the
			// arguments cannot drift apart.
			obj := map[string]any{}
			for name, p := range schema.Properties {
				var prop struct{ Type string }
				_ = json.Unmarshal(p, &prop)
				obj[name] = map[string]any{"string": "x", "integer": 1}[prop.Type]
			}
			raw, _ := json.Marshal(obj)
			if err := decodeArgs(raw, argsFor(d.Name)); err != nil && strings.Contains(err.Error(), "unknown field") {
				t.Errorf("the decoder refuses a schema property: %v", err)
			}
		})
	}
	if again := Definitions(); !reflect.DeepEqual(defs, again) {
		t.Error("Definitions changed between calls")
	}
	if strings.Contains(string(mustJSON(t, defs)), "unrestricted mode") {
		t.Error("a description names a current mode")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func argsFor(tool string) any {
	switch tool {
	case Bash:
		return &bashArgs{}
	case ReadFile:
		return &readArgs{}
	case Search:
		return &searchArgs{}
	}
	return &patchArgs{}
}

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		tool, raw string
		err       string // "" for accepted
	}{
		{Bash, `{"command":"ls"}`, ""},
		{Bash, ` {"command":"ls"} `, ""},
		{Bash, `{"command":"   "}`, "command is empty"},
		{Bash, `{"command":1}`, "cannot unmarshal number"},
		{Bash, `{"command":"ls","timeout":5}`, `unknown field "timeout"`},
		{Bash, `{"command":"ls"}{}`, "data after"},
		{Bash, `["ls"]`, "JSON object"},
		{Bash, ``, "JSON object"},
		{Bash, `null`, "JSON object"},
		{Bash, `{"command":"ls"`, "bad arguments"},
		{ReadFile, `{"path":"a","start_line":2,"end_line":2}`, ""},
		{ReadFile, `{"candidate_id":"cand_1"}`, ""},
		{ReadFile, `{"path":"a","start_line":1.5}`, "cannot unmarshal number"},
		{ReadFile, `{"path":"a","end_line":0}`, "count from 1"},
		{ReadFile, `{"start_line":1}`, "give path"},
		{Search, `{"query":"x","path":"sub"}`, ""},
		{Search, `{"query":"x\ry"}`, "spans lines"},
		{Search, `{"path":"sub"}`, `missing required argument "query"`},
		{Patch, `{"path":"a","old_text":"","new_text":""}`, ""},
		{Patch, `{"path":"a","new_text":""}`, `missing required argument "old_text"`},
		{Patch, `{"old_text":"","new_text":""}`, `missing required argument "path"`},
		{Patch, `{"path":"a","old_text":"x","new_text":"y","replace_all":true}`, `unknown field "replace_all"`},
	}
	for _, tt := range tests {
		err := decodeArgs(json.RawMessage(tt.raw), argsFor(tt.tool))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s %s: %v", tt.tool, tt.raw, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s %s: error %v, want one naming %q", tt.tool, tt.raw, err, tt.err)
		}
	}
}

// FuzzDecodeArgs: the decoder never panics, and what it accepts satisfies
// the schema's required members (seed corpus in testdata/fuzz).
func FuzzDecodeArgs(f *testing.F) {
	f.Add(uint8(1), []byte(`{"path":"a","start_line":3,"end_line":1}`))
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tools := []string{Bash, ReadFile, Search, Patch}
		tool := tools[int(which)%len(tools)]
		into := argsFor(tool)
		if err := decodeArgs(raw, into); err != nil {
			return
		}
		switch a := into.(type) {
		case *bashArgs:
			if a.Command == nil || strings.TrimSpace(*a.Command) == "" {
				t.Fatalf("accepted bash %q without a command", raw)
			}
		case *readArgs:
			if a.Path == "" && a.CandidateID == "" {
				t.Fatalf("accepted read_file %q without a target", raw)
			}
			if a.StartLine != nil && a.EndLine != nil && *a.EndLine < *a.StartLine {
				t.Fatalf("accepted read_file %q with a backwards range", raw)
			}
		case *searchArgs:
			if a.Query == nil || *a.Query == "" || strings.ContainsAny(*a.Query, "\r\n") {
				t.Fatalf("accepted search %q", raw)
			}
		case *patchArgs:
			if a.Path == nil || a.OldText == nil || a.NewText == nil {
				t.Fatalf("accepted patch %q without a member", raw)
			}
		}
	})
}

func TestResponse(t *testing.T) {
	tests := []struct {
		res           Result
		ok            bool
		code          string
		blocked, fail bool
		data          string
	}{
		{res: Result{OK: true, Output: "x"}, ok: true, data: `{"output":"x"}`},
		{res: Result{OK: true, Output: "a:1: q\n", Paths: []string{"a"}}, ok: true, data: `{"output":"a:1: q\n","paths":["a"]}`},
		{res: Result{Code: response.ExecutionFailed, Error: "exit code 2", Output: "boom"}, code: response.ExecutionFailed, fail: true},
		{res: Result{Code: response.ActionNotAllowed, Error: "patch is disabled"}, code: response.ActionNotAllowed, blocked: true},
		{res: Result{Error: "odd"}, code: response.ExecutionFailed, fail: true},
	}
	for _, tt := range tests {
		r := tt.res.Response()
		if r.OK != tt.ok {
			t.Errorf("%+v: ok %v", tt.res, r.OK)
		}
		if tt.ok {
			if got := string(mustJSON(t, r.Data)); got != tt.data {
				t.Errorf("data %s, want %s", got, tt.data)
			}
			continue
		}
		if r.Error == nil || r.Error.Code != tt.code || r.Error.Blocked != tt.blocked || r.Error.Failed != tt.fail || !strings.Contains(r.Error.Message, tt.res.Error) {
			t.Errorf("%+v: error %+v", tt.res, r.Error)
		}
	}
}
