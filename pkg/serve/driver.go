package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/convstore"
	"github.com/govkit/govkit/pkg/convtools"
	"github.com/govkit/govkit/pkg/llm"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// driver owns one conversation: its goroutine alone applies events to the
// machine and carries out the effects, so transitions are serial and each
// state is persisted before its effects run (REQ-BED-007).
type driver struct {
	s    *Server
	conv *session.Conversation
	c    *conversation.Conversation // conv.Machine
	rec  convstore.Conversation
	// owner and subagent are rec's, which never change: the API's
	// goroutines read them while the loop rewrites rec.
	owner    string
	subagent bool

	mu    sync.Mutex
	queue []any
	wake  chan struct{}

	// Owned by the loop goroutine.
	llmCancel      map[string]context.CancelFunc
	toolCancel     map[string]context.CancelFunc
	subTimers      map[string]*time.Timer
	hub            hub
	broken         error              // a persist failed: nothing more runs (fail closed)
	approvalID     string             // the auditd approval a mode upgrade waits on
	approvalCancel context.CancelFunc // stops waiting on it
}

// restoreEvent asks the loop to restore the conversation after a restart.
type restoreEvent struct{}

// request is an event from the API, answered with the transition's effects.
type request struct {
	ev    conversation.Event
	after func(*conversation.Conversation)
	reply chan []conversation.Effect
}

// subscribe attaches an SSE client inside the loop, so that no message
// falls between the snapshot it is sent and its subscription.
type subscribe struct {
	sub   *subscriber
	reply chan struct{}
}

// inspect runs fn on the conversation inside the loop.
type inspect struct {
	fn    func(*conversation.Conversation)
	reply chan struct{}
}

func newDriver(s *Server, c *session.Conversation, rec convstore.Conversation) *driver {
	return &driver{s: s, conv: c, c: c.Machine, rec: rec, owner: rec.Owner, subagent: rec.Subagent, wake: make(chan struct{}, 1),
		llmCancel: map[string]context.CancelFunc{}, toolCancel: map[string]context.CancelFunc{}, subTimers: map[string]*time.Timer{}}
}

