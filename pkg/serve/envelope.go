package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/llm"
	"github.com/govkit/govkit/pkg/session/conversation"
	"github.com/govkit/govkit/pkg/session/envelope"
	"github.com/govkit/govkit/pkg/session/response"
	"github.com/govkit/govkit/pkg/termtext"
)

// The envelope tool protocol (--tool-protocol envelope) is seed 002's strict
// text envelope for models without native tool calling. The request offers
// no native tools: the system prompt describes every tool and the envelope,
// with a nonce drawn for that request, and response_format carries the JSON
// Schema of the answer the step allows. The model's text is parsed by
// pkg/session/envelope (the one parser): a valid tool envelope becomes one
// tool call of an llm_response, so it passes the same machine, session gates
// and executor as a native call; anything else is llm_rejected and nothing
// runs.

// envelopeStep is what the model may answer at this point of its turn
// (seed 002 Tool Execution Loop).
type envelopeStep uint8

const (
	// stepCall: a tool envelope {"tool","args","nonce"}, or
	// {"action":"final","nonce"} to answer, or (where the endpoint does not
	// enforce response_format) a plain answer.
	stepCall envelopeStep = iota
	// stepDecision: a tool result came back this turn, so only decision
	// JSON is accepted (G-10).
	stepDecision
	// stepAnswer: the model decided to finish; its answer is plain text
	// and no tool runs.
	stepAnswer
)

// nonceBytes is a nonce's entropy: 128 bits, so a model or an injected
// document cannot guess it (seed 002 Tool Call Nonce).
const nonceBytes = 16

// maxRejectedReply bounds the rejected reply kept in the history: enough for
// the model to see what it wrote, never a whole runaway answer.
const maxRejectedReply = 4 << 10

// envelopeTurn is one request's protocol state. It lives with the request's
// goroutine and is never persisted: a request's answer counts only under
// its request id (B-05c), a retry or a re-ask is a new request with a new
// nonce, and a restart abandons every request, so a nonce is never reused.
type envelopeTurn struct {
	step   envelopeStep
	nonce  string // "" in stepAnswer: no call is acceptable
	schema *envelope.Schema
}

