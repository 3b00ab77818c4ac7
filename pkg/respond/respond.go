// Package respond is secbot's engine: it follows auditd's event stream,
// matches secbot's four patterns (pkg/detect) on every event, and turns
// each match into an incident through POST /api/v1/incidents, at most one
// per pattern and agent per cooldown (DESIGN §8; seed 003 "Security
// Responder Bot"). Its clock, sleeps, logs, output and counters are
// injected: the command wires them (issue 20 "engines out of pkg/cmd").
package respond

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// Source is the source of every incident secbot creates.
const Source = "secbot"

const (
	// requestTimeout bounds each request to auditd.
	requestTimeout = 10 * time.Second
	// createAttempts is how often an incident is tried before it counts as
	// failed; its incident_id makes every retry safe.
	createAttempts = 4
	// stuckLimit is how many times in a row the stream may fail on the
	// same undecodable line before secbot skips it (see follow).
	stuckLimit = 3
	// approvalCapacity is how many approvals the ApprovalBook remembers.
	approvalCapacity = 10_000
)

// Responder holds the state of one run: the stream position, the
// patterns' state and the cooldown.
type Responder struct {
	cfg Config
	d   Deps
	c   *client.Client

	matcher  *detect.PatternMatcher
	book     *detect.ApprovalBook
	cooldown *detect.Cooldown
	// gatewayUp: auditd (--url) has answered at least once (see checkHead).
	gatewayUp bool

	started bool
	since   int64
	link    detect.ChainLink

	// For /health, read by HTTP handlers.
	lastSeq   atomic.Int64
	seen      atomic.Int64
	streaming atomic.Bool

	tally *onceTally // Once only
}

// Config is what a Responder follows and how.
type Config struct {
	Socket  string // auditd's --socket
	Gateway string // auditd's URL, as messages name it
	// SinceSeq: replay the events after it first; client.Live (-1) starts
	// at the chain's current head.
	SinceSeq int64
	Cooldown time.Duration
	// DryRun reports incidents without creating them.
	DryRun bool
	// MinBackoff and MaxBackoff bound the wait between reconnections to the
	// stream and between retries of an incident; zero means 200ms and 5s.
	MinBackoff, MaxBackoff time.Duration
}

func (c Config) backoff() (lo, hi time.Duration) {
	lo, hi = c.MinBackoff, c.MaxBackoff
	if lo <= 0 {
		lo = 200 * time.Millisecond
	}
	if hi <= 0 {
		hi = 5 * time.Second
	}
	return lo, max(lo, hi)
}

// Deps are a Responder's connections to the world.
type Deps struct {
	Client *client.Client
	// Now is the clock of alerts and the cooldown; Sleep waits d or until
	// ctx ends (cli.Sleep).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Logf writes one line to the operator (secbot's standard error).
	Logf func(format string, args ...any)
	// Report hands on an incident created (ev its place in the chain) or,
	// in a dry run, one that would be (ev nil), at now.
	Report func(in govapi.IncidentInput, ev *govapi.EventRef, now time.Time)
	// Counters count what happened; nil counts nothing.
	Counters Counters
}

// Counters are the Responder's metrics (secbot's /metrics), by pattern.
type Counters interface {
	Event(seq int64)
	Reconnect()
	Match(pattern string)
	Suppressed(pattern string)
	DryRun(pattern string)
	Created(pattern string)
	Failed(pattern string)
}

type noCounters struct{}

func (noCounters) Event(int64)       {}
func (noCounters) Reconnect()        {}
func (noCounters) Match(string)      {}
func (noCounters) Suppressed(string) {}
func (noCounters) DryRun(string)     {}
func (noCounters) Created(string)    {}
func (noCounters) Failed(string)     {}

// New returns a Responder; Run it once.
func New(cfg Config, d Deps) *Responder {
	if d.Now == nil {
		panic("respond: Deps.Now is nil") // the clock is the caller's to give
	}
	if d.Sleep == nil {
		panic("respond: Deps.Sleep is nil") // so is the waiting
	}
	if d.Counters == nil {
		d.Counters = noCounters{}
	}
	r := &Responder{cfg: cfg, d: d, c: d.Client,
		book:     detect.NewApprovalBook(approvalCapacity),
		cooldown: detect.NewCooldown(cfg.Cooldown, 0),
	}
	r.lastSeq.Store(-1)
	return r
}

