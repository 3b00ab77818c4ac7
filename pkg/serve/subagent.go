package serve

import (
	"context"
	"time"

	"github.com/govkit/govkit/pkg/convstore"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// spawn starts a sub-agent: its own conversation, restricted whenever
// Landlock works (REQ-BED-018), in the parent's working directory, given
// its task as its first message. It runs in parallel with its siblings;
// one that has not submitted a result within SubagentTimeout is cancelled
// and reported to the parent as timed out (REQ-BED-008).
func (d *driver) spawn(ctx context.Context, e conversation.Effect) {
	s, parent := d.s, d.c.ID
	c, effs := conversation.New(conversation.Config{ID: e.SubagentID, ParentID: parent, Subagent: true,
		Cwd: d.c.Cwd, Model: d.c.Model, ContextWindows: s.o.ContextWindows, LandlockAvailable: s.o.LandlockAvailable, At: s.at()})
	rec := convstore.Conversation{ID: c.ID, ParentID: parent, Subagent: true, Cwd: c.Cwd, Model: c.Model,
		Mode: string(c.Mode), State: string(c.State), CreatedAt: s.o.Now()}
	fail := func(why string) {
		d.post(conversation.Event{Type: conversation.EvSubagentResult, SubagentID: e.SubagentID, Status: "failed", Error: why})
	}
	if err := s.o.Store.Create(ctx, rec); err != nil {
		fail("starting the sub-agent: " + err.Error())
		return
	}
	child := s.start(c, rec)
	child.post(effectsEvent(effs))
	child.post(conversation.Event{Type: conversation.EvUserMessage, Text: e.Task})
	id := e.SubagentID
	d.subTimers[id] = time.AfterFunc(s.o.SubagentTimeout, func() {
		child.post(conversation.Event{Type: conversation.EvCancel})
		d.post(conversation.Event{Type: conversation.EvSubagentResult, SubagentID: id, Status: "timeout",
			Error: "the sub-agent did not submit a result within " + s.o.SubagentTimeout.String()})
	})
}

// finishSubagent reports a sub-agent's submit_result (or failure) to its
// parent.
func (d *driver) finishSubagent(e conversation.Effect) {
	parent, ok := d.s.driver(d.c.ParentID)
	if !ok {
		return
	}
	parent.post(subagentFinished{id: d.c.ID, ev: conversation.Event{Type: conversation.EvSubagentResult,
		SubagentID: d.c.ID, Status: e.Status, Result: e.Result, Error: e.Error}})
}

// subagentFinished is a child's result arriving at its parent: the parent
// stops the child's timer before the machine sees it.
type subagentFinished struct {
	id string
	ev conversation.Event
}

// effectsEvent carries a new conversation's first effects (persist, the
// mode notice) into its loop.
type effectsEvent []conversation.Effect
