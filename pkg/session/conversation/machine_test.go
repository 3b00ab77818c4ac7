package conversation

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// rows is one test per testable requirement of seed 001 (REQ-BED-001 …
// 024, split into rows B-01a … B-24) that the machine carries, named
// after the row.
var rows = []struct {
	name string
	run  func(t *testing.T)
}{
	{"B-01a pure: no I/O imports", func(t *testing.T) {
		files, _ := filepath.Glob("*.go")
		banned := map[string]bool{"os": true, "net": true, "net/http": true, "time": true, "math/rand": true, "math/rand/v2": true, "io/ioutil": true, "os/exec": true, "crypto/rand": true}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); banned[p] {
					t.Errorf("%s imports %s", f, p)
				}
			}
		}
	}},
	{"B-01b deterministic", func(t *testing.T) {
		a, b := start(t, parentCfg()), start(t, parentCfg())
		for _, h := range []*harness{a, b} {
			h.user("list the files")
			h.reply("", false, 100, call("c1", "bash", `{"command":"ls"}`), call("c2", "patch", `{}`))
			h.result(true, "a\nb")
		}
		if !reflect.DeepEqual(a.c, b.c) || !reflect.DeepEqual(a.eff, b.eff) {
			t.Fatal("same events, different outcome")
		}
	}},
	{"B-02a user message while idle", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hello")
		h.want(AwaitingLLM)
		h.wantEffects(EfPersist, EfState, EfCallLLM)
		if e := h.eff[2]; !e.Tools || e.Attempt != 1 || e.RequestID != h.c.RequestID {
			t.Fatalf("call_llm %+v", e)
		}
		if m := h.eff[0].Messages; len(m) != 1 || m[0].Role != RoleUser || m[0].Text != "hello" {
			t.Fatalf("persisted %+v", m)
		}
	}},
	{"B-02b busy rejects AGENT_BUSY, nothing stored", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hello")
		busy := func(s State) {
			t.Helper()
			h.want(s)
			n := len(h.c.Messages)
			before, _ := json.Marshal(h.c)
			h.user("another")
			h.wantEffects(EfReject)
			if e := h.eff[0]; e.Code != CodeAgentBusy || !strings.Contains(e.Text, "cancel") {
				t.Fatalf("reject %+v", e)
			}
			after, _ := json.Marshal(h.c)
			if len(h.c.Messages) != n || string(before) != string(after) {
				t.Fatal("a rejected message changed the conversation")
			}
		}
		busy(AwaitingLLM)
		h.llmErr(503, true)
		busy(LLMRequesting)
		h.do(Event{Type: EvRetryDue, RequestID: h.c.RequestID})
		h.reply("", false, 10, call("c1", "bash", `{"command":"sleep 30"}`), call("u", ToolRequestModeUpgrade, `{"reason":"write"}`))
		busy(ToolExecuting)
		h.do(Event{Type: EvCancel})
		busy(Cancelling)
		h.result(false, "killed")
		h.want(Idle)
		h.user("go")
		h.reply("", false, 10, call("u2", ToolRequestModeUpgrade, `{"reason":"write"}`))
		busy(AwaitingModeApproval)
	}},
	{"B-03a end_turn text goes idle, persisted", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("hello there", true, 50)
		h.want(Idle)
		if m := h.eff[0].Messages; len(m) != 1 || m[0].Role != RoleAssistant || m[0].Text != "hello there" {
			t.Fatalf("persisted %+v", m)
		}
	}},
	{"B-03b tool requests queued in order", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("", true, 50, call("a", "read_file", `{"path":"x"}`), call("b", "search", `{"query":"y"}`), call("c", "bash", `{"command":"ls"}`))
		h.want(ToolExecuting)
		if e := find(h.eff, EfExecuteTool); e == nil || e.Call.ID != "a" {
			t.Fatalf("first execute_tool %+v", e)
		}
		if len(h.c.Queue) != 2 || h.c.Queue[0].Call.ID != "b" || h.c.Queue[1].Call.ID != "c" {
			t.Fatalf("queue %+v", h.c.Queue)
		}
	}},
	{"B-03c text without end_turn keeps waiting", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		first := h.c.RequestID
		h.reply("part one", false, 50)
		h.want(AwaitingLLM)
		if e := find(h.eff, EfCallLLM); e == nil || e.RequestID == first {
			t.Fatalf("want a new call_llm, got %v", types(h.eff))
		}
		h.reply("part two", true, 60)
		h.want(Idle)
	}},
	{"B-04a serial in requested order", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("", true, 50, call("a", "read_file", `{}`), call("b", "read_file", `{}`), call("c", "read_file", `{}`))
		var order []string
		for h.c.State == ToolExecuting {
			n := 0
			for _, e := range h.eff {
				if e.Type == EfExecuteTool {
					n++
					order = append(order, e.Call.ID)
				}
			}
			if n != 1 {
				t.Fatalf("%d execute_tool in one step", n)
			}
			h.result(true, "ok")
		}
		if strings.Join(order, ",") != "a,b,c" {
			t.Fatalf("order %v", order)
		}
	}},
	{"B-04b all results sent together", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("", true, 50, call("a", "read_file", `{}`), call("b", "read_file", `{}`))
		h.result(true, "one")
		if find(h.eff, EfCallLLM) != nil {
			t.Fatal("call_llm before all results")
		}
		h.result(true, "two")
		h.want(AwaitingLLM)
		if e := find(h.eff, EfCallLLM); e == nil || !e.Tools {
			t.Fatalf("effects %v", types(h.eff))
		}
		hist := h.c.History()
		if n := len(hist); hist[n-2].CallID != "a" || hist[n-1].CallID != "b" {
			t.Fatalf("history tail %+v", hist[n-2:])
		}
	}},
	{"B-04c a failing tool's error is sent, the rest still run", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("", true, 50, call("a", "bash", `{"command":"false"}`), call("b", "read_file", `{}`))
		h.result(false, "exit status 1")
		if e := find(h.eff, EfExecuteTool); e == nil || e.Call.ID != "b" {
			t.Fatalf("b did not start: %v", types(h.eff))
		}
		h.result(true, "ok")
		r := toolResults(h.c)["a"][0]
		if !r.IsError || r.Text != "exit status 1" {
			t.Fatalf("a's result %+v", r)
		}
	}},
	{"B-05a cancel during LLM: abort, idle, nothing partial", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		n := len(h.c.Messages)
		id := h.c.RequestID
		h.do(Event{Type: EvCancel})
		h.want(Idle)
		if e := find(h.eff, EfAbortLLM); e == nil || e.RequestID != id {
			t.Fatalf("effects %v", types(h.eff))
		}
		if len(h.c.Messages) != n || len(h.eff[0].Messages) != 0 {
			t.Fatal("cancel stored a message")
		}
	}},
	{"B-05b cancel during a tool: kill, synthetic results, idle", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("", true, 50, call("a", "bash", `{"command":"sleep 30"}`), call("b", "read_file", `{}`), call("c", "bash", `{}`))
		h.do(Event{Type: EvCancel})
		if types(h.eff)[0] != EfPersist {
			t.Fatal("persist is not first")
		}
		if e := find(h.eff, EfKillTool); e == nil || e.CallID != "a" {
			t.Fatalf("effects %v", types(h.eff))
		}
		h.want(Cancelling)
		rs := toolResults(h.c)
		for _, id := range []string{"a", "b", "c"} {
			if len(rs[id]) != 1 || !rs[id][0].Synthetic || !strings.Contains(rs[id][0].Text, CodeCancelled) {
				t.Fatalf("result of %s: %+v", id, rs[id])
			}
		}
		h.result(false, "signal: killed") // the executor: the process group is gone
		h.want(Idle)
		if len(toolResults(h.c)["a"]) != 1 {
			t.Fatal("the kill confirmation was stored as a second result")
		}
	}},
	{"B-05c a completion after cancel is stale", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		id := h.c.RequestID
		h.do(Event{Type: EvCancel})
		n := len(h.c.Messages)
		h.do(Event{Type: EvLLMResponse, RequestID: id, Text: "late", EndTurn: true})
		h.wantEffects(EfError)
		if h.eff[0].Code != CodeStale || len(h.c.Messages) != n {
			t.Fatal("a stale response was applied")
		}
		// The same for a tool: its late result after the cancel's
		// confirmation, and an error after a new request started.
		h.user("again")
		h.reply("", true, 10, call("a", "bash", `{}`))
		h.do(Event{Type: EvCancel})
		h.result(true, "done anyway")
		h.do(Event{Type: EvToolResult, CallID: "a", OK: true, Output: "again"})
		h.wantEffects(EfError)
		h.user("third")
		h.do(Event{Type: EvLLMError, RequestID: id, Status: 500})
		h.wantEffects(EfError)
		h.want(AwaitingLLM)
	}},
	{"B-05d history intact after cancel", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("let me look", true, 50, call("a", "bash", `{}`), call("b", "bash", `{}`))
		h.result(true, "one")
		h.do(Event{Type: EvCancel})
		h.result(false, "killed")
		if err := matched(h.c); err != nil {
			t.Fatal(err)
		}
		if h.c.Messages[len(h.c.Messages)-3].Text != "let me look" {
			t.Fatal("assistant message lost")
		}
	}},
	{"B-06a retries with backoff, shown", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		for i, want := range []int64{1000, 2000, 4000} {
			h.llmErr([]int{429, 503, 0}[i], true)
			h.want(LLMRequesting)
			r := find(h.eff, EfScheduleRetry)
			if r == nil || r.AfterMS != want || r.Attempt != i+2 || r.RequestID != h.c.RequestID {
				t.Fatalf("retry %d: %+v", i, r)
			}
			if n := find(h.eff, EfNotify); n == nil || n.Kind != NotifyRetry {
				t.Fatalf("retry %d not shown", i)
			}
			h.do(Event{Type: EvRetryDue, RequestID: r.RequestID})
			if c := find(h.eff, EfCallLLM); c == nil || c.Attempt != i+2 {
				t.Fatalf("retry %d: %v", i, types(h.eff))
			}
		}
		h.reply("finally", true, 10)
		h.want(Idle)
	}},
	{"B-06b retries exhausted: error, actionable", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		for i := 0; i < 3; i++ {
			h.llmErr(503, true)
			h.do(Event{Type: EvRetryDue, RequestID: h.c.RequestID})
		}
		h.llmErr(503, true)
		h.want(Error)
		if find(h.eff, EfScheduleRetry) != nil {
			t.Fatal("a fifth attempt")
		}
		if !strings.Contains(h.c.LastError, "failed 4 times") || !strings.Contains(h.c.LastError, "send a message to try again") {
			t.Fatalf("message %q", h.c.LastError)
		}
		if m := h.c.Messages[len(h.c.Messages)-1]; m.Kind != KindError || m.ForLLM() {
			t.Fatalf("error message %+v", m)
		}
	}},
	{"B-06c non-retryable: error at once", func(t *testing.T) {
		for _, status := range []int{401, 403, 400, 404} {
			h := start(t, parentCfg())
			h.user("hi")
			h.llmErr(status, true) // the status outranks a wrong flag
			h.want(Error)
			if find(h.eff, EfScheduleRetry) != nil {
				t.Fatalf("%d retried", status)
			}
			if want := strconv.Itoa(status); !strings.Contains(h.c.LastError, want) {
				t.Fatalf("%d: message %q", status, h.c.LastError)
			}
			if (status == 401) != strings.Contains(h.c.LastError, "--api-key-file") && status != 403 {
				t.Fatalf("%d: message %q", status, h.c.LastError)
			}
		}
	}},
	{"B-06d a message in error continues", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.llmErr(401, false)
		h.user("try again")
		h.want(AwaitingLLM)
		if find(h.eff, EfCallLLM) == nil || h.c.LastError != "" {
			t.Fatal("did not continue")
		}
	}},
	{"B-07a persist precedes every effect", func(t *testing.T) {
		h := start(t, parentCfg())
		if h.eff[0].Type != EfPersist {
			t.Fatalf("New: %v", types(h.eff))
		}
		steps := []func(){
			func() { h.user("hi") },
			func() { h.reply("", true, 10, call("a", "bash", `{}`)) },
			func() { h.result(true, "x") },
			func() { h.llmErr(500, true) },
			func() { h.do(Event{Type: EvRetryDue, RequestID: h.c.RequestID}) },
			func() { h.do(Event{Type: EvCancel}) },
		}
		for i, s := range steps {
			s()
			if len(h.eff) > 0 && h.eff[0].Type != EfPersist {
				t.Fatalf("step %d: %v", i, types(h.eff))
			}
		}
	}},
	{"B-07b restore: idle, full history, mode kept", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("", true, 10, call("a", "bash", `{}`), call("b", "read_file", `{}`))
		b, _ := json.Marshal(h.c)
		var back Conversation
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		eff := Restore(&back, "2026-05-01T10:00:00Z")
		if back.State != Idle || back.Mode != Restricted || eff[0].Type != EfPersist {
			t.Fatalf("restored %s %s %v", back.State, back.Mode, types(eff))
		}
		if err := matched(&back); err != nil {
			t.Fatal(err)
		}
		for i, m := range h.c.Messages {
			if !reflect.DeepEqual(m, back.Messages[i]) {
				t.Fatalf("message %d changed", i)
			}
		}
		if r := toolResults(&back)["a"][0]; !strings.Contains(r.Text, CodeInterrupted) {
			t.Fatalf("a: %+v", r)
		}
	}},
	{"B-08a spawn in parallel, finish only by submit_result", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("survey")
		h.reply("", true, 10, call("s", ToolSpawnAgents, `{"tasks":[{"task":"one"},{"task":"two"}]}`))
		var spawned []Effect
		for _, e := range h.eff {
			if e.Type == EfSpawnSubagent {
				spawned = append(spawned, e)
			}
		}
		if len(spawned) != 2 || spawned[0].Task != "one" || spawned[1].SubagentID == spawned[0].SubagentID || spawned[0].Cwd != "/work/repo" {
			t.Fatalf("spawned %+v", spawned)
		}
		h.want(ToolExecuting)
		// A sub-agent: its own conversation, ended only by submit_result.
		cfg := subCfg()
		cfg.ID, cfg.Task = spawned[0].SubagentID, spawned[0].Task
		s := start(t, cfg)
		if find(s.eff, EfCallLLM) == nil {
			t.Fatal("the sub-agent did not start on its task")
		}
		s.reply("I am done", true, 10)
		if s.c.Finished || find(s.eff, EfCallLLM) == nil {
			t.Fatal("end_turn finished a sub-agent")
		}
		s.reply("", true, 20, call("r", ToolSubmitResult, `{"result":"found it in cfg.go"}`))
		if e := find(s.eff, EfSubagentDone); e == nil || e.Result != "found it in cfg.go" || !s.c.Finished {
			t.Fatalf("effects %v", types(s.eff))
		}
		s.user("more?")
		if s.eff[0].Code != CodeFinished {
			t.Fatal("a finished sub-agent took a message")
		}
	}},
	{"B-08b aggregate with failure and timeout", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("survey")
		h.reply("", true, 10, call("s", ToolSpawnAgents, `{"tasks":[{"task":"one"},{"task":"two"},{"task":"three"}]}`))
		ids := []string{h.c.Subagents[0].ID, h.c.Subagents[1].ID, h.c.Subagents[2].ID}
		h.do(Event{Type: EvSubagentResult, SubagentID: ids[1], Outcome: SubagentTimeout})
		h.do(Event{Type: EvSubagentResult, SubagentID: ids[0], Outcome: SubagentDone, Result: "r1"})
		h.want(ToolExecuting)
		h.do(Event{Type: EvSubagentResult, SubagentID: ids[2], Outcome: SubagentFailed, Error: "context window exhausted"})
		h.want(AwaitingLLM)
		r := toolResults(h.c)["s"][0]
		var env struct {
			Data struct {
				Subagents         []Subagent
				Succeeded, Failed int
			}
		}
		if err := json.Unmarshal([]byte(r.Text), &env); err != nil {
			t.Fatal(err)
		}
		if env.Data.Succeeded != 1 || env.Data.Failed != 2 || env.Data.Subagents[1].Status != SubagentTimeout || env.Data.Subagents[2].Error == "" {
			t.Fatalf("aggregate %s", r.Text)
		}
		h.do(Event{Type: EvSubagentResult, SubagentID: ids[0], Outcome: SubagentDone})
		if h.eff[0].Code != CodeStale {
			t.Fatal("a late sub-agent result was applied")
		}
	}},
	{"B-09a sub-agent cannot spawn or upgrade, offered submit_result", func(t *testing.T) {
		s := start(t, subCfg())
		var names []string
		for _, ts := range s.c.OfferedTools() {
			names = append(names, ts.Name)
		}
		if strings.Join(names, ",") != ToolSubmitResult {
			t.Fatalf("offered %v", names)
		}
		s.reply("", false, 10, call("x", ToolSpawnAgents, `{"tasks":[{"task":"t"}]}`), call("y", ToolRequestModeUpgrade, `{"reason":"r"}`))
		if find(s.eff, EfSpawnSubagent) != nil || find(s.eff, EfRequestModeApproval) != nil {
			t.Fatal("a sub-agent spawned or asked to upgrade")
		}
		rs := toolResults(s.c)
		if !rs["x"][0].IsError || !rs["y"][0].IsError || s.c.Mode != Restricted {
			t.Fatal("not refused")
		}
		p := start(t, parentCfg())
		p.reply("", false, 0) // stale: nothing asked
		p.user("x")
		p.reply("", true, 10, call("r", ToolSubmitResult, `{"result":"x"}`))
		if !toolResults(p.c)["r"][0].IsError || find(p.eff, EfSubagentDone) != nil {
			t.Fatal("a parent submitted a result")
		}
	}},
	{"B-09b sub-agent marked non-user-initiated", func(t *testing.T) {
		s := start(t, subCfg())
		b, _ := json.Marshal(s.c)
		var m map[string]any
		json.Unmarshal(b, &m)
		if m["subagent"] != true || m["parent_id"] != "conv1" {
			t.Fatalf("snapshot %s", b)
		}
	}},
	{"B-10 fixed working directory on every call", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("", true, 10, call("a", "bash", `{"command":"cd /tmp"}`), call("b", "bash", `{"command":"pwd"}`))
		first := find(h.eff, EfExecuteTool)
		h.result(true, "")
		second := find(h.eff, EfExecuteTool)
		if first.Cwd != "/work/repo" || second.Cwd != "/work/repo" {
			t.Fatalf("cwd %q %q", first.Cwd, second.Cwd)
		}
	}},
	{"B-11 state and messages streamed", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		st := find(h.eff, EfState)
		if st == nil || st.State.State != AwaitingLLM || st.State.LastSeq != h.c.LastSeq || st.State.Mode != Restricted {
			t.Fatalf("state %+v", st)
		}
		b, _ := json.Marshal(h.eff)
		if !strings.Contains(string(b), `"type":"state"`) || !strings.Contains(string(b), `"messages":[{"seq":`) {
			t.Fatalf("wire %s", b)
		}
	}},
	{"B-12 usage tracked", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("x", true, 123)
		if h.c.Usage.TotalTokens != 123 || h.c.Messages[len(h.c.Messages)-1].Usage.TotalTokens != 123 {
			t.Fatalf("usage %+v", h.c.Usage)
		}
		if st := find(h.eff, EfState); st.State.Usage.TotalTokens != 123 || st.State.ContextWindow != 1000 {
			t.Fatalf("state %+v", st.State)
		}
	}},
	{"B-13 attachments pass as references", func(t *testing.T) {
		h := start(t, parentCfg())
		att := []Attachment{{Ref: "att_abc", MediaType: "image/png", Width: 800, Height: 600}}
		h.do(Event{Type: EvUserMessage, Text: "see", Attachments: att})
		if m := h.eff[0].Messages[0]; !reflect.DeepEqual(m.Attachments, att) {
			t.Fatalf("attachments %+v", m.Attachments)
		}
		h.do(Event{Type: EvCancel})
		h.do(Event{Type: EvUserMessage, Attachments: att})
		h.want(AwaitingLLM)
	}},
	{"B-14a restricted where Landlock works, else unrestricted and told", func(t *testing.T) {
		h := start(t, parentCfg())
		if h.c.Mode != Restricted || find(h.eff, EfNotify) != nil {
			t.Fatal("not restricted")
		}
		cfg := parentCfg()
		cfg.LandlockAvailable = false
		u := start(t, cfg)
		if n := find(u.eff, EfNotify); u.c.Mode != Unrestricted || n == nil || n.Kind != NotifyModeUnavailable {
			t.Fatalf("without Landlock: %s %v", u.c.Mode, types(u.eff))
		}
		u.do(Event{Type: EvModeDowngrade})
		if u.eff[0].Type != EfError || u.c.Mode != Unrestricted {
			t.Fatal("downgraded without Landlock")
		}
		// Started unrestricted by choice where Landlock works: no claim that
		// Landlock is missing, and a downgrade works (B-16).
		cfg = parentCfg()
		cfg.Unrestricted = true
		c := start(t, cfg)
		if c.c.Mode != Unrestricted || find(c.eff, EfNotify) != nil || strings.Contains(c.c.Messages[0].Text, "not available") {
			t.Fatalf("unrestricted by choice: %s %v %q", c.c.Mode, types(c.eff), c.c.Messages[0].Text)
		}
		c.do(Event{Type: EvModeDowngrade})
		if c.c.Mode != Restricted {
			t.Fatalf("downgrade of a conversation started unrestricted: %s", c.c.Mode)
		}
		// A sub-agent ignores the choice (B-18).
		sc := subCfg()
		sc.Unrestricted = true
		if s := start(t, sc); s.c.Mode != Restricted {
			t.Fatal("a sub-agent started unrestricted")
		}
	}},
	{"B-14b restricted: bash sandboxed, patch and unknown tools refused", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("hi")
		h.reply("", true, 10, call("p", "patch", `{}`), call("m", "mystery", `{}`), call("b", "bash", `{}`), call("r", "read_file", `{}`))
		e := find(h.eff, EfExecuteTool)
		if e == nil || e.Call.ID != "b" || e.Mode != Restricted {
			t.Fatalf("execute %+v", e)
		}
		rs := toolResults(h.c)
		if !rs["p"][0].IsError || !rs["m"][0].IsError {
			t.Fatal("a write ran in restricted mode")
		}
		h.result(true, "")
		if e := find(h.eff, EfExecuteTool); e == nil || e.Call.ID != "r" {
			t.Fatal("read_file did not run")
		}
	}},
	{"B-14c unrestricted: full tools", func(t *testing.T) {
		cfg := parentCfg()
		cfg.LandlockAvailable = false
		h := start(t, cfg)
		h.user("hi")
		h.reply("", true, 10, call("p", "patch", `{}`))
		if e := find(h.eff, EfExecuteTool); e == nil || e.Mode != Unrestricted {
			t.Fatalf("effects %v", types(h.eff))
		}
	}},
	{"B-15a request_mode_upgrade pauses, user told the reason", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("fix it")
		h.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"patch main.go"}`))
		h.want(AwaitingModeApproval)
		if e := find(h.eff, EfRequestModeApproval); e == nil || e.Reason != "patch main.go" || e.CallID != "u" {
			t.Fatalf("effects %+v", h.eff)
		}
		if n := find(h.eff, EfNotify); n == nil || !strings.Contains(n.Text, "patch main.go") {
			t.Fatal("user not told")
		}
		h.do(Event{Type: EvRetryDue})
		h.do(Event{Type: EvToolResult, CallID: "u", OK: true})
		h.want(AwaitingModeApproval)
	}},
	{"B-15b approve upgrades and resumes; deny stays and tells the agent", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("fix it")
		h.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"r"}`))
		h.do(Event{Type: EvModeDecision, Approved: true, ApprovalID: "ap_1"})
		if h.c.Mode != Unrestricted || h.c.Generation != 2 || find(h.eff, EfCallLLM) == nil {
			t.Fatalf("approve: %s gen %d %v", h.c.Mode, h.c.Generation, types(h.eff))
		}
		d := start(t, parentCfg())
		d.user("fix it")
		d.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"r"}`))
		d.do(Event{Type: EvModeDecision, Approved: false, Reason: "not today"})
		r := toolResults(d.c)["u"][0]
		if d.c.Mode != Restricted || d.c.Generation != 1 || !r.IsError || !strings.Contains(r.Text, "not today") || find(d.eff, EfCallLLM) == nil {
			t.Fatalf("deny: %s %+v", d.c.Mode, r)
		}
	}},
	{"B-15c nothing times out into unrestricted", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("fix it")
		h.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"r"}`))
		for _, ev := range []Event{{Type: EvRetryDue}, {Type: EvLLMResponse}, {Type: EvToolResult, CallID: "u"}, {Type: EvSubagentResult}, {Type: EvContinue}, {Type: EvUserMessage, Text: "x"}} {
			h.do(ev)
			if h.c.Mode != Restricted || h.c.State != AwaitingModeApproval {
				t.Fatalf("%s moved it: %s %s", ev.Type, h.c.State, h.c.Mode)
			}
		}
		// An expired approval arrives as a denial.
		h.do(Event{Type: EvModeDecision, Approved: false, Reason: "approval expired"})
		if h.c.Mode != Restricted {
			t.Fatal("expired into unrestricted")
		}
	}},
	{"B-15d a decision with no upgrade pending says so, in the user's words", func(t *testing.T) {
		h := start(t, parentCfg())
		h.do(Event{Type: EvModeDecision, Approved: true})
		e := h.eff[0]
		if e.Type != EfError || e.Code != CodeStale || h.c.Mode != Restricted ||
			!strings.Contains(e.Detail, "no mode upgrade is pending (the conversation is idle)") || strings.Contains(e.Detail, "mode_decision") {
			t.Fatalf("effect %+v, mode %s", e, h.c.Mode)
		}
	}},
	{"B-16 downgrade at once, persisted", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("fix it")
		h.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"r"}`))
		h.do(Event{Type: EvModeDecision, Approved: true})
		h.do(Event{Type: EvModeDowngrade})
		if h.c.Mode != Restricted || h.c.Generation != 3 || h.eff[0].Type != EfPersist || h.eff[1].State.Mode != Restricted {
			t.Fatalf("downgrade: %s %v", h.c.Mode, types(h.eff))
		}
		h.do(Event{Type: EvModeDowngrade})
		if h.eff[0].Type != EfError {
			t.Fatal("a second downgrade did something")
		}
	}},
	{"B-17a every mode change adds a system message", func(t *testing.T) {
		h := start(t, parentCfg())
		count := func() int {
			n := 0
			for _, m := range h.c.Messages {
				if m.Kind == KindMode && m.Role == RoleSystem && m.Synthetic {
					n++
				}
			}
			return n
		}
		if count() != 1 {
			t.Fatal("no initial mode notice")
		}
		h.user("fix")
		h.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"r"}`), call("b", "bash", `{}`))
		h.do(Event{Type: EvModeDecision, Approved: true})
		h.do(Event{Type: EvCancel}) // the LLM call after the round
		h.do(Event{Type: EvModeDowngrade})
		if count() != 3 {
			t.Fatalf("%d mode notices", count())
		}
		if err := matched(h.c); err != nil {
			t.Fatal(err)
		}
	}},
	{"B-17b tool descriptions never change with the mode", func(t *testing.T) {
		h := start(t, parentCfg())
		before, _ := json.Marshal(h.c.OfferedTools())
		h.user("fix")
		h.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"r"}`))
		h.do(Event{Type: EvModeDecision, Approved: true})
		after, _ := json.Marshal(h.c.OfferedTools())
		if string(before) != string(after) || !strings.Contains(string(before), ToolRequestModeUpgrade) {
			t.Fatal("tools changed")
		}
	}},
	{"B-17c a refused tool suggests request_mode_upgrade", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("fix")
		h.reply("", true, 10, call("p", "patch", `{}`))
		r := toolResults(h.c)["p"][0]
		var env struct {
			OK    bool
			Error struct {
				Code    string
				Details map[string]any
			}
		}
		if err := json.Unmarshal([]byte(r.Text), &env); err != nil {
			t.Fatal(err)
		}
		if env.OK || env.Error.Code != "ACTION_NOT_ALLOWED" || !strings.Contains(env.Error.Details["recovery_hint"].(string), ToolRequestModeUpgrade) {
			t.Fatalf("refusal %s", r.Text)
		}
	}},
	{"B-18 sub-agents restricted whatever the parent, cannot change mode", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("fix")
		h.reply("", true, 10, call("u", ToolRequestModeUpgrade, `{"reason":"r"}`))
		h.do(Event{Type: EvModeDecision, Approved: true})
		h.reply("", true, 10, call("s", ToolSpawnAgents, `{"tasks":[{"task":"t"}]}`))
		if e := find(h.eff, EfSpawnSubagent); e == nil || e.Mode != Restricted {
			t.Fatalf("spawn %+v", e)
		}
		s := start(t, subCfg())
		s.do(Event{Type: EvModeDowngrade})
		s.do(Event{Type: EvModeDecision, Approved: true})
		if s.c.Mode != Restricted {
			t.Fatal("sub-agent mode changed")
		}
		cfg := subCfg()
		cfg.LandlockAvailable = false
		if u := start(t, cfg); u.c.Mode != Unrestricted {
			t.Fatal("without Landlock a sub-agent is unrestricted")
		}
	}},
	{"B-19 at 90% the requested tools do not run", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("go")
		h.reply("", true, 900, call("a", "bash", `{"command":"make"}`), call("b", "read_file", `{}`))
		if find(h.eff, EfExecuteTool) != nil {
			t.Fatal("a tool ran at 90%")
		}
		h.want(AwaitingLLM)
		if !h.c.Continuing {
			t.Fatal("no continuation flow")
		}
	}},
	{"B-20a continuation request: no tools, names the unexecuted", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("go")
		h.reply("", true, 950, call("a", "bash", `{"command":"make"}`), call("b", "read_file", `{}`))
		e := find(h.eff, EfCallLLM)
		if e == nil || e.Tools {
			t.Fatalf("call_llm %+v", e)
		}
		last := h.c.Messages[len(h.c.Messages)-1]
		if last.Kind != KindContinuationRequest || !strings.Contains(last.Text, "bash (a)") || !strings.Contains(last.Text, "read_file (b)") {
			t.Fatalf("request %+v", last)
		}
		if err := matched(h.c); err != nil {
			t.Fatal(err)
		}
		h.llmErr(503, true) // retries of the summary keep tools off
		h.do(Event{Type: EvRetryDue, RequestID: h.c.RequestID})
		if e := find(h.eff, EfCallLLM); e == nil || e.Tools {
			t.Fatal("the retry offered tools")
		}
	}},
	{"B-20b summary stored; fallback after failed retries", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("go")
		h.reply("", true, 950)
		h.reply("We built X; Y remains.", true, 980)
		h.want(ContextExhausted)
		if m := h.c.Messages[len(h.c.Messages)-1]; m.Kind != KindContinuation || h.c.Summary != "We built X; Y remains." {
			t.Fatalf("summary %+v", m)
		}
		f := start(t, parentCfg())
		f.user("go on with the refactor")
		f.reply("", true, 950, call("a", "patch", `{}`))
		for i := 0; i < 4; i++ {
			f.llmErr(503, true)
			f.do(Event{Type: EvRetryDue, RequestID: f.c.RequestID})
		}
		f.want(ContextExhausted)
		if !strings.Contains(f.c.Summary, "could not be generated") || !strings.Contains(f.c.Summary, "go on with the refactor") || !strings.Contains(f.c.Summary, "patch (a)") {
			t.Fatalf("fallback %q", f.c.Summary)
		}
	}},
	{"B-21 exhausted refuses messages; a new conversation seeded and linked", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("go")
		h.reply("", true, 950)
		h.reply("summary text", true, 980)
		h.user("more")
		if h.eff[0].Type != EfReject || h.eff[0].Code != CodeContextExhausted || !strings.Contains(h.eff[0].Text, "new conversation") {
			t.Fatalf("effects %+v", h.eff)
		}
		b, _ := json.Marshal(h.c)
		var back Conversation
		json.Unmarshal(b, &back)
		Restore(&back, "2026-05-01T10:00:00Z")
		if back.State != ContextExhausted {
			t.Fatal("restore reopened an exhausted conversation")
		}
		cfg := parentCfg()
		cfg.ID, cfg.ContinuedFrom, cfg.Summary = "conv2", "conv1", h.c.Summary
		n := start(t, cfg)
		if n.c.ContinuedFrom != "conv1" || !strings.Contains(n.c.Messages[len(n.c.Messages)-1].Text, "summary text") {
			t.Fatalf("continued %+v", n.c.Messages)
		}
	}},
	{"B-22 the model's window; unknown model: the smallest", func(t *testing.T) {
		if c, _ := New(parentCfg()); c.ContextWindow != 1000 {
			t.Fatal(c.ContextWindow)
		}
		cfg := parentCfg()
		cfg.Model = "nobody-knows"
		if c, _ := New(cfg); c.ContextWindow != 500 {
			t.Fatal(c.ContextWindow)
		}
		cfg.ContextWindows = nil
		if c, _ := New(cfg); c.ContextWindow != 32768 {
			t.Fatal(c.ContextWindow)
		}
		h := start(t, parentCfg())
		h.c.ContextWindow = 2000 // another model: 950 is under its threshold
		h.user("go")
		h.reply("", true, 950, call("a", "read_file", `{}`))
		if find(h.eff, EfExecuteTool) == nil {
			t.Fatal("the threshold ignored the model's window")
		}
	}},
	{"B-23 warning at 80%, manual continuation like the automatic one", func(t *testing.T) {
		h := start(t, parentCfg())
		h.user("go")
		h.reply("", true, 850, call("a", "read_file", `{}`))
		if n := find(h.eff, EfNotify); n == nil || n.Kind != NotifyContextWarning || !h.c.ContinuationAvailable {
			t.Fatalf("no warning: %v", types(h.eff))
		}
		if find(h.eff, EfExecuteTool) == nil {
			t.Fatal("tools stopped below 90%")
		}
		h.result(true, "x")
		h.reply("done", true, 860)
		if find(h.eff, EfNotify) != nil {
			t.Fatal("warned twice")
		}
		h.do(Event{Type: EvContinue})
		if e := find(h.eff, EfCallLLM); e == nil || e.Tools || !h.c.Continuing {
			t.Fatalf("manual: %v", types(h.eff))
		}
		h.reply("summary", true, 870)
		h.want(ContextExhausted)
		early := start(t, parentCfg())
		early.do(Event{Type: EvContinue})
		if early.eff[0].Type != EfError {
			t.Fatal("continuation below 80%")
		}
	}},
	{"B-24 a sub-agent at the threshold fails at once", func(t *testing.T) {
		s := start(t, subCfg())
		s.reply("", false, 920, call("a", "bash", `{}`))
		d := find(s.eff, EfSubagentDone)
		if d == nil || !strings.Contains(d.Error, "context window") || find(s.eff, EfCallLLM) != nil || find(s.eff, EfExecuteTool) != nil {
			t.Fatalf("effects %v", types(s.eff))
		}
		if !s.c.Finished || s.c.Continuing {
			t.Fatal("continuation for a sub-agent")
		}
		// The parent sees the failure and may spawn a replacement.
		p := start(t, parentCfg())
		p.user("go")
		p.reply("", true, 10, call("s", ToolSpawnAgents, `{"tasks":[{"task":"big"}]}`))
		p.do(Event{Type: EvSubagentResult, SubagentID: p.c.Subagents[0].ID, Outcome: SubagentFailed, Error: d.Error})
		r := toolResults(p.c)["s"][0]
		if !strings.Contains(r.Text, "context window") || !strings.Contains(r.Text, "narrower task") {
			t.Fatalf("parent result %s", r.Text)
		}
		p.reply("", true, 20, call("s2", ToolSpawnAgents, `{"tasks":[{"task":"small"}]}`))
		if find(p.eff, EfSpawnSubagent) == nil {
			t.Fatal("no replacement")
		}
	}},
}

func TestRows(t *testing.T) {
	for _, r := range rows {
		t.Run(r.name, r.run)
	}
}
