package conversation

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/session/response"
)

// tx is one transition in progress: it records whether anything changed so
// that persist, carrying the messages appended, goes out first (B-07a).
type tx struct {
	c     *Conversation
	at    string
	start int
	dirty bool
	out   []Effect
}

func begin(c *Conversation, at string) *tx { return &tx{c: c, at: at, start: len(c.Messages)} }

func (t *tx) changed()      { t.dirty = true }
func (t *tx) emit(e Effect) { t.out = append(t.out, e) }

func (t *tx) fail(code, detail string) { t.emit(Effect{Type: EfError, Code: code, Detail: detail}) }

// finish puts persist and the new state ahead of every other effect.
func (t *tx) finish() []Effect {
	if !t.dirty {
		return t.out
	}
	var msgs []Message
	if len(t.c.Messages) > t.start {
		msgs = append(msgs, t.c.Messages[t.start:]...)
	}
	v := t.c.View()
	out := make([]Effect, 0, len(t.out)+2)
	out = append(out, Effect{Type: EfPersist, Messages: msgs}, Effect{Type: EfState, State: &v})
	return append(out, t.out...)
}

func (t *tx) setState(s State) {
	if t.c.State != s {
		t.c.State = s
		t.changed()
	}
}

// add appends a message with the next sequence number.
func (t *tx) add(m Message) {
	t.c.LastSeq++
	m.Seq = t.c.LastSeq
	if m.At == "" {
		m.At = t.at
	}
	t.c.Messages = append(t.c.Messages, m)
	t.changed()
}

// roundOpen reports whether some tool call of the last assistant message
// still lacks its result.
func (t *tx) roundOpen() bool {
	return len(t.c.Queue) > 0 || (t.c.Running != nil && !t.c.Running.Killed)
}

// system adds a synthetic system message, after the open tool round if one
// is open (the LLM API wants results right after their calls).
func (t *tx) system(kind, text string) {
	m := Message{Role: RoleSystem, Text: text, Synthetic: true, Kind: kind}
	if t.roundOpen() {
		m.At = t.at
		t.c.Deferred = append(t.c.Deferred, m)
		t.changed()
		return
	}
	t.add(m)
}

// display adds a notice for people that the LLM is not sent.
func (t *tx) display(kind, text string) {
	t.add(Message{Role: RoleSystem, Text: text, Synthetic: true, Kind: kind})
}

func (t *tx) flushDeferred() {
	d := t.c.Deferred
	t.c.Deferred = nil
	for _, m := range d {
		m.At = ""
		t.add(m)
	}
}

// result records a tool result.
func (t *tx) result(call ToolCall, text string, isError, synthetic bool) {
	t.add(Message{Role: RoleTool, CallID: call.ID, Tool: call.Name, Text: text, IsError: isError, Synthetic: synthetic})
}

// refuse records a tool result made by the machine: seed 000's envelope,
// with the hint that tells the agent what to do instead.
func (t *tx) refuse(call ToolCall, code, message, hint string, recoverable bool) {
	r := response.Blocked(code, message, map[string]any{"recovery_hint": hint, "auto_recoverable": recoverable})
	b, _ := json.Marshal(r)
	t.result(call, string(b), true, true)
}

// callLLM sends a new request under a new id (B-05c: only its answer counts).
func (t *tx) callLLM(tools bool) {
	c := t.c
	c.Requests++
	c.RequestID = fmt.Sprintf("%s/llm/%d", c.ID, c.Requests)
	c.Attempt = 1
	c.InFlight = true
	t.changed()
	t.setState(AwaitingLLM)
	t.emit(Effect{Type: EfCallLLM, RequestID: c.RequestID, Attempt: 1, Tools: tools})
}

func (t *tx) stale(what string) {
	t.fail(CodeStale, what+" does not belong to the conversation's current operation (state "+string(t.c.State)+"): discarded")
}

// userMessage: idle or error → awaiting_llm (B-02a, B-06d); busy → AGENT_BUSY
// (B-02b); exhausted → CONTEXT_EXHAUSTED (B-21). A refused message is not
// stored.
func (t *tx) userMessage(ev Event) {
	c := t.c
	switch {
	case c.Finished:
		t.emit(Effect{Type: EfReject, Code: CodeFinished, Text: "this sub-agent has finished; it takes no more messages"})
		return
	case c.State == ContextExhausted:
		t.emit(Effect{Type: EfReject, Code: CodeContextExhausted,
			Text: "this conversation has used its context window; start a new conversation from its continuation summary"})
		return
	case c.State.Busy():
		t.emit(Effect{Type: EfReject, Code: CodeAgentBusy,
			Text: "the agent is busy (" + string(c.State) + "); the message was not sent: cancel the current operation to send a new one"})
		return
	case ev.Text == "" && len(ev.Attachments) == 0:
		t.fail(CodeInvalidInput, "user_message needs text or attachments")
		return
	}
	t.add(Message{Role: RoleUser, Text: ev.Text, Attachments: ev.Attachments})
	c.LastError, c.Rejections = "", 0
	t.callLLM(true)
}

