// Package monitor is auditor's engine: it follows auditd's event stream and
// API, runs pkg/detect's detections on every event, verifies the chain and
// the signed checkpoints periodically, keeps its pins in a State, and hands
// each alert on (DESIGN §8; seed 003 "Auditor CLI", "Security Detection").
// Its clock, sleeps, output and state file are injected: the command wires
// them (issue 20 "engines out of pkg/cmd").
package monitor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
	"github.com/govkit/govkit/pkg/witness"
)

// Timing of the monitor.
const (
	// reconnectMin and reconnectMax bound the wait before resubscribing
	// after the stream ends (auditd restarting: seed 003 "Troubleshooting
	// › Auditor Not Receiving Events"); it doubles while auditd stays away.
	reconnectMin = 100 * time.Millisecond
	reconnectMax = 5 * time.Second
	// A connection that delivered events or lasted this long was healthy:
	// the next reconnect starts from reconnectMin again.
	healthyConn = 10 * time.Second
	// stateEvery is how often the replay position is saved: at most this
	// much is replayed (and alerted again) after a crash, and nothing is
	// lost. A new pin is saved at once.
	stateEvery = time.Second
	// lookupTimeout bounds asking auditd about one approval.
	lookupTimeout = 5 * time.Second
)

// Config is what a Monitor watches and how.
type Config struct {
	Socket   string // auditd's --socket: the event stream
	AuditURL string // auditd's URL, as messages name it
	// TokenGiven says a token was configured: a 401 then means it was
	// refused, not missing.
	TokenGiven     bool
	VerifyInterval time.Duration
	Events         detect.EventWatchConfig // high_volume, off_hours, timestamp_gap
	// SinceSeq is where the replay begins; negative means the state's
	// cursor, else auditd's head (a first run watches from now on).
	SinceSeq int64
	// Verbose logs every event.
	Verbose bool
	// Keys open auditd's signed checkpoints (issue 19); nil checks none.
	Keys note.Verifiers
	// ReconnectMin and ReconnectMax bound the wait before resubscribing;
	// zero means the defaults (tests shorten them).
	ReconnectMin, ReconnectMax time.Duration
	// Destinations is appended to the "watching" line: "; state FILE;
	// alerts also to https://host/…".
	Destinations string
	// CertHint is the hint of an untrusted TLS certificate.
	CertHint string
}

// Deps are a Monitor's connections to the world.
type Deps struct {
	Client *client.Client
	// Now is the detection clock; Sleep waits d or until ctx ends
	// (cli.Sleep).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Logf writes one line to the operator (auditor's standard error).
	Logf func(format string, args ...any)
	// Emit hands an alert on (standard output, the webhook); an error
	// ends the run.
	Emit func(detect.Alert) error
	// Store saves the state; nil keeps none (no --state).
	Store StateStore
	// State is the state as loaded, and Pinned its checkpoint opened with
	// Config.Keys (nil: none pinned).
	State  State
	Pinned *checkpoint.Checkpoint
}

// StateStore keeps the State between runs (auditor's --state file).
type StateStore interface {
	// Path names the store in messages.
	Path() string
	// Save replaces the stored state with st, atomically.
	Save(st State) error
}

// Error is a failure that ends a run, with a hint that names what to do.
type Error struct {
	Msg  string
	Hint string
}

func (e *Error) Error() string { return e.Msg }

