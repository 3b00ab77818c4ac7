package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/govkit/govkit/pkg/intent"
	"github.com/govkit/govkit/pkg/strictjson"
)

// Event is the part of an agent's hook event that a decision needs.
type Event struct {
	Kind    EventKind // which hook event this is; PreTool for classify hook's
	Tool    string    // the agent's name for the tool
	Shell   bool      // the tool runs Command in a shell
	Command string    // the shell command, when Shell
	Cwd     string    // the directory the tool runs in, when the agent says
	// NoAsk: for this event the agent does not enforce ask (Cursor's
	// preToolUse and beforeReadFile), so an ask must become a deny.
	NoAsk bool

	SessionID string // session_id, conversation_id, taskId or sessionId: the key of gate hook's state
	CallID    string // tool_use_id and the like, "" when the agent gives none
	// Subagent names the sub-agent an event comes from (Claude and Codex
	// agent_id), "" for the main agent. A sub-agent's stop is Kind Stop.
	Subagent string
	// Input is the tool's input as a JSON object (a string holding an
	// object, as Copilot and Cursor send, is decoded); nil when absent.
	Input json.RawMessage
	// Output is the tool's response as the agent gives it (PostTool).
	Output    json.RawMessage
	Failed    bool   // PostTool: the tool failed
	ErrorText string // PostTool: its error, when Failed and the agent says
	// Source is how a session started (SessionStart: startup, resume,
	// clear, compact …), why it ended (SessionEnd: the agent's reason), or
	// Cursor's stop status (completed, aborted, error).
	Source      string
	Prompt      string // Prompt: the user's prompt, when the event carries it
	LastMessage string // Stop: the final assistant message, when the event carries it
	Transcript  string // the transcript path, when the agent gives one
	StopActive  bool   // Stop: the agent is already going on because a stop hook refused a stop
}

// Dialect is one agent's hook protocol.
type Dialect interface {
	// Decode reads one event of any kind gate hook governs; an error means
	// the event is malformed, too large, or one gate hook does not govern
	// (Claude's Notification, PreCompact …): the caller decides.
	Decode(raw []byte) (Event, error)
	// Encode puts a pre-tool-call decision in the agent's words. It must
	// turn anything that is not an explicit allow into the agent's
	// blocking form. Encode(d) is Answer(PreTool, d).
	Encode(Decision) Answer
	// Answer puts d in the agent's words for an event of kind k:
	//   PreTool: as Encode.
	//   PostTool: Allow says nothing (d.Context reaches the model where the
	//     agent can add context); anything else is the deny form: the reason
	//     goes to the model (Claude and Codex decision:block, Gemini deny,
	//     which replaces the tool's result), or, where the agent cannot
	//     block after a tool, it is added as context.
	//   Stop: Allow lets the agent stop; anything else refuses the stop and
	//     Reason is what the agent must do next; where the agent has no
	//     blocking stop, the best it has (see StopBlocks).
	//   SessionStart, SessionEnd, Prompt: a neutral answer that never blocks
	//     the session or the user's prompt; d.Context (and, for a decision
	//     that is not an allow, its Reason) is added to the model's context
	//     where the agent supports it.
	// A kind Answer does not know gets Encode's blocking form.
	Answer(k EventKind, d Decision) Answer
}

// eventAnswerer is a dialect whose answer depends on more of the event
// than its kind (Claude names PostToolUseFailure in its answer).
type eventAnswerer interface {
	answerEvent(ev Event, d Decision) Answer
}

// Reply answers ev in d's dialect: Answer(ev.Kind, dec), with what the
// event itself changes — an ask becomes a deny where the event cannot ask
// (ev.NoAsk), and a failed tool's context is answered under the agent's
// failure event name. Prefer it to Answer when the event is at hand.
func Reply(d Dialect, ev Event, dec Decision) Answer {
	if ev.NoAsk {
		dec = settle(dec, false)
	}
	if ea, ok := d.(eventAnswerer); ok {
		return ea.answerEvent(ev, dec)
	}
	return d.Answer(ev.Kind, dec)
}

// Dialects are the supported agents, by --agent name.
var Dialects = map[string]Dialect{
	"claude":  claude{},
	"codex":   codex{},
	"gemini":  gemini{},
	"cursor":  cursor{},
	"cline":   cline{},
	"copilot": copilot{},
}

