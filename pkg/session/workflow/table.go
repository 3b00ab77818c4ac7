package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Tool is one entry of session_start.tools: how the session classifies
// calls of that tool and where it finds their target.
type Tool struct {
	Name string
	Kind Kind // the kind of a call whose action picks no ActionKinds entry
	// ActionArg names the argument whose value picks ActionKinds; "" means
	// "action", as seed 000's pulse_alerts and pulse_docker use it.
	ActionArg string
	// ActionKinds overrides Kind per action value, e.g. pulse_alerts is a
	// read but {"resolve": write, "dismiss": write} (seed 000 §7).
	ActionKinds map[string]Kind
	// TargetArgs name the arguments that carry the target resource, first
	// present wins; nil means DefaultTargetArgs (DESIGN §13).
	TargetArgs []string
	// CommandArg names a shell tool's command argument ("" = not a shell
	// tool), for the reducer's optional pkg/intent classification.
	CommandArg string
}

// DefaultTargetArgs are the arguments that name a call's target resource
// when its tool declares none (DESIGN §13), in order of preference.
var DefaultTargetArgs = []string{"target_resource_id", "resource_id", "resource", "target_host", "target"}

// Table is a session's tool table: ClassifyToolCall of seed 000 §7, the
// single source of every call's kind, built from data instead of a switch
// over names. A Table is immutable once built; a nil *Table knows no tool.
type Table struct {
	tools map[string]*entry
	names []string
}

// entry is a Tool with its lookups prepared for the call path.
type entry struct {
	Tool
	actionArg string
	actions   map[string]Kind // keys lower-cased
	targets   []string
}

// NewTable checks tools and builds their table. Errors name the tool (or
// its index when it has no name) and the field.
func NewTable(tools []Tool) (*Table, error) {
	t := &Table{tools: make(map[string]*entry, len(tools)), names: make([]string, 0, len(tools))}
	for i, tool := range tools {
		if tool.Name == "" {
			return nil, fmt.Errorf("tools[%d].name: empty", i)
		}
		at := "tool " + strconv.Quote(tool.Name)
		if _, dup := t.tools[tool.Name]; dup {
			return nil, fmt.Errorf("%s: duplicate name", at)
		}
		if !tool.Kind.valid() {
			return nil, fmt.Errorf("%s: kind: %s", at, kindNameError(tool.Kind))
		}
		e := &entry{Tool: tool, actionArg: tool.ActionArg, targets: DefaultTargetArgs}
		if e.actionArg == "" {
			e.actionArg = "action"
		}
		if len(tool.ActionKinds) > 0 {
			e.Tool.ActionKinds = make(map[string]Kind, len(tool.ActionKinds))
			e.actions = make(map[string]Kind, len(tool.ActionKinds))
			// Sorted, so that which of two clashing keys is named does
			// not depend on map order.
			for _, v := range sortedKeys(tool.ActionKinds) {
				k := tool.ActionKinds[v]
				if v == "" {
					return nil, fmt.Errorf("%s: action_kinds: empty action value", at)
				}
				if !k.valid() {
					return nil, fmt.Errorf("%s: action_kinds[%q]: %s", at, v, kindNameError(k))
				}
				low := strings.ToLower(v)
				if _, clash := e.actions[low]; clash {
					return nil, fmt.Errorf("%s: action_kinds[%q]: same action as another key, ignoring case", at, v)
				}
				e.actions[low] = k
				e.Tool.ActionKinds[v] = k
			}
		}
		if tool.TargetArgs != nil {
			if len(tool.TargetArgs) == 0 {
				return nil, fmt.Errorf("%s: target_args: empty list", at)
			}
			for j, a := range tool.TargetArgs {
				if a == "" {
					return nil, fmt.Errorf("%s: target_args[%d]: empty", at, j)
				}
			}
			e.targets = slices.Clone(tool.TargetArgs)
			e.Tool.TargetArgs = e.targets
		}
		t.tools[tool.Name] = e
		t.names = append(t.names, tool.Name)
	}
	slices.Sort(t.names)
	return t, nil
}

func kindNameError(k Kind) string {
	if k == 0 {
		return "missing (one of resolve, read, write, search)"
	}
	return "invalid kind " + strconv.Itoa(int(k))
}

func sortedKeys(m map[string]Kind) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Classify is seed 000's ClassifyToolCall: the kind of a call of name with
// args, and whether the tool is in the table. An unknown tool is a write
// (P-34, seed 000 §10): new tools must never bypass the gates. A declared
// tool's ActionKinds entry for its action argument wins over its Kind; the
// value is compared as a string, ignoring case as the seed's fsm.go does,
// so "Resolve" cannot pass for a read. Classify does not allocate unless
// the action value is a number or holds upper case.
func (t *Table) Classify(name string, args map[string]any) (Kind, bool) {
	if t == nil {
		return KindWrite, false
	}
	e, ok := t.tools[name]
	if !ok {
		return KindWrite, false
	}
	if e.actions != nil {
		if v, ok := args[e.actionArg]; ok {
			if s, ok := scalarText(v); ok {
				if k, ok := e.actions[lowerASCIIFast(s)]; ok {
					return k, true
				}
			}
		}
	}
	return e.Kind, true
}

// Tool returns the tool declared as name, or false. The result is the
// table's own copy: callers must not modify it.
func (t *Table) Tool(name string) (*Tool, bool) {
	if t == nil {
		return nil, false
	}
	e, ok := t.tools[name]
	if !ok {
		return nil, false
	}
	return &e.Tool, true
}

// Target is the resource a call names: the first of the tool's TargetArgs
// (DefaultTargetArgs for a tool without its own, or an unknown one) that
// is present and non-empty. Numbers and booleans count as their text, so
// that a numeric id is still looked up (and refused if unknown) rather than
// read as "no target"; objects and arrays name no resource.
func (t *Table) Target(name string, args map[string]any) (string, bool) {
	targets := DefaultTargetArgs
	if t != nil {
		if e, ok := t.tools[name]; ok {
			targets = e.targets
		}
	}
	for _, a := range targets {
		v, ok := args[a]
		if !ok {
			continue
		}
		if s, ok := scalarText(v); ok && s != "" {
			return s, true
		}
	}
	return "", false
}

// Names lists the declared tools, sorted.
func (t *Table) Names() []string {
	if t == nil {
		return nil
	}
	return slices.Clone(t.names)
}

// scalarText is the text of a JSON scalar argument: a string as is, a
// number in its shortest decimal form, a boolean as true/false.
func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return string(v), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// lowerASCIIFast lower-cases s, returning s itself (no allocation) when it
// holds no upper case, the usual action value.
func lowerASCIIFast(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}
