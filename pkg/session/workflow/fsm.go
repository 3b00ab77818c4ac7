package workflow

import (
	"github.com/govkit/govkit/pkg/session/response"
	"github.com/govkit/govkit/pkg/termtext"
)

// FSM is a session's workflow state machine (seed 000 §7). It is a value:
// a copy is independent of the original (the pending recoveries are
// copy-on-write), so a reducer may keep the state before a transition.
type FSM struct {
	State State `json:"state"`
	// ReadAfterWrite: a resolve/read succeeded since the last write. It
	// lives only between OnToolSuccess and CompleteVerification, which
	// clears it (seed 000 App. A Failure Mode 4).
	ReadAfterWrite bool `json:"read_after_write"`
	// LastWriteTool names the write that VERIFYING awaits a check of.
	LastWriteTool string `json:"last_write_tool,omitempty"`

	recoveries []PendingRecovery // oldest first; never mutated in place
	lastID     int               // the n of the last "rec-n" issued
}

// NewFSM starts a session in RESOLVING.
func NewFSM() FSM { return FSM{State: Resolving} }

// Gate 1's texts. The seed appends the tail to every block (§8 Gate 1);
// VERIFYING's says what the seed's Invariant 6 walk-through quotes.
const (
	gate1Tail      = " Use a discovery or read tool first, then retry."
	verifyReason   = "Must verify the previous write operation"
	maxNameInBlock = 128 // a model-chosen tool name is echoed at most this long
)

// CanExecuteTool is Gate 1 (seed 000 §8): nil when a call of kind may run
// in the current state, else the FSM_BLOCKED envelope. A write (or a kind
// the FSM does not know) is refused in RESOLVING and VERIFYING; resolve,
// read and search always run. The check has no side effect: blocks never
// wear down, the tenth blocked write in VERIFYING is refused like the first
// (unlike the later upstream fsm.go, which waived verification after three).
func (f *FSM) CanExecuteTool(kind Kind, tool string) *response.ToolResponse {
	if kind.verifies() || f.State == Reading {
		return nil
	}
	tool = clip(tool)
	var msg, hint string
	details := map[string]any{
		"state":     f.State.String(),
		"tool":      tool,
		"tool_kind": kind.String(),
	}
	switch f.State {
	case Verifying:
		last := clip(f.LastWriteTool)
		details["last_write_tool"] = last
		msg = "FSM blocked " + kind.String() + " tool '" + tool + "' in state VERIFYING: " +
			verifyReason + " ('" + last + "') before another write." + gate1Tail
		hint = "Call a read or resolve tool to check the result of " + last + ", then retry " + tool + "."
	default: // RESOLVING, or a state this FSM does not know: fail closed.
		msg = "FSM blocked " + kind.String() + " tool '" + tool + "' in state " + f.State.String() +
			": no resource has been discovered or read in this session yet." + gate1Tail
		hint = "Call a resolve or read tool to discover the target resource, then retry " + tool + "."
	}
	details["recovery_hint"] = hint
	r := response.Blocked(response.FSMBlocked, msg, details)
	return &r
}

// CanFinalAnswer is Gate 2 (seed 000 §8): a final answer in VERIFYING,
// before the write was checked, is refused, and inject is the factual
// constraint the loop continues with (P-36).
func (f *FSM) CanFinalAnswer() (inject string, blocked bool) {
	if f.State != Verifying || f.ReadAfterWrite {
		return "", false
	}
	last := clip(f.LastWriteTool)
	if last == "" {
		last = "the last write"
	}
	return "Verification required: perform a read or status check on " + last + " before responding.", true
}

// OnToolSuccess moves the FSM after a call of kind succeeded (seed 000 §8
// State Transition After Success): resolve/read leave RESOLVING, a write
// enters VERIFYING, and a resolve/read in VERIFYING completes the
// verification at once, not at the final answer (P-37, App. A Failure
// Mode 2). Failed calls must not be reported: they change nothing (P-31).
func (f *FSM) OnToolSuccess(kind Kind, tool string) {
	if !kind.verifies() {
		// A write, or a kind the FSM does not know (fail closed).
		f.State = Verifying
		f.ReadAfterWrite = false
		f.LastWriteTool = tool
		return
	}
	switch f.State {
	case Resolving:
		f.State = Reading
	case Verifying:
		f.ReadAfterWrite = true
		f.CompleteVerification()
	}
}

// CompleteVerification returns a checked VERIFYING to READING and clears
// ReadAfterWrite, so that the next write needs its own check (P-38, App. A
// Failure Mode 4).
func (f *FSM) CompleteVerification() {
	if f.State == Verifying && f.ReadAfterWrite {
		f.State = Reading
		f.ReadAfterWrite = false
		f.LastWriteTool = ""
	}
}

// Reset returns to RESOLVING, for a clear that leaves no resource behind
// (seed 000 §5 Coherent Reset). Only with the ResolvedContext: never reset
// the FSM alone (seed 000 §10). Pending recoveries stay until they expire,
// as upstream: they correlate metrics, not workflow.
func (f *FSM) Reset() {
	f.State = Resolving
	f.ReadAfterWrite = false
	f.LastWriteTool = ""
}

// ResetKeepProgress returns to READING, for clear{keep_pinned} when pinned
// resources remain (seed 000 §5): discovery stands, an unchecked write's
// verification is dropped with the rest of the session state.
func (f *FSM) ResetKeepProgress() {
	f.State = Reading
	f.ReadAfterWrite = false
	f.LastWriteTool = ""
}

// clip bounds a model-chosen name echoed in a block, at a rune boundary.
func clip(s string) string { return termtext.Truncate(s, maxNameInBlock) }
