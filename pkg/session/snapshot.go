package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/session/aggregate"
	"github.com/govkit/govkit/pkg/session/envelope"
	"github.com/govkit/govkit/pkg/session/readguard"
	"github.com/govkit/govkit/pkg/session/resolved"
	"github.com/govkit/govkit/pkg/session/workflow"
)

// MaxSnapshot bounds a snapshot (bytes); Restore refuses larger input.
const MaxSnapshot = 8 << 20

// snapshotVersion is the snapshot format's version ("v"). A change to what
// a snapshot holds, or to what its fields mean, is a new version: Restore
// refuses every version it does not know rather than guess.
const snapshotVersion = 1

// snapshot is the format Snapshot writes. The config-derived parts of a
// State (tool table, schema, phantom detector, limits, identity) are not
// in it: they are rebuilt by replaying the stamped session_start, which
// is. The rest is the session's dynamic state, each part as its package
// writes it.
type snapshot struct {
	V int `json:"v"`
	// Start is the stamped session_start without its tools, which Tools
	// carries: a tool's "args": {} (no args allowed) must not come back as
	// absent (args unchecked).
	Start  Event      `json:"start"`
	Tools  []toolDecl `json:"tools"`
	Strict bool       `json:"strict_resolution"` // as decided at the start, with the driver's default of then
	Seq    int64      `json:"seq"`
	Now    time.Time  `json:"now"`
	Turn   turnSnap   `json:"turn"`

	FSM       workflow.FSMSnapshot     `json:"fsm"`
	Context   resolved.ContextSnapshot `json:"context"`
	ReadGuard readguard.GuardSnapshot  `json:"read_guard"`
	Aggregate aggregate.Snapshot       `json:"aggregate"`

	Pending      []callSnap   `json:"pending,omitempty"`  // by call id
	Receipts     []string     `json:"receipts,omitempty"` // the ids minted, sorted
	ReceiptCount int          `json:"receipt_count,omitempty"`
	Corpus       []corpusFile `json:"corpus,omitempty"` // oldest first
}

// toolDecl writes args even when absent (null) or empty ({}): the two mean
// different things (pkg/session/envelope).
type toolDecl struct {
	ToolDecl
	Args map[string]envelope.ArgSpec `json:"args"`
}

type turnSnap struct {
	N           int  `json:"n"` // the nonce follows from it and the seed
	Steps       int  `json:"steps,omitempty"`
	Bytes       int  `json:"bytes,omitempty"`
	Calls       int  `json:"calls,omitempty"`
	AfterResult bool `json:"after_result,omitempty"`
	AwaitFinal  bool `json:"await_final,omitempty"`
	Exhausted   bool `json:"exhausted,omitempty"`
}

