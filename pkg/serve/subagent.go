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
	cwd := d.c.Cwd
	if e.Cwd != "" {
		cwd = e.Cwd
	}
	fail := func(why string) {
		d.post(conversation.Event{Type: conversation.EvSubagentResult, SubagentID: e.SubagentID, Outcome: conversation.SubagentFailed, Error: why})
	}
	c, effs, err := s.newConversation(conversation.Config{ID: e.SubagentID, ParentID: parent, Subagent: true, Task: e.Task,
		Cwd: cwd, Model: d.c.Model, LandlockAvailable: s.o.LandlockAvailable})
	if err != nil {
		fail("starting the sub-agent: " + err.Error())
		return
	}
	m := c.Machine
	rec := convstore.Conversation{ID: m.ID, ParentID: parent, Subagent: true, Owner: d.owner, Cwd: m.Cwd, Model: m.Model,
		Mode: string(m.Mode), State: string(m.State), CreatedAt: s.o.Now()}
	if rec.Snapshot, err = s.snapshot(c); err != nil {
		fail("starting the sub-agent: " + err.Error())
		return
	}
	if err := s.o.Store.Create(ctx, rec); err != nil {
		fail("starting the sub-agent: " + err.Error())
		return
	}
	child := s.start(c, rec)
	child.post(effectsEvent(effs)) // New sent the task and the first call_llm (B-08a)
	id := e.SubagentID
	d.subTimers[id] = time.AfterFunc(s.o.SubagentTimeout, func() {
		child.post(conversation.Event{Type: conversation.EvCancel})
		d.post(conversation.Event{Type: conversation.EvSubagentResult, SubagentID: id, Outcome: conversation.SubagentTimeout,
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
	outcome := conversation.SubagentDone
	if e.Error != "" {
		outcome = conversation.SubagentFailed
	}
	parent.post(subagentFinished{id: d.c.ID, ev: conversation.Event{Type: conversation.EvSubagentResult,
		SubagentID: d.c.ID, Outcome: outcome, Result: e.Result, Error: e.Error}})
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
