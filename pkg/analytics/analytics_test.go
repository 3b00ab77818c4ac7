package analytics

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// TestOfferDropsNewest: a full queue refuses the newest events and counts
// them by type and reason; what it holds is the oldest, in order (S-08).
func TestOfferDropsNewest(t *testing.T) {
	q := NewQueue(0)
	if q.Cap() != DefaultSize {
		t.Fatalf("Cap() = %d, want %d", q.Cap(), DefaultSize)
	}
	for i := range DefaultSize + 500 {
		ev := Event{Type: "stabilization", Reasons: []string{"BUDGET_SOFT_LIMIT"}, At: fmt.Sprint(i)}
		if i%2 == 1 {
			ev = Event{Type: "metric", Name: "m", At: fmt.Sprint(i)}
		}
		if ok := q.Offer(ev); ok != (i < DefaultSize) {
			t.Fatalf("Offer(#%d) = %t", i, ok)
		}
	}
	want := Drops{Total: 500, ByType: map[string]int64{"stabilization": 250, "metric": 250}, ByReason: map[string]int64{"BUDGET_SOFT_LIMIT": 250}}
	if got := q.Drops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Drops() = %+v, want %+v", got, want)
	}
	if q.Len() != DefaultSize {
		t.Fatalf("Len() = %d", q.Len())
	}
	var got []string
	q.Close()
	err := q.Run(context.Background(), func(b []Event) error {
		if len(b) > MaxBatch {
			t.Errorf("batch of %d", len(b))
		}
		for _, ev := range b {
			got = append(got, ev.At)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != DefaultSize || got[0] != "0" || got[DefaultSize-1] != fmt.Sprint(DefaultSize-1) {
		t.Fatalf("delivered %d events, first %v last %v", len(got), got[0], got[len(got)-1])
	}
	if q.Offer(Event{Type: "metric"}) {
		t.Fatal("Offer after Close accepted an event")
	}
}

// TestOfferWhileSinkBlocks: a consumer stuck in its sink never makes Offer
// wait; the overflow count is exact (seed 004: deterministic in tests).
func TestOfferWhileSinkBlocks(t *testing.T) {
	const size = 10
	q := NewQueue(size)
	inSink, release := make(chan int), make(chan struct{})
	delivered := 0
	done := make(chan error)
	go func() {
		done <- q.Run(context.Background(), func(b []Event) error {
			inSink <- len(b)
			<-release
			delivered += len(b)
			return nil
		})
	}()
	q.Offer(Event{Type: "first"})
	if n := <-inSink; n != 1 {
		t.Fatalf("first batch has %d events", n)
	}
	// The consumer holds one event and waits on release: the queue is empty.
	accepted := 0
	for range size + 7 {
		if q.Offer(Event{Type: "stabilization"}) {
			accepted++
		}
	}
	if accepted != size || q.Drops().ByType["stabilization"] != 7 {
		t.Fatalf("accepted %d, dropped %v; want %d and 7", accepted, q.Drops().ByType, size)
	}
	close(release)
	q.Close()
	go func() {
		for range inSink {
		}
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if delivered != size+1 {
		t.Fatalf("delivered %d, want %d", delivered, size+1)
	}
}

func TestRunEnds(t *testing.T) {
	q := NewQueue(4)
	q.Offer(Event{Type: "metric"})
	boom := errors.New("boom")
	if err := q.Run(context.Background(), func([]Event) error { return boom }); err != boom {
		t.Fatalf("Run = %v, want the sink's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Run(ctx, func([]Event) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

// BenchmarkOffer is the cost a session pays per analytics event.
func BenchmarkOffer(b *testing.B) {
	q := NewQueue(DefaultSize)
	go q.Run(context.Background(), func([]Event) error { return nil })
	ev := Event{Type: "stabilization", Reasons: []string{"BUDGET_SOFT_LIMIT"}}
	b.ReportAllocs()
	for b.Loop() {
		q.Offer(ev)
	}
	q.Close()
}
