package session

import (
	"strconv"

	"github.com/govkit/govkit/pkg/session/envelope"
	"github.com/govkit/govkit/pkg/session/evidence"
	"github.com/govkit/govkit/pkg/session/phantom"
	"github.com/govkit/govkit/pkg/session/response"
)

// turn is one model turn: from the session's start, or the last accepted
// final answer, to the next. Seed 002's nonce and budgets are per turn;
// seed 000's phantom check asks whether the turn called any tool.
type turn struct {
	n     int
	nonce string
	steps int // tool results seen this turn
	bytes int // tool output fed back this turn
	calls int // tool calls attempted this turn, allowed or not

	afterResult bool // a tool result came back: the next text must be decision JSON
	awaitFinal  bool // the model decided to finish: the next text is its answer
	exhausted   bool // the turn's tool budget is spent: no further tool runs
}

func (t *turn) id() string { return "t" + strconv.Itoa(t.n) }

// beginTurn opens the next turn with a fresh nonce drawn from the seed
// (seed 002 Tool Call Nonce: server-generated, per turn, unpredictable).
func (st *State) beginTurn() {
	st.turn = turn{n: st.turn.n + 1}
	st.turn.nonce = st.derive("nonce", st.turn.n)[:32]
}

// announceTurn tells the driver the nonce to inject as TOOL_NONCE.
func (st *State) announceTurn() {
	st.emit(Effect{Type: EfNonce, TurnID: st.turn.id(), Nonce: st.turn.nonce})
}

func (st *State) nextTurn() {
	st.beginTurn()
	st.announceTurn()
}

// llmText applies seed 002's strict text protocol to one model message.
func (st *State) llmText(raw string) {
	t := &st.turn
	after := t.afterResult && !t.awaitFinal && !t.exhausted
	msg, rej := envelope.Parse(raw, t.nonce, st.schema, after)
	if rej != nil {
		if rej.Code == envelope.UnknownTool {
			// Seed 002: an unknown tool id still leaves a receipt.
			st.mintReceipt(&call{id: st.envelopeCallID(), name: msg.Tool}, false, "", rej.Code)
		}
		st.rejectTurn(rej.Code, rej.Bucket, rej.Detail)
		return
	}
	switch msg.Kind {
	case envelope.Prose:
		st.final(msg.Text, true)
	case envelope.Final:
		t.awaitFinal = true
		st.emit(Effect{Type: EfForceFinal, TurnID: t.id(), Reason: "DECISION_FINAL"})
	case envelope.ToolCall:
		if t.exhausted || t.awaitFinal {
			st.rejectTurn(envelope.OutputLimit, envelope.FormatError, "the turn's tool budget is spent or the model decided to finish: answer now, without tools")
			return
		}
		if st.allowed != nil && !st.allowed[msg.Tool] {
			st.rejectTurn(envelope.UnknownTool, envelope.ToolSyntax, "tool "+msg.Tool+" is not in this session's allowed_tools")
			return
		}
		id := st.envelopeCallID()
		t.calls++
		st.govern(id, msg.Tool, msg.Args, true)
	}
}

// envelopeCallID names a call the model made in text: the model never
// chooses ids (seed 002).
func (st *State) envelopeCallID() string {
	return st.turn.id() + "-c" + strconv.Itoa(st.turn.calls+1)
}

// rejectTurn rejects a model message: nothing executes, the turn ends with
// STOP_HOOK: tool_call_rejected, and a new nonce is issued (seed 002 Core
// Principles, Stop Hooks).
func (st *State) rejectTurn(code, bucket, detail string) {
	st.metric(mRejections, "bucket", bucket, "agent", st.agent)
	st.emit(Effect{Type: EfReject, Code: code, Bucket: bucket, StopHook: envelope.StopHook, Detail: detail, TurnID: st.turn.id()})
	st.nextTurn()
}

// final checks an answer the model gives without calling a tool: Gate 2
// (seed 000 §8), phantom detection (Invariant 4), then the Evidence line
// (seed 002) when the answer came as llm_text or the session is an
// envelope session (DESIGN §13: seed 002 governs what the model writes as
// text). Only an answer that passes all ends the turn.
func (st *State) final(text string, fromText bool) {
	if inject, blocked := st.fsm.CanFinalAnswer(); blocked {
		st.metric(mFinalBlock, "state", st.fsm.State.String())
		st.emit(Effect{Type: EfBlockFinal, Code: response.FSMBlocked, Inject: inject})
		return
	}
	st.metric(mIterations, "provider", st.provider, "model", st.model)
	if st.turn.calls == 0 {
		if m, ok := st.phantom.Detect(text); ok {
			st.metric(mPhantom, "provider", st.provider, "model", st.model)
			st.emit(Effect{Type: EfReplaceAnswer, Text: phantom.SafeMessage, Reason: response.PhantomExecution, Detail: m.Category + ": " + m.Pattern})
			st.nextTurn()
			return
		}
		if st.cfg.requireTool {
			st.rejectTurn("tool_call_required", envelope.FormatError, "this session requires a tool call before the first answer (require_tool)")
			return
		}
	}
	if (fromText || st.protocol == ProtocolEnvelope) && st.evidence {
		if rej := evidence.Check(text, sources{st}); rej != nil {
			st.metric(mRejections, "bucket", rej.Bucket, "agent", st.agent)
			st.emit(Effect{Type: EfReject, Code: rej.Bucket, Bucket: rej.Bucket, Detail: rej.Detail, TurnID: st.turn.id()})
			return
		}
	}
	st.emit(Effect{Type: EfAllowFinal, TurnID: st.turn.id()})
	st.agg.Break()
	st.nextTurn()
}
