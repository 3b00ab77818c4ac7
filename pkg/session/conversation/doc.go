// Package conversation is seed 001's conversation state machine: pure transitions from a conversation and an event to the effects its executor carries out.
//
// # States
//
// idle waits for the user. awaiting_llm has one call_llm out (first
// attempt); llm_requesting is the same request being retried after a
// retryable error, with Attempt saying which try (B-06a). tool_executing runs
// the queue of an assistant's tool calls one at a time, in order (B-04a), or
// waits for the sub-agents of a spawn_agents call (B-08). awaiting_mode_approval
// is paused on request_mode_upgrade until a mode_decision; nothing times out
// into unrestricted (B-15c). cancelling waits for the executor to confirm a
// killed tool is gone (its tool_result, whatever it says) before idle, so no
// new work starts beside a dying process group (B-05b). error follows a failed
// LLM request; a user message continues from it (B-06d). context_exhausted is
// terminal: it refuses messages and holds the continuation summary (B-21).
// The busy states (awaiting_llm, llm_requesting, tool_executing,
// awaiting_mode_approval, cancelling) refuse a user message with
// reject{AGENT_BUSY}, which is not stored (B-02b).
//
// # Events and effects
//
// Transition(c, ev) changes c in place and returns the effects in order. When
// anything changed, the first effect is persist, carrying the messages
// appended by this transition, and the second is state (B-07a, B-11): the
// executor writes json.Marshal(c) and those messages in one transaction,
// streams them, and only then carries out the rest (call_llm, abort_llm,
// schedule_retry, execute_tool, kill_tool, spawn_subagent, cancel_subagent,
// subagent_done, request_mode_approval, cancel_mode_approval, reject, notify,
// error). An event that does not fit changes nothing and gets an error
// effect: a completion after a cancel carries a request id or call id that is
// no longer current and is discarded (B-05c). Ids the machine makes (request
// ids "ID/llm/N", sub-agent ids "ID/sub/N", call ids the model left out) are
// counters in the snapshot, so replay gives the same ids (B-01b).
//
// Every tool call of an assistant message gets exactly one tool result:
// its own, or a synthetic one for a cancel, a restart, a mode refusal or the
// context limit (B-05d). Mode notices made while a round is open wait in
// Deferred and follow its last result, because LLM APIs want results right
// after their calls.
//
// # The envelope tool protocol
//
// An executor that speaks seed 002's strict text envelope instead of native
// tool calling parses the model's text itself: an accepted tool envelope is
// an llm_response with one tool call like any other, so every gate applies
// to it. A rejected reply is llm_rejected{code, detail}: nothing runs, the
// reply (kind rejected_reply) and the rejection (kind rejection, a user
// message) go into the history the model sees, and the model is asked again
// under a new request, for which the executor draws a new nonce.
// MaxRejections (3) in a row put the conversation in error with an
// actionable message (a sub-agent fails). Cancel outranks it like any
// completion.
//
// # The capability generation
//
// The mode is one capability generation: Generation starts at 1 and every
// mode change bumps it and adds a synthetic system message (B-16, B-17a). A
// tool call is admitted under the generation current when the LLM asked for
// it; when its turn comes under another generation it gets a MODE_CHANGED
// error result and never runs. execute_tool carries the generation, and the
// executor checks Admits just before starting, so a call admitted under the
// old mode is never run half-upgraded (the phoenix-ide P0 where, after
// approval, bash stayed sandboxed while patch wrote). A downgrade stops a
// running tool at once (kill_tool), never leaving it running with more than
// the mode allows. In restricted mode reads and searches run, bash runs in
// the isolated sandbox (execute_tool.mode), and other writes (patch, unknown
// tools) get an error suggesting request_mode_upgrade (B-14b, B-17c). Tool
// descriptions never depend on the mode (B-17b).
//
// # Retries and context
//
// Retryable failures (network, 429, 5xx) are retried MaxRetries (3) times
// after 1 s, 2 s and 4 s (schedule_retry, then the executor's retry_due),
// each shown with notify; then error with an actionable message (B-06b).
// 401, 403 and other 4xx go to error at once (B-06c). Usage.TotalTokens is
// compared with the model's window (unknown model: the smallest known,
// B-22): at 80% a warning and manual continuation (B-23); at 90% the
// response's tools are not run, a summary is requested with tools off naming
// them (B-19, B-20a), and the answer, or a fallback summary when the request
// fails, ends in context_exhausted (B-20b). A sub-agent at 90% fails at once
// (B-24).
//
// # Sub-agents
//
// spawn_agents makes one spawn_subagent per task, restricted wherever
// Landlock works (B-18); the parent stays in tool_executing until a
// subagent_result for each, then gets one aggregated result with failures
// and timeouts (B-08b). A sub-agent is offered submit_result instead of
// spawn_agents and request_mode_upgrade, refuses them if called anyway
// (B-09a), and ends with subagent_done when it submits or fails.
//
// # The JSON shape
//
// The executor persists json.Marshal(*Conversation) and streams Effect and
// Message values as JSON; the tags are snake_case and are only ever added
// to, never renamed. A snapshot's keys: id, parent_id, continued_from,
// subagent, cwd, model, context_window, landlock_available, mode,
// generation, tool_kinds, sandboxed, max_retries, state, attempt,
// request_id, in_flight, requests, queue and running ({call, generation,
// killed}), subagents, spawned, deferred, messages, last_seq, usage
// ({input_tokens, output_tokens, total_tokens}), warned,
// continuation_available, continuing, summary, last_error, nudged,
// finished, result, failure, created_at. An Effect is {"type": …} plus the
// fields its type uses (see Effect); an Event likewise, with the HTTP
// status of llm_error in "status" and a sub-agent's outcome in "outcome".
//
// # Restore
//
// After a restart Restore brings every conversation to idle with its
// history complete (B-07b): an interrupted tool, mode request or sub-agent
// gets a synthetic result; an LLM request in flight leaves a display notice.
// A context_exhausted conversation stays exhausted.
package conversation
