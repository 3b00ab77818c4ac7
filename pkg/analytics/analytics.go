// Package analytics is seed 004's analytics path: a bounded queue that a
// session driver offers reporting events to without ever blocking, drained by
// one consumer goroutine into a batch writer, off the reducer's hot path.
package analytics

import (
	"context"
	"maps"
	"sync"
)

// DefaultSize is the queue's bound (seed 004 "Analytics Queue Policy":
// maxsize=2000).
const DefaultSize = 2000

// MaxBatch bounds what one call of the sink receives.
const MaxBatch = 256

// Event is one analytics record: reporting and tuning state only, never
// something a policy decision reads (seed 004 "State Separation").
type Event struct {
	// Type is what happened: an effect type (stabilization, metric).
	Type string `json:"type"`
	// Reasons are the reason codes it carried, if any.
	Reasons []string `json:"reasons,omitempty"`
	// Name and Labels are a metric's.
	Name   string            `json:"name,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// At is the event's time as the driver stamped it (RFC 3339).
	At string `json:"at,omitempty"`
}

// Drops are what the queue refused because it was full, counted by event
// type (required by seed 004) and by reason code (its optional debug count).
type Drops struct {
	Total    int64            `json:"total"`
	ByType   map[string]int64 `json:"drop_count_by_type"`
	ByReason map[string]int64 `json:"drop_count_by_reason"`
}

// Queue is bounded, and Offer never waits: when it is full the newest event
// is dropped and counted (seed 004: overflow drop_newest, put_nowait only).
type Queue struct {
	ch      chan Event
	closing chan struct{}
	once    sync.Once

	mu    sync.Mutex // guards drops; taken on the drop path only
	drops Drops
}

// NewQueue returns a queue holding at most size events (DefaultSize when
// size ≤ 0).
func NewQueue(size int) *Queue {
	if size <= 0 {
		size = DefaultSize
	}
	return &Queue{
		ch:      make(chan Event, size),
		closing: make(chan struct{}),
		drops:   Drops{ByType: map[string]int64{}, ByReason: map[string]int64{}},
	}
}

// Offer enqueues ev if there is room and reports whether it did; a full
// queue drops ev, the newest, and counts it. It never blocks, so a slow or
// stuck consumer never slows a session. After Close everything is dropped.
func (q *Queue) Offer(ev Event) bool {
	select {
	case <-q.closing:
	default:
		select {
		case q.ch <- ev:
			return true
		default:
		}
	}
	q.mu.Lock()
	q.drops.Total++
	q.drops.ByType[ev.Type]++
	for _, r := range ev.Reasons {
		q.drops.ByReason[r]++
	}
	q.mu.Unlock()
	return false
}

// Len is the number of events waiting.
func (q *Queue) Len() int { return len(q.ch) }

// Cap is the queue's bound.
func (q *Queue) Cap() int { return cap(q.ch) }

// Drops returns a copy of the drop counts.
func (q *Queue) Drops() Drops {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Drops{Total: q.drops.Total, ByType: maps.Clone(q.drops.ByType), ByReason: maps.Clone(q.drops.ByReason)}
}

// Close makes Run deliver what is queued and return; later offers are
// dropped. It may be called more than once.
func (q *Queue) Close() { q.once.Do(func() { close(q.closing) }) }

// Run is the single consumer: it hands the sink batches of at most MaxBatch
// events, in the order they were offered, until Close (after delivering
// what was queued) or until ctx ends (dropping it). A sink error is
// returned at once: analytics are best effort, and the caller decides
// whether to say so. Run must not be called twice at a time.
func (q *Queue) Run(ctx context.Context, sink func([]Event) error) error {
	batch := make([]Event, 0, MaxBatch)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-q.ch:
			batch = q.fill(append(batch[:0], ev))
		case <-q.closing:
			batch = q.fill(batch[:0])
			if len(batch) == 0 {
				return nil
			}
		}
		if err := sink(batch); err != nil {
			return err
		}
		clear(batch) // the reused batch must not keep old events' labels alive
	}
}

// fill adds what is queued now, without waiting, up to MaxBatch.
func (q *Queue) fill(batch []Event) []Event {
	for len(batch) < MaxBatch {
		select {
		case ev := <-q.ch:
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}
