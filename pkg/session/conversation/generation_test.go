package conversation

import (
	"strings"
	"testing"
)

// TestGenerationBoundary is the "beyond the seed" (the phoenix-ide
// P0: after approval bash stayed sandboxed while patch wrote): a call
// admitted under one capability generation never runs under another.
func TestGenerationBoundary(t *testing.T) {
	t.Run("calls queued behind an approved upgrade are rejected, not half-upgraded", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("fix the bug")
		h.reply("", true, 10,
			call("u", ToolRequestModeUpgrade, `{"reason":"write the fix"}`),
			call("b", "bash", `{"command":"echo x > f"}`),
			call("p", "patch", `{"path":"f"}`))
		h.want(AwaitingModeApproval)
		h.do(Event{Type: EvModeDecision, Approved: true})
		if find(h.eff, EfExecuteTool) != nil {
			t.Fatalf("a call admitted under generation 1 ran under %d", h.c.Generation)
		}
		rs := toolResults(h.c)
		for _, id := range []string{"b", "p"} {
			if r := rs[id][0]; !r.IsError || !strings.Contains(r.Text, CodeModeChanged) {
				t.Fatalf("%s: %+v", id, r)
			}
		}
		h.want(AwaitingLLM)
		// Asked again, they run under generation 2, both unrestricted.
		h.reply("", true, 20, call("b2", "bash", `{}`), call("p2", "patch", `{}`))
		for _, id := range []string{"b2", "p2"} {
			e := find(h.eff, EfExecuteTool)
			if e == nil || e.Call.ID != id || e.Generation != 2 || e.Mode != Unrestricted {
				t.Fatalf("%s: %+v", id, e)
			}
			h.result(true, "")
		}
	})
	t.Run("a downgrade stops the running call and rejects the queue", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("fix")
		h.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"r"}`))
		h.do(Event{Type: EvModeDecision, Approved: true})
		h.reply("", true, 10, call("a", "bash", `{"command":"make install"}`), call("b", "patch", `{}`), call("c", "read_file", `{}`))
		if !h.c.Admits("a", 2) {
			t.Fatal("the running call is not admitted")
		}
		h.do(Event{Type: EvModeDowngrade})
		if h.c.Admits("a", 2) || h.c.Admits("a", 3) {
			t.Fatal("a call admitted under generation 2 is still admitted after the downgrade")
		}
		if e := find(h.eff, EfKillTool); e == nil || e.CallID != "a" {
			t.Fatalf("effects %v", types(h.eff))
		}
		h.want(ToolExecuting)
		h.result(false, "killed") // the executor confirms
		if e := find(h.eff, EfExecuteTool); e != nil {
			t.Fatalf("%s ran after the boundary", e.Call.ID)
		}
		rs := toolResults(h.c)
		for _, id := range []string{"a", "b", "c"} {
			if r := rs[id]; len(r) != 1 || !strings.Contains(r[0].Text, CodeModeChanged) {
				t.Fatalf("%s: %+v", id, r)
			}
		}
		h.want(AwaitingLLM)
		if err := matched(h.c); err != nil {
			t.Fatal(err)
		}
		// The mode notice follows the round's results.
		if last := h.c.History()[len(h.c.History())-1]; last.Kind != KindMode || !strings.Contains(last.Text, "restricted") {
			t.Fatalf("last %+v", last)
		}
	})
	t.Run("the executor's check: an execute_tool of an old generation is not admitted", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("fix")
		h.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"r"}`))
		h.do(Event{Type: EvModeDecision, Approved: true})
		h.reply("", true, 10, call("a", "patch", `{}`))
		e := find(h.eff, EfExecuteTool)
		// The downgrade lands before the executor starts a.
		h.do(Event{Type: EvModeDowngrade})
		if h.c.Admits(e.Call.ID, e.Generation) {
			t.Fatal("admitted across the boundary")
		}
		// The executor reports it did not run; the synthetic result stands.
		h.do(Event{Type: EvToolResult, CallID: "a", Generation: e.Generation, OK: false, Error: "not started: generation changed"})
		if len(toolResults(h.c)["a"]) != 1 {
			t.Fatal("two results for one call")
		}
	})
	t.Run("a result reporting another generation is stale", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("x")
		h.reply("", true, 10, call("a", "bash", `{}`))
		h.do(Event{Type: EvToolResult, CallID: "a", Generation: 7, OK: true})
		if h.eff[0].Code != CodeStale {
			t.Fatal("applied")
		}
	})
}
