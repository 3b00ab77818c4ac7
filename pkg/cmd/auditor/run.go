package auditor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
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
	// apiTimeout bounds one API request; verification reads the whole log.
	apiTimeout = 5 * time.Minute
	// Delivering queued webhook alerts at exit may take this long.
	webhookDrainDaemon = 10 * time.Second
	webhookDrainOnce   = 30 * time.Second
)

// run is auditor: --once or the daemon.
func run(o *Options) error {
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	m, err := newMonitor(o)
	if err != nil {
		return err
	}
	if o.Once {
		return m.runOnce(ctx)
	}
	return m.runDaemon(ctx)
}

// monitor is one run of auditor. The stream goroutine owns events; the
// verification goroutine and the stream share the rest under mu.
type monitor struct {
	o    *Options
	c    *client.Client
	hc   *http.Client
	out  *printer
	hook *webhook // nil without --incident-webhook

	logMu sync.Mutex

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

func newMonitor(o *Options) (*monitor, error) {
	// Its own transport, so that end can close its idle connections: a
	// connection dialed for a request that another one served sits in
	// auditd as new, and holds up a graceful stop of auditd for 5 s.
	hc := &http.Client{Timeout: apiTimeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	copts := []client.Option{client.WithUserAgent("auditor/" + build.String()), client.WithHTTPClient(hc)}
	if o.Token != "" {
		copts = append(copts, client.WithToken(o.Token))
	}
	if o.roots != nil {
		copts = append(copts, client.WithRootCAs(o.roots))
	}
	c, err := client.New(o.AuditURL, copts...)
	if err != nil {
		return nil, cli.Fail(err, "pass --audit-url http://HOST:PORT (or set GOVKIT_AUDIT_URL)")
	}
	m := &monitor{o: o, c: c, hc: hc, state: State{SchemaVersion: stateVersion},
		out: &printer{w: o.IO.Out, json: o.Output.Resolve(o.IO) == cli.FormatJSON, loc: o.loc}}
	if o.State != "" {
		st, exists, err := readState(o.State)
		if err != nil {
			return nil, cli.Failf("state file %s: %v", o.State, err).
				WithHint("auditor alone writes this file: restore it from a backup, or remove it to start afresh (losing its pinned head)")
		}
		m.state = st
		if c := st.Checkpoint; c != nil && o.keys != nil {
			cp, err := checkpoint.Open([]byte(c.Note), o.keys)
			if err != nil {
				return nil, cli.Failf("state file %s: its pinned checkpoint: %v", o.State, err).
					WithHint("pass the --checkpoint-key that signed it; if the key was rotated, or the file was edited, investigate, then remove the file to pin afresh")
			}
			m.cpPin = &cp
		}
		if !exists {
			// Written now, so that an unwritable --state fails at start, not
			// silently at the first save.
			if err := writeState(o.State, st); err != nil {
				return nil, cli.Failf("creating the state file %s: %v", o.State, unwrapPath(err)).
					WithHint("pass --state FILE in an existing directory auditor may write to")
			}
		}
	}
	if o.Webhook != "" {
		if m.hook, err = newWebhook(o, m.logf); err != nil { // validate checked the URL
			return nil, cli.Failf("--incident-webhook %v", err)
		}
	}
	if c.SendsTokenInClear() {
		m.logf("warning: --audit-url %s is plain HTTP beyond loopback: the token crosses the network in the clear; use https:// (auditd --tls-cert)", o.AuditURL)
	}
	return m, nil
}

// logf writes one line to standard error, prefixed "auditor: ".
func (m *monitor) logf(format string, args ...any) {
	m.logMu.Lock()
	defer m.logMu.Unlock()
	fmt.Fprintf(m.o.IO.ErrOut, "auditor: "+format+"\n", args...)
}

// fail ends the run with err (the first one wins).
func (m *monitor) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fatal == nil {
		m.fatal = err
		if m.cancel != nil {
			m.cancel(err)
		}
	}
}

func (m *monitor) fatalErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fatal
}

// emit prints a and hands it to the webhook.
func (m *monitor) emit(a detect.Alert) {
	m.mu.Lock()
	m.alerts++
	m.mu.Unlock()
	if err := m.out.print(a); err != nil {
		m.fail(cli.Failf("writing an alert to standard output: %v", err))
	}
	if m.hook != nil {
		m.hook.Send(a)
	}
}

