package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/session/envelope"
	"github.com/govkit/govkit/pkg/session/phantom"
	"github.com/govkit/govkit/pkg/session/resolved"
)

// SchemaVersion is the wire format's version, carried by session_start and
// the state effect (DESIGN §13).
const SchemaVersion = 1

// MaxLine bounds one JSON Lines record: an event is a tool call or a tool
// result, never a file, and a driver must not buffer without limit on a
// runtime's behalf.
const MaxLine = 1 << 20

// Event types (in). Seed 001's conversation events are named here so that a
// runtime sending them gets a clear "not yet" rather than "unknown".
const (
	EvSessionStart = "session_start"
	EvToolCall     = "tool_call"
	EvToolResult   = "tool_result"
	EvResolve      = "resolve"
	EvFinal        = "final"
	EvLLMText      = "llm_text"
	EvClear        = "clear"
	EvTick         = "tick"
)

// conversationEvents are seed 001's events, reserved for the conversation
// machine (DESIGN §13; a later issue).
var conversationEvents = map[string]bool{
	"user_message": true, "llm_response": true, "llm_error": true, "cancel": true,
	"mode_upgrade_request": true, "mode_decision": true, "mode_downgrade": true,
	"subagent_spawn": true, "subagent_result": true, "subagent_error": true, "restart": true,
}

// Event is one line in. Every event type shares this one struct so that a
// line is decoded once; which fields a type may carry is checked after
// decoding (fieldsOf), so a field of another type is refused, not ignored.
type Event struct {
	Type string `json:"type"`
	// At is when the event happened. A driver stamps it as it reads the
	// line, and a recorded log keeps it, so a replay sees the same clock:
	// the reducer never reads one (seed 001 REQ-BED-001).
	At string `json:"at,omitempty"`

	// session_start
	SchemaVersion int        `json:"schema_version,omitempty"`
	SessionID     string     `json:"session_id,omitempty"`
	WorkspaceRoot string     `json:"workspace_root,omitempty"`
	ConnectionID  string     `json:"connection_id,omitempty"`
	Mode          string     `json:"mode,omitempty"`
	Model         string     `json:"model,omitempty"`
	ContextWindow int        `json:"context_window,omitempty"`
	Tools         []ToolDecl `json:"tools,omitempty"`
	Config        *Config    `json:"config,omitempty"`
	// Stamped by the driver on session_start, never taken from a live
	// client: the entropy nonces and receipt ids are drawn from, the
	// connection id the driver issued (seed 004: a client's own connection
	// id is telemetry only) and the workspace root's real path.
	Seed               string `json:"seed,omitempty"`
	ServerConnectionID string `json:"server_connection_id,omitempty"`
	WorkspaceRealpath  string `json:"workspace_realpath,omitempty"`

	// tool_call, tool_result
	CallID    string                  `json:"call_id,omitempty"`
	Name      string                  `json:"name,omitempty"`
	Args      map[string]any          `json:"args,omitempty"`
	OK        *bool                   `json:"ok,omitempty"`
	Data      json.RawMessage         `json:"data,omitempty"`
	Error     json.RawMessage         `json:"error,omitempty"`
	Resources []resolved.Registration `json:"resources,omitempty"`
	Lines     *int                    `json:"lines,omitempty"`
	Chars     *int                    `json:"chars,omitempty"`

	// resolve
	Resource json.RawMessage `json:"resource,omitempty"`
	Explicit *bool           `json:"explicit,omitempty"`
	Pin      bool            `json:"pin,omitempty"` // protect it from eviction and expiry (seed 000 §5 Pinning)

	// final, llm_text
	Text string `json:"text,omitempty"`
	Raw  string `json:"raw,omitempty"`

	// clear
	KeepPinned bool `json:"keep_pinned,omitempty"`

	// tick
	Now string `json:"now,omitempty"`

	// err is why the line could not be decoded; Transition answers it with
	// an error effect and changes nothing.
	err *Error
}

// ToolDecl declares one tool at session_start (seed 000 §7's tool table,
// made configuration).
type ToolDecl struct {
	Name        string                      `json:"name"`
	Kind        string                      `json:"kind"`
	ActionArg   string                      `json:"action_arg,omitempty"`
	ActionKinds map[string]string           `json:"action_kinds,omitempty"`
	TargetArgs  []string                    `json:"target_args,omitempty"`
	CommandArg  string                      `json:"command_arg,omitempty"`
	Args        map[string]envelope.ArgSpec `json:"args,omitempty"`
}