func (t *tx) current(ev Event) bool {
	c := t.c
	return (c.State == AwaitingLLM || c.State == LLMRequesting) && c.InFlight && ev.RequestID != "" && ev.RequestID == c.RequestID
}

// llmResponse applies B-03 and the context thresholds (B-19, B-23, B-24).
func (t *tx) llmResponse(ev Event) {
	c := t.c
	if !t.current(ev) {
		t.stale("llm_response " + ev.RequestID)
		return
	}
	c.InFlight, c.RequestID, c.Attempt, c.Rejections = false, "", 0, 0
	t.changed()
	if ev.Usage != nil {
		c.Usage = *ev.Usage // B-12: the latest total is the context in use
	}
	if c.Continuing {
		t.summary(ev.Text, ev.Usage)
		return
	}
	calls := t.callIDs(ev.ToolCalls)
	level := c.level()
	if level >= 90 {
		t.add(Message{Role: RoleAssistant, Text: ev.Text, ToolCalls: calls, Usage: ev.Usage})
		for _, call := range calls {
			t.refuse(call, CodeNotExecuted, call.Name+" was not run: the conversation reached its context limit",
				"none: the conversation is being summarized", false)
		}
		if c.Subagent {
			t.failSubagent(fmt.Sprintf("context window exhausted: %d of %d tokens (≥ 90%%); the parent may spawn a replacement with a narrower task", c.Usage.TotalTokens, c.ContextWindow))
			return
		}
		t.startContinuation(calls)
		return
	}
	if level >= 80 && !c.Warned && !c.Subagent {
		c.Warned, c.ContinuationAvailable = true, true
		text := fmt.Sprintf("context at %d of %d tokens (%d%%): continue in a new conversation soon (manual continuation is available)",
			c.Usage.TotalTokens, c.ContextWindow, c.Usage.TotalTokens*100/c.ContextWindow)
		t.display(KindContextWarning, text)
		t.emit(Effect{Type: EfNotify, Kind: NotifyContextWarning, Text: text})
	}
	switch {
	case len(calls) > 0:
		t.add(Message{Role: RoleAssistant, Text: ev.Text, ToolCalls: calls, Usage: ev.Usage})
		for _, call := range calls {
			c.Queue = append(c.Queue, Pending{Call: call, Generation: c.Generation})
		}
		t.setState(ToolExecuting)
		t.advance()
	case c.Subagent && ev.EndTurn:
		t.add(Message{Role: RoleAssistant, Text: ev.Text, Usage: ev.Usage})
		if c.Nudged {
			t.failSubagent("the sub-agent ended its turn without calling submit_result")
			return
		}
		c.Nudged = true
		t.add(Message{Role: RoleUser, Synthetic: true, Text: "Call submit_result with your result to finish: ending the turn does not finish a sub-agent."})
		t.callLLM(true)
	case ev.EndTurn:
		t.add(Message{Role: RoleAssistant, Text: ev.Text, Usage: ev.Usage})
		t.setState(Idle)
	default:
		// B-03c: text without end_turn: keep it and keep waiting; the next
		// request lets the model go on from its own text.
		if ev.Text != "" {
			t.add(Message{Role: RoleAssistant, Text: ev.Text, Usage: ev.Usage})
		}
		t.callLLM(true)
	}
}

