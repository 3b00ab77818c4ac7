// Package envelope is seed 002's strict text protocol: it parses a model's
// reply into exactly one nonce-bearing tool call, decision or plain answer,
// or names the one reason it is rejected.
package envelope

import (
	"crypto/subtle"
	"strconv"
	"strings"
)

// Rejection codes, as seed 002 spells them (Strict Tool Call Protocol;
// Telemetry (Rejection Reasons)). OutputLimit is the reducer's, for tool
// output over budget; Parse never returns it.
const (
	InvalidFormat = "tool_call_invalid_format"
	UnknownTool   = "tool_call_unknown_tool"
	InvalidArgs   = "tool_call_invalid_args"
	Multiple      = "tool_call_multiple"
	NonceInvalid  = "tool_call_nonce_invalid"
	OutputLimit   = "tool_call_output_limit"
)

// Telemetry buckets a rejection is counted in (seed 002 Telemetry:
// "tool-call failures mapped into tool_syntax or format_error"; the
// chain-of-thought preface has its own bucket). ToolSyntax is a call
// attempted in any form but the JSON envelope (function syntax, a fence, a
// tag, a fragment in prose); FormatError is everything wrong with an
// envelope or decision; CotLeak is a reasoning preface.
const (
	ToolSyntax  = "tool_syntax"
	FormatError = "format_error"
	CotLeak     = "cot_leak"
)

// MaxMessageBytes bounds a reply Parse reads; a longer one is refused
// unread (DESIGN §3: bound every read).
const MaxMessageBytes = 64 << 10

// Rejection says why a reply executes nothing: exactly one Code, the
// telemetry Bucket it counts in, and a Detail for the model and the log
// that names the offending key or marker, never the whole input.
type Rejection struct {
	Code   string `json:"code"`
	Bucket string `json:"bucket"`
	Detail string `json:"detail"`
}

// StopHook is the turn's outcome on any rejection (seed 002 Stop Hooks for
// Tool Failures): nothing executes, and a malformed call is not retried for
// the model (G-09).
const StopHook = "STOP_HOOK: tool_call_rejected"

// StopHook is the stop-hook line with the rejection's code, as a runtime
// surfaces it: "STOP_HOOK: tool_call_rejected (tool_call_nonce_invalid)".
func (r *Rejection) StopHook() string { return StopHook + " (" + r.Code + ")" }

func reject(code, bucket, detail string) *Rejection {
	return &Rejection{Code: code, Bucket: bucket, Detail: detail}
}

// Kind is what an accepted reply is. The zero Kind is no message, so a
// Message returned beside a Rejection can never pass for a call.
type Kind uint8

const (
	// ToolCall is an envelope {"tool","args","nonce"}, or a decision
	// {"action":"tool",…} after a tool result: run the tool.
	ToolCall Kind = iota + 1
	// Final is the decision {"action":"final","nonce"}: stop calling
	// tools and answer.
	Final
	// Prose is text with no tool-call attempt in it: a final answer
	// candidate, for the reducer's evidence, Gate 2 and phantom checks.
	Prose
)

func (k Kind) String() string {
	switch k {
	case ToolCall:
		return "tool_call"
	case Final:
		return "final"
	case Prose:
		return "prose"
	}
	return "none"
}

// Message is an accepted reply. Tool and Args are set for a ToolCall;
// ArgsJSON is the args object exactly as the model wrote it (for a
// receipt's inputs). Text is the reply with thinking blocks stripped and
// surrounding space trimmed: for a ToolCall or Final, the JSON object.
type Message struct {
	Kind     Kind
	Tool     string
	Args     map[string]any
	ArgsJSON string
	Text     string
}