// Start decides where the stream starts (Run calls it when it was not):
// callers that serve /health call it first, so that /health answering
// means every event committed from then on will be matched.
func (r *Responder) Start(ctx context.Context) {
	r.since, r.link = r.start(ctx, true)
	r.started = true
}

// Run follows the stream until ctx ends, and returns ctx's error.
func (r *Responder) Run(ctx context.Context) error {
	if !r.started {
		r.Start(ctx)
	}
	return r.follow(ctx, r.since, r.link)
}

// LastSeq is the seq of the last event read (-1 before the first), Seen
// how many were read, and Streaming whether the stream is being read now
// ("following") or not ("reconnecting"): secbot's /health.
func (r *Responder) LastSeq() int64          { return r.lastSeq.Load() }
func (r *Responder) Seen() int64             { return r.seen.Load() }
func (r *Responder) Streaming() bool         { return r.streaming.Load() }
func (r *Responder) logf(f string, a ...any) { r.d.Logf(f, a...) }

// follow reads the stream after since until ctx ends, reconnecting with
// backoff and resuming after the last event seen. link is the event at
// since, when known.
func (r *Responder) follow(ctx context.Context, since int64, link detect.ChainLink) error {
	r.matcher = detect.NewPatternMatcher(link)
	lo, hi := r.cfg.backoff()
	delay := lo
	outage := false
	stuck := 0
	var lastErr string
	for {
		if since == client.Live {
			// auditd was not answering at start: ask again, so that
			// events committed before the subscription are not missed.
			since, link = r.start(ctx, false)
			r.matcher = detect.NewPatternMatcher(link)
		} else if outage {
			var ok bool
			if since, ok = r.checkHead(ctx, since); !ok && r.gatewayUp {
				// Subscribing now could reach an auditd whose head is
				// unknown (see checkHead); wait until it answers.
				if r.d.Sleep(ctx, delay) != nil {
					return ctx.Err()
				}
				delay = min(2*delay, hi)
				continue
			}
		}
		got := false
		r.streaming.Store(true)
		err := client.Subscribe(ctx, r.cfg.Socket, since, func(ev audit.Event) error {
			if !got && outage {
				r.logf("stream is back: resuming after seq %d", since)
				outage = false
			}
			got = true
			r.handle(ctx, ev)
			since = ev.Seq
			r.lastSeq.Store(ev.Seq)
			return nil
		})
		r.streaming.Store(false)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if got {
			delay, stuck = lo, 0
		}
		r.d.Counters.Reconnect()

		// A line that is not an event: auditd replays what is stored, so
		// a row edited into something that does not decode would stop
		// secbot here forever. After stuckLimit tries, report it as a
		// hash_mismatch (it cannot be the content that was hashed) and
		// resume after it; the stream has no gaps, so it is seq since+1.
		if isDecodeError(err) && since >= 0 {
			if err.Error() == lastErr {
				stuck++
			} else {
				stuck = 1
			}
			if stuck >= stuckLimit {
				r.undecodable(ctx, since+1, err)
				since++
				stuck = 0
			}
		}
		lastErr = err.Error()
		if !outage {
			r.logf("%s; reconnecting with backoff", streamProblem(err, r.cfg.Socket))
			outage = true
		}
		if r.d.Sleep(ctx, delay) != nil {
			return ctx.Err()
		}
		delay = min(2*delay, hi)
	}
}

