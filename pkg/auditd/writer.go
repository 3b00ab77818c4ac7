package auditd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/stream"
)

// errClosed answers requests that arrive while auditd shuts down.
var errClosed = errors.New("auditd is shutting down")

// appendReq is one POST /api/events waiting for its commit.
type appendReq struct {
	ev       audit.Event  // decoded and validated; EventID set
	draft    *audit.Draft // ev, prepared by submit
	recv     time.Time    // when auditd received it: the event's timestamp
	clientID bool         // the client chose EventID (an idempotency key)
	done     chan appendResult
	w        *writer // whose pending count the answer decrements
	// dups are requests for the same client event id in the same batch:
	// they get this request's result, marked as not created.
	dups []*appendReq
}

// appendResult is the writer's answer: the stored event's JSON, and whether
// this request created it (201) or found it stored already (200).
type appendResult struct {
	json    []byte
	created bool
	err     error
}

// prepare makes r.ev canonical but for its chain fields. It runs in the
// request's own goroutine, so the handlers do it in parallel and the one
// writer only splices in seq, prev_hash and timestamp and hashes: the
// writer is the serial section of ingest (DESIGN §6 "Durability").
//
// It also redacts secrets first (redaction.go), here and nowhere else:
// every event auditd stores passes through prepare before it is hashed.
func (r *appendReq) prepare() error {
	redactEvent(&r.ev, r.w.cfg.Redactor)
	for _, red := range r.ev.Redactions {
		r.w.m.redactions.WithLabelValues(red.Kind).Inc()
	}
	d, err := audit.Prepare(r.ev)
	if err != nil {
		return badRequest(fmt.Errorf("event %s: %w", r.ev.EventID, err))
	}
	r.draft = d
	return nil
}

func (r *appendReq) answer(res appendResult) {
	r.w.pending.Add(-int64(1 + len(r.dups)))
	r.done <- res
	res.created = false
	for _, d := range r.dups {
		d.done <- res
	}
}

// writer is the one goroutine that numbers, chains and commits events
// (DESIGN §6 "Durability"). Being the only appender is what keeps the chain
// linear: seq and prev_hash come from its own head, never from a read that
// another writer could race.
//
// Group commit: it takes every event already queued, up to MaxBatch, seals
// them in order and stores them in one transaction, so one fsync covers the
// whole batch; handlers answer 201 only after that transaction is durable.
type writer struct {
	st    store.Store
	cfg   *Config
	hub   *stream.Hub
	m     *metrics
	queue chan *appendReq
	done  chan struct{}

	mu     sync.RWMutex // guards closed against sends on queue
	closed bool

	// pending counts appends that reached the handler and have not been
	// answered by the writer yet: queued, or still being read and decoded.
	pending atomic.Int64

	health *dbHealth
	// fc checks, after every commit, that the store's file is still the
	// database file; nil for a store without one.
	fc store.FileChecker
	// sq numbers and chains in the database, for a store that several
	// auditd instances share (commitSequenced); nil for SQLite, whose
	// chain this writer numbers itself. follow then publishes the
	// stream in seq order, other instances' events included.
	sq     store.Sequencer
	follow *follower

	// Owned by the writer goroutine.
	// failed, once set, answers every later append: the database file was
	// replaced, or auditd serves it read-only (fail closed, issue 13).
	failed    *unavailableError
	seq       int64
	hash      string
	lastTime  time.Time // timestamps never go backwards along the chain
	prevBatch int

	head *headState // the committed head, for readers
	// ckpt, when not nil, is nudged after every commit (checkpoints.go);
	// set before the first event is queued.
	ckpt *checkpointer
}

// headState is the last committed event, readable from any goroutine.
type headState struct {
	mu   sync.Mutex
	seq  int64
	hash string
}

func (h *headState) get() (int64, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq, h.hash
}

func (h *headState) set(seq int64, hash string) {
	h.mu.Lock()
	h.seq, h.hash = seq, hash
	h.mu.Unlock()
}

// newWriter returns a writer continuing the chain at head; go w.run() starts it.
func newWriter(st store.Store, cfg *Config, hub *stream.Hub, m *metrics, head *headState, last time.Time, health *dbHealth) *writer {
	seq, hash := head.get()
	fc, _ := st.(store.FileChecker)
	sq, _ := st.(store.Sequencer)
	w := &writer{
		st: st, cfg: cfg, hub: hub, m: m, health: health, fc: fc, sq: sq,
		queue: make(chan *appendReq, cfg.QueueSize),
		done:  make(chan struct{}),
		seq:   seq, hash: hash, lastTime: last, prevBatch: 1, head: head,
	}
	return w
}

