package strictjson

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/govkit/govkit/pkg/termtext"
)

// yaml.v3's strict decoding names Go types too: "field tols not found in
// type mcpgate.Config", "cannot unmarshal !!int `3` into
// []mcpgate.ToolRule". ExplainYAML words them as Explain does.
var (
	yamlUnknown = regexp.MustCompile(`^line (\d+): field (.+) not found in type (\S+)$`)
	yamlType    = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+)$")
)

// ExplainYAML maps err, from yaml.v3 decoding (KnownFields on) into a value
// of type root whose members are named by yaml tags, to messages that name
// members and types in the file's terms, each on its line: `line 3:
// unknown field "tols": takes {tools, …} (did you mean "tools"?)`, "line 5:
// expected an array of objects {name, kind, …}, not a number". Other
// errors (syntax) are returned as they are.
func ExplainYAML(err error, root reflect.Type) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	types := map[string]reflect.Type{}
	collectTypes(root, types)
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		msgs = append(msgs, yamlMessage(e, types))
	}
	return errors.New(strings.Join(msgs, "; "))
}

func yamlMessage(e string, types map[string]reflect.Type) string {
	if m := yamlUnknown.FindStringSubmatch(e); m != nil {
		msg := fmt.Sprintf("line %s: unknown field %q", m[1], m[2])
		if t, ok := types[m[3]]; ok && t.Kind() == reflect.Struct {
			msg += ": takes " + taggedList(t, "yaml")
			if hint := nearestTagged(t, m[2], "yaml"); hint != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", hint)
			}
		}
		return msg
	}
	if m := yamlType.FindStringSubmatch(e); m != nil {
		want := "another type"
		if t, ok := types[m[4]]; ok {
			want = describe(t, false, "yaml")
		}
		return fmt.Sprintf("line %s: expected %s, not %s", m[1], want, yamlKind(m[2], m[3]))
	}
	// An error this mapping does not know: keep its line, drop what
	// names Go.
	line, _, _ := strings.Cut(e, ": ")
	return line + ": a value of the wrong type"
}

// yamlKind words a YAML tag and value as a JSON type ("3" is a number).
func yamlKind(tag, value string) string {
	switch tag {
	case "str":
		return fmt.Sprintf("a string (%q)", termtext.Truncate(value, 40))
	case "int", "float":
		return "a number (" + termtext.Truncate(value, 40) + ")"
	case "bool":
		return "a boolean (" + value + ")"
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	}
	return "!!" + tag
}

// collectTypes maps the name yaml.v3 prints for each type reachable from t
// (t.String(): "mcpgate.ToolRule", "[]mcpgate.ToolRule", "*bool") to it.
func collectTypes(t reflect.Type, into map[string]reflect.Type) {
	if _, ok := into[t.String()]; ok {
		return
	}
	into[t.String()] = t
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		collectTypes(t.Elem(), into)
	case reflect.Struct:
		for _, f := range taggedFields(t, "yaml") {
			collectTypes(f.typ, into)
		}
	}
}