func errorf(hint, format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// Monitor is one run of auditor. The stream goroutine owns events; the
// verification goroutine and the stream share the rest under mu.
type Monitor struct {
	cfg Config
	d   Deps
	c   *client.Client

	events *detect.EventWatch

	mu         sync.Mutex
	state      State
	dirty      bool   // state has changes not yet written
	frozen     string // why the state file is no longer written ("" while it is)
	pinFrozen  bool   // a check failed in this run: the pin is never moved again
	chain      detect.ChainWatch
	approvals  detect.ApprovalWatch
	heads      detect.HeadWatch
	cpWatch    detect.CheckpointWatch
	cpPin      *checkpoint.Checkpoint // the pinned checkpoint, opened (nil: none)
	alerts     int
	verified   bool // a verification has been logged
	verifyDown bool // the last verification failed to run (said once)
	fatal      error
	cancel     context.CancelCauseFunc

	writeMu      sync.Mutex // serializes writes of the state file
	writeFailing bool       // the last write failed (said once)
}

// New returns a Monitor; run it once with RunDaemon or RunOnce.
func New(cfg Config, d Deps) *Monitor {
	if d.Sleep == nil {
		panic("monitor: Deps.Sleep is nil") // so is the waiting
	}
	if d.Now == nil {
		panic("monitor: Deps.Now is nil") // the clock is the caller's to give
	}
	st := d.State
	if st.SchemaVersion == 0 {
		st.SchemaVersion = StateVersion
	}
	return &Monitor{cfg: cfg, d: d, c: d.Client, state: st, cpPin: d.Pinned}
}

func (m *Monitor) now() time.Time { return m.d.Now() }

func (m *Monitor) statePath() string {
	if m.d.Store == nil {
		return ""
	}
	return m.d.Store.Path()
}

func (m *Monitor) logf(format string, args ...any) { m.d.Logf(format, args...) }

// fail ends the run with err (the first one wins).
func (m *Monitor) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fatal == nil {
		m.fatal = err
		if m.cancel != nil {
			m.cancel(err)
		}
	}
}

func (m *Monitor) fatalErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fatal
}

// emit counts a and hands it on.
func (m *Monitor) emit(a detect.Alert) {
	m.mu.Lock()
	m.alerts++
	m.mu.Unlock()
	if err := m.d.Emit(a); err != nil {
		m.fail(errorf("", "writing an alert to standard output: %v", err))
	}
}

// RunDaemon follows the stream until ctx ends (nil) or a failure it
// cannot handle (an *Error).
func (m *Monitor) RunDaemon(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	m.mu.Lock()
	m.cancel = cancel
	m.mu.Unlock()

	h, err := m.waitForAuditd(ctx)
	if err != nil {
		return m.end(nil)
	}
	after, err := m.position(h)
	if err != nil {
		m.fail(err)
		return m.end(nil)
	}
	m.logf("watching %s from seq %d (auditd's head: seq %d); verifying %s every %s%s",
		m.cfg.Socket, after, h.HeadSeq, m.cfg.AuditURL, m.cfg.VerifyInterval, m.cfg.Destinations)

	var wg sync.WaitGroup
	wg.Go(func() { m.verifyLoop(ctx) })
	wg.Go(func() { m.flushLoop(ctx) })
	m.streamLoop(ctx, after)
	cancel(nil)
	wg.Wait()
	return m.end(nil)
}

// end saves the state and returns the run's error: a fatal one, or ok.
func (m *Monitor) end(ok error) error {
	m.flush()
	m.c.CloseIdleConnections() // with --ca-cert, a copy of hc's transport
	if err := m.fatalErr(); err != nil {
		return err
	}
	return ok
}

// waitForAuditd asks auditd's /health until it answers, saying once that
// it is being retried: auditor may start before auditd.
func (m *Monitor) waitForAuditd(ctx context.Context) (govapi.Health, error) {
	delay, said := m.reconnectMin(), false
	for {
		h, err := m.health(ctx)
		if err == nil {
			if said {
				m.logf("auditd at %s answers", m.cfg.AuditURL)
			}
			return h, nil
		}
		if ctx.Err() != nil {
			return govapi.Health{}, ctx.Err()
		}
		if m.refused(err) {
			return govapi.Health{}, m.fatalErr()
		}
		if !said {
			m.logf("cannot reach auditd at %s (%s); retrying", m.cfg.AuditURL, client.Reason(err))
			said = true
		}
		if m.d.Sleep(ctx, delay) != nil {
			return govapi.Health{}, ctx.Err()
		}
		delay = min(2*delay, m.reconnectMax())
	}
}

func (m *Monitor) health(ctx context.Context) (govapi.Health, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return m.c.Health(ctx)
}