// callSnap is an allowed call awaiting its result, with what its result
// needs: of the read guard's verdict before the read, only what readResult
// merges into the verdict after it.
type callSnap struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Kind     workflow.Kind  `json:"kind"`
	Args     map[string]any `json:"args"` // null and {} both kept
	Target   string         `json:"target,omitempty"`
	Read     readSnap       `json:"read,omitzero"`
	Path     string         `json:"meta_path,omitempty"`
	Codes    []string       `json:"meta_reason_codes,omitempty"`
	MetaWarn []string       `json:"meta_warnings,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
	Text     bool           `json:"text,omitempty"`
}

type readSnap struct {
	Tool        string `json:"tool,omitempty"`
	Path        string `json:"path,omitempty"`
	StartLine   int    `json:"start_line,omitempty"`
	EndLine     int    `json:"end_line,omitempty"`
	CandidateID string `json:"candidate_id,omitempty"`
	BundleID    string `json:"bundle_id,omitempty"`
}

type corpusFile struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// Snapshot returns the session's state as bytes: what a front-end that
// runs one process per event (gate hook) keeps between events.
// Deterministic: the same state gives the same bytes (lists in the
// state's own order or sorted; encoding/json sorts map keys). Error when
// the session has not started, or its state is larger than MaxSnapshot.
//
// The bytes hold the resolved context (seed 000 §10 "DO NOT: Persist
// ResolvedContext"): it is still session-scoped (Invariant 5) because the
// snapshot is this session's own memory between its events, never another
// session's: the front-end deletes it when the session ends and treats it
// as expired after the context's TTL. They hold the session's seed too (its
// nonces and receipt ids follow from it) but never the receipt key: keep
// them as private as the session (DESIGN §14).
func (st *State) Snapshot() ([]byte, error) {
	if !st.started {
		return nil, errors.New("session: snapshot of a session that has not started")
	}
	s := snapshot{
		V:      snapshotVersion,
		Start:  st.begin,
		Tools:  make([]toolDecl, len(st.begin.Tools)),
		Strict: st.strict,
		Seq:    st.seq,
		Now:    st.now,
		Turn: turnSnap{N: st.turn.n, Steps: st.turn.steps, Bytes: st.turn.bytes, Calls: st.turn.calls,
			AfterResult: st.turn.afterResult, AwaitFinal: st.turn.awaitFinal, Exhausted: st.turn.exhausted},
		FSM:          st.fsm.Snapshot(),
		Context:      st.ctx.Snapshot(),
		ReadGuard:    st.guard.Snapshot(),
		Aggregate:    st.agg.Snapshot(),
		ReceiptCount: st.nReceipt,
	}
	s.Start.Tools = nil
	for i, d := range st.begin.Tools {
		s.Tools[i] = toolDecl{ToolDecl: d, Args: d.Args}
	}
	if len(st.pending) > 0 {
		s.Pending = make([]callSnap, 0, len(st.pending))
		for _, c := range st.pending {
			r := c.read
			s.Pending = append(s.Pending, callSnap{
				ID: c.id, Name: c.name, Kind: c.kind, Args: c.args, Target: c.target,
				Read: readSnap{r.Tool, r.Path, r.StartLine, r.EndLine, r.CandidateID, r.BundleID},
				Path: c.meta.Path, Codes: c.meta.ReasonCodes, MetaWarn: c.meta.Warnings,
				Warnings: c.warnings, Text: c.text,
			})
		}
		slices.SortFunc(s.Pending, func(a, b callSnap) int { return strings.Compare(a.ID, b.ID) })
	}
	if len(st.receipts) > 0 {
		s.Receipts = make([]string, 0, len(st.receipts))
		for id := range st.receipts {
			s.Receipts = append(s.Receipts, id)
		}
		slices.Sort(s.Receipts)
	}
	if len(st.content.order) > 0 {
		s.Corpus = make([]corpusFile, len(st.content.order))
		for i, p := range st.content.order {
			s.Corpus[i] = corpusFile{p, st.content.files[p]}
		}
	}
	b, err := json.Marshal(&s)
	if err != nil {
		return nil, fmt.Errorf("session: snapshot: %w", err)
	}
	if len(b) > MaxSnapshot {
		return nil, fmt.Errorf("session: snapshot is %d bytes; the limit is %d (MaxSnapshot)", len(b), MaxSnapshot)
	}
	return b, nil
}

// Restore rebuilds a State from Snapshot's bytes, with the driver's opts
// (the receipt key is never in a snapshot). It replays the stamped
// session_start into a fresh State, which rebuilds every config-derived
// part, then overlays the dynamic state, each part checked by its package.
// Any damage (truncation, a bad field, a bound exceeded, a version it does
// not know) is an error naming what is wrong — never a panic, never a
// partly restored state.
func Restore(opts Options, data []byte) (*State, error) {
	if len(data) > MaxSnapshot {
		return nil, fmt.Errorf("session: snapshot is %d bytes; the limit is %d (MaxSnapshot)", len(data), MaxSnapshot)
	}
	var s snapshot
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&s)
	if err == nil {
		if _, t := dec.Token(); t != io.EOF {
			err = errors.New("data after the snapshot")
		}
	}
	if err != nil {
		// A snapshot of another version may not decode as this one: say
		// which version it is, when it says.
		var v struct {
			V *int `json:"v"`
		}
		if json.Unmarshal(data, &v) == nil && v.V != nil && *v.V != snapshotVersion {
			return nil, versionError(*v.V)
		}
		return nil, fmt.Errorf("session: snapshot: %w", err)
	}
	if s.V != snapshotVersion {
		return nil, versionError(s.V)
	}
	st, err := restore(opts, &s)
	if err != nil {
		return nil, fmt.Errorf("session: snapshot field %w", err)
	}
	return st, nil
}

func versionError(v int) error {
	return fmt.Errorf("session: snapshot version %d; this gate reads version %d", v, snapshotVersion)
}

// restore replays s's session_start and overlays the rest. Errors begin
// with the field's name.
func restore(opts Options, s *snapshot) (*State, error) {
	ev := s.Start
	if ev.Type != EvSessionStart {
		return nil, fmt.Errorf("start.type: %q is not %s", ev.Type, EvSessionStart)
	}
	if e := checkFields(&ev, nil); e != nil {
		return nil, fmt.Errorf("start: %s", e.Detail)
	}
	if s.Tools != nil {
		ev.Tools = make([]ToolDecl, len(s.Tools))
		for i, t := range s.Tools {
			ev.Tools[i] = t.ToolDecl
			ev.Tools[i].Args = t.Args
		}
	}
	st := New(opts)
	_, effs := Transition(st, ev)
	if !st.started {
		for _, e := range effs {
			if e.Type == EfError {
				return nil, fmt.Errorf("start: the session does not start: %s: %s", e.Code, e.Detail)
			}
		}
		return nil, errors.New("start: the session does not start")
	}
	st.out = nil

	t := s.Turn
	switch {
	case s.Seq < 0:
		return nil, errors.New("seq: negative")
	case t.N < 1:
		return nil, errors.New("turn.n: less than 1")
	case t.Steps < 0 || t.Bytes < 0 || t.Calls < 0:
		return nil, errors.New("turn: a negative count")
	case s.ReceiptCount < len(s.Receipts):
		return nil, errors.New("receipt_count: fewer than the receipts listed")
	}
	st.strict = s.Strict
	st.seq = s.Seq
	st.now = s.Now
	st.turn = turn{n: t.N, steps: t.Steps, bytes: t.Bytes, calls: t.Calls,
		afterResult: t.AfterResult, awaitFinal: t.AwaitFinal, exhausted: t.Exhausted}
	st.turn.nonce = st.derive("nonce", t.N)[:32]

	var err error
	if st.fsm, err = workflow.RestoreFSM(s.FSM); err != nil {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	if st.ctx, err = resolved.RestoreContext(st.ctx.Config(), s.Context); err != nil {
		return nil, fmt.Errorf("context: %w", err)
	}
	if st.guard, err = readguard.RestoreGuard(st.guard.Config(), st.guard.RefRequired(), s.ReadGuard); err != nil {
		return nil, fmt.Errorf("read_guard: %w", err)
	}
	if st.agg, err = aggregate.Restore(st.agg.MaxChars(), s.Aggregate); err != nil {
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	for i, c := range s.Pending {
		at := "pending[" + strconv.Itoa(i) + "]"
		switch {
		case c.ID == "" || c.Name == "":
			return nil, errors.New(at + ": empty id or name")
		case i > 0 && c.ID <= s.Pending[i-1].ID:
			return nil, errors.New(at + ".id: not after the previous id (sorted, unique)")
		case c.Kind.String() == "unknown":
			return nil, errors.New(at + ".kind: not resolve, read, write or search")
		}
		r := c.Read
		st.pending[c.ID] = &call{
			id: c.ID, name: c.Name, kind: c.Kind, args: c.Args, target: c.Target,
			read:     readguard.Read{Tool: r.Tool, Path: r.Path, StartLine: r.StartLine, EndLine: r.EndLine, CandidateID: r.CandidateID, BundleID: r.BundleID},
			meta:     readguard.Meta{Path: c.Path, ReasonCodes: c.Codes, Warnings: c.MetaWarn},
			warnings: c.Warnings, text: c.Text,
		}
	}
	for i, id := range s.Receipts {
		if !strings.HasPrefix(id, "rcpt_") || (i > 0 && id <= s.Receipts[i-1]) {
			return nil, fmt.Errorf("receipts[%d]: not a receipt id after the previous one (sorted, unique)", i)
		}
		st.receipts[id] = true
	}
	st.nReceipt = s.ReceiptCount
	for i, f := range s.Corpus {
		if _, dup := st.content.files[f.Path]; dup {
			return nil, fmt.Errorf("corpus[%d].path: %q repeated", i, f.Path)
		}
		st.content.files[f.Path] = f.Text
		st.content.order = append(st.content.order, f.Path)
		st.content.size += len(f.Text)
	}
	if st.content.size > corpusLimit && len(st.content.order) > 1 {
		return nil, fmt.Errorf("corpus: %d bytes in %d files; the session keeps at most %d", st.content.size, len(st.content.order), corpusLimit)
	}
	return st, nil
}

// View is the session's state as the `state` effect shows it (fsm state,
// resources count, turn, …): for gate doctor and tests. Before
// session_start it is mostly empty.
func (st *State) View() StateView {
	v := StateView{
		SchemaVersion:      SchemaVersion,
		SessionKey:         st.key,
		SessionID:          st.id,
		ConnectionID:       st.conn,
		ClientConnectionID: st.client,
		FSMState:           st.fsm.State.String(),
		TurnID:             st.turn.id(),
		Protocol:           st.protocol,
		StrictResolution:   st.strict,
	}
	if st.ctx != nil {
		v.Resources = st.ctx.Len()
	}
	return v
}

// Started reports whether session_start happened.
func (st *State) Started() bool { return st.started }

// ID is the session id session_start gave ("" when it gave none).
func (st *State) ID() string { return st.id }
