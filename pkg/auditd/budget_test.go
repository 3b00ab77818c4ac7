package auditd

import (
	"context"
	"testing"
	"time"
)

// The budget admits batches until it is used up, makes the next wait until
// one is released, and lets a waiter give up when its context ends.
func TestByteBudget(t *testing.T) {
	b := newByteBudget(4 * budgetUnit)
	ctx := context.Background()
	r1, err := b.acquire(ctx, 3*budgetUnit)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.acquire(ctx, 1) // rounds up to one unit: the budget is full
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := b.acquire(short, budgetUnit); err == nil {
		t.Fatal("acquired beyond the budget")
	}
	if n := len(b.tokens); n != 4 {
		t.Fatalf("a cancelled wait kept %d units", n-4)
	}
	got := make(chan func(), 1)
	go func() {
		r, err := b.acquire(ctx, 100*budgetUnit) // more than the budget: all of it
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	r1()
	r2()
	r3 := <-got
	if n := len(b.tokens); n != 4 {
		t.Fatalf("%d units in use, want the whole budget (4)", n)
	}
	r3()
	if n := len(b.tokens); n != 0 {
		t.Fatalf("%d units still in use", n)
	}
}
