package workflow

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// seedTools is seed 000's tool set (§2 Invariant 6, §7 Classification
// Function) declared as session_start would declare it.
func seedTools() []Tool {
	return []Tool{
		{Name: "pulse_query", Kind: KindResolve},
		{Name: "pulse_discovery", Kind: KindResolve},
		{Name: "pulse_metrics", Kind: KindRead},
		{Name: "pulse_read", Kind: KindRead, CommandArg: "command"},
		{Name: "pulse_control", Kind: KindWrite, CommandArg: "command"},
		{Name: "pulse_run_command", Kind: KindWrite},
		{Name: "pulse_alerts", Kind: KindRead, ActionKinds: map[string]Kind{"resolve": KindWrite, "dismiss": KindWrite}},
		{Name: "pulse_docker", Kind: KindRead, ActionKinds: map[string]Kind{"control": KindWrite, "update": KindWrite}},
		{Name: "pulse_file_edit", Kind: KindRead, ActionKinds: map[string]Kind{"read": KindRead, "write": KindWrite, "append": KindWrite},
			TargetArgs: []string{"target_host"}},
		{Name: "code_search", Kind: KindSearch},
		{Name: "ticket", Kind: KindRead, ActionArg: "op", ActionKinds: map[string]Kind{"close": KindWrite, "1": KindWrite}},
	}
}

func seedTable(t testing.TB) *Table {
	t.Helper()
	tab, err := NewTable(seedTools())
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestKindNames(t *testing.T) {
	for _, k := range []Kind{KindResolve, KindRead, KindWrite, KindSearch} {
		got, ok := ParseKind(k.String())
		if !ok || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, ok)
		}
		b, _ := json.Marshal(k)
		var back Kind
		if err := json.Unmarshal(b, &back); err != nil || back != k {
			t.Errorf("json round trip of %v: %s → %v, %v", k, b, back, err)
		}
	}
	for _, s := range []string{"", "Read", "WRITE", "exec", "user_input"} {
		if k, ok := ParseKind(s); ok {
			t.Errorf("ParseKind(%q) = %v, want no kind", s, k)
		}
	}
	var k Kind
	if err := json.Unmarshal([]byte(`"exec"`), &k); err == nil || !strings.Contains(err.Error(), `"exec"`) {
		t.Errorf("unmarshal exec: %v", err)
	}
	if Kind(0).String() != "unknown" || Kind(9).String() != "unknown" {
		t.Error("invalid kinds must print as unknown")
	}
	for s, want := range map[State]string{Resolving: "RESOLVING", Reading: "READING", Verifying: "VERIFYING", State(7): "UNKNOWN"} {
		if s.String() != want {
			t.Errorf("State(%d) = %s, want %s", s, s, want)
		}
	}
}

