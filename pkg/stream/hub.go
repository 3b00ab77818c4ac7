// Package stream publishes committed audit events to subscribers as JSON
// Lines over a Unix socket, with replay from a sequence number so that a
// subscriber that reconnects misses nothing (DESIGN §6 "Unix socket stream").
package stream

import (
	"sync"
	"sync/atomic"
)

// Item is one committed event as subscribers receive it: its sequence number
// and its JSON object (without the trailing newline). Line is shared by every
// subscriber and must not be modified.
type Item struct {
	Seq  int64
	Line []byte
}

// DefaultBuffer is how many events a subscriber may fall behind the writer
// before it is dropped.
const DefaultBuffer = 1024

// Hub fans committed events out to live subscribers. Publish never blocks:
// each subscriber has a bounded channel, and a subscriber whose channel is
// full is dropped (seed 003's broadcaster blocked its writer on a slow
// reader; an audit log must not stall because a watcher did).
type Hub struct {
	buffer int

	mu      sync.Mutex
	subs    map[*Subscription]struct{}
	closed  bool
	lastSeq int64

	dropped atomic.Uint64
}

// NewHub returns a hub whose subscribers may fall buffer events behind
// (DefaultBuffer when buffer <= 0). lastSeq is the sequence number of the
// last event already committed before the hub starts.
func NewHub(buffer int, lastSeq int64) *Hub {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	return &Hub{buffer: buffer, subs: map[*Subscription]struct{}{}, lastSeq: lastSeq}
}

// Subscription is one live subscriber. C delivers events in seq order and is
// closed when the subscriber is dropped, unsubscribed, or the hub closes.
type Subscription struct {
	C <-chan Item

	c       chan Item
	dropped bool // set before c is closed by a drop
}

// Dropped reports whether the subscription ended because the subscriber fell
// too far behind. Call it only after C is closed.
func (s *Subscription) Dropped() bool { return s.dropped }

// Subscribe registers a live subscriber. Events published after Subscribe
// returns are delivered; earlier ones are not (replay them from the store).
// It returns nil when the hub is closed.
func (h *Hub) Subscribe() *Subscription {
	c := make(chan Item, h.buffer)
	s := &Subscription{C: c, c: c}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.subs[s] = struct{}{}
	return s
}

// Unsubscribe removes s and closes its channel; it is safe to call more than
// once and after s was dropped.
func (h *Hub) Unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.c)
	}
}

// Publish delivers committed events, in seq order, to every subscriber.
// It never waits: a subscriber without room for all of them is dropped.
func (h *Hub) Publish(items []Item) {
	if len(items) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastSeq = items[len(items)-1].Seq
	for s := range h.subs {
		if cap(s.c)-len(s.c) < len(items) {
			// Not even part of the batch: a subscriber either gets every
			// event or is told it was dropped, never a silent gap.
			s.dropped = true
			delete(h.subs, s)
			close(s.c)
			h.dropped.Add(1)
			continue
		}
		for _, it := range items {
			s.c <- it // cannot block: room was checked under h.mu, the only sender
		}
	}
}

// LastSeq returns the seq of the last published event.
func (h *Hub) LastSeq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastSeq
}

// Subscribers returns the number of live subscribers.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Dropped returns how many subscribers were dropped for falling behind.
func (h *Hub) Dropped() uint64 { return h.dropped.Load() }

// Close ends every subscription; later Subscribe calls return nil.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.c)
	}
}