// Config is session_start.config: every knob of every guard, defaulted as
// the seeds say.
type Config struct {
	// StrictResolution (seed 000 §4): on unless set to false here or by
	// the driver (GOVKIT_STRICT_RESOLUTION).
	StrictResolution *bool `json:"strict_resolution,omitempty"`
	// Protocol "envelope" puts native tool calls under seed 002's text
	// protocol as well; llm_text events always are.
	Protocol string `json:"protocol,omitempty"`
	// ClassifyCommands lets a shell tool (one with command_arg) be a read
	// when pkg/intent proves its command read-only and bounded (seed 000's
	// pulse_read).
	ClassifyCommands bool `json:"classify_commands,omitempty"`
	// StrictSessionID (seed 004): refuse a session without session_id
	// instead of keying it by connection.
	StrictSessionID bool `json:"strict_session_id,omitempty"`

	ContextTTLSeconds int `json:"context_ttl_seconds,omitempty"`
	ContextMaxEntries int `json:"context_max_entries,omitempty"`

	Read *ReadConfig `json:"read,omitempty"`

	MaxToolSteps        int      `json:"max_tool_steps,omitempty"`
	MaxToolBytesPerStep int      `json:"max_tool_bytes_per_step,omitempty"`
	MaxToolBytesPerTurn int      `json:"max_tool_bytes_per_turn,omitempty"`
	AllowedTools        []string `json:"allowed_tools,omitempty"`
	RequireTool         bool     `json:"require_tool,omitempty"`
	Evidence            *bool    `json:"evidence,omitempty"`

	PhantomPatterns []phantom.Pattern `json:"phantom_patterns,omitempty"`

	Provider string `json:"provider,omitempty"`
	AgentID  string `json:"agent_id,omitempty"`
}

// ReadConfig is seed 004's read budget and ref gate configuration.
type ReadConfig struct {
	MaxReads           int     `json:"max_reads,omitempty"`
	MaxTotalLines      int     `json:"max_total_lines,omitempty"`
	MaxSingleReadLines int     `json:"max_single_read_lines,omitempty"`
	MaxPreviewChars    int     `json:"max_preview_chars,omitempty"`
	SoftRatio          float64 `json:"soft_ratio,omitempty"`
	MaxRangeLines      int     `json:"max_range_lines,omitempty"`
	TopK               int     `json:"top_k,omitempty"`
	Mode               string  `json:"mode,omitempty"`
	// Budget: "enforce" (the default) refuses a read once the budget is
	// spent; "warn" lets it run with BUDGET_HARD_LIMIT as a warning.
	Budget string `json:"budget,omitempty"`
}

// fields lists which optional fields each event type may carry.
var fields = map[string][]string{
	EvSessionStart: {"schema_version", "session_id", "workspace_root", "connection_id", "mode", "model",
		"context_window", "tools", "config", "seed", "server_connection_id", "workspace_realpath"},
	EvToolCall:   {"call_id", "name", "args"},
	EvToolResult: {"call_id", "ok", "data", "error", "resources", "lines", "chars"},
	EvResolve:    {"resource", "explicit", "pin"},
	EvFinal:      {"text"},
	EvLLMText:    {"raw"},
	EvClear:      {"keep_pinned"},
	EvTick:       {"now"},
}

// Error is an error effect's content: a stable code to branch on and a
// detail naming the field or line.
type Error struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Detail }

// Error codes of the error effect.
const (
	ErrInvalidJSON       = "INVALID_JSON"
	ErrUnknownEvent      = "UNKNOWN_EVENT"
	ErrUnknownField      = "UNKNOWN_FIELD"
	ErrInvalidField      = "INVALID_FIELD"
	ErrUnsupportedEvent  = "UNSUPPORTED_EVENT"
	ErrNotStarted        = "SESSION_NOT_STARTED"
	ErrAlreadyStarted    = "SESSION_ALREADY_STARTED"
	ErrSessionIDRequired = "SESSION_ID_REQUIRED"
	ErrUnknownCall       = "UNKNOWN_CALL_ID"
	ErrDuplicateCall     = "DUPLICATE_CALL_ID"
	ErrLineTooLong       = "LINE_TOO_LONG"
	ErrReservedField     = "RESERVED_FIELD"
	ErrUnknownResource   = "UNKNOWN_RESOURCE"
)

