package auditd

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/stream"
)

// commitSequenced is commit for a store that several auditd instances
// share (store.Sequencer, issue 19). The writer's head may be stale: another
// instance may have appended since this one's last batch. So the store
// numbers and chains the batch in the database, under its append lock, from
// the head it holds there; the writer keeps its group commit (one Sequence
// per batch) and answers only after the COMMIT. An event id a client chose
// that any instance stored already is answered with the stored event (200),
// as commit's answerStored does for this instance's own duplicates.
func (w *writer) commitSequenced(reqs []*appendReq, batchLen int) {
	ctx := context.Background() // a commit in progress finishes, even at shutdown
	drafts := make([]store.Draft, len(reqs))
	for i, r := range reqs {
		drafts[i] = store.Draft{EventID: r.ev.EventID, Draft: r.draft, Received: r.recv, Idempotent: r.clientID}
	}
	start := time.Now()
	sealed, err := w.sq.Sequence(ctx, drafts)
	if err = w.checkCommit(err); err != nil {
		w.cfg.Logf("error: committing %d events: %v", len(reqs), err)
		for _, r := range reqs {
			r.answer(appendResult{err: err})
		}
		w.m.commitErrors.Inc()
		return
	}
	w.m.commitSeconds.Observe(time.Since(start).Seconds())
	w.m.batchSize.Observe(float64(batchLen))
	recs := make([]audit.Record, 0, len(reqs))
	created := make([]*appendReq, 0, len(reqs))
	for i, r := range reqs {
		s := sealed[i]
		switch {
		case s.Err != nil:
			r.answer(appendResult{err: badRequest(fmt.Errorf("event %s: %w", r.ev.EventID, s.Err))})
		case s.Stored:
			w.m.duplicates.Add(float64(1 + len(r.dups)))
			line, err := storedJSON(s.Record)
			r.answer(appendResult{json: line, err: err})
		default:
			w.m.duplicates.Add(float64(len(r.dups)))
			recs = append(recs, s.Record)
			created = append(created, r)
		}
	}
	if len(recs) == 0 {
		return
	}
	w.m.appended.Add(float64(len(recs)))
	items := make([]stream.Item, len(recs))
	for i, rec := range recs {
		items[i] = stream.Item{Seq: rec.Seq, Line: eventJSON(rec)}
	}
	w.follow.committed(items, recs[len(recs)-1].EventHash)
	for i, r := range created {
		r.answer(appendResult{json: items[i].Line, created: true})
	}
}

// follower publishes to the stream every event committed to a shared
// store, in seq order, whichever instance committed it (issue 19: each
// instance's Unix socket carries every committed event). This instance's
// own batches are published at once when they follow the last published
// event; otherwise, and whenever the store says another writer committed
// (store.AppendNotifier: PostgreSQL's LISTEN/NOTIFY), it reads the log after
// the last published seq. The notification only wakes it: what it publishes
// comes from that read by seq, so a lost notification (a reconnect, a
// failover) delays events and never loses one; a poll every pollEvery
// covers a store without notifications.
type follower struct {
	st   store.Store
	hub  *stream.Hub
	head *headState
	logf func(format string, args ...any)

	mu   sync.Mutex // one publisher at a time: the hub needs seq order
	wake chan struct{}

	// ckpt, once set, is nudged after every publish: the checkpointer
	// of the instance that leads counts every instance's events.
	ckpt atomic.Pointer[checkpointer]
	// followed is given the records read from the store, other
	// instances' events, after they are published (approvals.followed).
	followed func(context.Context, []audit.Record) error

	stop context.CancelFunc
	done chan struct{}
}

// pollEvery is how often the follower reads the log without being woken.
const pollEvery = time.Second

func newFollower(st store.Store, hub *stream.Hub, head *headState, followed func(context.Context, []audit.Record) error, logf func(string, ...any)) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{st: st, hub: hub, head: head, followed: followed, logf: logf, wake: make(chan struct{}, 1), stop: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f
}

// committed publishes this instance's committed batch, or leaves it to the
// follower's read when other instances' events come before it.
// hash is the last item's event_hash.
func (f *follower) committed(items []stream.Item, hash string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	last := f.hub.LastSeq()
	switch {
	case items[0].Seq == last+1:
		f.publish(items, hash)
	case items[len(items)-1].Seq > last:
		f.signal()
	}
}

func (f *follower) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// publish hands items, which follow the last published event, to the hub,
// and makes the last one the head auditd reports; hash is its event_hash.
// The caller holds f.mu.
func (f *follower) publish(items []stream.Item, hash string) {
	f.hub.Publish(items)
	f.head.set(items[len(items)-1].Seq, hash)
	if c := f.ckpt.Load(); c != nil {
		c.committed()
	}
}

func (f *follower) close() {
	f.stop()
	<-f.done
}

func (f *follower) run(ctx context.Context) {
	defer close(f.done)
	var notes <-chan struct{}
	if n, ok := f.st.(store.AppendNotifier); ok {
		notes = n.Appended(ctx)
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-tick.C:
		case _, ok := <-notes:
			if !ok {
				notes = nil
			}
		}
		if err := f.catchUp(ctx); err != nil && ctx.Err() == nil {
			f.logf("error: streaming other instances' events: %v", err)
		}
	}
}

// catchUp publishes what the log holds after the last published event.
// It reads without holding f.mu, so the writer never waits on a query.
func (f *follower) catchUp(ctx context.Context) error {
	for {
		after := f.hub.LastSeq()
		recs, err := f.st.Query(ctx, store.Filter{AfterSeq: after, Limit: store.MaxLimit})
		if err != nil {
			return err
		}
		f.mu.Lock()
		// The writer may have published some of them meanwhile.
		last := f.hub.LastSeq()
		items := make([]stream.Item, 0, len(recs))
		hash := ""
		first := len(recs)
		for i, rec := range recs {
			if rec.Seq <= last {
				continue
			}
			first = min(first, i)
			line, err := storedJSON(rec)
			if err != nil {
				f.mu.Unlock()
				return err
			}
			items = append(items, stream.Item{Seq: rec.Seq, Line: line})
			hash = rec.EventHash
		}
		if len(items) > 0 {
			f.publish(items, hash)
		}
		f.mu.Unlock()
		if first < len(recs) {
			if err := f.followed(ctx, recs[first:]); err != nil {
				return err
			}
		}
		if len(recs) < store.MaxLimit {
			return nil
		}
	}
}