// llmRejected: the executor rejected the model's reply under seed 002's
// strict text envelope, so nothing runs. The reply stays in the history as
// the assistant's turn and the rejection follows it as a message the model
// sees (the history alternates, as chat templates without tool calling
// require); the model is asked again under a new request id, for which the
// executor draws a new nonce. After MaxRejections in a row the conversation
// is in error (a sub-agent fails): malformed calls are not brute-forced.
// Cancel outranks it: after a cancel the request id is gone and a late
// rejection is stale (B-05c).
func (t *tx) llmRejected(ev Event) {
	c := t.c
	if !t.current(ev) {
		t.stale("llm_rejected " + ev.RequestID)
		return
	}
	c.InFlight, c.RequestID, c.Attempt = false, "", 0
	t.changed()
	if ev.Usage != nil {
		c.Usage = *ev.Usage
	}
	if c.Continuing {
		// A summary is text, never an envelope: keep whatever came.
		t.summary(ev.Text, ev.Usage)
		return
	}
	code := ev.Code
	if code == "" {
		code = "rejected"
	}
	reason := code
	if ev.Detail != "" {
		reason += ": " + ev.Detail
	}
	c.Rejections++
	t.add(Message{Role: RoleAssistant, Text: ev.Text, Kind: KindRejectedReply, Usage: ev.Usage})
	if c.level() >= 90 {
		if c.Subagent {
			t.failSubagent(fmt.Sprintf("context window exhausted: %d of %d tokens (≥ 90%%)", c.Usage.TotalTokens, c.ContextWindow))
			return
		}
		t.startContinuation(nil)
		return
	}
	text := "Your reply was rejected (" + reason + "). STOP_HOOK: tool_call_rejected (" + code + "). Nothing was executed."
	if c.Rejections < MaxRejections {
		text += fmt.Sprintf(" Reply again in the required format, with the TOOL_NONCE of the new request; %d rejections in a row end the turn in error (this was %d).", MaxRejections, c.Rejections)
	}
	t.add(Message{Role: RoleUser, Synthetic: true, Kind: KindRejection, Text: text})
	if c.Rejections < MaxRejections {
		t.callLLM(true)
		return
	}
	msg := fmt.Sprintf("the model's replies broke the tool-call envelope %d times in a row (last: %s); nothing was executed. "+
		"Use a model that follows JSON output or an endpoint that enforces response_format, or run gate serve with --tool-protocol native; "+
		"then send a message to try again", c.Rejections, reason)
	t.endInError(msg)
}

// callIDs gives every call an id unique in the conversation: results are
// matched to calls by id (B-05d).
func (t *tx) callIDs(calls []ToolCall) []ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]ToolCall, len(calls))
	seen := map[string]bool{}
	// Local servers reuse ids across responses ("call_0"): an id is
	// renamed unless it is new to the whole conversation.
	for _, m := range t.c.Messages {
		for _, tc := range m.ToolCalls {
			seen[tc.ID] = true
		}
	}
	for i, call := range calls {
		if call.ID == "" || seen[call.ID] {
			call.ID = fmt.Sprintf("%s/call/%d.%d", t.c.ID, t.c.LastSeq+1, i+1)
		}
		seen[call.ID] = true
		// A model's malformed arguments are kept as a JSON string, so the
		// snapshot stays JSON and the tool reports the bad input.
		switch {
		case len(call.Args) == 0:
			call.Args = json.RawMessage(`{}`)
		case !json.Valid(call.Args):
			b, _ := json.Marshal(string(call.Args))
			call.Args = b
		}
		out[i] = call
	}
	return out
}

// level is 90 at the continuation threshold, 80 at the warning, else 0
// (REQ-BED-019, B-23), on the model's own window (B-22).
func (c *Conversation) level() int {
	if c.ContextWindow <= 0 {
		return 0
	}
	switch used := c.Usage.TotalTokens * 100; {
	case used >= c.ContextWindow*90:
		return 90
	case used >= c.ContextWindow*80:
		return 80
	}
	return 0
}

// startContinuation asks for a summary without tools, naming every tool
// that was requested and not run (B-20a); manual continuation is the same
// flow (B-23).
func (t *tx) startContinuation(unrun []ToolCall) {
	c := t.c
	c.Continuing, c.ContinuationAvailable = true, true
	text := fmt.Sprintf("The conversation has reached %d of %d tokens of the model's context window. "+
		"Do not call tools. Write a summary of this session from which a new conversation can continue: "+
		"the goal, what was done and found, what remains, and the files involved.", c.Usage.TotalTokens, c.ContextWindow)
	if len(unrun) > 0 {
		text += " These tools were requested but not executed: " + callList(unrun) + "; say what they were for."
	} else {
		text += " No tool request is pending."
	}
	t.add(Message{Role: RoleUser, Synthetic: true, Kind: KindContinuationRequest, Text: text})
	t.callLLM(false)
}

func callList(calls []ToolCall) string {
	names := make([]string, len(calls))
	for i, call := range calls {
		names[i] = call.Name + " (" + call.ID + ")"
	}
	return strings.Join(names, ", ")
}