// newNonce draws a nonce from crypto/rand: the machine stays pure, the
// executor supplies the randomness.
func newNonce() (string, error) {
	b := make([]byte, nonceBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("drawing a tool-call nonce: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// envelopeRequest is llmRequest for the envelope protocol, with the function
// that turns the answer into the machine's event. A continuation summary
// (withTools false) describes no tools and its answer is taken as text.
func (s *Server) envelopeRequest(ctx context.Context, c *conversation.Conversation, withTools bool) (llm.Request, func(string, llm.Response) conversation.Event, error) {
	hist := c.History()
	system := systemPrompt(c)
	var turn *envelopeTurn
	if withTools {
		offered := tools(c)
		schema, err := envelopeSchema(offered)
		if err != nil {
			return llm.Request{}, nil, err
		}
		turn = &envelopeTurn{step: stepOf(hist), schema: schema}
		if turn.step != stepAnswer {
			if turn.nonce, err = newNonce(); err != nil {
				return llm.Request{}, nil, err
			}
		}
		system += protocolPrompt(offered, turn)
	}
	msgs, err := s.envelopeMessages(ctx, system, hist)
	if err != nil {
		return llm.Request{}, nil, err
	}
	req := llm.Request{Model: c.Model, Messages: msgs}
	if turn == nil {
		return req, llmEvent, nil
	}
	if turn.step == stepAnswer {
		// Not stored: the history ends with the model's final decision,
		// and a chat template wants the user to speak next.
		req.Messages = appendMerged(req.Messages, llm.Message{Role: "user", Content: answerPrompt})
	}
	req.ResponseFormat = turn.format()
	return req, turn.event, nil
}

// answerPrompt asks for the answer after a final decision. It is not
// stored: envelopeMessages puts it back between a final decision and the
// answer that followed, as the model saw it.
const answerPrompt = "Write your answer to the user now, in plain text: no JSON, no tool call."

// stepOf reads the step from the history: the turn starts after the last
// user message that is not a rejection (a person's message, a sub-agent's
// task or nudge); a tool result in it means decision JSON; an accepted
// final decision means the plain answer.
func stepOf(hist []conversation.Message) envelopeStep {
	start := 0
	for i, m := range hist {
		if m.Role == conversation.RoleUser && m.Kind != conversation.KindRejection {
			start = i + 1
		}
	}
	step := stepCall
	for _, m := range hist[start:] {
		switch {
		case m.Role == conversation.RoleTool:
			step = stepDecision
		case finalDecision(m):
			step = stepAnswer
		}
	}
	return step
}

// finalDecision reports whether m is an accepted reply that was
// {"action":"final"}: envelope.Parse accepted it already, this only tells
// it from prose (and from a rejected reply, a call, a notice).
func finalDecision(m conversation.Message) bool {
	if m.Role != conversation.RoleAssistant || m.Kind != "" || len(m.ToolCalls) > 0 || !strings.HasPrefix(m.Text, "{") {
		return false
	}
	var d struct {
		Action string `json:"action"`
	}
	return json.Unmarshal([]byte(m.Text), &d) == nil && d.Action == "final"
}

// format is the response_format of the step: the tool envelope or the
// final decision; decision JSON after a tool result; none for the answer.
func (t *envelopeTurn) format() *llm.ResponseFormat {
	switch t.step {
	case stepCall:
		return llm.EnvelopeFormat("tool_call", callOrFinalSchema(t.schema, t.nonce))
	case stepDecision:
		return llm.EnvelopeFormat("decision", t.schema.DecisionSchema(t.nonce))
	}
	return nil
}

// callOrFinalSchema is ToolCallSchema's alternatives plus the final
// decision: under an endpoint that enforces response_format, the model can
// still answer without calling a tool.
func callOrFinalSchema(s *envelope.Schema, nonce string) json.RawMessage {
	var doc map[string]any
	if err := json.Unmarshal(s.ToolCallSchema(nonce), &doc); err != nil {
		panic("serve: envelope schema is not JSON: " + err.Error()) // it is marshalled from plain maps
	}
	var alts []any
	switch {
	case doc["oneOf"] != nil:
		alts, _ = doc["oneOf"].([]any)
	case doc["not"] != nil: // no tool registered
	default:
		delete(doc, "$schema")
		delete(doc, "title")
		alts = []any{doc}
	}
	alts = append(alts, map[string]any{"type": "object", "additionalProperties": false, "required": []string{"action", "nonce"},
		"properties": map[string]any{"action": map[string]any{"const": "final"}, "nonce": map[string]any{"const": nonce}}})
	b, _ := json.Marshal(map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema",
		"title": "govkit tool-call envelope or final decision (seed 002)", "oneOf": alts})
	return b
}

// event parses the model's answer strictly (envelope.Parse) and makes the
// machine's event: one tool call, a final decision or answer, or a
// rejection with seed 002's code.
func (t *envelopeTurn) event(id string, resp llm.Response) conversation.Event {
	usage := &conversation.Usage{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}
	msg, rej := t.parse(resp)
	if rej != nil {
		return conversation.Event{Type: conversation.EvLLMRejected, RequestID: id, Text: bounded(resp.Text, maxRejectedReply),
			Code: rej.Code, Detail: rej.Detail, Usage: usage}
	}
	ev := conversation.Event{Type: conversation.EvLLMResponse, RequestID: id, Text: msg.Text, Usage: usage}
	switch msg.Kind {
	case envelope.ToolCall:
		// The model never chooses the id (seed 002): it is the request's,
		// so replay names the same call.
		ev.ToolCalls = []conversation.ToolCall{{ID: id + "/call", Name: msg.Tool, Args: json.RawMessage(msg.ArgsJSON)}}
	case envelope.Prose:
		ev.EndTurn = resp.EndTurn // a reply cut off (length) goes on
	}
	// envelope.Final: text without end_turn, so the machine keeps it and
	// asks again, and stepOf then asks for the answer (B-03c).
	return ev
}

func (t *envelopeTurn) parse(resp llm.Response) (envelope.Message, *envelope.Rejection) {
	if len(resp.ToolCalls) > 0 {
		return envelope.Message{}, &envelope.Rejection{Code: envelope.InvalidFormat, Bucket: envelope.ToolSyntax,
			Detail: "a native tool call: call tools with the JSON envelope in the reply's text"}
	}
	switch t.step {
	case stepDecision:
		return envelope.Parse(resp.Text, t.nonce, t.schema, true)
	case stepAnswer:
		msg, rej := envelope.Parse(resp.Text, "", t.schema, false)
		if rej != nil && rej.Code == envelope.NonceInvalid {
			// With no nonce any envelope fails on it; the real reason is
			// that the model already chose to finish.
			rej = &envelope.Rejection{Code: envelope.InvalidFormat, Bucket: envelope.FormatError,
				Detail: `a tool call after {"action":"final"}: write the answer in plain text`}
		}
		return msg, rej
	}
	msg, rej := envelope.Parse(resp.Text, t.nonce, t.schema, false)
	if rej != nil {
		// The final decision is also an answer here (callOrFinalSchema).
		if m, r := envelope.Parse(resp.Text, t.nonce, t.schema, true); r == nil && m.Kind == envelope.Final {
			return m, nil
		}
	}
	return msg, rej
}

// bounded is s as valid UTF-8, cut to at most n bytes on a rune boundary
// and marked " …[cut]" when cut.
func bounded(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	return termtext.Cut(s, n) + " …[cut]"
}

// envelopeSchema is seed 002's tool registry for the offered tools, their
// argument schemas translated to envelope.ArgSpec.
func envelopeSchema(offered []llm.Tool) (*envelope.Schema, error) {
	tools := make(map[string]map[string]envelope.ArgSpec, len(offered))
	for _, t := range offered {
		tools[t.Name] = argSpecs(t.Parameters)
	}
	return envelope.NewSchema(tools)
}

// argSpecs translates a closed JSON Schema object of flat arguments. A
// schema envelope.ArgSpec cannot express (spawn_agents' list of objects)
// gives nil: the envelope checks only that args is an object, and the tool
// or the machine validates the rest.
func argSpecs(params json.RawMessage) map[string]envelope.ArgSpec {
	type typed struct {
		Type string   `json:"type"`
		Enum []string `json:"enum"`
	}
	var js struct {
		Properties map[string]struct {
			typed
			Items *typed `json:"items"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(params, &js) != nil {
		return nil
	}
	out := make(map[string]envelope.ArgSpec, len(js.Properties))
	for name, p := range js.Properties {
		spec := envelope.ArgSpec{Enum: p.Enum}
		switch p.Type {
		case "string":
			spec.Type = envelope.TypeString
		case "integer":
			spec.Type, spec.Enum = envelope.TypeInt, nil
		case "number":
			spec.Type, spec.Enum = envelope.TypeNumber, nil
		case "boolean":
			spec.Type, spec.Enum = envelope.TypeBool, nil
		case "array":
			if p.Items == nil || p.Items.Type != "string" {
				return nil
			}
			spec.Type, spec.Enum = envelope.TypeStringArray, p.Items.Enum
		default:
			return nil
		}
		out[name] = spec
	}
	for _, r := range js.Required {
		spec, ok := out[r]
		if !ok {
			return nil
		}
		spec.Required = true
		out[r] = spec
	}
	return out
}

// protocolPrompt describes the envelope and every tool (name, description,
// argument schema: the same in every mode, B-17b) and ends with the step and
// the request's nonce as TOOL_NONCE.
func protocolPrompt(offered []llm.Tool, t *envelopeTurn) string {
	var b strings.Builder
	b.WriteString(`
Tool call protocol (STRICT JSON ONLY). Tools are not called natively: you call one by replying with exactly one JSON object and nothing else (no text around it, no markdown, no code fence, never two objects):
{"tool":"<tool name>","args":{<arguments>},"nonce":"<TOOL_NONCE>"}
The arguments must match the tool's schema; unknown arguments are refused. TOOL_NONCE is given at the end of this prompt and changes with every request: a call with any other nonce is rejected.
After a tool result, reply with decision JSON: {"action":"tool","tool":"<tool name>","args":{<arguments>},"nonce":"<TOOL_NONCE>"} to call another tool, or {"action":"final","nonce":"<TOOL_NONCE>"} to finish.
To answer without calling a tool, reply {"action":"final","nonce":"<TOOL_NONCE>"}. After a final decision you are asked for your answer, which you write in plain text.
A rejected reply runs nothing: you are told why and asked again, and three rejections in a row end the turn.
Tool results come back as a user message starting with TOOL_RESULT, holding the result as JSON: {"ok":true,"data":…} or {"ok":false,"error":{…}}.

Tools:
`)
	for _, tool := range offered {
		params := tool.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		fmt.Fprintf(&b, "- %s: %s\n  args (JSON Schema): %s\n", tool.Name, tool.Description, params)
	}
	switch t.step {
	case stepCall:
		b.WriteString("\nNow: reply with one tool call envelope, or with {\"action\":\"final\",\"nonce\":\"<TOOL_NONCE>\"} to answer.\n")
	case stepDecision:
		b.WriteString("\nNow: a tool result came back: reply with decision JSON.\n")
	case stepAnswer:
		b.WriteString("\nNow: you decided to finish. Write your answer to the user in plain text: no JSON and no tool call.\n")
	}
	if t.nonce != "" {
		b.WriteString("TOOL_NONCE: " + t.nonce + "\n")
	}
	return b.String()
}

// envelopeMessages is the history for an endpoint without native tool
// calling: the assistant's turns as their text (a call as its envelope),
// tool results as user messages naming the tool and carrying the
// ToolResponse JSON, system notices before the first user message in the
// system prompt and later ones as user messages, and adjacent messages of
// one role merged, since many chat templates insist that user and
// assistant alternate.
func (s *Server) envelopeMessages(ctx context.Context, system string, hist []conversation.Message) ([]llm.Message, error) {
	out := []llm.Message{{Role: "system", Content: system}}
	lead, final := true, false
	for _, m := range hist {
		lm := llm.Message{Role: m.Role, Content: m.Text}
		if final && m.Role == conversation.RoleAssistant {
			out = appendMerged(out, llm.Message{Role: "user", Content: answerPrompt})
		}
		final = finalDecision(m)
		switch m.Role {
		case conversation.RoleSystem:
			if lead {
				out[0].Content += "\n" + m.Text + "\n"
				continue
			}
			lm.Role, lm.Content = "user", "System notice: "+m.Text
		case conversation.RoleUser:
			var err error
			if lm.Images, err = s.images(ctx, m); err != nil {
				return nil, err
			}
		case conversation.RoleAssistant:
			// The text of an envelope call is the envelope. A history begun
			// under native tool calling shows its calls as envelopes
			// (without a nonce: they are past).
			if !strings.HasPrefix(strings.TrimSpace(m.Text), "{") {
				for _, tc := range m.ToolCalls {
					b, _ := json.Marshal(map[string]any{"tool": tc.Name, "args": tc.Args})
					lm.Content = strings.TrimSpace(lm.Content + "\n" + string(b))
				}
			}
		case conversation.RoleTool:
			lm.Role, lm.Content = "user", toolResultText(m)
		default:
			continue
		}
		lead = false
		out = appendMerged(out, lm)
	}
	return out, nil
}

// appendMerged appends m, merged into the last message when it has the
// same role (never into the system prompt).
func appendMerged(out []llm.Message, m llm.Message) []llm.Message {
	if n := len(out); n > 1 && out[n-1].Role == m.Role {
		last := &out[n-1]
		last.Content = strings.TrimSpace(last.Content + "\n\n" + m.Content)
		last.Images = append(last.Images, m.Images...)
		return out
	}
	return append(out, m)
}

// toolResultText is a tool result as a user message: the tool, the call
// and the ToolResponse JSON (seed 000's envelope; the machine's own
// refusals are one already).
func toolResultText(m conversation.Message) string {
	body := m.Text
	var probe struct {
		OK *bool `json:"ok"`
	}
	if !strings.HasPrefix(strings.TrimSpace(body), "{") || json.Unmarshal([]byte(body), &probe) != nil || probe.OK == nil {
		r := response.Success(map[string]any{"output": m.Text})
		if m.IsError {
			r = response.Failed(response.ExecutionFailed, m.Text, false, nil)
		}
		b, err := json.Marshal(r)
		if err != nil {
			b, _ = json.Marshal(response.Failed(response.ExecutionFailed, "the result could not be encoded", false, nil))
		}
		body = string(b)
	}
	return "TOOL_RESULT " + m.Tool + " (call " + m.CallID + "):\n" + body
}
