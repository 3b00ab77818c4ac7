package conversation

import "encoding/json"

// State is where a conversation stands (seed 001's states).
type State string

// The states. Busy ones reject a user message with AGENT_BUSY (B-02b).
const (
	Idle                 State = "idle"
	AwaitingLLM          State = "awaiting_llm"   // a call_llm is out (first attempt)
	LLMRequesting        State = "llm_requesting" // retrying: Attempt says which (B-06a)
	ToolExecuting        State = "tool_executing"
	AwaitingModeApproval State = "awaiting_mode_approval"
	Cancelling           State = "cancelling" // a killed tool's end is awaited (B-05b)
	Error                State = "error"
	ContextExhausted     State = "context_exhausted"
)

// Busy reports whether a user message must be refused (B-02b).
func (s State) Busy() bool {
	switch s {
	case AwaitingLLM, LLMRequesting, ToolExecuting, AwaitingModeApproval, Cancelling:
		return true
	}
	return false
}

// Mode is the conversation's capability level (REQ-BED-014).
type Mode string

// The modes.
const (
	Restricted   Mode = "restricted"
	Unrestricted Mode = "unrestricted"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSystem    = "system"
)

// Message kinds. Kinds in display-only messages (KindError, KindRetry,
// KindContextWarning, KindInterrupted) are for people: History leaves them
// out of what the LLM sees.
const (
	KindMode                = "mode"                 // B-17a: a mode notice, sent to the LLM
	KindContinuation        = "continuation"         // B-20b: the summary (or B-21: the seed of a continued conversation)
	KindContinuationRequest = "continuation_request" // B-20a: the request for the summary
	KindContextWarning      = "context_warning"      // B-23, display only
	KindError               = "error"                // B-06b/c, display only
	KindRetry               = "retry"                // B-06a, display only (the machine sends notify instead)
	KindInterrupted         = "interrupted"          // B-07b: a restart cut something short, display only
	KindSubagent            = "subagent"             // a sub-agent's instructions (B-08a)
	// The envelope tool protocol (seed 002): a model reply the executor
	// rejected, kept as the assistant's turn so the history alternates, and
	// the rejection the model is shown. Both are sent to the LLM.
	KindRejectedReply = "rejected_reply"
	KindRejection     = "rejection"
)

// ToolCall is one tool request of an assistant message.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Attachment is a reference to an image the executor stored (B-13): the
// machine passes references through and never holds bytes.
type Attachment struct {
	Ref       string `json:"ref"`
	MediaType string `json:"media_type"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
}

// Usage is an LLM response's token count (B-12). TotalTokens is what the
// context thresholds compare (REQ-BED-019).
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Message is one entry of a conversation's history. Seq numbers are
// strictly increasing and never reused; a persisted message never changes.
type Message struct {
	Seq         int64        `json:"seq"`
	Role        string       `json:"role"`
	Text        string       `json:"text,omitempty"`
	ToolCalls   []ToolCall   `json:"tool_calls,omitempty"`
	CallID      string       `json:"call_id,omitempty"`
	Tool        string       `json:"tool,omitempty"`
	IsError     bool         `json:"is_error,omitempty"`
	Synthetic   bool         `json:"synthetic,omitempty"`
	Kind        string       `json:"kind,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	Usage       *Usage       `json:"usage,omitempty"`
	At          string       `json:"at"`
}

// ForLLM reports whether the message belongs in the LLM's request: display
// notices (errors, retries, warnings, restart notes) do not.
func (m Message) ForLLM() bool {
	switch m.Kind {
	case KindError, KindRetry, KindContextWarning, KindInterrupted:
		return false
	}
	return true
}

// Pending is a tool call admitted under a capability generation, queued or
// running.
type Pending struct {
	Call       ToolCall `json:"call"`
	Generation int      `json:"generation"`
	// Killed: kill_tool went out and the synthetic result is recorded; the
	// executor's tool_result for it only confirms the process is gone.
	Killed bool `json:"killed,omitempty"`
}