// summary stores the continuation and ends the conversation (B-20b).
func (t *tx) summary(text string, usage *Usage) {
	c := t.c
	c.Continuing, c.ContinuationAvailable = false, false
	if strings.TrimSpace(text) == "" {
		text = t.fallbackSummary("the model returned an empty summary")
	}
	c.Summary = text
	t.add(Message{Role: RoleAssistant, Text: text, Kind: KindContinuation, Usage: usage})
	t.setState(ContextExhausted)
}

// fallbackSummary stands in for a summary the LLM could not give (B-20b):
// enough to seed a new conversation by hand.
func (t *tx) fallbackSummary(why string) string {
	c := t.c
	s := "The continuation summary could not be generated (" + why + "). The conversation reached its context limit"
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if m := c.Messages[i]; m.Role == RoleUser && !m.Synthetic {
			s += "; the last user message was:\n\n" + m.Text
			break
		}
	}
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if m := c.Messages[i]; m.Kind == KindContinuationRequest {
			if j := strings.Index(m.Text, "These tools were requested"); j >= 0 {
				s += "\n\n" + m.Text[j:]
			}
			break
		}
	}
	return s
}

// endInError ends the turn in error with msg, which says what to do
// next; a sub-agent fails instead, and its parent is told (B-08b).
func (t *tx) endInError(msg string) {
	c := t.c
	if c.Subagent {
		t.failSubagent(msg)
		return
	}
	c.LastError = msg
	t.display(KindError, msg)
	t.emit(Effect{Type: EfNotify, Kind: NotifyError, Text: msg})
	t.setState(Error)
}

// failSubagent ends a sub-agent without a result (B-08b, B-24).
func (t *tx) failSubagent(why string) {
	c := t.c
	c.Finished, c.Failure, c.LastError = true, why, why
	c.Queue, c.Running = nil, nil
	t.display(KindError, "the sub-agent failed: "+why)
	t.setState(Error)
	t.changed()
	t.emit(Effect{Type: EfSubagentDone, Error: why})
}

// classify: 429, 5xx and network failures are retried; auth and other 4xx
// never (B-06a, B-06c). The status decides when there is one.
func classify(ev Event) bool {
	switch s := ev.Status; {
	case s == 401 || s == 403:
		return false
	case s == 429 || s >= 500:
		return true
	case s >= 400:
		return false
	}
	return ev.Retryable
}

func describe(ev Event) string {
	if ev.Status == 0 {
		if ev.Error == "" {
			return "network error"
		}
		return "network error: " + ev.Error
	}
	if ev.Error == "" {
		return fmt.Sprintf("HTTP %d", ev.Status)
	}
	return fmt.Sprintf("HTTP %d: %s", ev.Status, ev.Error)
}

// llmError retries with exponential backoff, then gives up (B-06).
func (t *tx) llmError(ev Event) {
	c := t.c
	if !t.current(ev) {
		t.stale("llm_error " + ev.RequestID)
		return
	}
	c.InFlight = false
	t.changed()
	desc := describe(ev)
	if classify(ev) && c.Attempt <= c.MaxRetries {
		after := int64(RetryBaseMS) << (c.Attempt - 1)
		c.Attempt++
		c.Requests++
		c.RequestID = fmt.Sprintf("%s/llm/%d", c.ID, c.Requests)
		t.setState(LLMRequesting)
		t.emit(Effect{Type: EfScheduleRetry, RequestID: c.RequestID, AfterMS: after, Attempt: c.Attempt})
		t.emit(Effect{Type: EfNotify, Kind: NotifyRetry,
			Text: fmt.Sprintf("the LLM request failed (%s); retry %d of %d in %gs", desc, c.Attempt-1, c.MaxRetries, float64(after)/1000)})
		return
	}
	var msg string
	switch {
	case classify(ev):
		msg = fmt.Sprintf("the LLM request failed %d times (last: %s); check that the endpoint is up and not overloaded, then send a message to try again", c.Attempt, desc)
	case ev.Status == 401 || ev.Status == 403:
		msg = "the LLM endpoint refused the credentials (" + desc + "); check the API key (--api-key-file), then send a message to try again"
	default:
		msg = "the LLM endpoint rejected the request (" + desc + "); it is not retried: fix the cause (model name, endpoint URL, request size), then send a message to try again"
	}
	c.RequestID, c.Attempt = "", 0
	if c.Continuing {
		t.summary(t.fallbackSummary(desc), nil)
		return
	}
	t.endInError(msg)
}