// TestClassify is P-33 and P-34: one function, the table, gives every
// call's kind; action-dependent kinds as seed 000 §7 lists them; unknown
// tools are writes.
func TestClassify(t *testing.T) {
	tab := seedTable(t)
	for _, tc := range []struct {
		name  string
		args  map[string]any
		want  Kind
		known bool
	}{
		{"pulse_query", nil, KindResolve, true},
		{"pulse_discovery", map[string]any{"action": "write"}, KindResolve, true}, // no action kinds: the action is ignored
		{"pulse_metrics", nil, KindRead, true},
		{"pulse_read", map[string]any{"action": "exec", "command": "rm -rf /"}, KindRead, true}, // kind, never content (P-32)
		{"pulse_control", map[string]any{"command": "grep -i error /var/log/*.log"}, KindWrite, true},
		{"pulse_run_command", nil, KindWrite, true},
		{"pulse_alerts", map[string]any{"action": "resolve"}, KindWrite, true},
		{"pulse_alerts", map[string]any{"action": "dismiss"}, KindWrite, true},
		{"pulse_alerts", map[string]any{"action": "list"}, KindRead, true},
		{"pulse_alerts", nil, KindRead, true},
		{"pulse_alerts", map[string]any{"action": "Resolve"}, KindWrite, true}, // case cannot dodge a write
		{"pulse_alerts", map[string]any{"action": "DISMISS"}, KindWrite, true},
		{"pulse_alerts", map[string]any{"action": []any{"resolve"}}, KindRead, true}, // not a scalar: the tool's kind
		{"pulse_alerts", map[string]any{"action": nil}, KindRead, true},
		{"pulse_docker", map[string]any{"action": "control"}, KindWrite, true},
		{"pulse_docker", map[string]any{"action": "update"}, KindWrite, true},
		{"pulse_docker", map[string]any{"action": "services"}, KindRead, true},
		{"pulse_file_edit", map[string]any{"action": "read"}, KindRead, true},
		{"pulse_file_edit", map[string]any{"action": "write"}, KindWrite, true},
		{"pulse_file_edit", map[string]any{"action": "append"}, KindWrite, true},
		{"code_search", nil, KindSearch, true},
		{"ticket", map[string]any{"op": "close"}, KindWrite, true},
		{"ticket", map[string]any{"action": "close"}, KindRead, true}, // ActionArg is op
		{"ticket", map[string]any{"op": float64(1)}, KindWrite, true}, // compared as a string
		{"ticket", map[string]any{"op": json.Number("1")}, KindWrite, true},
		{"ticket", map[string]any{"op": 1}, KindWrite, true},
		{"pulse_new_tool", nil, KindWrite, false},
		{"pulse_new_tool", map[string]any{"action": "get"}, KindWrite, false},
		{"", nil, KindWrite, false},
		{"PULSE_READ", nil, KindWrite, false}, // names are exact
	} {
		got, known := tab.Classify(tc.name, tc.args)
		if got != tc.want || known != tc.known {
			t.Errorf("Classify(%q, %v) = %v, %v; want %v, %v", tc.name, tc.args, got, known, tc.want, tc.known)
		}
	}
	var none *Table
	if k, known := none.Classify("pulse_read", nil); k != KindWrite || known {
		t.Errorf("nil table: %v, %v; want write, unknown", k, known)
	}
}

func TestNewTableErrors(t *testing.T) {
	for _, tc := range []struct {
		tools []Tool
		want  string
	}{
		{[]Tool{{Name: "a", Kind: KindRead}, {Kind: KindRead}}, "tools[1].name: empty"},
		{[]Tool{{Name: "a", Kind: KindRead}, {Name: "a", Kind: KindWrite}}, `tool "a": duplicate name`},
		{[]Tool{{Name: "a"}}, `tool "a": kind: missing`},
		{[]Tool{{Name: "a", Kind: 9}}, `tool "a": kind: invalid kind 9`},
		{[]Tool{{Name: "a", Kind: KindRead, ActionKinds: map[string]Kind{"x": 0}}}, `tool "a": action_kinds["x"]: missing`},
		{[]Tool{{Name: "a", Kind: KindRead, ActionKinds: map[string]Kind{"": KindWrite}}}, `tool "a": action_kinds: empty action value`},
		{[]Tool{{Name: "a", Kind: KindRead, ActionKinds: map[string]Kind{"Close": KindRead, "close": KindWrite}}}, `tool "a": action_kinds["close"]: same action`},
		{[]Tool{{Name: "a", Kind: KindRead, TargetArgs: []string{}}}, `tool "a": target_args: empty list`},
		{[]Tool{{Name: "a", Kind: KindRead, TargetArgs: []string{"host", ""}}}, `tool "a": target_args[1]: empty`},
	} {
		_, err := NewTable(tc.tools)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("NewTable(%+v) = %v, want %q", tc.tools, err, tc.want)
		}
	}
	if tab, err := NewTable(nil); err != nil || len(tab.Names()) != 0 {
		t.Errorf("empty table: %v, %v", tab.Names(), err)
	}
}