// Subagent is one child of a running spawn_agents call (B-08).
type Subagent struct {
	ID     string `json:"id"`
	Task   string `json:"task"`
	Status string `json:"status"` // running | done | failed | timeout | cancelled
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Sub-agent outcomes (subagent_result's outcome, Subagent.Status).
const (
	SubagentRunning   = "running"
	SubagentDone      = "done"
	SubagentFailed    = "failed"
	SubagentTimeout   = "timeout"
	SubagentCancelled = "cancelled"
)

// Event types (in).
const (
	EvUserMessage    = "user_message"
	EvLLMResponse    = "llm_response"
	EvLLMError       = "llm_error"
	EvRetryDue       = "retry_due"
	EvToolResult     = "tool_result"
	EvCancel         = "cancel"
	EvModeDecision   = "mode_decision"
	EvModeDowngrade  = "mode_downgrade"
	EvContinue       = "continue"
	EvSubagentResult = "subagent_result"
	// EvLLMRejected: the executor rejected the model's reply under seed
	// 002's strict text envelope (bad format, unknown tool, bad args, two
	// objects, wrong nonce): nothing runs, and the model is asked again.
	EvLLMRejected = "llm_rejected"
)

// Event is one thing that happened, stamped by the executor with At (RFC
// 3339). One struct carries every type; a field means what its event says.
type Event struct {
	Type string `json:"type"`
	At   string `json:"at,omitempty"`

	// user_message
	Text        string       `json:"text,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`

	// llm_response, llm_error, retry_due, llm_rejected (Text: the reply)
	RequestID string     `json:"request_id,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	EndTurn   bool       `json:"end_turn,omitempty"`
	Usage     *Usage     `json:"usage,omitempty"`
	Status    int        `json:"status,omitempty"` // llm_error: HTTP status, 0 for a network failure
	Retryable bool       `json:"retryable,omitempty"`
	Error     string     `json:"error,omitempty"` // llm_error, tool_result, subagent_result

	// llm_rejected: seed 002's rejection code (tool_call_*) and what was
	// wrong, bounded by the executor.
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`

	// tool_result
	CallID     string `json:"call_id,omitempty"`
	Generation int    `json:"generation,omitempty"`
	OK         bool   `json:"ok,omitempty"`
	Output     string `json:"output,omitempty"`

	// mode_decision
	Approved   bool   `json:"approved,omitempty"`
	Reason     string `json:"reason,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`

	// subagent_result
	SubagentID string `json:"subagent_id,omitempty"`
	Outcome    string `json:"outcome,omitempty"` // done | failed | timeout
	Result     string `json:"result,omitempty"`
}

// Effect types (out).
const (
	EfPersist             = "persist"
	EfState               = "state"
	EfCallLLM             = "call_llm"
	EfAbortLLM            = "abort_llm"
	EfScheduleRetry       = "schedule_retry"
	EfExecuteTool         = "execute_tool"
	EfKillTool            = "kill_tool"
	EfSpawnSubagent       = "spawn_subagent"
	EfCancelSubagent      = "cancel_subagent"
	EfSubagentDone        = "subagent_done"
	EfRequestModeApproval = "request_mode_approval"
	EfCancelModeApproval  = "cancel_mode_approval"
	EfReject              = "reject"
	EfNotify              = "notify"
	EfError               = "error"
	// Made by pkg/session's composition (session.Conversation), never by
	// this machine: a receipt of the session gates for one tool execution,
	// and any other gate effect (stabilization, metric, state, error) as
	// the gates wrote it.
	EfReceipt = "receipt"
	EfGate    = "gate"
)

// Codes of reject and error effects, and of the machine's own tool results.
const (
	CodeAgentBusy        = "AGENT_BUSY"
	CodeContextExhausted = "CONTEXT_EXHAUSTED"
	CodeFinished         = "FINISHED"    // the sub-agent already submitted or failed
	CodeStale            = "STALE_EVENT" // B-05c: a completion after a cancel, or for another request
	CodeNotApplicable    = "NOT_APPLICABLE"
	CodeUnknownEvent     = "UNKNOWN_EVENT"
	CodeInvalidInput     = "INVALID_INPUT"
	CodeModeChanged      = "MODE_CHANGED" // the capability generation moved on
	CodeCancelled        = "CANCELLED"
	CodeInterrupted      = "INTERRUPTED"
	CodeNotExecuted      = "NOT_EXECUTED"
)

// Notify kinds.
const (
	NotifyRetry           = "retry"
	NotifyContextWarning  = "context_warning"
	NotifyModeUnavailable = "mode_unavailable"
	NotifyModeChanged     = "mode_changed"
	NotifyModeRequest     = "mode_request"
	NotifyError           = "error"
)

// Effect is one thing the executor must do or tell, in order. persist is
// always first when anything changed (B-07a): write json.Marshal(conv) and
// Messages in one transaction, then carry out the rest.
type Effect struct {
	Type string `json:"type"`

	Messages []Message `json:"messages,omitempty"` // persist: appended in this transition

	RequestID string `json:"request_id,omitempty"` // call_llm, abort_llm, schedule_retry
	Attempt   int    `json:"attempt,omitempty"`    // call_llm, schedule_retry: 1 is the first try
	AfterMS   int64  `json:"after_ms,omitempty"`   // schedule_retry
	Tools     bool   `json:"tools,omitempty"`      // call_llm: offer tools; false (omitted) for the continuation summary (B-20a)

	Call       *ToolCall `json:"call,omitempty"`       // execute_tool
	Generation int       `json:"generation,omitempty"` // execute_tool: admitted under; state
	Mode       Mode      `json:"mode,omitempty"`       // execute_tool (restricted: the isolated sandbox), spawn_subagent, state
	Cwd        string    `json:"cwd,omitempty"`        // execute_tool, spawn_subagent (B-10)
	CallID     string    `json:"call_id,omitempty"`    // kill_tool, request_mode_approval, cancel_mode_approval

	SubagentID string `json:"subagent_id,omitempty"` // spawn_subagent, cancel_subagent
	Task       string `json:"task,omitempty"`        // spawn_subagent
	Result     string `json:"result,omitempty"`      // subagent_done
	Error      string `json:"error,omitempty"`       // subagent_done (failed)

	Reason string `json:"reason,omitempty"` // request_mode_approval
	Code   string `json:"code,omitempty"`   // reject, error
	Kind   string `json:"kind,omitempty"`   // notify
	Text   string `json:"text,omitempty"`   // reject, notify
	Detail string `json:"detail,omitempty"` // error

	State *StateView `json:"state,omitempty"` // state (B-11)

	Receipt json.RawMessage `json:"receipt,omitempty"` // receipt (session.Conversation)
	Gate    json.RawMessage `json:"gate,omitempty"`    // gate: the session effect (session.Conversation)
}

// StateView is what the state effect streams (B-11).
type StateView struct {
	ID                    string `json:"id"`
	State                 State  `json:"state"`
	Mode                  Mode   `json:"mode"`
	Generation            int    `json:"generation"`
	Attempt               int    `json:"attempt,omitempty"`
	Usage                 Usage  `json:"usage"`
	ContextWindow         int    `json:"context_window"`
	ContinuationAvailable bool   `json:"continuation_available,omitempty"`
	Finished              bool   `json:"finished,omitempty"`
	LastSeq               int64  `json:"last_seq"`
}