// position decides where the replay begins and creates the detections for
// it: --since-seq when given, else the state's cursor, else auditd's head h
// (a first run watches from now on, as the seed's auditor does;
// --since-seq 0 audits the history). The caller reconciles it with h.
func (m *Monitor) position(h govapi.Health) (int64, error) {
	m.mu.Lock()
	var after int64
	switch {
	case m.cfg.SinceSeq >= 0:
		after = m.cfg.SinceSeq
	case m.state.Cursor != nil:
		after = m.state.Cursor.Seq
	default:
		after = h.HeadSeq
		m.state.Cursor = &Cursor{Seq: h.HeadSeq, EventHash: h.HeadHash}
		if h.HeadSeq == 0 {
			m.state.Cursor.EventHash = "" // an empty log's head is audit.ZeroHash
		}
		m.dirty = true
	}
	m.mu.Unlock()
	var err error
	m.events, err = detect.NewEventWatch(m.cfg.Events, after)
	if err != nil {
		return 0, errorf("", "%v", err)
	}
	return after, nil
}

// reconcile checks the pin and the cursor against the log as auditd now
// has it (at start and before each resubscription, so a truncation across
// an auditd restart is seen at once), and returns where to resume: after,
// or auditd's head when the log now ends before it. A stream asked to
// resume past the head would skip the events written after a truncation.
func (m *Monitor) reconcile(ctx context.Context, h govapi.Health, after int64) (int64, error) {
	if err := m.checkHeads(ctx, h.HeadSeq, h.HeadHash, true); err != nil {
		return after, err
	}
	if h.HeadSeq < after {
		m.logf("warning: auditd's log ends at seq %d, before seq %d; following it from there", h.HeadSeq, after)
		after = h.HeadSeq
		if m.events != nil {
			m.events.Seq.Reset(after)
		}
	}
	return after, nil
}

// checkHeads checks the pin (and, withCursor, the cursor: the last event
// seen on the stream is a pin too) against a log whose last event is seq
// size with hash head. The first failed check freezes the state file: it
// is the evidence, and must survive this run.
func (m *Monitor) checkHeads(ctx context.Context, size int64, head string, withCursor bool) error {
	type pinned struct {
		pin detect.Pin
		by  string
	}
	var pins []pinned
	m.mu.Lock()
	if m.state.Pin != nil {
		pins = append(pins, pinned{m.state.Pin.Pin, detect.PinnedByVerification})
	}
	if withCursor && m.state.Cursor != nil {
		pins = append(pins, pinned{m.state.Cursor.pin(), detect.PinnedByStream})
	}
	m.mu.Unlock()
	for _, p := range pins {
		if p.pin.IsZero() {
			continue
		}
		cur := detect.ChainHead{Size: size, AtPin: head}
		if p.pin.Size != size {
			// Asked even when the pin is past size: auditd commits a batch
			// before it moves the head /health reports, so a pin taken from
			// a verification can be a moment ahead of it.
			h, err := m.hashAt(ctx, p.pin.Size)
			if err != nil {
				return err
			}
			cur.AtPin = h
			if h != "" {
				cur.Size = max(size, p.pin.Size)
			}
		}
		now := m.now()
		if _, failed := detect.CheckHead(p.pin, p.by, cur, now); !failed {
			continue
		}
		m.mu.Lock()
		a, ok := m.heads.Observe(p.pin, p.by, cur, now)
		m.pinFrozen = true
		m.mu.Unlock()
		m.freeze(fmt.Sprintf("the log no longer extends the head pinned by %s (seq %d)", p.by, p.pin.Size))
		if ok {
			m.emit(a)
		}
		return nil // one failed pin says it; the other would repeat it
	}
	return nil
}

// hashAt returns the event_hash of the event at seq ("" when there is none).
func (m *Monitor) hashAt(ctx context.Context, seq int64) (string, error) {
	p, err := m.c.Query(ctx, govapi.EventQuery{Cursor: govapi.Cursor{AfterSeq: seq - 1, Limit: 1}})
	if err != nil {
		return "", err
	}
	if len(p.Events) == 0 || p.Events[0].Seq != seq {
		return "", nil
	}
	return p.Events[0].EventHash, nil
}

// freeze stops writing the state file for the rest of the run.
func (m *Monitor) freeze(why string) {
	m.mu.Lock()
	already := m.frozen != ""
	if !already {
		m.frozen = why
	}
	m.mu.Unlock()
	if !already && m.d.Store != nil {
		m.logf("warning: %s: the state file %s is kept as it is from now on, as evidence; investigate, then remove it to pin afresh", why, m.statePath())
	}
}

