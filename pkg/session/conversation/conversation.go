package conversation

import (
	"fmt"
	"sort"
)

// DefaultMaxRetries is seed 001's "up to 3 times" (B-06a).
const DefaultMaxRetries = 3

// MaxRejections is how many envelope replies in a row may be rejected
// before the conversation goes to error (seed 002: malformed calls are not
// brute-forced; the model gets the reason and a new nonce, a few times).
const MaxRejections = 3

// RetryBaseMS is the first backoff; each retry doubles it (1 s, 2 s, 4 s).
const RetryBaseMS = 1000

// DefaultContextWindows is the model table used when Config has none
// (REQ-BED-022). The executor should pass its own.
var DefaultContextWindows = map[string]int{
	"gpt-4o":            128000,
	"gpt-4o-mini":       128000,
	"gpt-4.1":           1047576,
	"claude-sonnet-4":   200000,
	"llama3.1":          131072,
	"qwen2.5-coder":     32768,
	"mistral":           32768,
	"claude-3-5-sonnet": 200000,
}

// DefaultToolKinds are gate serve's tools (pkg/convtools) by kind: read and
// search run in every mode; bash is a write that restricted mode runs in
// the isolated sandbox; patch is a write restricted mode refuses (B-14b).
var DefaultToolKinds = map[string]string{
	"bash":      "write",
	"read_file": "read",
	"search":    "search",
	"patch":     "write",
}

// DefaultSandboxed are the write tools restricted mode runs under the
// isolated sandbox instead of refusing.
var DefaultSandboxed = []string{"bash"}

// Config is what a new conversation is made from.
type Config struct {
	ID            string
	ParentID      string // a sub-agent's parent (B-09b)
	ContinuedFrom string // B-21: the exhausted conversation this one continues
	Subagent      bool
	Task          string // a sub-agent's task: sent at once as its first message
	Cwd           string // B-10
	Model         string
	// ContextWindows maps model → tokens (B-22); nil: DefaultContextWindows.
	ContextWindows map[string]int
	// LandlockAvailable: restricted mode exists only where it is enforced
	// (B-14a).
	LandlockAvailable bool
	// Unrestricted starts a conversation unrestricted where restricted mode
	// exists: the person creating it chose so (the executor decides who
	// may). A sub-agent ignores it: always restricted where Landlock works
	// (B-18).
	Unrestricted bool
	Summary      string // B-21: the summary a continued conversation starts from
	MaxRetries   int    // 0: DefaultMaxRetries
	// ToolKinds maps the executor's tool names to read|search|write; nil:
	// DefaultToolKinds. A tool not listed is a write (seed 000).
	ToolKinds map[string]string
	Sandboxed []string // nil: DefaultSandboxed
	At        string   // creation time, RFC 3339
}

// Conversation is one conversation's whole state, the snapshot the
// executor persists (json.Marshal) and restores (json.Unmarshal, Restore).
// The JSON shape is part of the contract: fields are added, never renamed.
type Conversation struct {
	ID            string `json:"id"`
	ParentID      string `json:"parent_id,omitempty"`
	ContinuedFrom string `json:"continued_from,omitempty"`
	Subagent      bool   `json:"subagent,omitempty"`
	Cwd           string `json:"cwd"`
	Model         string `json:"model"`
	ContextWindow int    `json:"context_window"`

	LandlockAvailable bool              `json:"landlock_available"`
	Mode              Mode              `json:"mode"`
	Generation        int               `json:"generation"`
	ToolKinds         map[string]string `json:"tool_kinds"`
	Sandboxed         []string          `json:"sandboxed"`
	MaxRetries        int               `json:"max_retries"`

	State     State  `json:"state"`
	Attempt   int    `json:"attempt,omitempty"`    // the LLM attempt in flight or scheduled
	RequestID string `json:"request_id,omitempty"` // the only request whose answer counts (B-05c)
	InFlight  bool   `json:"in_flight,omitempty"`  // a call_llm is out (not a backoff)
	Requests  int    `json:"requests"`             // request ids issued, for the next one
	// Rejections counts the envelope replies rejected in a row this turn
	// (MaxRejections).
	Rejections int `json:"rejections,omitempty"`

	Queue     []Pending  `json:"queue,omitempty"`
	Running   *Pending   `json:"running,omitempty"`
	Subagents []Subagent `json:"subagents,omitempty"`
	Spawned   int        `json:"spawned,omitempty"` // sub-agent ids issued
	// Deferred holds mode notices made while a tool round is open: a system
	// message between an assistant's tool calls and their results would
	// break the LLM API's chain, so they follow the round's last result.
	Deferred []Message `json:"deferred,omitempty"`

	Messages []Message `json:"messages"`
	LastSeq  int64     `json:"last_seq"`

	Usage                 Usage  `json:"usage"`
	Warned                bool   `json:"warned,omitempty"`
	ContinuationAvailable bool   `json:"continuation_available,omitempty"`
	Continuing            bool   `json:"continuing,omitempty"` // the summary request is out (B-20)
	Summary               string `json:"summary,omitempty"`    // B-20b
	LastError             string `json:"last_error,omitempty"` // B-06b/c

	Nudged   bool   `json:"nudged,omitempty"`   // a sub-agent was told once to call submit_result
	Finished bool   `json:"finished,omitempty"` // a sub-agent submitted or failed
	Result   string `json:"result,omitempty"`   // a sub-agent's submitted result
	Failure  string `json:"failure,omitempty"`  // why a sub-agent failed

	CreatedAt string `json:"created_at"`
}