// retryDue sends the retry schedule_retry announced, unless a cancel came
// first.
func (t *tx) retryDue(ev Event) {
	c := t.c
	if c.State != LLMRequesting || c.InFlight || ev.RequestID == "" || ev.RequestID != c.RequestID {
		t.stale("retry_due " + ev.RequestID)
		return
	}
	c.InFlight = true
	t.changed()
	t.emit(Effect{Type: EfCallLLM, RequestID: c.RequestID, Attempt: c.Attempt, Tools: !c.Continuing})
}

// toolResult records the running call's result and starts the next (B-04).
func (t *tx) toolResult(ev Event) {
	c := t.c
	r := c.Running
	if r == nil || r.Call.ID != ev.CallID || machineTool(r.Call.Name) ||
		(ev.Generation != 0 && ev.Generation != r.Generation) {
		t.stale("tool_result " + ev.CallID)
		return
	}
	c.Running = nil
	t.changed()
	if r.Killed {
		// Only the confirmation that the killed call is gone: its
		// synthetic result stands (B-05b).
		if c.State == Cancelling {
			t.flushDeferred()
			t.setState(Idle)
			return
		}
		t.advance()
		return
	}
	text := ev.Output
	if !ev.OK {
		text = ev.Error
		if ev.Output != "" {
			text = strings.TrimSpace(text + "\n" + ev.Output)
		}
		if text == "" {
			text = "the tool failed"
		}
	}
	t.result(r.Call, text, !ev.OK, false)
	t.advance()
}

// advance starts the next queued call, or, with none left, sends every
// result to the LLM together (B-04a/b). The machine's own tools and mode
// refusals are answered here, in queue order.
func (t *tx) advance() {
	c := t.c
	for len(c.Queue) > 0 {
		p := c.Queue[0]
		c.Queue = c.Queue[1:]
		t.changed()
		call := p.Call
		if p.Generation != c.Generation {
			// The generation rule: a call admitted under another mode never
			// runs under this one.
			t.refuse(call, CodeModeChanged, fmt.Sprintf("%s was not run: the mode changed to %s after it was requested", call.Name, c.Mode),
				"request it again if it is still needed", true)
			continue
		}
		switch call.Name {
		case ToolRequestModeUpgrade:
			if t.upgradeRequest(p) {
				return
			}
			continue
		case ToolSpawnAgents:
			if t.spawn(p) {
				return
			}
			continue
		case ToolSubmitResult:
			if t.submit(p) {
				return
			}
			continue
		}
		if c.Mode == Restricted && !c.allowedRestricted(call.Name) {
			t.refuse(call, response.ActionNotAllowed,
				call.Name+" can write, and this conversation is in restricted mode (read-only files, no network)",
				"if you need write access, call request_mode_upgrade with your reason; the user decides", true)
			continue
		}
		pp := p
		c.Running = &pp
		t.setState(ToolExecuting)
		t.emit(Effect{Type: EfExecuteTool, Call: &pp.Call, Generation: p.Generation, Mode: c.Mode, Cwd: c.Cwd})
		return
	}
	c.Running = nil
	t.flushDeferred()
	t.callLLM(true)
}

// allowedRestricted: reads and searches run; of the writes only the
// sandboxed ones (bash, B-14b); an unknown tool is a write (seed 000).
func (c *Conversation) allowedRestricted(name string) bool {
	switch c.ToolKinds[name] {
	case "read", "search", "resolve":
		return true
	}
	for _, s := range c.Sandboxed {
		if s == name {
			return true
		}
	}
	return false
}

func stringArg(args json.RawMessage, key string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return "", false
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil {
		return "", false
	}
	return s, true
}

// upgradeRequest pauses for the user's decision (B-15a); it reports
// whether the machine now waits.
func (t *tx) upgradeRequest(p Pending) bool {
	c, call := t.c, p.Call
	switch {
	case c.Subagent:
		t.refuse(call, response.ActionNotAllowed, "a sub-agent cannot change its mode", "work within restricted mode, or submit_result saying what needs write access", false)
		return false
	case c.Mode == Unrestricted:
		text := "the conversation is already unrestricted"
		if !c.LandlockAvailable {
			text += " (restricted mode is not available on this host)"
		}
		t.result(call, text, false, true)
		return false
	}
	reason, _ := stringArg(call.Args, "reason")
	if strings.TrimSpace(reason) == "" {
		t.refuse(call, response.InvalidInput, "request_mode_upgrade needs a reason", "call it again with {\"reason\": \"why write access is needed\"}", true)
		return false
	}
	pp := p
	c.Running = &pp
	t.setState(AwaitingModeApproval)
	t.emit(Effect{Type: EfRequestModeApproval, CallID: call.ID, Reason: reason})
	t.emit(Effect{Type: EfNotify, Kind: NotifyModeRequest, Text: "the agent asks for unrestricted mode: " + reason})
	return true
}

