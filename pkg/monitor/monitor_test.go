package monitor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
)

// The engine with its world injected (issue 20): a real auditd in the test
// process, a fixed clock, alerts and state kept in memory.

var t0 = time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)

// memStore is a StateStore in memory.
type memStore struct {
	mu    sync.Mutex
	saved []State
	fail  error
}

func (s *memStore) Path() string { return "mem" }
func (s *memStore) Save(st State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.saved = append(s.saved, st)
	return nil
}

func (s *memStore) last() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.saved) == 0 {
		return State{}
	}
	return s.saved[len(s.saved)-1]
}

// world is one Monitor's injected dependencies, recording what it did.
type world struct {
	mu     sync.Mutex
	alerts []detect.Alert
	logs   []string
	store  *memStore
}

func (w *world) deps(c *client.Client, now time.Time) Deps {
	return Deps{
		Client: c,
		Now:    func() time.Time { return now },
		Sleep:  func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		Logf: func(format string, args ...any) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.logs = append(w.logs, fmt.Sprintf(format, args...))
		},
		Emit: func(a detect.Alert) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.alerts = append(w.alerts, a)
			return nil
		},
		Store: w.store,
		State: State{SchemaVersion: StateVersion},
	}
}

func (w *world) types() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, a := range w.alerts {
		out = append(out, a.Type)
	}
	return out
}

func tool(agent, class, command string) audit.Event {
	return audit.Event{EventType: audit.TypeToolExecution, Agent: agent, ActionClass: class,
		Tool: &audit.Tool{Name: "bash", RawCommand: command}, Outcome: &audit.Outcome{Status: "success"}}
}

func TestRunOnce(t *testing.T) {
	allDay := detect.Hours{Start: 0, End: 24}
	tests := []struct {
		name   string
		events []audit.Event
		cfg    Config
		want   []string // alert types, in order
	}{
		{
			name:   "nothing to say",
			events: []audit.Event{tool("a", "read", "ls")},
			cfg:    Config{Events: detect.EventWatchConfig{MaxEventsPerMinute: 100, Hours: allDay}},
			want:   nil,
		},
		{
			name:   "a destructive action without an approval",
			events: []audit.Event{tool("db-agent", "destructive", "DROP TABLE t")},
			cfg:    Config{Events: detect.EventWatchConfig{MaxEventsPerMinute: 100, Hours: allDay}},
			want:   []string{detect.UnauthorizedDestructive},
		},
		{
			name:   "off hours by auditd's timestamps",
			events: []audit.Event{tool("a", "read", "ls")},
			cfg:    Config{Events: detect.EventWatchConfig{MaxEventsPerMinute: 100, Hours: detect.Hours{Start: 6, End: 9}}},
			want:   []string{detect.OffHours},
		},
		{
			name:   "high volume within a minute",
			events: []audit.Event{tool("a", "read", "1"), tool("a", "read", "2"), tool("a", "read", "3")},
			cfg:    Config{Events: detect.EventWatchConfig{MaxEventsPerMinute: 2, Hours: allDay}},
			want:   []string{detect.HighVolume},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// auditd stamps events with t0 (12:00 UTC), the detection
			// clock too: off_hours does not depend on when the suite runs.
			d := auditdtest.Start(t, auditdtest.Options{Config: func(c *auditd.Config) { c.Now = func() time.Time { return t0 } }})
			c, err := client.New(d.URL)
			if err != nil {
				t.Fatal(err)
			}
			var last audit.Event
			for _, ev := range tt.events {
				// Recorded as its agent (local mode names the caller).
				ac, _ := client.New(d.URL, client.WithUser(ev.Agent))
				if last, err = ac.Append(t.Context(), ev); err != nil {
					t.Fatal(err)
				}
			}
			w := &world{store: &memStore{}}
			cfg := tt.cfg
			cfg.AuditURL, cfg.SinceSeq, cfg.VerifyInterval = d.URL, 0, time.Minute
			clock := t0.Add(time.Second)
			n, err := New(cfg, w.deps(c, clock)).RunOnce(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got := w.types(); n != len(tt.want) || !slices.Equal(got, tt.want) {
				t.Errorf("%d alerts %v, want %v\nlogs: %q", n, got, tt.want, w.logs)
			}
			st := w.store.last()
			if st.Cursor == nil || st.Cursor.Seq != last.Seq || st.Cursor.EventHash != last.EventHash {
				t.Errorf("state cursor = %+v, want seq %d", st.Cursor, last.Seq)
			}
			if st.Pin == nil || st.Pin.Size != last.Seq || !st.Pin.VerifiedAt.Equal(clock.UTC()) {
				t.Errorf("state pin = %+v, want size %d verified at the injected clock", st.Pin, last.Seq)
			}
		})
	}
}

// A failure the engine cannot handle is an *Error with a hint; the
// command maps it to an exit status.
func TestRunOnceUnreachable(t *testing.T) {
	c, err := client.New("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{}
	_, err = New(Config{AuditURL: "http://127.0.0.1:1", SinceSeq: -1}, w.deps(c, t0)).RunOnce(t.Context())
	e, ok := err.(*Error)
	if !ok || !strings.HasPrefix(e.Msg, "cannot reach auditd at http://127.0.0.1:1: ") || !strings.Contains(e.Hint, "--url") {
		t.Errorf("err = %#v", err)
	}
}

// A state that cannot be saved is said once, and the run goes on.
func TestStateSaveFailure(t *testing.T) {
	d := auditdtest.Start(t, auditdtest.Options{})
	c, _ := client.New(d.URL, client.WithUser("a"))
	if _, err := c.Append(t.Context(), tool("a", "read", "ls")); err != nil {
		t.Fatal(err)
	}
	w := &world{store: &memStore{fail: fmt.Errorf("disk full")}}
	cfg := Config{AuditURL: d.URL, SinceSeq: 0, Events: detect.EventWatchConfig{MaxEventsPerMinute: 100, Hours: detect.Hours{Start: 0, End: 24}}}
	if _, err := New(cfg, w.deps(c, time.Now())).RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	var said int
	for _, l := range w.logs {
		if strings.HasPrefix(l, "error: writing the state file mem: disk full;") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("said %d times:\n%q", said, w.logs)
	}
}