// streamLoop follows the stream from after until ctx ends, resubscribing
// with backoff whenever it ends, from the last event processed: no gap and
// no duplicate across auditd restarts.
func (m *Monitor) streamLoop(ctx context.Context, after int64) {
	delay := m.reconnectMin()
	outage := false
	for ctx.Err() == nil {
		h, err := m.health(ctx)
		if err == nil {
			after, err = m.reconcile(ctx, h, after)
		}
		if err != nil {
			if m.refused(err) || ctx.Err() != nil {
				return
			}
			if !outage {
				m.logf("cannot reach auditd at %s (%s); retrying", m.cfg.AuditURL, client.Reason(err))
				outage = true
			}
			if m.d.Sleep(ctx, delay) != nil {
				return
			}
			delay = min(2*delay, m.reconnectMax())
			continue
		}
		liveFrom := h.HeadSeq // events after it are committed as we watch
		begun, got := m.now(), 0
		err = client.Subscribe(ctx, m.cfg.Socket, after, func(ev audit.Event) error {
			if got == 0 && outage {
				m.logf("stream resumed at seq %d", ev.Seq)
				outage = false
			}
			got++
			m.observe(ctx, ev, ev.Seq > liveFrom)
			after = ev.Seq
			return m.fatalErr()
		})
		if ctx.Err() != nil || m.fatalErr() != nil {
			return
		}
		if got > 0 || m.now().Sub(begun) >= healthyConn {
			delay = m.reconnectMin()
		}
		if !outage {
			var oe *net.OpError
			if errors.As(err, &oe) && oe.Op == "dial" {
				m.logf("cannot connect to the stream on %s (%s); retrying (is it auditd's --socket?)", m.cfg.Socket, client.Reason(oe))
			} else {
				m.logf("stream on %s ended after seq %d (%s); reconnecting", m.cfg.Socket, after, streamReason(err))
			}
			outage = true
		}
		if m.d.Sleep(ctx, delay) != nil {
			return
		}
		delay = min(2*delay, m.reconnectMax())
	}
}

// observe runs the detections on one event and advances the cursor.
func (m *Monitor) observe(ctx context.Context, ev audit.Event, live bool) {
	if m.cfg.Verbose {
		how := "live"
		if !live {
			how = "replayed"
		}
		m.logf("event seq %d %s agent %q (%s)", ev.Seq, termtext.Printable(ev.EventType), termtext.Printable(ev.Agent), how)
	}
	for _, a := range m.events.Observe(ev, live, m.lookup(ctx), m.now()) {
		m.emit(a)
	}
	m.mu.Lock()
	m.state.Cursor = &Cursor{Seq: ev.Seq, EventHash: ev.EventHash}
	m.dirty = true
	m.mu.Unlock()
}

// lookup asks auditd about an approval the stream has not shown: one
// decided before the replay position, with the events that cited it
// before ev, which the stream did not show either: one of them may have
// used its consumption (DESIGN §11 "one use per approval", issue 13). Not
// knowing counts as not approved.
func (m *Monitor) lookup(ctx context.Context) detect.ApprovalLookup {
	return func(ev audit.Event) (approval.Request, []audit.Event, bool) {
		ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		defer cancel()
		r, err := m.c.Approval(ctx, ev.ApprovalID)
		var earlier []audit.Event
		if err == nil {
			earlier, err = m.c.Citations(ctx, ev.ApprovalID, ev.Seq)
		}
		switch {
		case err == nil:
			return r, earlier, true
		case client.IsNotFound(err), m.refused(err):
			return approval.Request{}, nil, false
		}
		m.logf("cannot learn the status of approval %s from auditd (%s); counting it as not approved", termtext.Printable(ev.ApprovalID), client.Reason(err))
		return approval.Request{}, nil, false
	}
}