// start decides where the stream starts. With --since-seq -1, at the
// chain's head as auditd reports it: subscribing after that seq replays
// whatever is committed between the two calls, where a live subscription
// would miss it; when auditd does not answer, client.Live (warn says
// whether to say so). It also learns the hash of the event before the
// first one it will see, so that the first prev_hash is checked too.
func (r *Responder) start(ctx context.Context, warn bool) (int64, detect.ChainLink) {
	since := r.cfg.SinceSeq
	switch {
	case since == client.Live:
		cctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		h, err := r.c.Health(cctx)
		if err != nil {
			if warn {
				r.logf("warning: cannot read the chain head from %s (%s); following new events until it answers", r.cfg.Gateway, client.Reason(err))
			}
			return client.Live, detect.ChainLink{}
		}
		r.gatewayUp = true
		return h.HeadSeq, detect.ChainLink{Seq: h.HeadSeq, Hash: h.HeadHash}
	case since == 0:
		return 0, detect.ChainLink{Seq: 0, Hash: audit.ZeroHash}
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	p, err := r.c.Query(cctx, govapi.EventQuery{Cursor: govapi.Cursor{AfterSeq: since - 1, Limit: 1}})
	if err != nil || len(p.Events) != 1 || p.Events[0].Seq != since {
		return since, detect.ChainLink{} // the first prev_hash goes unchecked
	}
	r.gatewayUp = true
	return since, detect.ChainLink{Seq: since, Hash: p.Events[0].EventHash}
}

// checkHead compares the chain's head after an outage with the last event
// seen. An auditd that came back with a shorter chain (another database
// file, or a truncated one; the auditor reports head_regressed) would
// stream nothing until it grew past since again, and what it holds is
// not what secbot saw: secbot replays it from the start (incident IDs keep
// what was reported before from being reported twice).
//
// ok is false when auditd did not answer. If it ever did, secbot does not
// resubscribe until it does: the stream may come back first, with a new
// chain that would stay silent up to since.
func (r *Responder) checkHead(ctx context.Context, since int64) (_ int64, ok bool) {
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	h, err := r.c.Health(cctx)
	if err != nil {
		return since, false
	}
	r.gatewayUp = true
	if h.HeadSeq >= since {
		return since, true
	}
	r.logf("warning: auditd's chain now ends at seq %d, before seq %d that secbot saw: its database was replaced or truncated; replaying it from the start",
		h.HeadSeq, since)
	r.matcher = detect.NewPatternMatcher(detect.ChainLink{Seq: 0, Hash: audit.ZeroHash})
	return 0, true
}

// handle matches one event and answers each match.
func (r *Responder) handle(ctx context.Context, ev audit.Event) {
	r.d.Counters.Event(ev.Seq)
	r.seen.Add(1)
	r.book.Observe(ev)
	now := r.d.Now()
	g := r.grant(ctx, ev)
	for _, a := range r.matcher.Match(ev, g, now) {
		r.answer(ctx, a, ev, now)
	}
	r.book.Use(ev, g)
}

// answer turns one alert into an incident, subject to the cooldown.
func (r *Responder) answer(ctx context.Context, a detect.Alert, ev audit.Event, now time.Time) {
	r.d.Counters.Match(a.Type)
	if !r.cooldown.Allow(a.Type, a.Agent, now) {
		r.d.Counters.Suppressed(a.Type)
		return
	}
	in := Incident(a, ev)
	if r.cfg.DryRun {
		r.d.Counters.DryRun(a.Type)
		r.d.Report(in, nil, now)
		if r.tally != nil {
			r.tally.incidents.Add(1)
		}
		return
	}
	inc, err := r.create(ctx, in)
	if err != nil {
		// Let the next match try again rather than stay quiet for a
		// whole cooldown about something nobody was told.
		r.cooldown.Release(a.Type, a.Agent)
		r.d.Counters.Failed(a.Type)
		if r.tally != nil {
			r.tally.failed.Add(1)
		}
		r.logf("error: creating the %s incident for seq %d: %s", a.Type, ev.Seq, r.apiProblem(err))
		return
	}
	if inc.IncidentID != "" {
		in.IncidentID = inc.IncidentID // auditd's, after a conflict
	}
	r.d.Counters.Created(a.Type)
	r.d.Report(in, &inc.Event, now)
	if r.tally != nil && inc.Event.Seq > r.tally.head {
		r.tally.incidents.Add(1)
	}
}

// grant is what secbot knows of the approval a destructive action names,
// from the approval changes seen on the stream, else from auditd. An
// approval consumed after the action did not release it.
func (r *Responder) grant(ctx context.Context, ev audit.Event) detect.Grant {
	if !detect.IsDestructiveAction(ev) || ev.ApprovalID == "" {
		return detect.Grant{}
	}
	if g, known := r.book.Grant(ev); known {
		return g
	}
	// Not cut short by a stop: the event in hand is finished (see create).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	req, err := r.c.Approval(cctx, ev.ApprovalID)
	switch {
	case client.IsNotFound(err):
		return detect.Grant{}
	case err != nil:
		r.logf("warning: cannot read approval %s from %s (%s); treating it as unknown", termtext.Clean(ev.ApprovalID, 128), r.cfg.Gateway, r.apiProblem(err))
		return detect.Grant{}
	}
	// secbot did not see the events before its cursor (a restart, or an
	// approval the book forgot): one of them may have used the
	// consumption, and then ev is a second use (DESIGN §11 "one use per
	// approval", issue 13).
	earlier, err := r.c.Citations(cctx, ev.ApprovalID, ev.Seq)
	if err != nil {
		r.logf("warning: cannot read the events citing approval %s from %s (%s); treating it as unknown", termtext.Clean(ev.ApprovalID, 128), r.cfg.Gateway, r.apiProblem(err))
		return detect.Grant{}
	}
	// Later changes come on the stream, and Observe replaces this.
	r.book.Learn(req, earlier)
	g, _ := r.book.Grant(ev)
	return g
}

// undecodable reports a stream line that is not an event.
func (r *Responder) undecodable(ctx context.Context, seq int64, err error) {
	r.logf("error: the stream line of seq %d is not an audit event (%v); skipping it", seq, err)
	a := detect.Alert{
		SchemaVersion: audit.SchemaVersion,
		Type:          detect.HashMismatch,
		Severity:      detect.Critical,
		Timestamp:     r.d.Now().UTC(),
		Message:       fmt.Sprintf("Event seq %d is not a valid audit event: its stored content was altered", seq),
		Seq:           seq,
	}
	r.matcher = detect.NewPatternMatcher(detect.ChainLink{}) // its hash is unknown: do not check the next link
	r.answer(ctx, a, audit.Event{Seq: seq}, a.Timestamp)
}

// create posts the incident, retrying what may go away by itself.
func (r *Responder) create(ctx context.Context, in govapi.IncidentInput) (govapi.Incident, error) {
	lo, hi := r.cfg.backoff()
	delay := lo
	for attempt := 1; ; attempt++ {
		// A request in flight finishes when secbot is told to stop: auditd
		// may have committed the incident already, and its line belongs on
		// stdout. Only the retries stop.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		inc, err := r.c.CreateIncident(cctx, in)
		cancel()
		var ae *client.Error
		taken := errors.As(err, &ae) && ae.StatusCode == http.StatusConflict ||
			err == nil && (inc.Type != in.Type || inc.Source != in.Source)
		if taken && in.IncidentID != "" {
			// Another event, or someone else's incident, has the
			// incident_id (it is predictable: an agent could post one
			// first to silence secbot). Record the incident under an ID
			// auditd chooses.
			r.logf("warning: incident_id %s is taken by another event; creating the incident under a new ID", in.IncidentID)
			in.IncidentID = ""
			attempt--
			continue
		}
		if err == nil || ctx.Err() != nil || !client.IsTransient(err) || attempt == createAttempts {
			return inc, err
		}
		if r.d.Sleep(ctx, delay) != nil {
			return inc, ctx.Err()
		}
		delay = min(2*delay, hi)
	}
}

// apiProblem describes a failed request to auditd in one line, with what
// to do about it.
func (r *Responder) apiProblem(err error) string {
	var ae *client.Error
	if errors.As(err, &ae) {
		msg := termtext.Clean(ae.Message, 200)
		switch ae.StatusCode {
		case http.StatusUnauthorized:
			return "auditd refused the credentials (" + msg + "): check --token (or GOVKIT_TOKEN)"
		case http.StatusForbidden:
			return "auditd refused the request (" + msg + "): use a --token whose roles allow it"
		case http.StatusNotFound:
			return fmt.Sprintf("auditd answered 404 (%s): is --url %s an auditd with the incidents API?", msg, r.cfg.Gateway)
		}
		return fmt.Sprintf("auditd answered %d: %s", ae.StatusCode, msg)
	}
	if client.IsCertificateError(err) {
		return fmt.Sprintf("auditd at %s: %s: pass --ca-cert FILE (or set GOVKIT_CA_CERT) with the CA that signed its certificate", r.cfg.Gateway, client.NetReason(err))
	}
	if client.IsTransient(err) {
		return fmt.Sprintf("cannot reach auditd at %s (%s)", r.cfg.Gateway, client.Reason(err))
	}
	return err.Error()
}

// streamProblem describes why the stream ended.
func streamProblem(err error, socket string) string {
	var se *client.StreamError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("the stream ended after seq %d (%s)", se.LastSeq, termtext.Clean(se.Message, 200))
	case isDecodeError(err):
		return err.Error()
	}
	return fmt.Sprintf("cannot follow auditd's stream on %s (%s)", socket, client.Reason(err))
}

// isDecodeError reports whether the stream carried a line that is not an
// event (client.Subscribe wraps encoding/json's error).
func isDecodeError(err error) bool {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &te)
}