// submit queues r; the answer arrives on r.done. An event that cannot be
// sealed is answered at once with a requestError, and nil returned.
func (w *writer) submit(ctx context.Context, r *appendReq) error {
	if err := r.prepare(); err != nil {
		r.answer(appendResult{err: err})
		return nil
	}
	return w.enqueue(ctx, r)
}

// enqueue queues r, prepared already; the answer arrives on r.done. A batch
// append (api_batch.go) prepares all its events before it queues any, so
// that a bad one leaves nothing written.
func (w *writer) enqueue(ctx context.Context, r *appendReq) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return errClosed
	}
	select {
	case w.queue <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops taking events, commits those queued, and waits for the writer.
func (w *writer) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	w.mu.Unlock()
	<-w.done
}

func (w *writer) run() {
	defer close(w.done)
	batch := make([]*appendReq, 0, w.cfg.MaxBatch)
	for {
		first, ok := <-w.queue
		if !ok {
			return
		}
		batch = append(batch[:0], first)
		open := w.collect(&batch)
		w.commit(batch)
		clear(batch) // let answered requests be collected
		if !open {
			return
		}
	}
}

// collect adds queued events to batch. It always takes what is already
// queued (up to MaxBatch). It waits for more, at most MaxDelay, only while it
// expects more: while appends are being decoded by their handlers (pending),
// or while the batch is smaller than the previous one (the clients answered
// by the last commit are likely sending their next event right now). One
// commit for all of them costs one fsync instead of several. A lone client
// never waits: its previous batch had one event, and nothing else is
// pending.
func (w *writer) collect(batch *[]*appendReq) (open bool) {
	var timer *time.Timer
	for len(*batch) < w.cfg.MaxBatch {
		target := min(max(w.prevBatch, int(w.pending.Load())), w.cfg.MaxBatch)
		select {
		case r, ok := <-w.queue:
			if !ok {
				return false
			}
			*batch = append(*batch, r)
			continue
		default:
		}
		if len(*batch) >= target || w.cfg.MaxDelay <= 0 {
			return true
		}
		if timer == nil {
			timer = time.NewTimer(w.cfg.MaxDelay)
			defer timer.Stop()
		}
		select {
		case r, ok := <-w.queue:
			if !ok {
				return false
			}
			*batch = append(*batch, r)
		case <-timer.C:
			return true
		}
	}
	return true
}

// commit seals and stores one batch and answers its requests.
func (w *writer) commit(batch []*appendReq) {
	w.prevBatch = len(batch)
	ctx := context.Background() // a commit in progress finishes, even at shutdown
	reqs := dedupe(batch)
	if w.failed != nil {
		for _, r := range reqs {
			r.answer(appendResult{err: w.failed})
		}
		return
	}
	if w.sq != nil {
		w.commitSequenced(reqs, len(batch))
		return
	}

	reqs, recs := w.seal(reqs)
	start := time.Now()
	var err error
	if len(recs) > 0 {
		err = w.st.Append(ctx, recs)
	}
	if errors.Is(err, store.ErrDuplicate) {
		// A client event id is stored already: a retry, of an event
		// committed just before or long ago. The writer is where that is
		// found (newAppendReq: no lookup per request), by the event_id's
		// UNIQUE index as it inserts. Nothing of this batch was stored:
		// answer those with the stored event (appended tells a retry
		// from another event under the id) and store the rest. Retries
		// are rare, so the common batch costs no lookup at all.
		if reqs, err = w.answerStored(ctx, reqs); err == nil {
			if reqs, recs = w.seal(reqs); len(recs) > 0 {
				err = w.st.Append(ctx, recs)
			}
		}
		if errors.Is(err, store.ErrDuplicate) {
			err = fmt.Errorf("store reports a duplicate event_id it does not return: %w", err)
		}
	}
	if len(recs) > 0 || err != nil {
		err = w.checkCommit(err)
	}
	if w.failed != nil {
		// Whatever the commit did, it went into a file nobody reads
		// again: not one of these events is acknowledged.
		for _, r := range reqs {
			r.answer(appendResult{err: w.failed})
		}
		return
	}
	if err != nil {
		w.cfg.Logf("error: committing %d events: %v", len(reqs), err)
		for _, r := range reqs {
			r.answer(appendResult{err: err})
		}
		w.m.commitErrors.Inc()
		// The store said nothing was written; trust only what it holds.
		if seq, hash, herr := w.st.Head(ctx); herr == nil {
			w.seq, w.hash = seq, hash
			w.head.set(seq, hash)
		} else {
			w.cfg.Logf("error: reading the chain head after a failed commit: %v", herr)
		}
		return
	}
	if len(reqs) == 0 {
		return
	}
	w.m.commitSeconds.Observe(time.Since(start).Seconds())
	w.m.batchSize.Observe(float64(len(batch)))
	w.m.appended.Add(float64(len(recs)))
	for _, r := range reqs {
		w.m.duplicates.Add(float64(len(r.dups)))
	}

	last := recs[len(recs)-1]
	w.seq, w.hash = last.Seq, last.EventHash
	w.lastTime = last.Timestamp
	w.head.set(w.seq, w.hash)

	items := make([]stream.Item, len(recs))
	for i, rec := range recs {
		items[i] = stream.Item{Seq: rec.Seq, Line: eventJSON(rec)}
	}
	// Published only now that the batch is durable: a subscriber never
	// sees an event that a crash could take back.
	w.hub.Publish(items)
	for i, r := range reqs {
		r.answer(appendResult{json: items[i].Line, created: true})
	}
	if w.ckpt != nil {
		w.ckpt.committed()
	}
}

