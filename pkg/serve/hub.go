package serve

import (
	"encoding/json"
	"fmt"

	"github.com/govkit/govkit/pkg/session/conversation"
)

// recentMessages is how many messages a client attaching to the stream
// gets before the live ones (REQ-BED-011); the API has the full history.
const recentMessages = 50

// subscriberBuffer bounds what a slow client may fall behind by; past it
// the client is dropped (its stream ends) rather than ever slowing the
// conversation, and reconnects to a fresh snapshot.
const subscriberBuffer = 256

// subscriber is one SSE client.
type subscriber struct {
	ch chan []byte
}

// hub is a conversation's stream: every state change and every persisted
// message goes to every attached client at once (REQ-BED-011). It is used
// only from the conversation's loop.
type hub struct {
	subs map[*subscriber]bool
	n    int64
}

func (h *hub) add(s *subscriber, c *conversation.Conversation) {
	if h.subs == nil {
		h.subs = map[*subscriber]bool{}
	}
	h.subs[s] = true
	h.sendTo(s, "state", stateOf(c))
	msgs := c.Messages
	if len(msgs) > recentMessages {
		msgs = msgs[len(msgs)-recentMessages:]
	}
	for _, m := range msgs {
		h.sendTo(s, "message", m)
	}
}

func (h *hub) remove(s *subscriber) {
	if h.subs[s] {
		delete(h.subs, s)
		close(s.ch)
	}
}

func (h *hub) message(m conversation.Message) { h.send("message", m) }

// effect streams what a client shows: state changes (as the StateView
// the API shows), notices, refusals, retries, upgrade requests.
func (h *hub) effect(e conversation.Effect, c *conversation.Conversation) {
	switch e.Type {
	case conversation.EfState:
		h.send("state", stateOf(c))
	case conversation.EfNotify, conversation.EfReject, conversation.EfError,
		conversation.EfScheduleRetry, conversation.EfRequestModeApproval:
		h.send(e.Type, e)
	}
}

func (h *hub) send(event string, v any) {
	for s := range h.subs {
		h.sendTo(s, event, v)
	}
}

func (h *hub) sendTo(s *subscriber, event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	h.n++
	frame := []byte(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", h.n, event, data))
	select {
	case s.ch <- frame:
	default:
		h.remove(s)
	}
}

func (h *hub) close() {
	for s := range h.subs {
		h.remove(s)
	}
}

// StateView is a conversation's current state as the API and the stream
// show it.
type StateView struct {
	ID            string             `json:"id"`
	ParentID      string             `json:"parent_id,omitempty"`
	ContinuedFrom string             `json:"continued_from,omitempty"`
	Subagent      bool               `json:"subagent,omitempty"`
	State         conversation.State `json:"state"`
	Mode          conversation.Mode  `json:"mode"`
	Generation    int                `json:"generation"`
	Cwd           string             `json:"cwd"`
	Model         string             `json:"model"`
	Usage         conversation.Usage `json:"usage"`
	ContextWindow int                `json:"context_window"`
	Messages      int                `json:"messages"`
	ApprovalID    string             `json:"approval_id,omitempty"`
}

func stateOf(c *conversation.Conversation) StateView {
	return StateView{ID: c.ID, ParentID: c.ParentID, ContinuedFrom: c.ContinuedFrom, Subagent: c.Subagent,
		State: c.State, Mode: c.Mode, Generation: c.Generation, Cwd: c.Cwd, Model: c.Model,
		Usage: c.Usage, ContextWindow: c.ContextWindow, Messages: len(c.Messages)}
}
