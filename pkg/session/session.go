// Package session is the agent-session reducer: Transition(state, event) →
// (state, effects), pure and replayable, composing seed 000's workflow FSM,
// resolved context and phantom check, seed 002's envelope, receipts and
// evidence, and seed 004's read guard (DESIGN §13).
//
// The reducer does no I/O. Time arrives in events (Event.At, stamped by the
// driver), randomness as the seed a driver stamps on session_start, and the
// receipt key through Options; so the same event log always replays to the
// same effects (seed 001 REQ-BED-001).
package session

import (
	"time"

	"github.com/govkit/govkit/pkg/session/aggregate"
	"github.com/govkit/govkit/pkg/session/envelope"
	"github.com/govkit/govkit/pkg/session/phantom"
	"github.com/govkit/govkit/pkg/session/readguard"
	"github.com/govkit/govkit/pkg/session/resolved"
	"github.com/govkit/govkit/pkg/session/workflow"
)

// Options are what a driver supplies from outside the event log.
type Options struct {
	// ReceiptKey signs receipts (HMAC-SHA256, seed 002). Without one no
	// receipt is minted and every tool result says so in an error effect.
	ReceiptKey []byte
	// StrictResolution is the driver's default for sessions whose config
	// does not say (GOVKIT_STRICT_RESOLUTION); nil means on.
	StrictResolution *bool
}

// State is one session's state. Transition mutates it in place and returns
// it: a warm context of hundreds of resources is not copied per event.
// The effects slice Transition returns is reused by the next call.
type State struct {
	opts Options
	seq  int64
	now  time.Time

	started  bool
	begin    Event // the session_start that started it, as stamped: Restore replays it
	id       string
	key      string
	conn     string
	client   string
	protocol string
	strict   bool
	classify bool
	evidence bool
	provider string
	model    string
	agent    string // sanitized, for metric labels
	agentID  string // as configured, for receipts
	seed     []byte

	tools    *workflow.Table
	schema   *envelope.Schema
	allowed  map[string]bool
	fsm      workflow.FSM
	ctx      *resolved.Context
	guard    *readguard.Guard
	agg      *aggregate.Aggregator
	phantom  *phantom.Detector
	readTool string

	pending map[string]*call

	turn turn
	cfg  limits

	receipts map[string]bool
	content  corpus
	nReceipt int

	out []Effect
}

// limits are seed 002's per-turn budgets.
type limits struct {
	steps, stepBytes, turnBytes int
	requireTool                 bool
}

// New returns the state of a session that has not started: the first event
// must be session_start.
func New(opts Options) *State {
	return &State{opts: opts, pending: map[string]*call{}, receipts: map[string]bool{}}
}

// Transition applies one event and returns the state and the effects the
// driver must carry out, in order. An event that is invalid or does not fit
// the state gets an error effect and changes nothing.
func Transition(st *State, ev Event) (*State, []Effect) {
	st.out = st.out[:0]
	if ev.err != nil {
		st.fail(ev.err.Code, ev.err.Detail)
		return st, st.out
	}
	if ev.At != "" {
		if t, err := time.Parse(time.RFC3339Nano, ev.At); err == nil && t.After(st.now) {
			st.now = t
		}
	}
	if ev.Type != EvSessionStart && !st.started {
		st.fail(ErrNotStarted, "the first event of a session must be session_start")
		return st, st.out
	}
	switch ev.Type {
	case EvSessionStart:
		st.start(&ev)
	case EvToolCall:
		st.toolCall(&ev)
	case EvToolResult:
		st.toolResult(&ev)
	case EvResolve:
		st.resolve(&ev)
	case EvFinal:
		st.final(ev.Text, false)
	case EvLLMText:
		st.llmText(ev.Raw)
	case EvClear:
		st.clear(ev.KeepPinned)
	case EvTick:
		st.tick(ev.Now)
	default:
		st.fail(ErrUnknownEvent, "unknown event type "+ev.Type)
	}
	return st, st.out
}

// emit appends an effect with the next sequence number.
func (st *State) emit(e Effect) {
	st.seq++
	e.Seq = st.seq
	st.out = append(st.out, e)
}

func (st *State) fail(code, detail string) {
	st.emit(Effect{Type: EfError, Code: code, Detail: detail})
}