// spawn starts one sub-agent per task (B-08a), restricted wherever Landlock
// works whatever this conversation's mode (B-18).
func (t *tx) spawn(p Pending) bool {
	c, call := t.c, p.Call
	if c.Subagent {
		t.refuse(call, response.ActionNotAllowed, "a sub-agent cannot spawn sub-agents", "do the work yourself, or submit_result saying what remains", false)
		return false
	}
	var args struct {
		Tasks []struct {
			Task string `json:"task"`
		} `json:"tasks"`
	}
	err := json.Unmarshal(call.Args, &args)
	var tasks []string
	for _, x := range args.Tasks {
		if strings.TrimSpace(x.Task) != "" {
			tasks = append(tasks, x.Task)
		}
	}
	if err != nil || len(tasks) == 0 || len(tasks) != len(args.Tasks) {
		t.refuse(call, response.InvalidInput, "spawn_agents needs tasks: a non-empty list of {\"task\": \"…\"}", "call it again with {\"tasks\": [{\"task\": \"…\"}]}", true)
		return false
	}
	mode := Unrestricted
	if c.LandlockAvailable {
		mode = Restricted
	}
	pp := p
	c.Running = &pp
	c.Subagents = nil
	for _, task := range tasks {
		c.Spawned++
		id := fmt.Sprintf("%s/sub/%d", c.ID, c.Spawned)
		c.Subagents = append(c.Subagents, Subagent{ID: id, Task: task, Status: SubagentRunning})
		t.emit(Effect{Type: EfSpawnSubagent, SubagentID: id, Task: task, Mode: mode, Cwd: c.Cwd})
	}
	return true
}

// submit ends a sub-agent with its result (B-08a).
func (t *tx) submit(p Pending) bool {
	c, call := t.c, p.Call
	if !c.Subagent {
		t.refuse(call, response.ActionNotAllowed, "submit_result is for sub-agents", "answer the user directly", false)
		return false
	}
	result, ok := stringArg(call.Args, "result")
	if !ok {
		t.refuse(call, response.InvalidInput, "submit_result needs a result string", "call it again with {\"result\": \"…\"}", true)
		return false
	}
	t.result(call, "result submitted", false, true)
	for _, q := range c.Queue {
		t.refuse(q.Call, CodeNotExecuted, q.Call.Name+" was not run: the sub-agent had already submitted its result", "none", false)
	}
	c.Queue, c.Running = nil, nil
	c.Finished, c.Result = true, result
	t.flushDeferred()
	t.setState(Idle)
	t.emit(Effect{Type: EfSubagentDone, Result: result})
	return true
}

// subagentResult records one child; the last one completes the spawn_agents
// call with the aggregate, failures and timeouts included (B-08b).
func (t *tx) subagentResult(ev Event) {
	c := t.c
	if c.State != ToolExecuting || c.Running == nil || c.Running.Call.Name != ToolSpawnAgents {
		t.stale("subagent_result " + ev.SubagentID)
		return
	}
	i := -1
	for j, s := range c.Subagents {
		if s.ID == ev.SubagentID && s.Status == SubagentRunning {
			i = j
		}
	}
	if i < 0 {
		t.stale("subagent_result " + ev.SubagentID)
		return
	}
	switch ev.Outcome {
	case SubagentDone, SubagentFailed, SubagentTimeout:
	default:
		t.fail(CodeInvalidInput, fmt.Sprintf("subagent_result outcome %q: want done, failed or timeout", ev.Outcome))
		return
	}
	s := &c.Subagents[i]
	s.Status, s.Result, s.Error = ev.Outcome, ev.Result, ev.Error
	if ev.Outcome == SubagentTimeout && s.Error == "" {
		s.Error = "timed out without submitting a result"
	}
	t.changed()
	for _, s := range c.Subagents {
		if s.Status == SubagentRunning {
			return
		}
	}
	t.aggregate()
	t.advance()
}

