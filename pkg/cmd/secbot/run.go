package secbot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
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

// logger writes secbot's log lines on stderr, from the stream goroutine
// and the HTTP handlers.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "secbot: "+format+"\n", args...)
}

// responder holds the state of one run: the stream position, the patterns'
// state, the cooldown and the counters.
type responder struct {
	o   *Options
	c   *client.Client
	log *logger
	m   *metrics

	matcher  *detect.PatternMatcher
	book     *detect.ApprovalBook
	cooldown *detect.Cooldown
	jsonOut  bool
	// gatewayUp: --gateway has answered at least once (see checkHead).
	gatewayUp bool

	// For /health, read by HTTP handlers.
	lastSeq   atomic.Int64
	seen      atomic.Int64
	streaming atomic.Bool

	tally *onceTally // --once only (once.go)
}

func run(o *Options) error {
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	log := &logger{w: o.IO.ErrOut}
	copts := []client.Option{client.WithUserAgent("secbot/" + build.String())}
	if o.Token != "" {
		copts = append(copts, client.WithToken(o.Token))
	}
	if o.roots != nil {
		copts = append(copts, client.WithRootCAs(o.roots))
	}
	c, err := client.New(o.Gateway, copts...)
	if err != nil {
		return cli.Fail(err, "pass --gateway http://HOST:PORT (or set GOVKIT_AUDIT_URL) naming auditd")
	}
	if c.SendsTokenInClear() {
		log.logf("warning: --gateway %s is plain HTTP beyond loopback: the token crosses the network in the clear; use https:// (auditd --tls-cert)", o.Gateway)
	}
	if err := checkTrust(ctx, c, o.Gateway); err != nil {
		return err
	}
	r := &responder{
		o: o, c: c, log: log, m: newMetrics(),
		book:     detect.NewApprovalBook(approvalCapacity),
		cooldown: detect.NewCooldown(o.Cooldown, 0),
		jsonOut:  o.Output.Resolve(o.IO) == cli.FormatJSON,
	}
	r.lastSeq.Store(-1)
	if o.Once {
		return r.once(ctx)
	}

	// Bind first, so that a taken --listen fails at once; serve only once
	// the starting point is fixed, so that /health answering means every
	// event committed from then on will be matched.
	var ln net.Listener
	if o.Listen != "" {
		if ln, err = net.Listen("tcp", o.Listen); err != nil {
			return cli.Failf("--listen %s: %v", o.Listen, err).
				WithHint("pass another --listen HOST:PORT (or set GOVKIT_SECBOT_LISTEN), or --listen '' to serve nothing")
		}
		defer ln.Close()
	}
	mode := "creating incidents at " + o.Gateway
	if o.DryRun {
		mode = "dry run: printing incidents, creating none"
	}
	log.logf("following %s (%s; cooldown %s)", o.Socket, mode, o.Cooldown)
	since, link := r.start(ctx, true)

	if ln != nil {
		srv := r.httpServer()
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.logf("error: serving %s: %v", ln.Addr(), err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			<-served
		}()
		addr := ln.Addr().String()
		if !isLoopback(addr) {
			log.logf("warning: --listen %s is not loopback: /callback and /metrics answer anyone who can reach it", o.Listen)
		}
		log.logf("serving /health, /metrics and /callback on http://%s", addr)
		if o.Ready != nil {
			o.Ready(addr)
		}
	}

	err = r.follow(ctx, since, link)
	if ctx.Err() != nil {
		log.logf("stopped: %d events seen, the last seq %d", r.seen.Load(), r.lastSeq.Load())
		return nil // SIGTERM or SIGINT: the normal end of a daemon
	}
	return err
}