// checkCommit runs after every commit, with its error, before any of its
// requests is answered (DESIGN §11 "Health tells the truth"). It checks
// that the store still writes to the database file: SQLite writes on into
// a file that was removed or renamed over, and events acknowledged then
// would be lost. One or two stats per commit (of up to MaxBatch events),
// never per request. A replaced file fails the writer closed; a failed
// commit degrades /health until one succeeds.
func (w *writer) checkCommit(err error) error {
	if w.fc != nil {
		if ferr := w.fc.CheckFile(); errors.Is(ferr, store.ErrReplaced) {
			w.failed = &unavailableError{govapi.ReasonDatabaseReplaced,
				fmt.Errorf("%w; auditd refuses every write until it is restarted on the database file", ferr)}
			w.health.set(w.failed, true)
			w.m.commitErrors.Inc()
			w.cfg.Logf("error: %v", w.failed)
			return w.failed
		} else if ferr != nil && err == nil {
			err = ferr // cannot tell where the commit went: not acknowledged
		}
	}
	if err == nil {
		w.health.committed()
		return nil
	}
	u, err := commitError(err)
	w.health.set(u, false)
	return err
}

// dedupe folds requests that share a client event id into the first one.
func dedupe(batch []*appendReq) []*appendReq {
	var seen map[string]*appendReq
	out := make([]*appendReq, 0, len(batch))
	for _, r := range batch {
		r.dups = r.dups[:0]
		if r.clientID {
			if seen == nil {
				seen = map[string]*appendReq{}
			}
			if first, ok := seen[r.ev.EventID]; ok {
				first.dups = append(first.dups, r)
				continue
			}
			seen[r.ev.EventID] = r
		}
		out = append(out, r)
	}
	return out
}

// seal numbers and chains reqs after the writer's head, without moving it.
// A request that cannot be sealed is answered with its error and left out.
func (w *writer) seal(reqs []*appendReq) ([]*appendReq, []audit.Record) {
	recs := make([]audit.Record, 0, len(reqs))
	kept := reqs[:0]
	seq, prev, last := w.seq, w.hash, w.lastTime
	for _, r := range reqs {
		at := r.recv
		if at.Before(last) {
			at = last
		}
		rec, err := r.draft.Seal(seq+1, prev, at) // a retry reseals the same draft
		if err != nil {
			r.answer(appendResult{err: badRequest(fmt.Errorf("event %s: %w", r.ev.EventID, err))})
			continue
		}
		seq++
		recs = append(recs, rec)
		kept = append(kept, r)
		prev, last = rec.EventHash, rec.Timestamp
	}
	return kept, recs
}

// answerStored answers the requests whose client event id is stored already
// and returns the others. The ids are looked up in one query (GetMany).
func (w *writer) answerStored(ctx context.Context, reqs []*appendReq) ([]*appendReq, error) {
	var ids []string
	for _, r := range reqs {
		if r.clientID {
			ids = append(ids, r.ev.EventID)
		}
	}
	recs, err := w.st.GetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	stored := make(map[string]audit.Record, len(recs))
	for _, rec := range recs {
		stored[rec.EventID] = rec
	}
	rest := reqs[:0:0]
	for _, r := range reqs {
		if rec, ok := stored[r.ev.EventID]; ok && r.clientID {
			w.m.duplicates.Add(float64(1 + len(r.dups)))
			line, err := storedJSON(rec)
			r.answer(appendResult{json: line, err: err})
			continue
		}
		rest = append(rest, r)
	}
	return rest, nil
}
