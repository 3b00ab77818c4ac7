package workflow

import (
	"strconv"
	"testing"
	"time"
)

// benchTable is the seed's tools plus generated ones, a large session.
func benchTable(b testing.TB) *Table {
	tools := seedTools()
	for i := 0; i < 100; i++ {
		tools = append(tools, Tool{Name: "tool_" + strconv.Itoa(i), Kind: Kind(i%4 + 1)})
	}
	tab, err := NewTable(tools)
	if err != nil {
		b.Fatal(err)
	}
	return tab
}

var benchArgs = map[string]any{"action": "list", "target_resource_id": "lxc:delly:101", "command": "grep -i error /var/log/syslog"}

// The reducer's Gate 1 path for an allowed call: classify, gate, succeed,
// check recoveries. It must not allocate.
func toolCall(tab *Table, f *FSM, now time.Time) bool {
	kind, _ := tab.Classify("pulse_alerts", benchArgs)
	if f.CanExecuteTool(kind, "pulse_alerts") != nil {
		return false
	}
	f.OnToolSuccess(kind, "pulse_alerts")
	return f.CheckRecoverySuccess("pulse_alerts", now) == nil
}

func TestToolCallDoesNotAllocate(t *testing.T) {
	tab := benchTable(t)
	f := FSM{State: Reading}
	if n := testing.AllocsPerRun(100, func() { toolCall(tab, &f, t0) }); n != 0 {
		t.Errorf("allow path: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { tab.Classify("pulse_alerts", map[string]any(nil)) }); n != 0 {
		t.Errorf("Classify: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { tab.Target("pulse_control", benchArgs) }); n != 0 {
		t.Errorf("Target: %v allocs", n)
	}
}

func BenchmarkToolCall(b *testing.B) {
	tab := benchTable(b)
	f := FSM{State: Reading}
	b.ReportAllocs()
	for b.Loop() {
		toolCall(tab, &f, t0)
	}
}

func BenchmarkClassify(b *testing.B) {
	tab := benchTable(b)
	b.ReportAllocs()
	for b.Loop() {
		tab.Classify("pulse_alerts", benchArgs)
	}
}
