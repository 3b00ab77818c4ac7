package envelope

import (
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
)

// ArgSpec declares one argument of a tool (seed 002 Tool Schema Registry,
// ToolArgSpec): its type, the values it may take and whether it must be
// given. Type is one of string, int, number, bool, string[]; Enum applies
// to string and to each element of string[].
type ArgSpec struct {
	Type     string   `json:"type"`
	Enum     []string `json:"enum,omitempty"`
	Required bool     `json:"required,omitempty"`
}

// Arg types, as the seed's file_locator and search_issues name them.
const (
	TypeString      = "string"
	TypeInt         = "int"
	TypeNumber      = "number"
	TypeBool        = "bool"
	TypeStringArray = "string[]"
)

// maxExactInt is the largest integer a float64 holds exactly: an "int"
// beyond it could not be told from its neighbours.
const maxExactInt = 1 << 53

// Schema is the tool registry a turn's calls are checked against: which tool
// ids exist and, per tool, which args (seed 002: "tool must be registered,
// args must match schema"; unknown keys are rejected).
//
// A tool declared with a nil arg map has no arg schema: its args must be a
// JSON object but are not checked further (a session may register tools
// whose arguments it does not know; the registry and the nonce still
// hold). A tool declared with an empty, non-nil map takes no args at all.
type Schema struct {
	tools map[string]*toolSpec
	names []string // sorted
	// calls are the lower-cased spellings of each tool as a function name,
	// underscore and hyphen forms (the seed's prompt ids are hyphenated,
	// its runtime ids underscored), sorted: "file_locator(" in prose is
	// tool syntax (seed 002 Quick Smoke Tests).
	calls []string
}

type toolSpec struct {
	checked  bool
	args     map[string]ArgSpec
	required []string // sorted
}

// NewSchema builds the registry. Errors name the tool and the arg.
func NewSchema(tools map[string]map[string]ArgSpec) (*Schema, error) {
	s := &Schema{tools: make(map[string]*toolSpec, len(tools))}
	for name := range tools {
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	var errs []error
	calls := map[string]bool{}
	for _, name := range s.names {
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, " \t\r\n\"") {
			errs = append(errs, errors.New("tool "+strconv.Quote(name)+": invalid tool id"))
			continue
		}
		args := tools[name]
		t := &toolSpec{checked: args != nil, args: make(map[string]ArgSpec, len(args))}
		keys := make([]string, 0, len(args))
		for k := range args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			spec := args[k]
			if k == "" {
				errs = append(errs, errors.New("tool "+strconv.Quote(name)+": empty arg name"))
				continue
			}
			if err := spec.validate(); err != nil {
				errs = append(errs, errors.New("tool "+strconv.Quote(name)+": arg "+strconv.Quote(k)+": "+err.Error()))
				continue
			}
			spec.Enum = slices.Clone(spec.Enum) // the caller's slice stays the caller's
			t.args[k] = spec
			if spec.Required {
				t.required = append(t.required, k)
			}
		}
		s.tools[name] = t
		lower := strings.ToLower(name)
		calls[lower] = true
		calls[strings.ReplaceAll(lower, "_", "-")] = true
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for c := range calls {
		s.calls = append(s.calls, c)
	}
	sort.Strings(s.calls)
	return s, nil
}

func (a ArgSpec) validate() error {
	switch a.Type {
	case TypeString, TypeStringArray:
	case TypeInt, TypeNumber, TypeBool:
		if a.Enum != nil {
			return errors.New("enum is only for string and string[]")
		}
	default:
		return errors.New("type " + strconv.Quote(a.Type) + " is not one of string, int, number, bool, string[]")
	}
	for i, e := range a.Enum {
		if slices.Contains(a.Enum[:i], e) {
			return errors.New("enum value " + strconv.Quote(e) + " listed twice")
		}
	}
	if a.Enum != nil && len(a.Enum) == 0 {
		return errors.New("empty enum admits no value")
	}
	return nil
}

// Has reports whether tool is registered.
func (s *Schema) Has(tool string) bool {
	if s == nil {
		return false
	}
	_, ok := s.tools[tool]
	return ok
}

// Names lists the registered tool ids, sorted.
func (s *Schema) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

func (s *Schema) tool(name string) (*toolSpec, bool) {
	if s == nil {
		return nil, false
	}
	t, ok := s.tools[name]
	return t, ok
}

// argPair is one member of a call's args, in the order the model wrote it:
// the first offending key is the one a rejection names, whatever the map
// order.
type argPair struct {
	key string
	val any
}

// check validates args against the tool's specs and builds the args map.
func (t *toolSpec) check(pairs []argPair) (map[string]any, *Rejection) {
	m := make(map[string]any, len(pairs))
	for _, p := range pairs {
		if t.checked {
			spec, ok := t.args[p.key]
			if !ok {
				return nil, reject(InvalidArgs, FormatError, "unknown arg "+quoteName(p.key))
			}
			if why := spec.accepts(p.val); why != "" {
				return nil, reject(InvalidArgs, FormatError, "arg "+quoteName(p.key)+": "+why)
			}
		}
		m[p.key] = p.val
	}
	for _, k := range t.required {
		if _, ok := m[k]; !ok {
			return nil, reject(InvalidArgs, FormatError, "missing required arg "+quoteName(k))
		}
	}
	return m, nil
}

// accepts says why v does not fit the spec ("" = it fits).
func (a ArgSpec) accepts(v any) string {
	switch a.Type {
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return "want string"
		}
		if a.Enum != nil && !slices.Contains(a.Enum, s) {
			return "value not one of " + strings.Join(a.Enum, "|")
		}
	case TypeInt:
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) || math.Abs(f) > maxExactInt {
			return "want int"
		}
	case TypeNumber:
		if _, ok := v.(float64); !ok {
			return "want number"
		}
	case TypeBool:
		if _, ok := v.(bool); !ok {
			return "want bool"
		}
	case TypeStringArray:
		list, ok := v.([]any)
		if !ok {
			return "want string[]"
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return "want string[]"
			}
			if a.Enum != nil && !slices.Contains(a.Enum, s) {
				return "element not one of " + strings.Join(a.Enum, "|")
			}
		}
	}
	return ""
}

// quoteName quotes a model-supplied name for a rejection's detail, cut to
// 64 bytes: a detail names the key, it never echoes a whole input
// (DESIGN §3).
func quoteName(s string) string { return termtext.Quote(s, 64) }
