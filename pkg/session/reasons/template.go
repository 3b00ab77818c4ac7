package reasons

import (
	"fmt"
	"strings"
)

// Template is a recommended next call: a tool and its args, where a value
// that is exactly "{name}" is a placeholder filled at run time (seed 004
// "recommended next_calls templates").
type Template struct {
	Tool string            `json:"tool"`
	Args map[string]string `json:"args,omitempty"`
}

// Placeholders a template may use: the session's tools and the values a
// read guard knows when it recommends a call.
var Placeholders = []string{"bundle_id", "candidate_id", "end_line", "path", "query", "read_tool", "search_tool", "start_line"}

func placeholder(s string) (string, bool) {
	if len(s) < 3 || s[0] != '{' || s[len(s)-1] != '}' {
		return "", false
	}
	return s[1 : len(s)-1], true
}

func knownPlaceholder(name string) bool {
	for _, p := range Placeholders {
		if p == name {
			return true
		}
	}
	return false
}

func (t Template) validate() error {
	if t.Tool == "" {
		return fmt.Errorf("tool is empty")
	}
	check := func(where, v string) error {
		if name, ok := placeholder(v); ok && !knownPlaceholder(name) {
			return fmt.Errorf("%s: unknown placeholder {%s} (known: %s)", where, name, strings.Join(Placeholders, ", "))
		}
		return nil
	}
	if err := check("tool", t.Tool); err != nil {
		return err
	}
	for k, v := range t.Args {
		if k == "" {
			return fmt.Errorf("args: empty name")
		}
		if err := check("args."+k, v); err != nil {
			return err
		}
	}
	return nil
}

// Expand fills the template's placeholders from vars (the tool's must be a
// string); ok is false when a placeholder has no value, and the call should
// not be offered.
func (t Template) Expand(vars map[string]any) (tool string, args map[string]any, ok bool) {
	tool = t.Tool
	if name, isPH := placeholder(t.Tool); isPH {
		s, isString := vars[name].(string)
		if !isString || s == "" {
			return "", nil, false
		}
		tool = s
	}
	args = make(map[string]any, len(t.Args))
	for k, v := range t.Args {
		if name, isPH := placeholder(v); isPH {
			val, present := vars[name]
			if !present {
				return "", nil, false
			}
			args[k] = val
			continue
		}
		args[k] = v
	}
	return tool, args, true
}
