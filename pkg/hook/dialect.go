package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/govkit/govkit/pkg/intent"
)

// Event is the part of an agent's hook event that a decision needs.
type Event struct {
	Tool    string // the agent's name for the tool
	Shell   bool   // the tool runs Command in a shell
	Command string // the shell command, when Shell
	Cwd     string // the directory the tool runs in, when the agent says
	// NoAsk: for this event the agent does not enforce ask (Cursor's
	// preToolUse and beforeReadFile), so an ask must become a deny.
	NoAsk bool
}

// Dialect is one agent's hook protocol.
type Dialect interface {
	// Decode reads one event; an error means the event is malformed.
	Decode(raw []byte) (Event, error)
	// Encode puts a decision in the agent's words. It must turn anything
	// that is not an explicit allow into the agent's blocking form.
	Encode(Decision) Answer
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
// data. Unknown fields are allowed: agents add fields between versions.
func decodeObject(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return err
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