// verifyLoop verifies the chain at once and then every --verify-interval.
func (m *Monitor) verifyLoop(ctx context.Context) {
	for {
		if err := m.verify(ctx); err != nil && !m.refused(err) && ctx.Err() == nil {
			m.mu.Lock()
			first := !m.verifyDown
			m.verifyDown = true
			m.mu.Unlock()
			if first {
				m.logf("verifying the chain through %s failed (%s); retrying every %s", m.cfg.AuditURL, client.Reason(err), m.cfg.VerifyInterval)
			}
		}
		if m.d.Sleep(ctx, m.cfg.VerifyInterval) != nil {
			return
		}
	}
}

// verify verifies the whole chain once (chain_tampering) and the approvals
// table against it (approval_mismatch), checks the pin against it
// (head_regressed), and, when the chain and the pin are clean, pins the new
// head: an edited approvals table leaves the chain, and so the pin, sound.
func (m *Monitor) verify(ctx context.Context) error {
	rep, err := m.c.Verify(ctx)
	if err != nil {
		return err
	}
	now := m.now()
	var size int64
	var head string
	if rep.LastEvent != nil {
		size, head = rep.LastEvent.Seq, rep.LastEvent.EventHash
	}
	m.mu.Lock()
	a, alert := m.chain.Observe(rep, now)
	mismatches := m.approvals.Observe(rep, now)
	broken := m.chain.Broken()
	if broken {
		m.pinFrozen = true
	}
	wasDown, first := m.verifyDown, !m.verified
	m.verifyDown, m.verified = false, true
	m.mu.Unlock()
	if alert {
		m.emit(a)
	}
	for _, a := range mismatches {
		m.emit(a)
	}
	if len(mismatches) > 0 {
		what := fmt.Sprintf("%d approvals", len(mismatches))
		if len(mismatches) == 1 {
			what = "1 approval"
		}
		m.logf("warning: the approvals table disagrees with the chain for %s (auditd serves the table to approvers): run verify-chain --db on the auditd host", what)
	}
	switch {
	case broken && alert:
		m.logf("warning: chain broken: %s", a.Message)
	case !broken && (first || wasDown):
		m.logf("chain verified: %d events, head seq %d", rep.TotalEvents, size)
	}
	// The cursor is left out: the stream may be ahead of this report.
	if err := m.checkHeads(ctx, size, head, false); err != nil {
		return err
	}
	if err := m.checkCheckpoint(ctx, size); err != nil {
		return err
	}
	if broken || size == 0 {
		return nil
	}
	m.mu.Lock()
	moved := false
	if !m.pinFrozen && (m.state.Pin == nil || m.state.Pin.Size != size || m.state.Pin.Head != head) {
		m.state.Pin = &PinState{Pin: detect.Pin{Size: size, Head: head}, VerifiedAt: now.UTC()}
		m.dirty, moved = true, true
	}
	m.mu.Unlock()
	if moved {
		m.flush()
	}
	return nil
}

