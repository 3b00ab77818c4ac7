package detect

import "time"

// DefaultCooldown is secbot's --cooldown default (seed 003 "Running
// secbot": --cooldown 5m).
const DefaultCooldown = 5 * time.Minute

// DefaultCooldownKeys bounds how many (pattern, agent) pairs a Cooldown
// remembers at once.
const DefaultCooldownKeys = 1 << 16

// Cooldown lets one incident through per pattern and agent per period
// (seed 003 "Cooldown period to prevent alert storms") and counts what it
// holds back. It takes the clock as a parameter and does no I/O.
//
// Memory is bounded: a pair is forgotten once its period is over (it would
// be let through anyway), and beyond maxKeys pairs the oldest is forgotten
// early. Agent names come from the events, so a flood of distinct names
// must not grow the map without end; forgetting early lets a duplicate
// incident through rather than holding back a new one.
//
// A Cooldown is not safe for concurrent use.
type Cooldown struct {
	period  time.Duration
	maxKeys int
	last    map[cooldownKey]time.Time // when the pair last got through
	// queue holds the pairs in the order they got through, with that time;
	// an entry whose time differs from last's is stale (the pair got
	// through again later) and is skipped.
	queue      []cooldownEntry
	head       int
	suppressed uint64
}

type cooldownKey struct{ pattern, agent string }

type cooldownEntry struct {
	key cooldownKey
	at  time.Time
}

// NewCooldown returns a cooldown of period remembering up to maxKeys pairs
// (DefaultCooldownKeys when maxKeys <= 0). A period <= 0 holds nothing back.
func NewCooldown(period time.Duration, maxKeys int) *Cooldown {
	if maxKeys <= 0 {
		maxKeys = DefaultCooldownKeys
	}
	return &Cooldown{period: period, maxKeys: maxKeys, last: map[cooldownKey]time.Time{}}
}

// Allow reports whether an incident of pattern about agent may be created
// at now: true when none got through in the period before now (then now
// starts a new period), false otherwise (counted in Suppressed). A clock
// that went backwards lets the incident through.
func (c *Cooldown) Allow(pattern, agent string, now time.Time) bool {
	c.expire(now)
	k := cooldownKey{pattern, agent}
	if at, ok := c.last[k]; ok {
		if d := now.Sub(at); d >= 0 && d < c.period {
			c.suppressed++
			return false
		}
	}
	if c.period <= 0 {
		return true
	}
	if _, ok := c.last[k]; !ok && len(c.last) >= c.maxKeys {
		c.evictOldest()
	}
	c.last[k] = now
	c.queue = append(c.queue, cooldownEntry{k, now})
	if len(c.queue)-c.head > 2*c.maxKeys {
		c.compact()
	}
	return true
}

// Release forgets that pattern and agent got through, so that the next
// match may try again: for an incident that could not be created.
func (c *Cooldown) Release(pattern, agent string) {
	delete(c.last, cooldownKey{pattern, agent}) // its queue entry is now stale
}

// Suppressed returns how many incidents Allow held back.
func (c *Cooldown) Suppressed() uint64 { return c.suppressed }

// Len returns how many pairs are remembered.
func (c *Cooldown) Len() int { return len(c.last) }

// expire forgets the pairs whose period ended by now, oldest first.
func (c *Cooldown) expire(now time.Time) {
	for c.head < len(c.queue) {
		e := c.queue[c.head]
		if at, ok := c.last[e.key]; ok && at.Equal(e.at) {
			if now.Sub(e.at) < c.period {
				break // the rest got through later
			}
			delete(c.last, e.key)
		}
		c.pop()
	}
}

// evictOldest forgets the pair that got through longest ago.
func (c *Cooldown) evictOldest() {
	for c.head < len(c.queue) {
		e := c.queue[c.head]
		c.pop()
		if at, ok := c.last[e.key]; ok && at.Equal(e.at) {
			delete(c.last, e.key)
			return
		}
	}
}

// compact drops the stale entries of the queue. They pile up behind live
// ones when pairs are released and let through again within a period (an
// incident API that keeps failing) or when the clock goes backwards.
func (c *Cooldown) compact() {
	live := make(map[cooldownKey]bool, len(c.last))
	n := 0
	for _, e := range c.queue[c.head:] {
		if at, ok := c.last[e.key]; ok && at.Equal(e.at) && !live[e.key] {
			live[e.key] = true
			c.queue[n] = e
			n++
		}
	}
	clear(c.queue[n:])
	c.queue, c.head = c.queue[:n], 0
}

// pop drops the queue's first entry, compacting the slice once half of it
// is dead so that the backing array does not grow without bound.
func (c *Cooldown) pop() {
	c.queue[c.head] = cooldownEntry{}
	c.head++
	if c.head == len(c.queue) {
		c.queue, c.head = c.queue[:0], 0
	} else if c.head > 64 && c.head*2 > len(c.queue) {
		n := copy(c.queue, c.queue[c.head:])
		clear(c.queue[n:])
		c.queue, c.head = c.queue[:n], 0
	}
}