// runDaemon follows the stream until ctx ends (exit 0) or a failure it
// cannot handle (exit 3).
func (m *monitor) runDaemon(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	m.mu.Lock()
	m.cancel = cancel
	m.mu.Unlock()

	h, err := m.waitForAuditd(ctx)
	if err != nil {
		return m.end(webhookDrainDaemon, nil)
	}
	after, err := m.position(h)
	if err != nil {
		m.fail(err)
		return m.end(webhookDrainDaemon, nil)
	}
	m.logf("watching %s from seq %d (auditd's head: seq %d); verifying %s every %s%s",
		m.o.Socket, after, h.HeadSeq, m.o.AuditURL, m.o.VerifyInterval, m.destinations())

	var wg sync.WaitGroup
	wg.Go(func() { m.verifyLoop(ctx) })
	wg.Go(func() { m.flushLoop(ctx) })
	m.streamLoop(ctx, after)
	cancel(nil)
	wg.Wait()
	return m.end(webhookDrainDaemon, nil)
}

// end saves the state, delivers queued webhook alerts for up to drain, and
// returns the run's error: a fatal one, or ok.
func (m *monitor) end(drain time.Duration, ok error) error {
	m.flush()
	m.c.CloseIdleConnections() // with --ca-cert, a copy of hc's transport
	if m.hook != nil {
		ctx, cancel := context.WithTimeout(context.Background(), drain)
		m.hook.Close(ctx)
		cancel()
	}
	if err := m.fatalErr(); err != nil {
		return err
	}
	return ok
}

func (m *monitor) destinations() string {
	s := ""
	if m.o.State != "" {
		s += "; state " + m.o.State
	}
	if m.hook != nil {
		s += "; alerts also to " + m.hook.shown
	}
	return s
}