// checkCheckpoint checks auditd's latest signed checkpoint against the
// pinned one (issue 19), size being the log's size as the verification
// just read it. It opens the note with --checkpoint-key (a note that does
// not open is checkpoint_inconsistent, never pinned); then a smaller
// checkpoint is head_regressed, one of the same size with another root or
// of another origin checkpoint_inconsistent, and a larger one is pinned
// only once the consistency proof from the pinned one verifies. When the
// checkpoint is the pinned one (or auditd serves none), the pinned one is
// checked to be still in the log with an inclusion proof of its last
// event: a truncation that left the checkpoints table alone shows there.
func (m *Monitor) checkCheckpoint(ctx context.Context, size int64) error {
	if m.cfg.Keys == nil {
		return nil
	}
	msg, err := m.c.Checkpoint(ctx)
	served := err == nil
	if err != nil && !client.IsNotFound(err) {
		return err
	}
	m.mu.Lock()
	pin := m.cpPin
	m.mu.Unlock()
	var d detect.CheckpointDetails
	if pin != nil {
		d = detect.CheckpointDetails{Origin: pin.Origin, PinnedSize: pin.Size, PinnedRoot: pin.Root.String()}
	}
	var cur checkpoint.Checkpoint
	if served {
		if cur, err = checkpoint.Open(msg, m.cfg.Keys); err != nil {
			d.Kind, d.Reason = detect.CheckpointUnverified, err.Error()
			m.checkpointFailed(d, "auditd's signed checkpoint does not open with --checkpoint-key")
			return nil
		}
		d.CurrentSize, d.CurrentRoot = cur.Size, cur.Root.String()
		if pin != nil && cur.Origin != pin.Origin {
			d.CurrentOrigin = cur.Origin
		}
	}
	if pin == nil {
		if served {
			m.pinCheckpoint(cur, msg)
		}
		return nil
	}
	rel := witness.Same // auditd serves none: check that the pinned one holds
	if served {
		rel = witness.Compare(*pin, cur)
	}
	switch rel {
	case witness.OtherLog:
		d.Kind = detect.CheckpointOtherLog
	case witness.Regressed:
		d.Kind = detect.HeadShrank
	case witness.Forked:
		d.Kind = detect.CheckpointForked
	case witness.Same:
		p, err := m.c.InclusionProof(ctx, pin.Size, pin.Size)
		switch {
		case isConflict(err): // the tree is shorter than the pinned size
			d.Kind, d.CurrentSize, d.CurrentRoot = detect.HeadShrank, size, ""
		case err != nil:
			return err
		default:
			if err := p.Verify(*pin); err != nil {
				d.Kind, d.Reason = detect.CheckpointRewritten, err.Error()
			} else {
				return nil
			}
		}
	case witness.Extends:
		p, err := m.c.ConsistencyProof(ctx, pin.Size, cur.Size)
		switch {
		case isConflict(err): // auditd's tree is shorter than its own checkpoint
			d.Kind, d.Reason = detect.CheckpointNotExtension, "auditd cannot prove it: "+client.Reason(err)
		case err != nil:
			return err
		default:
			if err := witness.Verify(*pin, cur, p); err != nil {
				d.Kind, d.Reason = detect.CheckpointNotExtension, err.Error()
			} else {
				m.pinCheckpoint(cur, msg)
				return nil
			}
		}
	}
	m.checkpointFailed(d, fmt.Sprintf("auditd's signed checkpoint does not extend the one pinned at size %d", pin.Size))
	return nil
}

// pinCheckpoint pins cur, whose note is msg, unless a failed check froze
// the pins, and saves the state at once.
func (m *Monitor) pinCheckpoint(cur checkpoint.Checkpoint, msg []byte) {
	m.mu.Lock()
	if m.pinFrozen {
		m.mu.Unlock()
		return
	}
	first := m.cpPin == nil
	m.cpPin = &cur
	m.state.Checkpoint = &CheckpointState{Note: string(msg), PinnedAt: m.now().UTC()}
	m.dirty = true
	m.mu.Unlock()
	if first {
		m.logf("checkpoint pinned: %s at size %d", termtext.Printable(cur.Origin), cur.Size)
	}
	m.flush()
}

// checkpointFailed raises the alert for d (once) and freezes the pins and
// the state file: they are the evidence.
func (m *Monitor) checkpointFailed(d detect.CheckpointDetails, why string) {
	m.mu.Lock()
	a, ok := m.cpWatch.Observe(d, m.now())
	m.pinFrozen = true
	m.mu.Unlock()
	m.freeze(why)
	if ok {
		m.emit(a)
	}
}

// isConflict reports whether err is auditd answering 409: a proof of a
// size its tree does not reach.
func isConflict(err error) bool {
	var ae *client.Error
	return errors.As(err, &ae) && ae.StatusCode == http.StatusConflict
}

// flushLoop saves the state every stateEvery while it changes.
func (m *Monitor) flushLoop(ctx context.Context) {
	for m.d.Sleep(ctx, stateEvery) == nil {
		m.flush()
	}
}

// flush writes the state file when it changed, unless it is frozen.
func (m *Monitor) flush() {
	if m.d.Store == nil {
		return
	}
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.mu.Lock()
	if !m.dirty || m.frozen != "" {
		m.mu.Unlock()
		return
	}
	st := State{SchemaVersion: StateVersion}
	if c := m.state.Cursor; c != nil {
		cc := *c
		st.Cursor = &cc
	}
	if p := m.state.Pin; p != nil {
		pp := *p
		st.Pin = &pp
	}
	if c := m.state.Checkpoint; c != nil {
		cc := *c
		st.Checkpoint = &cc
	}
	m.dirty = false
	m.mu.Unlock()
	if err := m.d.Store.Save(st); err != nil {
		m.mu.Lock()
		m.dirty = true
		m.mu.Unlock()
		if !m.writeFailing {
			m.logf("error: writing the state file %s: %v; retrying every %s", m.statePath(), err, stateEvery)
			m.writeFailing = true
		}
		return
	}
	if m.writeFailing {
		m.logf("the state file %s is written again", m.statePath())
		m.writeFailing = false
	}
}