// Agents lists the --agent names in order.
func Agents() []string {
	names := make([]string, 0, len(Dialects))
	for n := range Dialects {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// settle makes a decision safe to encode for an agent: an unknown
// permission becomes deny, ask becomes deny where the agent cannot ask
// (saying how to get approval instead), and a deny always has a reason.
func settle(d Decision, canAsk bool) Decision {
	switch d.Permission {
	case Allow:
		return d
	case Ask:
		if canAsk {
			return d
		}
		d.Permission = Deny
		d.Reason = strings.TrimSuffix(d.Reason, " Ask the user to approve it.") +
			" This agent's hooks cannot ask for approval: ask the user to run the command themselves, or to allow it in the agent's settings."
	default:
		d.Permission = Deny
	}
	if strings.TrimSpace(d.Reason) == "" {
		d.Reason = "govkit classify blocked this call."
	}
	return d
}

// decodeObject parses raw as one JSON object into v, refusing trailing
// data and anything over MaxEvent (DESIGN §3: bounded reads). Unknown
// fields are allowed: agents add fields between versions.
func decodeObject(raw []byte, v any) error {
	if len(raw) > MaxEvent {
		return fmt.Errorf("the event is %d bytes; the limit is %d", len(raw), MaxEvent)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		// In JSON's words, never Go's (issue 20): "tool_input must be an
		// object {…}, not a string", "line 1, column 1: invalid character".
		return strictjson.ExplainLenient(err, raw, reflect.TypeOf(v).Elem())
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// encodeJSON renders v compactly, without HTML escaping (commands are full
// of & < >), with a trailing newline.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Unreachable for the plain structs the dialects encode.
		panic(fmt.Sprintf("hook: encoding answer: %v", err))
	}
	return b.Bytes()
}

// stringField extracts a string field from a tool-input object that may be
// a JSON object or a JSON string holding one (Copilot's toolArgs).
func stringField(input json.RawMessage, name string) (string, bool, error) {
	input = bytes.TrimSpace(input)
	if len(input) == 0 || bytes.Equal(input, []byte("null")) {
		return "", false, nil
	}
	if input[0] == '"' {
		var s string
		if err := json.Unmarshal(input, &s); err != nil {
			return "", false, err
		}
		input = []byte(s)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(input, &m); err != nil {
		return "", false, fmt.Errorf("tool input: %v", err)
	}
	v, ok := m[name]
	if !ok {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, fmt.Errorf("tool input %s: not a string", name)
	}
	return s, true, nil
}

// shellEvent completes ev as a shell call whose command is input's
// "command" field; a shell call without one is malformed.
func shellEvent(ev Event, input json.RawMessage) (Event, error) {
	cmd, ok, err := stringField(input, "command")
	if err != nil {
		return Event{}, err
	}
	if !ok {
		return Event{}, errors.New(ev.Tool + " input has no command")
	}
	ev.Shell, ev.Command = true, cmd
	return ev, nil
}

// NewJudge returns the judge the hook uses: shell commands are classified
// (in the event's working directory), other tools are judged by name.
func NewJudge(p Policy, classify func(command, cwd string) intent.Result) Judge {
	return func(ev Event) Decision {
		if !ev.Shell {
			return DecideTool(ev.Tool, KindOf(ev.Tool), p)
		}
		if strings.TrimSpace(ev.Command) == "" {
			return Failure("the event has no command")
		}
		return DecideCommand(classify(ev.Command, ev.Cwd), p)
	}
}

// objectInput normalises a tool's input to a JSON object: agents send an
// object, or (Copilot's toolArgs, Cursor's MCP tool_input) a string holding
// one. Absent or null is nil; anything else is malformed.
func objectInput(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if !present(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("tool input: %v", err)
		}
		inner := bytes.TrimSpace([]byte(s))
		if len(inner) == 0 || inner[0] != '{' || !json.Valid(inner) {
			return nil, errors.New("tool input is a string that does not hold a JSON object")
		}
		return inner, nil
	}
	if raw[0] != '{' {
		return nil, errors.New("tool input is not a JSON object")
	}
	return raw, nil
}

// present reports whether a field was given a value other than null.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// textOf renders a field as text: a JSON string is its value, an object
// with a "message" string (Gemini's and Copilot's errors) is that message,
// null is "", anything else is its JSON.
func textOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if !present(raw) {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m struct {
		Message *string `json:"message"`
	}
	if raw[0] == '{' && json.Unmarshal(raw, &m) == nil && m.Message != nil {
		return *m.Message
	}
	return string(raw)
}

// withShell completes a tool event whose tool is the agent's shell: a
// shell call must name its command (shellEvent).
func withShell(ev Event, shell string) (Event, error) {
	if ev.Tool != shell {
		return ev, nil
	}
	return shellEvent(ev, ev.Input)
}

// neutralContext is what a neutral answer (session start or end, prompt)
// adds to the model's context: d.Context, and the reason of a decision
// that is not an allow, since those events are never blocked.
func neutralContext(d Decision) string {
	parts := make([]string, 0, 2)
	if !d.Allowed() && strings.TrimSpace(d.Reason) != "" {
		parts = append(parts, d.Reason)
	}
	if strings.TrimSpace(d.Context) != "" {
		parts = append(parts, d.Context)
	}
	return strings.Join(parts, "\n\n")
}

// denyReason is the reason a refusal gives: the decision's, or a default
// so that no agent gets an empty refusal (Codex and Copilot ignore a block
// without one).
func denyReason(d Decision) string {
	if strings.TrimSpace(d.Reason) == "" {
		return "govkit gate refused this without saying why; ask the user to run gate doctor."
	}
	return d.Reason
}