// Parse reads one model reply of the turn whose nonce is nonce, against the
// tool registry s. afterToolResult says a tool result was just fed back, so
// only decision JSON is acceptable (seed 002 Tool Execution Loop).
//
// Before a tool result, a reply is either exactly one JSON object
// {"tool","args","nonce"} and nothing else, or prose with no attempt at a
// tool call in it. The decision form is not accepted there: seed 002 gives
// it only "after any tool result", and at the first step "action" is an
// unknown top-level field (G-02). After a tool result the reply must be
// {"action":"tool","tool","args","nonce"} or {"action":"final","nonce"};
// prose is refused (G-10).
//
// A reply whose first character (after thinking blocks and blanks) is '{'
// is read as JSON; one that is wholly a JSON array is refused.
//
// The checks run in this order, so a reply gets the same code whatever
// else is wrong with it: size; thinking blocks stripped (StripThinking);
// chain-of-thought preface; JSON syntax and the number of objects; fields;
// nonce; registry; args. The nonce goes before the registry so that a
// stale or injected call learns nothing of which tools exist.
func Parse(raw, nonce string, s *Schema, afterToolResult bool) (Message, *Rejection) {
	if len(raw) > MaxMessageBytes {
		return Message{}, reject(InvalidFormat, FormatError, "message over "+strconv.Itoa(MaxMessageBytes)+" bytes")
	}
	text := StripThinking(raw)
	stripped := len(text) != len(raw)
	text = strings.TrimSpace(text)
	if text == "" {
		return Message{}, reject(InvalidFormat, FormatError, "empty message")
	}
	if p, ok := cotPreface(text); ok {
		return Message{}, reject(InvalidFormat, CotLeak, "chain-of-thought preface "+strconv.Quote(p))
	}
	if text[0] == '[' {
		// A reply that is wholly a JSON array is structured output in the
		// wrong shape, not an answer.
		d := decoder{s: text}
		if _, ok := d.value(); ok && d.pos == len(text) {
			if countOpeners(text, 2) >= 2 {
				return Message{}, reject(Multiple, FormatError, "more than one JSON object in the message")
			}
			return Message{}, reject(InvalidFormat, FormatError, "a JSON array, not one JSON object")
		}
	}
	if text[0] != '{' {
		return parseProse(text, nonce, s, afterToolResult)
	}

	d := decoder{s: text}
	var f fields
	if !d.top(&f) {
		return Message{}, syntaxRejection(&d)
	}
	obj := text[:d.pos]
	if rest := text[d.pos:]; rest != "" {
		rest = strings.TrimSpace(rest)
		if rest[0] == '{' || countOpeners(rest, 1) > 0 {
			return Message{}, reject(Multiple, FormatError, "more than one JSON object in the message")
		}
		return Message{}, reject(InvalidFormat, FormatError, "extra text after the JSON object")
	}
	// A thinking block inside the object would have been cut out of a
	// string value: the call would not be the one the model wrote.
	if stripped && !strings.Contains(raw, obj) {
		return Message{}, reject(InvalidFormat, FormatError, "thinking tag inside the JSON object")
	}
	return f.validate(obj, nonce, s, afterToolResult)
}

func syntaxRejection(d *decoder) *Rejection {
	if d.err == errDuplicate {
		return reject(InvalidFormat, FormatError, "duplicate key "+quoteName(d.key))
	}
	return reject(InvalidFormat, FormatError, "invalid JSON at byte "+strconv.Itoa(d.pos)+": "+d.err)
}

// Top-level fields of an envelope or decision.
const (
	fieldTool uint8 = 1 << iota
	fieldArgs
	fieldNonce
	fieldAction
)

// fields is what the top-level object held, in one pass.
type fields struct {
	seen                         uint8
	tool, nonce, action          string
	toolStr, nonceStr, actionStr bool
	argsObj                      bool
	argsStart, argsEnd           int
	args                         []argPair
	argsBuf                      [8]argPair // most calls have a few args: no allocation
	argIndex                     map[string]struct{}
	unknown                      string
	unknownAt, actionAt          int
	hasUnknown                   bool
}

// top reads the top-level object at d.pos.
func (d *decoder) top(f *fields) bool {
	f.args = f.argsBuf[:0]
	return d.members(func(key string, at int) bool {
		var bit uint8
		switch key {
		case "tool":
			bit = fieldTool
		case "args":
			bit = fieldArgs
		case "nonce":
			bit = fieldNonce
		case "action":
			bit = fieldAction
			f.actionAt = at
		default:
			if !f.hasUnknown {
				f.hasUnknown, f.unknown, f.unknownAt = true, key, at
			}
			_, ok := d.value()
			return ok
		}
		if f.seen&bit != 0 {
			d.key = key
			return d.fail(errDuplicate)
		}
		f.seen |= bit
		c := d.next()
		switch {
		case bit == fieldArgs && c == '{':
			f.argsObj, f.argsStart = true, d.pos
			ok := d.argMembers(f)
			f.argsEnd = d.pos
			return ok
		case bit != fieldArgs && c == '"':
			v, ok := d.str()
			switch bit {
			case fieldTool:
				f.tool, f.toolStr = v, true
			case fieldNonce:
				f.nonce, f.nonceStr = v, true
			case fieldAction:
				f.action, f.actionStr = v, true
			}
			return ok
		}
		_, ok := d.value()
		return ok
	})
}