// RunOnce replays what the state (or SinceSeq) has not seen through the
// HTTP API, verifies, checks the head, saves the state, and returns how
// many alerts it raised.
func (m *Monitor) RunOnce(parent context.Context) (alerts int, err error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	m.mu.Lock()
	m.cancel = cancel
	m.mu.Unlock()

	count := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.alerts
	}
	h, err := m.health(ctx)
	if err != nil {
		return count(), m.end(m.apiError(ctx, err))
	}
	after, err := m.position(h)
	if err == nil {
		after, err = m.reconcile(ctx, h, after)
	}
	if err != nil {
		return count(), m.end(m.apiError(ctx, err))
	}
	replayed := 0
	for ev, err := range m.c.QueryAll(ctx, govapi.EventQuery{Cursor: govapi.Cursor{AfterSeq: after, Limit: govapi.MaxLimit}}) {
		if err != nil {
			return count(), m.end(m.apiError(ctx, err))
		}
		if ev.Seq > h.HeadSeq || m.fatalErr() != nil {
			break
		}
		m.observe(ctx, ev, false)
		replayed++
	}
	if err := m.verify(ctx); err != nil {
		return count(), m.end(m.apiError(ctx, err))
	}
	n := count()
	m.logf("checked %d events after seq %d, verified the chain: %d alert(s)", replayed, after, n)
	return n, m.end(nil)
}

// refused reports whether err is auditd refusing auditor's credentials,
// which no retry fixes; it ends the run with the error.
func (m *Monitor) refused(err error) bool {
	if client.IsCertificateError(err) {
		m.fail(errorf(m.cfg.CertHint, "auditd at %s: %s", m.cfg.AuditURL, client.NetReason(err)))
		return true
	}
	var ae *client.Error
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.StatusCode {
	case http.StatusUnauthorized:
		hint := "pass --token TOKEN (or set GOVKIT_TOKEN) for a token with the auditor role"
		if m.cfg.TokenGiven {
			hint = "the token was refused: check --token (or GOVKIT_TOKEN); 'auditd token create --roles auditor' makes one"
		}
		m.fail(errorf(hint, "auditd refused the request: %s", ae.Message))
		return true
	case http.StatusForbidden:
		m.fail(errorf("use a token with the auditor role: auditd token create --roles auditor", "auditd refused the request: %s", ae.Message))
		return true
	}
	return false
}

// apiError is the run's error for a failed request in RunOnce.
func (m *Monitor) apiError(ctx context.Context, err error) error {
	var me *Error
	switch {
	case errors.As(err, &me):
		return err
	case m.refused(err):
		return m.fatalErr()
	case ctx.Err() != nil:
		if f := m.fatalErr(); f != nil {
			return f
		}
		return errorf("", "interrupted")
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		return errorf("", "auditd at %s answered %d: %s", m.cfg.AuditURL, ae.StatusCode, ae.Message)
	}
	return errorf("start auditd, or pass --url (or set GOVKIT_URL) naming a running one",
		"cannot reach auditd at %s: %s", m.cfg.AuditURL, client.Reason(err))
}

func (m *Monitor) reconnectMin() time.Duration {
	if m.cfg.ReconnectMin > 0 {
		return m.cfg.ReconnectMin
	}
	return reconnectMin
}

func (m *Monitor) reconnectMax() time.Duration {
	if m.cfg.ReconnectMax > 0 {
		return m.cfg.ReconnectMax
	}
	return reconnectMax
}

// streamReason describes why a subscription ended.
func streamReason(err error) string {
	var se *client.StreamError
	if errors.As(err, &se) {
		return se.Message
	}
	if u := errors.Unwrap(err); u != nil {
		return client.Reason(u)
	}
	return err.Error()
}
