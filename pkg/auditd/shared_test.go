package auditd_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/govkit/govkit/internal/pgtest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/store/postgres"
)

// startShared runs an auditd Server in the test process on the PostgreSQL
// database dsn, with its own store (its own connections, as another
// process would have), until the test ends.
func startShared(t *testing.T, dsn string) (*client.Client, string) {
	t.Helper()
	d := startSharedWith(t, dsn, nil)
	return d.c, d.sock
}

// startSharedWith is startShared with the config changed by mod (when not
// nil).
func startSharedWith(t *testing.T, dsn string, mod func(*auditd.Config)) served {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := auditd.DefaultConfig()
	cfg.Logf = t.Logf
	if mod != nil {
		mod(&cfg)
	}
	return serve(t, cfg, st)
}

// Two auditd servers on one PostgreSQL database (issue 19): concurrent
// appends through both make one chain; an event id posted to both is
// stored once, created by one and returned as stored by the other; each
// server's stream carries every event in seq order, the other's included.
func TestSharedServers(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	a, sockA := startShared(t, dsn)
	b, sockB := startShared(t, dsn)
	ctx := ctxT(t)

	const workers, each = 8, 25
	var mu sync.Mutex
	created := map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				ev := toolEvent(fmt.Sprintf("agent-%d", w), fmt.Sprintf("echo %d", i))
				ev.EventID = fmt.Sprintf("both-%d-%d", w, i)
				// The same event to both servers at once.
				var inner sync.WaitGroup
				for _, c := range []*client.Client{a, b} {
					inner.Go(func() {
						res, err := c.AppendResult(ctx, ev)
						if err != nil {
							t.Error(err)
							return
						}
						if res.Created {
							mu.Lock()
							created[res.Event.EventID]++
							mu.Unlock()
						}
					})
				}
				inner.Wait()
			}
		})
	}
	wg.Wait()
	if len(created) != workers*each {
		t.Fatalf("%d events created, want %d", len(created), workers*each)
	}
	for id, n := range created {
		if n != 1 {
			t.Fatalf("event %s created %d times", id, n)
		}
	}
	rep, err := a.Verify(ctx)
	if err != nil || !rep.Verified || rep.TotalEvents != workers*each {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	for _, sock := range []string{sockA, sockB} {
		var next int64 = 1
		sctx, cancel := context.WithCancel(ctx)
		err := client.Subscribe(sctx, sock, 0, func(ev audit.Event) error {
			if ev.Seq != next {
				return fmt.Errorf("stream: seq %d, want %d", ev.Seq, next)
			}
			if next == workers*each {
				cancel()
			}
			next++
			return nil
		})
		cancel()
		if next != workers*each+1 {
			t.Fatalf("stream of %s: %d events, %v", sock, next-1, err)
		}
	}
	// Live: an event appended through a reaches b's stream.
	sctx, cancel := context.WithCancel(ctx)
	got := make(chan int64, 1)
	go client.Subscribe(sctx, sockB, workers*each, func(ev audit.Event) error { got <- ev.Seq; cancel(); return nil })
	ev, err := a.Append(ctx, toolEvent("live", "ls"))
	if err != nil {
		t.Fatal(err)
	}
	if seq := <-got; seq != ev.Seq {
		t.Fatalf("b streamed seq %d, a appended %d", seq, ev.Seq)
	}
}
