package respond

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
)

// The engine with its world injected (issue 20): a real auditd and its
// stream in the test process, a clock the test moves, reports and counters
// kept in memory.

var t0 = time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)

type counts struct {
	mu                                sync.Mutex
	matched, suppressed, dry, created map[string]int
	events                            chan int64 // each event read, for the test to wait on
}

func newCounts() *counts {
	return &counts{matched: map[string]int{}, suppressed: map[string]int{}, dry: map[string]int{}, created: map[string]int{},
		events: make(chan int64, 100)}
}

func (c *counts) Event(seq int64) { c.events <- seq }
func (c *counts) Reconnect()      {}
func (c *counts) Match(p string) {
	c.mu.Lock()
	c.matched[p]++
	c.mu.Unlock()
}
func (c *counts) Suppressed(p string) { c.mu.Lock(); c.suppressed[p]++; c.mu.Unlock() }
func (c *counts) DryRun(p string)     { c.mu.Lock(); c.dry[p]++; c.mu.Unlock() }
func (c *counts) Created(p string)    { c.mu.Lock(); c.created[p]++; c.mu.Unlock() }
func (c *counts) Failed(string)       {}

func sqlError(agent string) audit.Event {
	return audit.Event{EventType: audit.TypeToolExecution, Agent: agent, ActionClass: audit.ActionRead,
		Tool: &audit.Tool{Name: "psql", RawCommand: `psql -c "select * from users where name = 'x' OR 1=1"`,
			Error: "ERROR:  syntax error at or near \"OR\"\nLINE 1: select * from users where name = 'x' OR 1=1"}}
}

func TestCooldownWithAnInjectedClock(t *testing.T) {
	tests := []struct {
		name       string
		agents     []string      // one SQL error each
		step       time.Duration // the clock's move between events
		dryRun     bool
		reported   int
		suppressed int
	}{
		{name: "one agent within the cooldown: one incident", agents: []string{"a", "a", "a"}, step: time.Minute, dryRun: true, reported: 1, suppressed: 2},
		{name: "past the cooldown: another", agents: []string{"a", "a"}, step: 6 * time.Minute, dryRun: true, reported: 2},
		{name: "another agent: its own incident", agents: []string{"a", "b"}, step: time.Second, dryRun: true, reported: 2},
		{name: "created through the API", agents: []string{"a", "a"}, step: time.Second, reported: 1, suppressed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := auditdtest.Start(t, auditdtest.Options{})
			for _, agent := range tt.agents {
				c, _ := client.New(d.URL, client.WithUser(agent))
				if _, err := c.Append(t.Context(), sqlError(agent)); err != nil {
					t.Fatal(err)
				}
			}
			c, _ := client.New(d.URL, client.WithUser("secbot"))
			var mu sync.Mutex
			now := t0
			var reports []govapi.IncidentInput
			cnt := newCounts()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := New(Config{Socket: d.Socket, Gateway: d.URL, SinceSeq: 0, Cooldown: 5 * time.Minute, DryRun: tt.dryRun},
				Deps{
					Client: c,
					Now: func() time.Time {
						mu.Lock()
						defer mu.Unlock()
						now = now.Add(tt.step)
						return now
					},
					Sleep: func(ctx context.Context, d time.Duration) error {
						<-ctx.Done() // the stream never ends by itself here
						return ctx.Err()
					},
					Logf: func(format string, args ...any) { t.Logf(format, args...) },
					Report: func(in govapi.IncidentInput, ev *govapi.EventRef, at time.Time) {
						if (ev == nil) != tt.dryRun {
							t.Errorf("report of %s with event %v in a dry run %v", in.Type, ev, tt.dryRun)
						}
						mu.Lock()
						reports = append(reports, in)
						mu.Unlock()
					},
					Counters: cnt,
				})
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			// The stream replays every event; the incidents this run
			// creates come after them and match nothing.
			for range tt.agents {
				select {
				case err := <-done:
					t.Fatalf("Run ended early: %v", err)
				case <-cnt.events:
				}
			}
			cancel()
			<-done
			mu.Lock()
			defer mu.Unlock()
			if len(reports) != tt.reported || cnt.suppressed[detect.PotentialSQLInjection] != tt.suppressed {
				t.Errorf("%d reports, %d suppressed; want %d, %d", len(reports), cnt.suppressed[detect.PotentialSQLInjection], tt.reported, tt.suppressed)
			}
			if tt.dryRun && cnt.dry[detect.PotentialSQLInjection] != tt.reported || !tt.dryRun && cnt.created[detect.PotentialSQLInjection] != tt.reported {
				t.Errorf("counters %+v", cnt)
			}
			for _, in := range reports {
				if in.Source != Source || in.Type != detect.PotentialSQLInjection || in.IncidentID == "" {
					t.Errorf("incident %+v", in)
				}
			}
			if r.LastSeq() != int64(len(tt.agents)) && tt.dryRun {
				t.Errorf("LastSeq = %d", r.LastSeq())
			}
		})
	}
}