func TestTableOwnsItsData(t *testing.T) {
	tools := []Tool{{Name: "alerts", Kind: KindRead, ActionKinds: map[string]Kind{"resolve": KindWrite}, TargetArgs: []string{"host"}}}
	tab, err := NewTable(tools)
	if err != nil {
		t.Fatal(err)
	}
	tools[0].ActionKinds["resolve"] = KindRead
	tools[0].TargetArgs[0] = "other"
	tools[0].Kind = KindWrite
	if k, _ := tab.Classify("alerts", map[string]any{"action": "resolve"}); k != KindWrite {
		t.Errorf("the caller's map changed the table: %v", k)
	}
	if k, _ := tab.Classify("alerts", nil); k != KindRead {
		t.Errorf("the caller's slice changed the table: %v", k)
	}
	if got, _ := tab.Target("alerts", map[string]any{"host": "h"}); got != "h" {
		t.Errorf("target args changed: %q", got)
	}
	tool, ok := tab.Tool("alerts")
	if !ok || tool.Name != "alerts" || tool.ActionKinds["resolve"] != KindWrite {
		t.Errorf("Tool = %+v, %v", tool, ok)
	}
	if _, ok := tab.Tool("nope"); ok {
		t.Error("Tool(nope) found")
	}
}

func TestNames(t *testing.T) {
	tab := seedTable(t)
	names := tab.Names()
	if !slices.IsSorted(names) || len(names) != len(seedTools()) {
		t.Fatalf("Names = %v", names)
	}
	names[0] = "changed"
	if tab.Names()[0] == "changed" {
		t.Error("Names returned the table's own slice")
	}
}

func TestTarget(t *testing.T) {
	tab := seedTable(t)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
		ok   bool
	}{
		{"pulse_control", map[string]any{"target": "t", "resource_id": "r", "target_resource_id": "lxc:delly:101"}, "lxc:delly:101", true},
		{"pulse_control", map[string]any{"target": "t", "resource_id": "r"}, "r", true},
		{"pulse_control", map[string]any{"resource": "homepage"}, "homepage", true},
		{"pulse_control", map[string]any{"target_host": "delly", "target": "x"}, "delly", true},
		{"pulse_control", map[string]any{"target": "x"}, "x", true},
		{"pulse_control", map[string]any{"resource_id": "", "target": "x"}, "x", true}, // empty is absent
		{"pulse_control", map[string]any{"resource_id": float64(101)}, "101", true},    // a numeric id is still a target
		{"pulse_control", map[string]any{"resource_id": map[string]any{"a": 1}}, "", false},
		{"pulse_control", map[string]any{"command": "ls"}, "", false},
		{"pulse_control", nil, "", false},
		{"pulse_file_edit", map[string]any{"target_host": "homepage-docker", "resource_id": "r"}, "homepage-docker", true},
		{"pulse_file_edit", map[string]any{"resource_id": "r"}, "", false}, // its own list only
		{"unknown_tool", map[string]any{"target": "x"}, "x", true},
	} {
		got, ok := tab.Target(tc.tool, tc.args)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Target(%s, %v) = %q, %v; want %q, %v", tc.tool, tc.args, got, ok, tc.want, tc.ok)
		}
	}
	var none *Table
	if got, ok := none.Target("x", map[string]any{"resource": "r"}); got != "r" || !ok {
		t.Errorf("nil table Target = %q, %v", got, ok)
	}
}

// FuzzClassify: whatever the action value, a declared tool's kind is its
// own or one of its action kinds, and an unknown tool is a write.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"resolve", "Resolve", "dismiss", "list", "", "İ", "close", "1"} {
		f.Add("pulse_alerts", s)
		f.Add("ticket", s)
	}
	f.Add("pulse_new_tool", "get")
	tab := seedTable(f)
	f.Fuzz(func(t *testing.T, name, action string) {
		args := map[string]any{"action": action, "op": action}
		k, known := tab.Classify(name, args)
		tool, ok := tab.Tool(name)
		if ok != known {
			t.Fatalf("Classify known=%v, Tool ok=%v", known, ok)
		}
		if !known {
			if k != KindWrite {
				t.Fatalf("unknown tool %q classified %v", name, k)
			}
			return
		}
		if k == tool.Kind {
			return
		}
		for v, ak := range tool.ActionKinds {
			if ak == k && strings.ToLower(v) == strings.ToLower(action) {
				return
			}
		}
		t.Fatalf("Classify(%q, %q) = %v: neither the tool's kind nor a matching action kind", name, action, k)
	})
}