// aggregate records the spawn_agents result from c.Subagents.
func (t *tx) aggregate() {
	c := t.c
	call := c.Running.Call
	ok := 0
	for _, s := range c.Subagents {
		if s.Status == SubagentDone {
			ok++
		}
	}
	data := map[string]any{"subagents": c.Subagents, "succeeded": ok, "failed": len(c.Subagents) - ok}
	r := response.Success(data)
	if ok < len(c.Subagents) {
		r.Meta = map[string]any{"recovery_hint": "a failed sub-agent can be replaced: call spawn_agents again with a narrower task"}
	}
	b, _ := json.Marshal(r)
	t.result(call, string(b), ok == 0, false)
	c.Running, c.Subagents = nil, nil
	t.changed()
}

// cancel outranks completion (B-05): whatever runs is stopped, every open
// call gets a synthetic result, and the conversation is idle, or cancelling
// until the killed tool is confirmed gone.
func (t *tx) cancel() {
	c := t.c
	switch c.State {
	case AwaitingLLM, LLMRequesting:
		t.emit(Effect{Type: EfAbortLLM, RequestID: c.RequestID})
		c.RequestID, c.InFlight, c.Attempt, c.Continuing = "", false, 0, false
		t.setState(Idle) // B-05a: nothing of the response is kept
	case ToolExecuting, AwaitingModeApproval:
		if r := c.Running; r != nil && !r.Killed {
			t.stopRunning(r, CodeCancelled, "cancelled by the user")
		}
		for _, q := range c.Queue {
			t.refuse(q.Call, CodeCancelled, q.Call.Name+" was not run: cancelled by the user", "ask the user", false)
		}
		c.Queue = nil
		t.flushDeferred()
		if c.Running != nil {
			t.setState(Cancelling)
		} else {
			t.setState(Idle)
		}
	case Cancelling:
		if c.Running != nil {
			t.emit(Effect{Type: EfKillTool, CallID: c.Running.Call.ID})
		}
	case Error:
		t.setState(Idle)
	default:
		t.fail(CodeNotApplicable, "nothing to cancel in state "+string(c.State))
	}
}

// stopRunning ends the running call with a synthetic result: a tool is
// killed and awaited; a mode request withdrawn; sub-agents cancelled.
func (t *tx) stopRunning(r *Pending, code, why string) {
	c := t.c
	switch r.Call.Name {
	case ToolRequestModeUpgrade:
		t.emit(Effect{Type: EfCancelModeApproval, CallID: r.Call.ID})
		t.refuse(r.Call, code, "the mode request was withdrawn: "+why+"; the mode stays "+string(c.Mode), "ask again if still needed", false)
		c.Running = nil
	case ToolSpawnAgents:
		for i := range c.Subagents {
			if s := &c.Subagents[i]; s.Status == SubagentRunning {
				s.Status, s.Error = SubagentCancelled, why
				t.emit(Effect{Type: EfCancelSubagent, SubagentID: s.ID})
			}
		}
		t.aggregate()
	default:
		t.emit(Effect{Type: EfKillTool, CallID: r.Call.ID})
		t.refuse(r.Call, code, r.Call.Name+" was stopped: "+why, "ask the user before running it again", false)
		r.Killed = true
	}
	t.changed()
}

// modeDecision answers a pending request_mode_upgrade (B-15b). Only this
// event upgrades: nothing times out into unrestricted (B-15c).
func (t *tx) modeDecision(ev Event) {
	c := t.c
	r := c.Running
	if c.State != AwaitingModeApproval || r == nil || r.Call.Name != ToolRequestModeUpgrade {
		// Said in the user's words: the person who ran "mode ID approve"
		// knows no event names (issue 20, answers not guesses).
		t.fail(CodeStale, "no mode upgrade is pending (the conversation is "+string(c.State)+"): nothing to approve or deny")
		return
	}
	c.Running = nil
	t.changed()
	if !ev.Approved {
		text := "the user denied the upgrade: the conversation stays restricted"
		if ev.Reason != "" {
			text += " (" + ev.Reason + ")"
		}
		t.result(r.Call, text, true, true)
		t.setState(ToolExecuting)
		t.advance()
		return
	}
	t.result(r.Call, "approved: the conversation is now unrestricted", false, true)
	t.setMode(Unrestricted, "The user approved the upgrade.")
	t.setState(ToolExecuting)
	t.advance()
}

