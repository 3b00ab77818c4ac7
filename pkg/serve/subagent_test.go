package serve_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/llmfake"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// subagentTimeout is short, so that the sub-agent that never submits
// times out quickly; it still leaves room for three sub-agents to start
// on a loaded machine.
const subagentTimeout = time.Second

// Three sub-agents run in parallel: the first to ask the model hangs and
// never calls submit_result, yet the other two reach the model while it
// still hangs, which a serial runner could not do. The hanging one times
// out and its request is aborted; the parent gets one aggregated result
// naming two results and one timeout (B-08a/b). Sub-agents are offered
// submit_result and never spawn_agents or request_mode_upgrade (B-09a,
// B-18), run restricted where Landlock works, and are absent from the
// listing (B-09b).
func TestSubagentsParallelWithTimeout(t *testing.T) {
	submit := func(result string) llmfake.Step {
		return llmfake.Step{Delay: 100 * time.Millisecond, ToolCalls: []llmfake.FakeCall{{Name: "submit_result", Args: args(map[string]string{"result": result})}}}
	}
	r := newRigWith(t, func(o *serve.Options) { o.SubagentTimeout = subagentTimeout },
		llmfake.Step{ToolCalls: []llmfake.FakeCall{{ID: "spawn", Name: "spawn_agents", Args: args(map[string]any{"tasks": []map[string]string{
			{"task": "look at a"}, {"task": "look at b"}, {"task": "look at c"}}})}}},
		llmfake.Step{Hang: true}, // the first sub-agent to ask: never submits
		submit("found A"),
		submit("found B"),
		llmfake.Step{Text: "two of three answered"})
	c := r.create("")
	start := time.Now()
	if err := r.send(c.ID, "split the work"); err != nil {
		t.Fatal(err)
	}
	// The three sub-agents' requests are all in while the first still
	// hangs (it is aborted only at its timeout).
	waitFor(t, "the three sub-agents' requests", func() bool { return len(r.fake.Requests()) >= 4 })
	if n := r.fake.Aborted(); n != 0 {
		t.Fatalf("the sub-agents did not overlap: the hanging request was given up (%d) before the last sub-agent asked", n)
	}
	overlap := time.Since(start)
	v := r.waitState(c.ID, conversation.Idle)
	took := time.Since(start)
	t.Logf("three sub-agents asked the model within %s; the turn took %s (timeout %s)", overlap, took, subagentTimeout)
	if !r.fake.WaitAborted(1, 10*time.Second) {
		t.Error("the timed-out sub-agent's LLM request was not aborted")
	}

	res, ok := toolResult(v.Messages, "spawn_agents")
	if !ok {
		t.Fatalf("no spawn_agents result:\n%s", texts(v.Messages))
	}
	var agg struct {
		Data struct {
			Subagents []struct {
				ID, Task, Status, Result, Error string
			} `json:"subagents"`
			Succeeded int `json:"succeeded"`
			Failed    int `json:"failed"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(res.Text), &agg); err != nil {
		t.Fatalf("spawn_agents result %q: %v", res.Text, err)
	}
	var results, timeouts []string
	for _, s := range agg.Data.Subagents {
		switch s.Status {
		case conversation.SubagentDone:
			results = append(results, s.Result)
		case conversation.SubagentTimeout:
			timeouts = append(timeouts, s.ID)
			if !strings.Contains(s.Error, "did not submit a result within "+subagentTimeout.String()) {
				t.Errorf("timeout error %q", s.Error)
			}
		}
	}
	sort.Strings(results)
	if agg.Data.Succeeded != 2 || agg.Data.Failed != 1 || strings.Join(results, ",") != "found A,found B" || len(timeouts) != 1 {
		t.Errorf("aggregate: %s", res.Text)
	}
	// That aggregate is what the parent's model was sent, once.
	reqs := r.fake.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5 (parent, 3 sub-agents, parent)", len(reqs))
	}
	last := decodeRequest(t, reqs[4])
	if strings.Contains(last.system(), "sub-agent") || !strings.Contains(string(reqs[4]), `found A`) || !strings.Contains(string(reqs[4]), `found B`) ||
		!strings.Contains(string(reqs[4]), `timeout`) {
		t.Errorf("the parent's second request lacks the aggregate: %s", reqs[4])
	}

	// Tools: the parent may spawn and ask for an upgrade, a sub-agent may
	// only submit.
	parent := decodeRequest(t, reqs[0]).toolNames()
	if !contains(parent, "spawn_agents") || !contains(parent, "request_mode_upgrade") || contains(parent, "submit_result") {
		t.Errorf("the parent's tools: %v", parent)
	}
	for i := 1; i <= 3; i++ {
		w := decodeRequest(t, reqs[i])
		names := w.toolNames()
		if !strings.Contains(w.system(), "sub-agent") || !contains(names, "submit_result") || contains(names, "spawn_agents") ||
			contains(names, "request_mode_upgrade") || !contains(names, "bash") {
			t.Errorf("sub-agent request %d offers %v (system %q)", i, names, w.system())
		}
	}

	// The listing leaves sub-agents out; asked for, they are there, each
	// restricted where Landlock works whatever the parent's mode.
	if got := r.list(""); len(got) != 1 || got[0].ID != c.ID {
		t.Errorf("the listing: %+v", got)
	}
	subs := r.list("?parent_id=" + url.QueryEscape(c.ID) + "&include_subagents=true")
	if len(subs) != 3 {
		t.Fatalf("sub-agents listed: %+v", subs)
	}
	want := conversation.Unrestricted
	if c.Mode == conversation.Restricted {
		want = conversation.Restricted
	}
	for _, s := range subs {
		if !s.Subagent || s.ParentID != c.ID || s.Mode != want {
			t.Errorf("sub-agent %+v, want mode %s", s, want)
		}
		sv := r.show(url.PathEscape(s.ID))
		if sv.Mode != want || sv.Generation != 1 {
			t.Errorf("sub-agent %s: mode %s generation %d", s.ID, sv.Mode, sv.Generation)
		}
		// Done or timed out, a sub-agent takes no message from a person:
		// it would talk to the model again with no parent waiting.
		apiError(t, r.send(url.PathEscape(s.ID), "keep going"), http.StatusConflict, "subagent")
	}
	if n := len(r.fake.Requests()); n != 5 {
		t.Errorf("%d requests after messages to the sub-agents, want 5", n)
	}
}

// A sub-agent whose context reaches the threshold fails at once: no
// summary request, no continuation, and the parent is told why
// (REQ-BED-024).
func TestSubagentContextThresholdFails(t *testing.T) {
	r := newRigWith(t, func(o *serve.Options) { o.ContextWindows = map[string]int{"test-model": 1000} },
		llmfake.Step{ToolCalls: []llmfake.FakeCall{{Name: "spawn_agents", Args: args(map[string]any{"tasks": []map[string]string{{"task": "read everything"}}})}},
			Usage: &llmfake.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}},
		// The sub-agent's first answer is at 95% of the window.
		llmfake.Step{ToolCalls: []llmfake.FakeCall{{Name: "bash", Args: args(map[string]string{"command": "touch sub-ran"})}},
			Usage: &llmfake.Usage{PromptTokens: 940, CompletionTokens: 10, TotalTokens: 950}},
		llmfake.Step{Text: "the sub-agent ran out of context", Usage: &llmfake.Usage{TotalTokens: 200}})
	c := r.create("unrestricted")
	if err := r.send(c.ID, "delegate"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	res, ok := toolResult(v.Messages, "spawn_agents")
	if !ok || !res.IsError || !strings.Contains(res.Text, `"status":"failed"`) || !strings.Contains(res.Text, "context window exhausted") {
		t.Fatalf("spawn_agents result: %+v\n%s", res, texts(v.Messages))
	}
	// Three requests: parent, sub-agent, parent. The sub-agent sent no
	// summary request, and its bash did not run.
	reqs := r.fake.Requests()
	if len(reqs) != 3 || strings.Contains(string(reqs[2]), "Write a summary") {
		t.Errorf("%d requests; the last: %s", len(reqs), reqs[len(reqs)-1])
	}
	if fileExists(r.dir + "/sub-ran") {
		t.Error("the sub-agent's tool ran past its context threshold")
	}
	subs := r.list("?include_subagents=true&parent_id=" + url.QueryEscape(c.ID))
	if len(subs) != 1 || subs[0].State != conversation.Error {
		t.Fatalf("the sub-agent: %+v", subs)
	}
	sv := r.show(url.PathEscape(subs[0].ID))
	if got := texts(sv.Messages); strings.Contains(got, conversation.KindContinuationRequest) || !strings.Contains(got, "the sub-agent failed: context window exhausted") {
		t.Errorf("the sub-agent's history:\n%s", got)
	}
}