// post queues an event; it never blocks, so LLM and tool goroutines can
// always report.
func (d *driver) post(ev any) {
	d.mu.Lock()
	d.queue = append(d.queue, ev)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// apply sends an event from the API and waits for its effects.
//
// after, when set, runs in the loop right after the transition, before any
// later event: the API's answer shows the state the request made, not one
// a fast turn reached since (send --wait counts on it).
func (d *driver) apply(ctx context.Context, ev conversation.Event, after func(*conversation.Conversation)) ([]conversation.Effect, error) {
	r := request{ev: ev, after: after, reply: make(chan []conversation.Effect, 1)}
	d.post(r)
	select {
	case effs := <-r.reply:
		return effs, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// view runs fn on the conversation in the loop and waits.
func (d *driver) view(ctx context.Context, fn func(*conversation.Conversation)) error {
	r := inspect{fn: fn, reply: make(chan struct{})}
	d.post(r)
	select {
	case <-r.reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *driver) loop(ctx context.Context) {
	defer d.shutdown()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		}
		for {
			d.mu.Lock()
			if len(d.queue) == 0 {
				d.mu.Unlock()
				break
			}
			item := d.queue[0]
			d.queue = d.queue[1:]
			d.mu.Unlock()
			d.handle(ctx, item)
		}
	}
}

func (d *driver) handle(ctx context.Context, item any) {
	switch it := item.(type) {
	case restoreEvent:
		if d.c.State == conversation.AwaitingModeApproval {
			d.withdrawStaleApprovals()
		}
		d.run(ctx, d.conv.Restore(d.s.at()))
	case request:
		effs := d.transition(ctx, it.ev)
		if it.after != nil {
			it.after(d.c)
		}
		it.reply <- effs
	case conversation.Event:
		d.transition(ctx, it)
	case subscribe:
		d.hub.add(it.sub, d.c)
		close(it.reply)
	case inspect:
		it.fn(d.c)
		close(it.reply)
	case unsubscribe:
		d.hub.remove(it.sub)
	case approvalOpened:
		d.approvalID = it.id
		d.hub.send("approval", map[string]string{"approval_id": it.id,
			"hint": "approve it with 'approvals approve " + it.id + "'"})
	case effectsEvent:
		d.run(ctx, it)
	case subagentFinished:
		if t, ok := d.subTimers[it.id]; ok {
			t.Stop()
			delete(d.subTimers, it.id)
		}
		d.transition(ctx, it.ev)
	}
}

func (d *driver) transition(ctx context.Context, ev conversation.Event) []conversation.Effect {
	if ev.At == "" {
		ev.At = d.s.at()
	}
	mode, gen := d.c.Mode, d.c.Generation
	effs := d.conv.Apply(ev)
	out := append([]conversation.Effect(nil), effs...)
	d.run(ctx, effs)
	if d.c.Generation != gen && d.broken == nil {
		// In the background: auditd must never hold up the conversation.
		go d.s.recordMode(d.c.ID, mode, d.c.Mode, d.c.Generation, ev.ApprovalID)
	}
	return out
}

// run carries out effects in order. persist comes first in every
// transition: when it fails, nothing after it runs, since an effect whose
// state is not durable could not be recovered after a crash (REQ-BED-007).
func (d *driver) run(ctx context.Context, effs []conversation.Effect) {
	for _, e := range effs {
		if d.broken != nil {
			return
		}
		switch e.Type {
		case conversation.EfPersist:
			if err := d.persist(ctx, e.Messages); err != nil {
				d.broken = err
				d.s.logf("conversation %s: persisting its state failed, so it stops: %v", d.c.ID, err)
				d.hub.send("error", map[string]any{"code": "PERSIST_FAILED", "detail": err.Error()})
				return
			}
		case conversation.EfCallLLM:
			d.callLLM(ctx, e)
		case conversation.EfAbortLLM:
			if cancel, ok := d.llmCancel[e.RequestID]; ok {
				cancel()
				delete(d.llmCancel, e.RequestID)
			}
		case conversation.EfScheduleRetry:
			id := e.RequestID
			time.AfterFunc(time.Duration(e.AfterMS)*time.Millisecond, func() {
				d.post(conversation.Event{Type: conversation.EvRetryDue, RequestID: id})
			})
		case conversation.EfExecuteTool:
			d.executeTool(ctx, e)
		case conversation.EfKillTool:
			if cancel, ok := d.toolCancel[e.CallID]; ok {
				cancel() // convtools kills the process group at once (REQ-BED-005)
				delete(d.toolCancel, e.CallID)
			}
		case conversation.EfSpawnSubagent:
			d.spawn(ctx, e)
		case conversation.EfCancelSubagent:
			if child, ok := d.s.driver(e.SubagentID); ok {
				child.post(conversation.Event{Type: conversation.EvCancel})
			}
		case conversation.EfSubagentDone:
			d.finishSubagent(e)
		case conversation.EfRequestModeApproval:
			d.requestModeApproval(ctx, e)
		case conversation.EfCancelModeApproval:
			d.withdrawApproval()
		}
		d.hub.effect(e, d.c)
	}
}

// persist writes the conversation and its new messages in one transaction.
func (d *driver) persist(ctx context.Context, msgs []conversation.Message) error {
	snap, err := d.s.snapshot(d.conv)
	if err != nil {
		return err
	}
	rec := d.rec
	rec.Mode, rec.State, rec.Snapshot, rec.UpdatedAt = string(d.c.Mode), string(d.c.State), snap, d.s.o.Now()
	out := make([]convstore.Message, 0, len(msgs))
	for _, m := range msgs {
		body, err := json.Marshal(m)
		if err != nil {
			return err
		}
		at, _ := time.Parse(time.RFC3339Nano, m.At)
		out = append(out, convstore.Message{ConversationID: d.c.ID, Seq: m.Seq, Role: m.Role, Body: body, At: at})
	}
	// Persisting must not be cut short by the server stopping: the
	// transition already happened in memory.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := d.s.o.Store.Save(pctx, rec, out); err != nil {
		return err
	}
	d.rec = rec
	for _, m := range msgs {
		d.hub.message(m)
	}
	return nil
}

// callLLM sends the conversation to the model in the background; its
// answer comes back as an event carrying the request id, so that an
// answer to a cancelled request is recognised as stale (REQ-BED-005).
func (d *driver) callLLM(ctx context.Context, e conversation.Effect) {
	req, answer, err := d.s.request(ctx, d.c, e.Tools)
	id := e.RequestID
	if err != nil {
		d.post(conversation.Event{Type: conversation.EvLLMError, RequestID: id, Error: err.Error()})
		return
	}
	lctx, cancel := context.WithCancel(ctx)
	d.llmCancel[id] = cancel
	go func() {
		defer cancel()
		resp, err := d.s.o.LLM.Complete(lctx, req)
		if lctx.Err() != nil {
			return // aborted: the machine has moved on, nothing partial is kept
		}
		if err != nil {
			ev := conversation.Event{Type: conversation.EvLLMError, RequestID: id, Error: err.Error(), Retryable: true}
			// An *llm.Error says whether a retry can help (B-06a/c); any
			// other error is the network's, retryable.
			if le, ok := err.(*llm.Error); ok {
				ev.Status, ev.Retryable = le.Status, le.Retryable
			}
			d.post(ev)
			return
		}
		d.post(answer(id, resp))
	}()
}

func llmEvent(id string, resp llm.Response) conversation.Event {
	ev := conversation.Event{Type: conversation.EvLLMResponse, RequestID: id, Text: resp.Text, EndTurn: resp.EndTurn,
		Usage: &conversation.Usage{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}}
	for _, tc := range resp.ToolCalls {
		// Malformed arguments are the machine's to keep as a JSON string.
		ev.ToolCalls = append(ev.ToolCalls, conversation.ToolCall{ID: tc.ID, Name: tc.Name, Args: json.RawMessage(tc.Arguments)})
	}
	return ev
}

// executeTool runs one tool in the background. A call admitted under a
// generation that is no longer the conversation's is refused here, at the
// last moment before it would start: a mode change never half-applies
// (the phoenix-ide P0: bash still sandboxed while patch wrote).
func (d *driver) executeTool(ctx context.Context, e conversation.Effect) {
	call, gen := *e.Call, e.Generation
	if !d.c.Admits(call.ID, gen) {
		d.post(conversation.Event{Type: conversation.EvToolResult, CallID: call.ID, Generation: gen,
			Error: fmt.Sprintf("the conversation's mode changed (generation %d, the call was admitted under %d); ask for the call again", d.c.Generation, gen)})
		return
	}
	tctx, cancel := context.WithCancel(ctx)
	d.toolCancel[call.ID] = cancel
	restricted := e.Mode == conversation.Restricted
	cwd, convID := d.c.Cwd, d.c.ID
	if e.Cwd != "" {
		cwd = e.Cwd
	}
	go func() {
		defer cancel()
		res := d.s.o.Tools.Run(tctx, convtools.Call{ID: call.ID, Name: call.Name, Args: call.Args, Cwd: cwd, Restricted: restricted, Session: convID})
		d.s.recordTool(convID, call, res)
		// Always reported, killed or not: a killed call's result confirms
		// its process group is gone, which is when the machine leaves
		// cancelling (B-05b).
		ev := conversation.Event{Type: conversation.EvToolResult, CallID: call.ID, Generation: gen, OK: res.OK, Output: res.Output}
		if !res.OK {
			ev.Error = res.Error
			if ev.Error == "" {
				ev.Error = res.Output
			}
		}
		d.post(ev)
	}()
}

// shutdown stops what the conversation started.
func (d *driver) shutdown() {
	for _, c := range d.llmCancel {
		c()
	}
	for _, c := range d.toolCancel {
		c()
	}
	for _, t := range d.subTimers {
		t.Stop()
	}
	if d.approvalCancel != nil {
		d.approvalCancel()
	}
	d.hub.close()
}