// follow reads the stream after since until ctx ends, reconnecting with
// backoff and resuming after the last event seen. link is the event at
// since, when known.
func (r *responder) follow(ctx context.Context, since int64, link detect.ChainLink) error {
	r.matcher = detect.NewPatternMatcher(link)
	lo, hi := r.o.backoff()
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
				if cli.Sleep(ctx, delay) != nil {
					return ctx.Err()
				}
				delay = min(2*delay, hi)
				continue
			}
		}
		got := false
		r.streaming.Store(true)
		err := client.Subscribe(ctx, r.o.Socket, since, func(ev audit.Event) error {
			if !got && outage {
				r.log.logf("stream is back: resuming after seq %d", since)
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
		r.m.reconnects.Inc()

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
			r.log.logf("%s; reconnecting with backoff", streamProblem(err, r.o.Socket))
			outage = true
		}
		if cli.Sleep(ctx, delay) != nil {
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
func (r *responder) start(ctx context.Context, warn bool) (int64, detect.ChainLink) {
	since := r.o.SinceSeq
	switch {
	case since == client.Live:
		cctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		h, err := r.c.Health(cctx)
		if err != nil {
			if warn {
				r.log.logf("warning: cannot read the chain head from %s (%s); following new events until it answers", r.o.Gateway, client.Reason(err))
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
func (r *responder) checkHead(ctx context.Context, since int64) (_ int64, ok bool) {
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
	r.log.logf("warning: auditd's chain now ends at seq %d, before seq %d that secbot saw: its database was replaced or truncated; replaying it from the start",
		h.HeadSeq, since)
	r.matcher = detect.NewPatternMatcher(detect.ChainLink{Seq: 0, Hash: audit.ZeroHash})
	return 0, true
}

// handle matches one event and answers each match.
func (r *responder) handle(ctx context.Context, ev audit.Event) {
	r.m.events.Inc()
	r.seen.Add(1)
	r.m.lastSeq.Set(float64(ev.Seq))
	r.book.Observe(ev)
	now := r.o.now()
	g := r.grant(ctx, ev)
	for _, a := range r.matcher.Match(ev, g, now) {
		r.answer(ctx, a, ev, now)
	}
	r.book.Use(ev, g)
}

// answer turns one alert into an incident, subject to the cooldown.
func (r *responder) answer(ctx context.Context, a detect.Alert, ev audit.Event, now time.Time) {
	r.m.matches.WithLabelValues(a.Type).Inc()
	if !r.cooldown.Allow(a.Type, a.Agent, now) {
		r.m.suppressed.WithLabelValues(a.Type).Inc()
		return
	}
	in := incidentInput(a, ev)
	if r.o.DryRun {
		r.m.dryRun.WithLabelValues(a.Type).Inc()
		r.print(in, nil, now)
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
		r.m.failed.WithLabelValues(a.Type).Inc()
		if r.tally != nil {
			r.tally.failed.Add(1)
		}
		r.log.logf("error: creating the %s incident for seq %d: %s", a.Type, ev.Seq, r.apiProblem(err))
		return
	}
	if inc.IncidentID != "" {
		in.IncidentID = inc.IncidentID // auditd's, after a conflict
	}
	r.m.created.WithLabelValues(a.Type).Inc()
	r.print(in, &inc.Event, now)
	if r.tally != nil && inc.Event.Seq > r.tally.head {
		r.tally.incidents.Add(1)
	}
}

// grant is what secbot knows of the approval a destructive action names,
// from the approval changes seen on the stream, else from auditd. An
// approval consumed after the action did not release it.
func (r *responder) grant(ctx context.Context, ev audit.Event) detect.Grant {
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
		r.log.logf("warning: cannot read approval %s from %s (%s); treating it as unknown", clean(ev.ApprovalID, 128), r.o.Gateway, r.apiProblem(err))
		return detect.Grant{}
	}
	// secbot did not see the events before its cursor (a restart, or an
	// approval the book forgot): one of them may have used the
	// consumption, and then ev is a second use (DESIGN §11 "one use per
	// approval", issue 13).
	earlier, err := r.c.Citations(cctx, ev.ApprovalID, ev.Seq)
	if err != nil {
		r.log.logf("warning: cannot read the events citing approval %s from %s (%s); treating it as unknown", clean(ev.ApprovalID, 128), r.o.Gateway, r.apiProblem(err))
		return detect.Grant{}
	}
	// Later changes come on the stream, and Observe replaces this.
	r.book.Learn(req, earlier)
	g, _ := r.book.Grant(ev)
	return g
}

// undecodable reports a stream line that is not an event.
func (r *responder) undecodable(ctx context.Context, seq int64, err error) {
	r.log.logf("error: the stream line of seq %d is not an audit event (%v); skipping it", seq, err)
	a := detect.Alert{
		SchemaVersion: audit.SchemaVersion,
		Type:          detect.HashMismatch,
		Severity:      detect.Critical,
		Timestamp:     r.o.now().UTC(),
		Message:       fmt.Sprintf("Event seq %d is not a valid audit event: its stored content was altered", seq),
		Seq:           seq,
	}
	r.matcher = detect.NewPatternMatcher(detect.ChainLink{}) // its hash is unknown: do not check the next link
	r.answer(ctx, a, audit.Event{Seq: seq}, a.Timestamp)
}

// create posts the incident, retrying what may go away by itself.
func (r *responder) create(ctx context.Context, in govapi.IncidentInput) (govapi.Incident, error) {
	lo, hi := r.o.backoff()
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
			r.log.logf("warning: incident_id %s is taken by another event; creating the incident under a new ID", in.IncidentID)
			in.IncidentID = ""
			attempt--
			continue
		}
		if err == nil || ctx.Err() != nil || !client.IsTransient(err) || attempt == createAttempts {
			return inc, err
		}
		if cli.Sleep(ctx, delay) != nil {
			return inc, ctx.Err()
		}
		delay = min(2*delay, hi)
	}
}

// apiProblem describes a failed request to auditd in one line, with what
// to do about it.
func (r *responder) apiProblem(err error) string {
	var ae *client.Error
	if errors.As(err, &ae) {
		msg := clean(ae.Message, 200)
		switch ae.StatusCode {
		case http.StatusUnauthorized:
			return "auditd refused the credentials (" + msg + "): check --token (or GOVKIT_TOKEN)"
		case http.StatusForbidden:
			return "auditd refused the request (" + msg + "): use a --token whose roles allow it"
		case http.StatusNotFound:
			return fmt.Sprintf("auditd answered 404 (%s): is --gateway %s an auditd with the incidents API?", msg, r.o.Gateway)
		}
		return fmt.Sprintf("auditd answered %d: %s", ae.StatusCode, msg)
	}
	if client.IsCertificateError(err) {
		return fmt.Sprintf("auditd at %s: %s: pass --ca-cert FILE (or set GOVKIT_CA_CERT) with the CA that signed its certificate", r.o.Gateway, client.NetReason(err))
	}
	if client.IsTransient(err) {
		return fmt.Sprintf("cannot reach auditd at %s (%s)", r.o.Gateway, client.Reason(err))
	}
	return err.Error()
}

// checkTrust ends secbot at start when an https:// --gateway presents a
// certificate it does not trust: that is configuration, not an outage, and
// no retry fixes it (DESIGN §11 "Transport"). Any other failure is an
// outage secbot rides out.
func checkTrust(ctx context.Context, c *client.Client, gateway string) error {
	if !strings.HasPrefix(gateway, "https://") {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if _, err := c.Health(cctx); client.IsCertificateError(err) {
		return cli.Failf("auditd at %s: %s", gateway, client.NetReason(err)).WithHint(cli.CACertHint)
	}
	return nil
}

// streamProblem describes why the stream ended.
func streamProblem(err error, socket string) string {
	var se *client.StreamError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("the stream ended after seq %d (%s)", se.LastSeq, clean(se.Message, 200))
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

// isLoopback reports whether the address a listener got is a loopback one.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