// Decode parses one line into an Event. A line that is not one valid event
// still gives an Event, carrying the error, so that Transition answers it
// with an error effect in sequence and the state does not change (DESIGN
// §13).
func Decode(line []byte) Event {
	if len(line) > MaxLine {
		return Event{err: &Error{ErrLineTooLong, fmt.Sprintf("line is %d bytes; the limit is %d", len(line), MaxLine)}}
	}
	var ev Event
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return Event{err: decodeError(err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Event{err: &Error{ErrInvalidJSON, "more than one JSON value on the line"}}
	}
	if e := checkFields(&ev, line); e != nil {
		return Event{Type: ev.Type, err: e}
	}
	return ev
}

// Invalid is an event that stands for an undecodable line (a driver's own
// checks: a line too long, a reserved field from a live client).
func Invalid(code, detail string) Event { return Event{err: &Error{code, detail}} }

// Err is why the event could not be decoded, or nil.
func (ev *Event) Err() *Error { return ev.err }

func decodeError(err error) *Error {
	msg := err.Error()
	if i := strings.Index(msg, "unknown field "); i >= 0 {
		return &Error{ErrUnknownField, msg[i:]}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &Error{ErrInvalidField, fmt.Sprintf("field %s: expected %s, got %s", te.Field, te.Type, te.Value)}
	}
	return &Error{ErrInvalidJSON, strings.TrimPrefix(msg, "json: ")}
}

// checkFields refuses an event whose type is unknown or that carries a field
// of another event type.
func checkFields(ev *Event, line []byte) *Error {
	if ev.Type == "" {
		return &Error{ErrInvalidField, `missing field "type"`}
	}
	allowed, ok := fields[ev.Type]
	if !ok {
		if conversationEvents[ev.Type] {
			return &Error{ErrUnsupportedEvent, ev.Type + " is a seed 001 conversation event; gate session does not drive conversations yet"}
		}
		return &Error{ErrUnknownEvent, fmt.Sprintf("unknown event type %q", ev.Type)}
	}
	for _, f := range presentFields(ev) {
		if f == "type" || f == "at" {
			continue
		}
		found := false
		for _, a := range allowed {
			if a == f {
				found = true
				break
			}
		}
		if !found {
			return &Error{ErrUnknownField, fmt.Sprintf("field %q is not part of a %s event", f, ev.Type)}
		}
	}
	if ev.At != "" {
		if _, err := time.Parse(time.RFC3339Nano, ev.At); err != nil {
			return &Error{ErrInvalidField, fmt.Sprintf("field at: %q is not an RFC 3339 time", ev.At)}
		}
	}
	return nil
}

// presentFields names the fields an event carries, from the decoded struct:
// a zero value counts as absent, which is what every type's semantics say.
func presentFields(ev *Event) []string {
	var f []string
	add := func(present bool, name string) {
		if present {
			f = append(f, name)
		}
	}
	add(ev.SchemaVersion != 0, "schema_version")
	add(ev.SessionID != "", "session_id")
	add(ev.WorkspaceRoot != "", "workspace_root")
	add(ev.ConnectionID != "", "connection_id")
	add(ev.Mode != "", "mode")
	add(ev.Model != "", "model")
	add(ev.ContextWindow != 0, "context_window")
	add(ev.Tools != nil, "tools")
	add(ev.Config != nil, "config")
	add(ev.Seed != "", "seed")
	add(ev.ServerConnectionID != "", "server_connection_id")
	add(ev.WorkspaceRealpath != "", "workspace_realpath")
	add(ev.CallID != "", "call_id")
	add(ev.Name != "", "name")
	add(ev.Args != nil, "args")
	add(ev.OK != nil, "ok")
	add(ev.Data != nil, "data")
	add(ev.Error != nil, "error")
	add(ev.Resources != nil, "resources")
	add(ev.Lines != nil, "lines")
	add(ev.Chars != nil, "chars")
	add(ev.Resource != nil, "resource")
	add(ev.Explicit != nil, "explicit")
	add(ev.Pin, "pin")
	add(ev.Text != "", "text")
	add(ev.Raw != "", "raw")
	add(ev.KeepPinned, "keep_pinned")
	add(ev.Now != "", "now")
	return f
}
