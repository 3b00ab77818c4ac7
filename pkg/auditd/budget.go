package auditd

import (
	"context"
	"sync"
)

// byteBudget bounds the bytes of batch bodies being decoded and stored at
// once. Each batch holds several copies of its events while it is in
// flight (the body, the decoded events, their canonical bytes, the stored
// JSON, the answer), so without a bound 32 clients sending 1,000-event
// batches took auditd past 250 MiB; the memory bar is 100 MiB
// (docs/BENCHMARKS.md). Batches over the budget wait their turn; small
// ones (the 32-128 events that give most of the throughput) rarely do.
type byteBudget struct {
	acquireMu sync.Mutex    // one acquirer at a time: no two half-filled waits
	tokens    chan struct{} // one per unit in use
}

// budgetUnit is the granularity of the budget.
const budgetUnit = 16 << 10

func newByteBudget(bytes int) *byteBudget {
	return &byteBudget{tokens: make(chan struct{}, max(bytes/budgetUnit, 1))}
}

// acquire takes n bytes of the budget (at most all of it), waiting until
// they are free or ctx ends, and returns their release.
func (b *byteBudget) acquire(ctx context.Context, n int) (release func(), err error) {
	units := min(max((n+budgetUnit-1)/budgetUnit, 1), cap(b.tokens))
	b.acquireMu.Lock()
	defer b.acquireMu.Unlock()
	for taken := 0; taken < units; taken++ {
		select {
		case b.tokens <- struct{}{}:
		case <-ctx.Done():
			b.release(taken)
			return nil, ctx.Err()
		}
	}
	return func() { b.release(units) }, nil
}

func (b *byteBudget) release(units int) {
	for range units {
		<-b.tokens
	}
}