// New makes a conversation: restricted where Landlock works, unrestricted
// (and the user told) where it does not (B-14a); a sub-agent likewise,
// whatever its parent's mode (B-18). The first effects persist it.
func New(cfg Config) (*Conversation, []Effect) {
	c := &Conversation{
		ID: cfg.ID, ParentID: cfg.ParentID, ContinuedFrom: cfg.ContinuedFrom, Subagent: cfg.Subagent,
		Cwd: cfg.Cwd, Model: cfg.Model, LandlockAvailable: cfg.LandlockAvailable,
		Generation: 1, State: Idle, MaxRetries: cfg.MaxRetries, CreatedAt: cfg.At,
		Messages: []Message{},
	}
	c.ContextWindow = windowOf(cfg.Model, cfg.ContextWindows)
	if c.MaxRetries <= 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	c.ToolKinds = map[string]string{}
	kinds := cfg.ToolKinds
	if kinds == nil {
		kinds = DefaultToolKinds
	}
	for k, v := range kinds {
		c.ToolKinds[k] = v
	}
	c.Sandboxed = append([]string{}, cfg.Sandboxed...)
	if cfg.Sandboxed == nil {
		c.Sandboxed = append([]string{}, DefaultSandboxed...)
	}
	sort.Strings(c.Sandboxed)

	t := begin(c, cfg.At)
	notice := ""
	switch {
	case cfg.LandlockAvailable && (cfg.Subagent || !cfg.Unrestricted):
		c.Mode = Restricted
		notice = modeNotice(c.Mode, true, "")
	case cfg.LandlockAvailable:
		c.Mode = Unrestricted
		notice = "Mode: unrestricted, as the user chose when creating this conversation. Tools have full capabilities, still subject to policy and approvals."
	default:
		c.Mode = Unrestricted
		t.emit(Effect{Type: EfNotify, Kind: NotifyModeUnavailable,
			Text: "Landlock is not available on this host (Linux 5.13 or later is needed): only unrestricted mode exists, and tools run with full capabilities"})
		notice = modeNotice(c.Mode, false, "")
	}
	t.changed()
	t.system(KindMode, notice)
	if cfg.Subagent {
		t.system(KindSubagent, "You are a sub-agent working on one task for a parent conversation. "+
			"You cannot spawn sub-agents or change your mode. When you are done, call submit_result with your result: that is the only way to finish.")
	}
	if cfg.Summary != "" {
		text := "This conversation continues from an earlier one that reached its context limit"
		if cfg.ContinuedFrom != "" {
			text += " (" + cfg.ContinuedFrom + ")"
		}
		t.system(KindContinuation, text+". Its summary:\n\n"+cfg.Summary)
	}
	if cfg.Task != "" {
		t.add(Message{Role: RoleUser, Text: cfg.Task})
		t.callLLM(true)
	}
	return c, t.finish()
}

// windowOf is the model's context window, or the smallest known (B-22).
func windowOf(model string, table map[string]int) int {
	if table == nil {
		table = DefaultContextWindows
	}
	if w, ok := table[model]; ok && w > 0 {
		return w
	}
	smallest := 0
	for _, w := range table {
		if w > 0 && (smallest == 0 || w < smallest) {
			smallest = w
		}
	}
	return smallest
}

// Transition applies one event and returns the effects the executor must
// carry out, in order. It changes c in place; an event that does not fit
// the state changes nothing and gets an error effect (a stale completion,
// B-05c) or a reject (a user message while busy, B-02b).
func Transition(c *Conversation, ev Event) []Effect {
	t := begin(c, ev.At)
	switch ev.Type {
	case EvUserMessage:
		t.userMessage(ev)
	case EvLLMResponse:
		t.llmResponse(ev)
	case EvLLMError:
		t.llmError(ev)
	case EvRetryDue:
		t.retryDue(ev)
	case EvToolResult:
		t.toolResult(ev)
	case EvCancel:
		t.cancel()
	case EvModeDecision:
		t.modeDecision(ev)
	case EvModeDowngrade:
		t.downgrade()
	case EvContinue:
		t.manualContinue()
	case EvSubagentResult:
		t.subagentResult(ev)
	case EvLLMRejected:
		t.llmRejected(ev)
	default:
		t.fail(CodeUnknownEvent, fmt.Sprintf("unknown event type %q", ev.Type))
	}
	return t.finish()
}

// History is what the LLM is sent: every message but display notices
// (errors, retries, warnings, restart notes).
func (c *Conversation) History() []Message {
	out := make([]Message, 0, len(c.Messages))
	for _, m := range c.Messages {
		if m.ForLLM() {
			out = append(out, m)
		}
	}
	return out
}

// Admits reports whether the executor may start the call now: it is the
// running call, not killed, and admitted under the current capability
// generation. The executor asks just before starting an execute_tool, so a
// mode change that slipped in between is never half-applied.
func (c *Conversation) Admits(callID string, generation int) bool {
	return c.Running != nil && !c.Running.Killed && c.Running.Call.ID == callID &&
		c.Running.Generation == generation && generation == c.Generation &&
		(c.State == ToolExecuting)
}

// View is the state effect's content.
func (c *Conversation) View() StateView {
	return StateView{ID: c.ID, State: c.State, Mode: c.Mode, Generation: c.Generation, Attempt: c.Attempt,
		Usage: c.Usage, ContextWindow: c.ContextWindow, ContinuationAvailable: c.ContinuationAvailable,
		Finished: c.Finished, LastSeq: c.LastSeq}
}

// OfferedTools are the machine's tools this conversation is offered: a
// parent gets spawn_agents and request_mode_upgrade in every mode (B-17b:
// descriptions never change with the mode); a sub-agent gets only
// submit_result (B-09a, B-18).
func (c *Conversation) OfferedTools() []ToolSpec {
	var out []ToolSpec
	for _, s := range Tools() {
		if (s.Name == ToolSubmitResult) == c.Subagent {
			out = append(out, s)
		}
	}
	return out
}