// downgrade is immediate and needs no approval (B-16); a tool running under
// the old generation is stopped, never left running with more than the
// mode allows.
func (t *tx) downgrade() {
	c := t.c
	switch {
	case c.Subagent:
		t.fail(CodeNotApplicable, "a sub-agent's mode cannot change")
		return
	case !c.LandlockAvailable:
		t.fail(CodeNotApplicable, "restricted mode is not available on this host (no Landlock)")
		return
	case c.Mode == Restricted:
		t.fail(CodeNotApplicable, "the conversation is already restricted")
		return
	}
	if r := c.Running; r != nil && !r.Killed && !machineTool(r.Call.Name) {
		t.stopRunning(r, CodeModeChanged, "the user switched to restricted mode while it ran")
	}
	t.setMode(Restricted, "The user switched to restricted mode.")
}

// setMode moves to a new capability generation: persisted with a synthetic
// system message (B-16, B-17a).
func (t *tx) setMode(m Mode, why string) {
	c := t.c
	c.Mode = m
	c.Generation++
	t.changed()
	t.system(KindMode, modeNotice(m, c.LandlockAvailable, why))
	t.emit(Effect{Type: EfNotify, Kind: NotifyModeChanged, Text: "the conversation is now " + string(m)})
}

func modeNotice(m Mode, landlock bool, why string) string {
	var s string
	switch {
	case m == Restricted:
		s = "Mode: restricted. Files are read-only and the network is closed: bash runs in a sandbox that cannot write outside its temporary directory or connect anywhere, and patch is disabled. " +
			"If you need to change files, call request_mode_upgrade with your reason; the user decides."
	case landlock:
		s = "Mode: unrestricted. Tools have full capabilities, still subject to policy and approvals. Tool calls requested before this change were not run; request them again if still needed."
	default:
		s = "Mode: unrestricted (restricted mode is not available on this host). Tools have full capabilities, still subject to policy and approvals."
	}
	if why != "" {
		s = why + " " + s
	}
	return s
}

// manualContinue is the user's continuation above 80% (B-23).
func (t *tx) manualContinue() {
	c := t.c
	switch {
	case c.Subagent:
		t.fail(CodeNotApplicable, "sub-agents have no continuation (B-24)")
	case c.State != Idle && c.State != Error:
		t.fail(CodeNotApplicable, "continue needs an idle conversation (state "+string(c.State)+")")
	case !c.ContinuationAvailable:
		t.fail(CodeNotApplicable, "manual continuation is available from 80% of the context window")
	default:
		t.startContinuation(nil)
	}
}

// Restore is the start-up step (B-07b): every conversation back to idle
// with its complete history. What was in flight gets a synthetic
// "interrupted" result, a pending upgrade is withdrawn (a denial: the mode
// stays), running sub-agents count as failed, an unfinished sub-agent is
// failed. A context_exhausted conversation stays exhausted: it is finished,
// not running.
func Restore(c *Conversation, at string) []Effect {
	t := begin(c, at)
	if c.Messages == nil {
		c.Messages = []Message{}
	}
	if r := c.Running; r != nil && !r.Killed {
		switch r.Call.Name {
		case ToolRequestModeUpgrade:
			t.emit(Effect{Type: EfCancelModeApproval, CallID: r.Call.ID})
			t.refuse(r.Call, CodeInterrupted, "the server restarted before the user decided: the mode stays "+string(c.Mode), "ask again if still needed", true)
		case ToolSpawnAgents:
			for i := range c.Subagents {
				if s := &c.Subagents[i]; s.Status == SubagentRunning {
					s.Status, s.Error = SubagentFailed, "interrupted by a server restart"
				}
			}
			t.aggregate()
		default:
			t.refuse(r.Call, CodeInterrupted, r.Call.Name+" was interrupted by a server restart and may have partly run",
				"check its effects before running it again", false)
		}
	}
	if c.Running != nil {
		c.Running = nil
		t.changed()
	}
	for _, q := range c.Queue {
		t.refuse(q.Call, CodeInterrupted, q.Call.Name+" was not run: the server restarted", "request it again if still needed", true)
	}
	c.Queue, c.Subagents = nil, nil
	t.flushDeferred()
	if c.State == AwaitingLLM || c.State == LLMRequesting {
		t.display(KindInterrupted, "the server restarted while the LLM request was in flight; send your message again")
	}
	if c.RequestID != "" || c.InFlight || c.Attempt != 0 || c.Continuing {
		c.RequestID, c.InFlight, c.Attempt, c.Continuing = "", false, 0, false
		t.changed()
	}
	if c.Subagent && !c.Finished {
		c.Finished, c.Failure = true, "interrupted by a server restart"
		t.changed()
	}
	if c.State != ContextExhausted {
		t.setState(Idle)
	}
	return t.finish()
}
