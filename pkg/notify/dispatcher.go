package notify

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"sync"
	"time"
)

// Results passed to Options.Observe.
const (
	ResultSent    = "sent"    // delivered
	ResultRetry   = "retry"   // an attempt failed; another follows
	ResultFailed  = "failed"  // given up: attempts exhausted, a permanent error, or closed
	ResultDropped = "dropped" // never attempted: the notifier's queue was full or the dispatcher closed
)

// Options tune a Dispatcher. Now is required; for the rest the zero
// values are the defaults.
type Options struct {
	// Now is the clock of the queue's bookkeeping: the Now of a message
	// sent without one, and how long a message has waited, which keeps
	// its Now current on each retry (a request's "expires in"). The
	// caller's clock (pkg/cmd passes time.Now), so that tests control it.
	Now func() time.Time

	Attempts int // tries per message and notifier; default 5
	// Backoff is the delay before the first retry, doubling after each,
	// capped at MaxBackoff, minus up to 20% jitter; default 1s.
	Backoff time.Duration
	// MaxBackoff caps the delay between attempts; default 1m. A Retry-After
	// from a rate-limited webhook is honoured up to this cap.
	MaxBackoff time.Duration
	// AttemptTimeout bounds one delivery attempt; default 10s.
	AttemptTimeout time.Duration
	// QueueSize is each notifier's queue length; default 1024. When a queue
	// is full, Send drops the message for that notifier, logs it and
	// observes "dropped".
	QueueSize int
	// Logf receives one line per retry, failure or drop, naming the
	// notifier, the approval id and the error; default log.Printf.
	Logf func(format string, args ...any)
	// Observe counts outcomes per notifier (ResultSent, ResultRetry,
	// ResultFailed, ResultDropped) — auditd turns them into a Prometheus
	// counter. It is called from several goroutines.
	Observe func(notifier, result string)
	// Failed, when set, receives each message a notifier gave up on, with
	// the last attempt's error (never holding a secret URL): a one-shot
	// caller such as govbot reports it in its own voice.
	Failed func(notifier string, m Message, err error)
	// Sleep waits d or until ctx ends (test hook); default a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (o *Options) defaults() {
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 10 * time.Second
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1024
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	if o.Observe == nil {
		o.Observe = func(string, string) {}
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Failed == nil {
		o.Failed = func(string, Message, error) {}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dispatcher delivers messages in the background with retries, so a
// failing notifier never blocks or loses the request (issue 6): Send only
// queues. Each notifier has its own queue and goroutine, so a dead SMTP
// server never delays Slack; one notifier's messages go out in order (a
// request's "requested" before its "resolved").
type Dispatcher struct {
	o       Options
	workers []*worker
	ctx     context.Context // ends when Close gives up on the queues
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.RWMutex
	closed bool
}

type worker struct {
	n     Notifier
	queue chan queued
}

type queued struct {
	m      Message
	queued time.Time // when Send took it, to keep the TTL current on retries
}

// NewDispatcher starts one goroutine per notifier; stop them with Close.
// It panics when o.Now is nil: a dispatcher without a clock is a
// programming error.
func NewDispatcher(ns []Notifier, o Options) *Dispatcher {
	if o.Now == nil {
		panic("notify: NewDispatcher without Options.Now")
	}
	o.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dispatcher{o: o, ctx: ctx, cancel: cancel}
	for _, n := range ns {
		w := &worker{n: n, queue: make(chan queued, o.QueueSize)}
		d.workers = append(d.workers, w)
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			for q := range w.queue {
				d.deliver(w.n, q)
			}
		}()
	}
	return d
}

// Send queues m for every notifier and returns at once. A zero m.Now is
// set to the current time. After Close, or when a notifier's queue is
// full, the message is dropped for it (logged and observed).
func (d *Dispatcher) Send(m Message) {
	q := queued{m: m, queued: d.o.Now()}
	if q.m.Now.IsZero() {
		q.m.Now = q.queued
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, w := range d.workers {
		if d.closed {
			d.drop(w.n, m, "the dispatcher is closed")
			continue
		}
		select {
		case w.queue <- q:
		default:
			d.drop(w.n, m, fmt.Sprintf("its queue is full (%d messages)", cap(w.queue)))
		}
	}
}

func (d *Dispatcher) drop(n Notifier, m Message, why string) {
	d.o.Logf("notify: %s: dropped %s: %s", n.Name(), m.about(), why)
	d.o.Observe(n.Name(), ResultDropped)
	d.o.Failed(n.Name(), m, errors.New("dropped: "+why))
}

// Close stops taking messages and delivers what is queued, retries
// included, until ctx ends. Then it abandons what is left (each abandoned
// message is logged and observed "failed") and returns ctx's error.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		for _, w := range d.workers {
			close(w.queue)
		}
	}
	d.mu.Unlock()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		d.cancel()
		return nil
	case <-ctx.Done():
		// Workers see d.ctx end: the attempt in flight and any backoff stop,
		// and the rest of each queue is reported failed without an attempt.
		d.cancel()
		return ctx.Err()
	}
}

// deliver tries one message on one notifier until it is sent, fails
// permanently, runs out of attempts, or the dispatcher gives up.
func (d *Dispatcher) deliver(n Notifier, q queued) {
	name, m := n.Name(), q.m
	delay := d.o.Backoff
	for attempt := 1; ; attempt++ {
		if d.ctx.Err() != nil {
			d.o.Logf("notify: %s: gave up on %s after %d attempt(s): the dispatcher closed", name, m.about(), attempt-1)
			d.o.Observe(name, ResultFailed)
			d.o.Failed(name, m, errors.New("gave up: the dispatcher closed"))
			return
		}
		m.Now = q.m.Now.Add(d.o.Now().Sub(q.queued))
		err := d.attempt(n, m)
		if err == nil {
			d.o.Observe(name, ResultSent)
			return
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			d.o.Logf("notify: %s: failed to deliver %s (not retrying): %v", name, m.about(), err)
			d.o.Observe(name, ResultFailed)
			d.o.Failed(name, m, err)
			return
		}
		if attempt >= d.o.Attempts {
			d.o.Logf("notify: %s: failed to deliver %s after %d attempts: %v", name, m.about(), attempt, err)
			d.o.Observe(name, ResultFailed)
			d.o.Failed(name, m, err)
			return
		}
		wait := jitter(delay)
		var ra *retryAfterError
		if errors.As(err, &ra) && ra.after > wait {
			wait = min(ra.after, d.o.MaxBackoff)
		}
		delay = min(delay*2, d.o.MaxBackoff)
		d.o.Logf("notify: %s: attempt %d/%d to deliver %s failed: %v; retrying in %s", name, attempt, d.o.Attempts, m.about(), err, wait.Round(time.Millisecond))
		d.o.Observe(name, ResultRetry)
		if err := d.o.Sleep(d.ctx, wait); err != nil {
			d.o.Logf("notify: %s: gave up on %s after %d attempt(s): the dispatcher closed", name, m.about(), attempt)
			d.o.Observe(name, ResultFailed)
			d.o.Failed(name, m, errors.New("gave up: the dispatcher closed"))
			return
		}
	}
}

// attempt is one bounded call of Notify; a panicking notifier is a failed
// attempt, not a dead auditd.
func (d *Dispatcher) attempt(n Notifier, m Message) (err error) {
	ctx, cancel := context.WithTimeout(d.ctx, d.o.AttemptTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("notifier panicked: %v", p)
		}
	}()
	return n.Notify(ctx, m)
}

// jitter takes up to 20% off d, so that many auditd instances retrying a
// shared webhook spread out.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}