// argMembers reads the args object, keeping its members in order.
func (d *decoder) argMembers(f *fields) bool {
	return d.members(func(key string, _ int) bool {
		if f.hasArg(key) {
			d.key = key
			return d.fail(errDuplicate)
		}
		v, ok := d.value()
		f.args = append(f.args, argPair{key, v})
		return ok
	})
}

// hasArg is a linear scan while args are few, as nearly all calls' are; a
// long list (a hostile one holds thousands of keys within MaxMessageBytes)
// gets an index, so the duplicate check stays linear overall.
func (f *fields) hasArg(key string) bool {
	const scan = 16
	if len(f.args) <= scan {
		for i := range f.args {
			if f.args[i].key == key {
				return true
			}
		}
		return false
	}
	if f.argIndex == nil {
		f.argIndex = make(map[string]struct{}, 2*len(f.args))
		for _, p := range f.args {
			f.argIndex[p.key] = struct{}{}
		}
	}
	_, ok := f.argIndex[key]
	f.argIndex[key] = struct{}{} // argMembers appends it next
	return ok
}

func (f *fields) validate(obj, nonce string, s *Schema, afterToolResult bool) (Message, *Rejection) {
	// At the first step "action" is an unknown field like any other; the
	// first unknown field in the text is the one named.
	unknown, at := f.unknown, f.unknownAt
	if f.seen&fieldAction != 0 && !afterToolResult && (!f.hasUnknown || f.actionAt < at) {
		unknown, at = "action", f.actionAt
		f.hasUnknown = true
	}
	if f.hasUnknown {
		return Message{}, reject(InvalidFormat, FormatError, "unknown field "+quoteName(unknown))
	}
	if afterToolResult {
		if f.seen&fieldAction == 0 {
			return Message{}, reject(InvalidFormat, FormatError, `decision JSON needs "action" after a tool result`)
		}
		if !f.actionStr || (f.action != "tool" && f.action != "final") {
			return Message{}, reject(InvalidFormat, FormatError, `"action" must be "tool" or "final"`)
		}
		if f.action == "final" {
			if f.seen&fieldTool != 0 {
				return Message{}, reject(InvalidFormat, FormatError, `unknown field "tool" in a final decision`)
			}
			if f.seen&fieldArgs != 0 {
				return Message{}, reject(InvalidFormat, FormatError, `unknown field "args" in a final decision`)
			}
			if !f.nonceMatches(nonce) {
				return Message{}, reject(NonceInvalid, FormatError, "nonce missing or not this turn's")
			}
			return Message{Kind: Final, Text: obj}, nil
		}
	}
	switch {
	case f.seen&fieldTool == 0:
		return Message{}, reject(InvalidFormat, FormatError, `missing "tool"`)
	case !f.toolStr:
		return Message{}, reject(InvalidFormat, FormatError, `"tool" must be a string`)
	case f.seen&fieldArgs == 0:
		return Message{}, reject(InvalidFormat, FormatError, `missing "args"`)
	case !f.argsObj:
		return Message{}, reject(InvalidFormat, FormatError, `"args" must be an object`)
	case !f.nonceMatches(nonce):
		return Message{}, reject(NonceInvalid, FormatError, "nonce missing or not this turn's")
	}
	t, ok := s.tool(f.tool)
	if !ok {
		return Message{}, reject(UnknownTool, FormatError, "tool "+quoteName(f.tool)+" is not registered")
	}
	args, rej := t.check(f.args)
	if rej != nil {
		return Message{}, rej
	}
	return Message{Kind: ToolCall, Tool: f.tool, Args: args, ArgsJSON: obj[f.argsStart:f.argsEnd], Text: obj}, nil
}

// nonceMatches compares in constant time (seed 002 Tool Call Nonce: the
// nonce is unpredictable; timing must not let a model or an injected
// document guess it byte by byte). A turn with no nonce accepts no call.
func (f *fields) nonceMatches(nonce string) bool {
	if !f.nonceStr || nonce == "" || len(f.nonce) != len(nonce) {
		return false
	}
	var v byte
	for i := 0; i < len(nonce); i++ {
		v |= f.nonce[i] ^ nonce[i]
	}
	return subtle.ConstantTimeByteEq(v, 0) == 1
}