// waitForAuditd asks auditd's /health until it answers, saying once that
// it is being retried: auditor may start before auditd.
func (m *monitor) waitForAuditd(ctx context.Context) (govapi.Health, error) {
	delay, said := m.reconnectMin(), false
	for {
		h, err := m.health(ctx)
		if err == nil {
			if said {
				m.logf("auditd at %s answers", m.o.AuditURL)
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
			m.logf("cannot reach auditd at %s (%s); retrying", m.o.AuditURL, client.Reason(err))
			said = true
		}
		if cli.Sleep(ctx, delay) != nil {
			return govapi.Health{}, ctx.Err()
		}
		delay = min(2*delay, m.reconnectMax())
	}
}

func (m *monitor) health(ctx context.Context) (govapi.Health, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return m.c.Health(ctx)
}

// position decides where the replay begins and creates the detections for
// it: --since-seq when given, else the state's cursor, else auditd's head h
// (a first run watches from now on, as the seed's auditor does;
// --since-seq 0 audits the history). The caller reconciles it with h.
func (m *monitor) position(h govapi.Health) (int64, error) {
	m.mu.Lock()
	var after int64
	switch {
	case m.o.SinceSeq >= 0:
		after = m.o.SinceSeq
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
	m.events, err = detect.NewEventWatch(detect.EventWatchConfig{
		MaxEventsPerMinute: m.o.MaxPerMinute,
		Hours:              m.o.hours(),
		ClockSkew:          m.o.ClockSkew,
	}, after)
	if err != nil {
		return 0, cli.Fail(err, "")
	}
	return after, nil
}

// reconcile checks the pin and the cursor against the log as auditd now
// has it (at start and before each resubscription, so a truncation across
// an auditd restart is seen at once), and returns where to resume: after,
// or auditd's head when the log now ends before it. A stream asked to
// resume past the head would skip the events written after a truncation.
func (m *monitor) reconcile(ctx context.Context, h govapi.Health, after int64) (int64, error) {
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
func (m *monitor) checkHeads(ctx context.Context, size int64, head string, withCursor bool) error {
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
		now := m.o.now()
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
func (m *monitor) hashAt(ctx context.Context, seq int64) (string, error) {
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
func (m *monitor) freeze(why string) {
	m.mu.Lock()
	already := m.frozen != ""
	if !already {
		m.frozen = why
	}
	m.mu.Unlock()
	if !already && m.o.State != "" {
		m.logf("warning: %s: the state file %s is kept as it is from now on, as evidence; investigate, then remove it to pin afresh", why, m.o.State)
	}
}

// streamLoop follows the stream from after until ctx ends, resubscribing
// with backoff whenever it ends, from the last event processed: no gap and
// no duplicate across auditd restarts.
func (m *monitor) streamLoop(ctx context.Context, after int64) {
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
				m.logf("cannot reach auditd at %s (%s); retrying", m.o.AuditURL, client.Reason(err))
				outage = true
			}
			if cli.Sleep(ctx, delay) != nil {
				return
			}
			delay = min(2*delay, m.reconnectMax())
			continue
		}
		liveFrom := h.HeadSeq // events after it are committed as we watch
		begun, got := time.Now(), 0
		err = client.Subscribe(ctx, m.o.Socket, after, func(ev audit.Event) error {
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
		if got > 0 || time.Since(begun) >= healthyConn {
			delay = m.reconnectMin()
		}
		if !outage {
			var oe *net.OpError
			if errors.As(err, &oe) && oe.Op == "dial" {
				m.logf("cannot connect to the stream on %s (%s); retrying (is it auditd's --socket?)", m.o.Socket, client.Reason(oe))
			} else {
				m.logf("stream on %s ended after seq %d (%s); reconnecting", m.o.Socket, after, streamReason(err))
			}
			outage = true
		}
		if cli.Sleep(ctx, delay) != nil {
			return
		}
		delay = min(2*delay, m.reconnectMax())
	}
}

// observe runs the detections on one event and advances the cursor.
func (m *monitor) observe(ctx context.Context, ev audit.Event, live bool) {
	if m.o.Verbose {
		how := "live"
		if !live {
			how = "replayed"
		}
		m.logf("event seq %d %s agent %q (%s)", ev.Seq, printable(ev.EventType), printable(ev.Agent), how)
	}
	for _, a := range m.events.Observe(ev, live, m.lookup(ctx), m.o.now()) {
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
func (m *monitor) lookup(ctx context.Context) detect.ApprovalLookup {
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
		m.logf("cannot learn the status of approval %s from auditd (%s); counting it as not approved", printable(ev.ApprovalID), client.Reason(err))
		return approval.Request{}, nil, false
	}
}

// verifyLoop verifies the chain at once and then every --verify-interval.
func (m *monitor) verifyLoop(ctx context.Context) {
	t := time.NewTicker(m.o.VerifyInterval)
	defer t.Stop()
	for {
		if err := m.verify(ctx); err != nil && !m.refused(err) && ctx.Err() == nil {
			m.mu.Lock()
			first := !m.verifyDown
			m.verifyDown = true
			m.mu.Unlock()
			if first {
				m.logf("verifying the chain through %s failed (%s); retrying every %s", m.o.AuditURL, client.Reason(err), m.o.VerifyInterval)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// verify verifies the whole chain once (chain_tampering) and the approvals
// table against it (approval_mismatch), checks the pin against it
// (head_regressed), and, when the chain and the pin are clean, pins the new
// head: an edited approvals table leaves the chain, and so the pin, sound.
func (m *monitor) verify(ctx context.Context) error {
	rep, err := m.c.Verify(ctx)
	if err != nil {
		return err
	}
	now := m.o.now()
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
		m.logf("warning: the approvals table disagrees with the chain for %s (auditd serves the table to approvers): run verify-chain --db on the auditd host",
			cli.Plural(int64(len(mismatches)), "approval", "approvals"))
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
func (m *monitor) checkCheckpoint(ctx context.Context, size int64) error {
	if m.o.keys == nil {
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
		if cur, err = checkpoint.Open(msg, m.o.keys); err != nil {
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
func (m *monitor) pinCheckpoint(cur checkpoint.Checkpoint, msg []byte) {
	m.mu.Lock()
	if m.pinFrozen {
		m.mu.Unlock()
		return
	}
	first := m.cpPin == nil
	m.cpPin = &cur
	m.state.Checkpoint = &CheckpointState{Note: string(msg), PinnedAt: m.o.now().UTC()}
	m.dirty = true
	m.mu.Unlock()
	if first {
		m.logf("checkpoint pinned: %s at size %d", printable(cur.Origin), cur.Size)
	}
	m.flush()
}

// checkpointFailed raises the alert for d (once) and freezes the pins and
// the state file: they are the evidence.
func (m *monitor) checkpointFailed(d detect.CheckpointDetails, why string) {
	m.mu.Lock()
	a, ok := m.cpWatch.Observe(d, m.o.now())
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
func (m *monitor) flushLoop(ctx context.Context) {
	t := time.NewTicker(stateEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.flush()
		}
	}
}

// flush writes the state file when it changed, unless it is frozen.
func (m *monitor) flush() {
	if m.o.State == "" {
		return
	}
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.mu.Lock()
	if !m.dirty || m.frozen != "" {
		m.mu.Unlock()
		return
	}
	st := State{SchemaVersion: stateVersion}
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
	if err := writeState(m.o.State, st); err != nil {
		m.mu.Lock()
		m.dirty = true
		m.mu.Unlock()
		if !m.writeFailing {
			m.logf("error: writing the state file %s: %v; retrying every %s", m.o.State, unwrapPath(err), stateEvery)
			m.writeFailing = true
		}
		return
	}
	if m.writeFailing {
		m.logf("the state file %s is written again", m.o.State)
		m.writeFailing = false
	}
}

// runOnce replays what the state (or --since-seq) has not seen through the
// HTTP API, verifies, checks the head, saves the state, and exits 0 without
// alerts or 2 with some.
func (m *monitor) runOnce(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	m.mu.Lock()
	m.cancel = cancel
	m.mu.Unlock()

	h, err := m.health(ctx)
	if err != nil {
		return m.end(webhookDrainOnce, m.apiError(ctx, err))
	}
	after, err := m.position(h)
	if err == nil {
		after, err = m.reconcile(ctx, h, after)
	}
	if err != nil {
		return m.end(webhookDrainOnce, m.apiError(ctx, err))
	}
	replayed := 0
	for ev, err := range m.c.QueryAll(ctx, govapi.EventQuery{Cursor: govapi.Cursor{AfterSeq: after, Limit: govapi.MaxLimit}}) {
		if err != nil {
			return m.end(webhookDrainOnce, m.apiError(ctx, err))
		}
		if ev.Seq > h.HeadSeq || m.fatalErr() != nil {
			break
		}
		m.observe(ctx, ev, false)
		replayed++
	}
	if err := m.verify(ctx); err != nil {
		return m.end(webhookDrainOnce, m.apiError(ctx, err))
	}
	m.mu.Lock()
	n := m.alerts
	m.mu.Unlock()
	m.logf("checked %d events after seq %d, verified the chain: %d alert(s)", replayed, after, n)
	if n > 0 {
		return m.end(webhookDrainOnce, cli.Silent(exitAlerts))
	}
	return m.end(webhookDrainOnce, nil)
}

// refused reports whether err is auditd refusing auditor's credentials,
// which no retry fixes; it ends the run with the error.
func (m *monitor) refused(err error) bool {
	if client.IsCertificateError(err) {
		m.fail(cli.Failf("auditd at %s: %s", m.o.AuditURL, client.NetReason(err)).WithHint(cli.CACertHint))
		return true
	}
	var ae *client.Error
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.StatusCode {
	case http.StatusUnauthorized:
		hint := "pass --token TOKEN (or set GOVKIT_TOKEN) for a token with the auditor role"
		if m.o.Token != "" {
			hint = "the token was refused: check --token (or GOVKIT_TOKEN); 'auditd token create --roles auditor' makes one"
		}
		m.fail(cli.Failf("auditd refused the request: %s", ae.Message).WithHint(hint))
		return true
	case http.StatusForbidden:
		m.fail(cli.Failf("auditd refused the request: %s", ae.Message).
			WithHint("use a token with the auditor role: auditd token create --roles auditor"))
		return true
	}
	return false
}

// apiError is the command's error for a failed request in --once.
func (m *monitor) apiError(ctx context.Context, err error) error {
	var ee *cli.ExitError
	switch {
	case errors.As(err, &ee):
		return err
	case m.refused(err):
		return m.fatalErr()
	case ctx.Err() != nil:
		if f := m.fatalErr(); f != nil {
			return f
		}
		return cli.Failf("interrupted")
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		return cli.Failf("auditd at %s answered %d: %s", m.o.AuditURL, ae.StatusCode, ae.Message)
	}
	return cli.Failf("cannot reach auditd at %s: %s", m.o.AuditURL, client.Reason(err)).
		WithHint("start auditd, or pass --audit-url (or set GOVKIT_AUDIT_URL) naming a running one")
}

func (m *monitor) reconnectMin() time.Duration {
	if m.o.ReconnectMin > 0 {
		return m.o.ReconnectMin
	}
	return reconnectMin
}

func (m *monitor) reconnectMax() time.Duration {
	if m.o.ReconnectMax > 0 {
		return m.o.ReconnectMax
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

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
