package serve

import (
	"context"
	"fmt"
	"strings"

	"github.com/govkit/govkit/pkg/convtools"
	"github.com/govkit/govkit/pkg/llm"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// request is the conversation's next LLM request and the function that
// turns the answer into the machine's event: native tool calling, or seed
// 002's text envelope (Options.EnvelopeProtocol, envelope.go).
func (s *Server) request(ctx context.Context, c *conversation.Conversation, withTools bool) (llm.Request, func(string, llm.Response) conversation.Event, error) {
	if s.o.EnvelopeProtocol {
		return s.envelopeRequest(ctx, c, withTools)
	}
	req, err := s.llmRequest(ctx, c, withTools)
	return req, llmEvent, err
}

// llmRequest is the conversation as the model sees it: a system prompt,
// the history, and the tools (none for a continuation summary,
// REQ-BED-020). The tools are the same whatever the mode (REQ-BED-017):
// the mode shows in the prompt and in refusals, never in descriptions.
func (s *Server) llmRequest(ctx context.Context, c *conversation.Conversation, withTools bool) (llm.Request, error) {
	req := llm.Request{Model: c.Model, Messages: []llm.Message{{Role: "system", Content: systemPrompt(c)}}}
	for _, m := range c.History() {
		lm := llm.Message{Role: m.Role, Content: m.Text}
		switch m.Role {
		case "tool":
			lm.ToolCallID, lm.Name = m.CallID, m.Tool
			if m.IsError && !strings.HasPrefix(m.Text, "error") {
				lm.Content = "error: " + m.Text
			}
		case "assistant":
			for _, tc := range m.ToolCalls {
				lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: string(tc.Args)})
			}
		case "user":
			var err error
			if lm.Images, err = s.images(ctx, m); err != nil {
				return llm.Request{}, err
			}
		}
		req.Messages = append(req.Messages, lm)
	}
	if withTools {
		req.Tools = tools(c)
	}
	return req, nil
}

// images are a user message's attachments, read from the store, as the
// request sends them.
func (s *Server) images(ctx context.Context, m conversation.Message) ([]llm.Image, error) {
	var out []llm.Image
	for _, a := range m.Attachments {
		media, data, err := s.o.Store.Attachment(ctx, a.Ref)
		if err != nil {
			return nil, fmt.Errorf("attachment %s: %w", a.Ref, err)
		}
		out = append(out, llm.Image{MediaType: media, Data: data})
	}
	return out, nil
}

// tools are the standard tools and the machine's own: a sub-agent gets
// submit_result instead of spawn_agents and request_mode_upgrade
// (REQ-BED-009, REQ-BED-018).
func tools(c *conversation.Conversation) []llm.Tool {
	var out []llm.Tool
	for _, d := range convtools.Definitions() {
		out = append(out, llm.Tool{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
	}
	for _, t := range c.OfferedTools() {
		out = append(out, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return out
}

func systemPrompt(c *conversation.Conversation) string {
	var b strings.Builder
	b.WriteString("You are an agent working in the directory " + c.Cwd + ". Every tool starts there; a cd in one bash call does not carry over to the next.\n")
	if c.Subagent {
		b.WriteString("You are a sub-agent: do the task you are given, then call submit_result with your result. You cannot spawn agents or change your mode.\n")
	}
	return b.String()
}
