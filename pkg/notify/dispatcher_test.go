package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
)

// funcNotifier is a notifier whose delivery the test writes.
type funcNotifier struct {
	name string
	fn   func(ctx context.Context, m Message) error
}

func (f *funcNotifier) Name() string                                { return f.name }
func (f *funcNotifier) Notify(ctx context.Context, m Message) error { return f.fn(ctx, m) }

// record collects Observe and Logf calls, and is the dispatcher's clock:
// it starts at now and moves only when the dispatcher sleeps.
type record struct {
	mu      sync.Mutex
	results map[string][]string // notifier → results in order
	logs    []string
	sleeps  []time.Duration
	clock   time.Time
}

func newRecord() *record { return &record{results: map[string][]string{}, clock: now} }

func (r *record) now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clock
}

func (r *record) advance(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clock = r.clock.Add(d)
}

func (r *record) options() Options {
	return Options{
		Now: r.now,
		Observe: func(n, res string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.results[n] = append(r.results[n], res)
		},
		Logf: func(f string, a ...any) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.logs = append(r.logs, fmt.Sprintf(f, a...))
		},
		Sleep: func(ctx context.Context, d time.Duration) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.sleeps = append(r.sleeps, d)
			if err := ctx.Err(); err != nil {
				return err
			}
			r.clock = r.clock.Add(d)
			return nil
		},
	}
}

func (r *record) get(n string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.results[n], " ")
}

func (r *record) count(n, result string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := 0
	for _, x := range r.results[n] {
		if x == result {
			c++
		}
	}
	return c
}

func (r *record) allLogs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.logs, "\n")
}

func msg(id string) Message {
	return Message{Kind: Requested, Request: approval.Request{ID: id}, Now: now}
}

func closeNow(t *testing.T, d *Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// within checks a jittered delay: at most want, at least 80% of it.
func within(got, want time.Duration) bool { return got <= want && got >= want*8/10 }

func TestDispatcherRetriesWithBackoff(t *testing.T) {
	rec := newRecord()
	var calls atomic.Int32
	n := &funcNotifier{"slack", func(context.Context, Message) error {
		if calls.Add(1) <= 3 {
			return errors.New("503 from slack")
		}
		return nil
	}}
	d := NewDispatcher([]Notifier{n}, rec.options())
	d.Send(msg("apr_1"))
	closeNow(t, d)
	if got := rec.get("slack"); got != "retry retry retry sent" {
		t.Errorf("results = %q", got)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	if len(rec.sleeps) != len(want) {
		t.Fatalf("sleeps = %v; want about %v", rec.sleeps, want)
	}
	for i := range want {
		if !within(rec.sleeps[i], want[i]) {
			t.Errorf("sleep %d = %s; want %s minus up to 20%%", i, rec.sleeps[i], want[i])
		}
	}
	if logs := rec.allLogs(); !strings.Contains(logs, "slack") || !strings.Contains(logs, "apr_1") || !strings.Contains(logs, "503 from slack") {
		t.Errorf("logs do not name notifier, approval and error:\n%s", logs)
	}
}

func TestDispatcherGivesUp(t *testing.T) {
	rec := newRecord()
	o := rec.options()
	o.Attempts, o.Backoff = 6, 20*time.Second
	var calls atomic.Int32
	n := &funcNotifier{"email", func(context.Context, Message) error {
		calls.Add(1)
		return errors.New("connection refused")
	}}
	d := NewDispatcher([]Notifier{n}, o)
	d.Send(msg("apr_2"))
	closeNow(t, d)
	if calls.Load() != 6 {
		t.Errorf("%d attempts; want 6", calls.Load())
	}
	if got := rec.get("email"); got != "retry retry retry retry retry failed" {
		t.Errorf("results = %q", got)
	}
	// 20s, 40s, then the 1m cap.
	for i, want := range []time.Duration{20 * time.Second, 40 * time.Second, time.Minute, time.Minute, time.Minute} {
		if !within(rec.sleeps[i], want) {
			t.Errorf("sleep %d = %s; want %s minus jitter", i, rec.sleeps[i], want)
		}
	}
	if logs := rec.allLogs(); !strings.Contains(logs, "email: failed to deliver approval_requested for approval apr_2 after 6 attempts: connection refused") {
		t.Errorf("logs:\n%s", logs)
	}
}

func TestDispatcherPermanentAndRetryAfter(t *testing.T) {
	rec := newRecord()
	var calls atomic.Int32
	perm := &funcNotifier{"webhook", func(context.Context, Message) error {
		calls.Add(1)
		return permanent(errors.New("404 no_service"))
	}}
	var limited atomic.Int32
	rl := &funcNotifier{"slack", func(context.Context, Message) error {
		if limited.Add(1) == 1 {
			return &retryAfterError{errors.New("429"), 30 * time.Second}
		}
		return nil
	}}
	d := NewDispatcher([]Notifier{perm, rl}, rec.options())
	d.Send(msg("apr_3"))
	closeNow(t, d)
	if calls.Load() != 1 || rec.get("webhook") != "failed" {
		t.Errorf("permanent error: %d attempts, results %q; want 1, failed", calls.Load(), rec.get("webhook"))
	}
	if rec.get("slack") != "retry sent" || len(rec.sleeps) != 1 || rec.sleeps[0] != 30*time.Second {
		t.Errorf("rate limit: results %q, sleeps %v; want one 30s wait", rec.get("slack"), rec.sleeps)
	}
}

// Send never blocks, even when a notifier hangs: a full queue drops.
func TestDispatcherSendNeverBlocks(t *testing.T) {
	rec := newRecord()
	o := rec.options()
	o.QueueSize = 2
	release := make(chan struct{})
	n := &funcNotifier{"email", func(ctx context.Context, _ Message) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	d := NewDispatcher([]Notifier{n}, o)
	// The notifier holds every delivery until release: a Send that waited
	// for it would never return (the hang guard says so).
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range 10 {
			d.Send(msg(fmt.Sprintf("apr_%d", i)))
		}
	}()
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("Send waited for a hung notifier (no return within 30s)")
	}
	dropped := rec.count("email", ResultDropped)
	if dropped < 7 || dropped > 8 {
		t.Errorf("%d dropped; want 7 or 8 (queue 2, maybe one in flight)", dropped)
	}
	if logs := rec.allLogs(); !strings.Contains(logs, "email: dropped approval_requested for approval apr_9: its queue is full (2 messages)") {
		t.Errorf("logs:\n%s", logs)
	}
	close(release)
	closeNow(t, d)
	if sent := rec.count("email", ResultSent); sent+dropped != 10 {
		t.Errorf("%d sent + %d dropped; want 10", sent, dropped)
	}
	d.Send(msg("late"))
	if !strings.Contains(rec.allLogs(), "approval late: the dispatcher is closed") || rec.count("email", ResultDropped) != dropped+1 {
		t.Errorf("Send after Close was not dropped")
	}
}

// A dead SMTP server must not delay Slack.
func TestDispatcherSlowNotifierDoesNotDelayOthers(t *testing.T) {
	rec := newRecord()
	release := make(chan struct{})
	slow := &funcNotifier{"email", func(ctx context.Context, _ Message) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	got := make(chan string, 3)
	fast := &funcNotifier{"slack", func(_ context.Context, m Message) error {
		got <- m.Request.ID
		return nil
	}}
	d := NewDispatcher([]Notifier{slow, fast}, rec.options())
	for _, id := range []string{"a", "b", "c"} {
		d.Send(msg(id))
	}
	for _, want := range []string{"a", "b", "c"} {
		select {
		case id := <-got:
			if id != want {
				t.Errorf("slack got %s; want %s (in order)", id, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("slack waited for the hung email notifier")
		}
	}
	close(release)
	closeNow(t, d)
	if rec.get("email") != "sent sent sent" {
		t.Errorf("email results = %q", rec.get("email"))
	}
}

func TestDispatcherCloseDrains(t *testing.T) {
	rec := newRecord()
	var mu sync.Mutex
	var delivered []string
	release := make(chan struct{}) // deliveries wait for it: Close finds them queued
	n := &funcNotifier{"webhook", func(context.Context, Message) error {
		<-release
		mu.Lock()
		defer mu.Unlock()
		delivered = append(delivered, "x")
		return nil
	}}
	d := NewDispatcher([]Notifier{n}, rec.options())
	for i := range 50 {
		d.Send(msg(fmt.Sprint(i)))
	}
	close(release)
	closeNow(t, d)
	if len(delivered) != 50 || rec.count("webhook", ResultSent) != 50 {
		t.Errorf("delivered %d of 50 before Close returned", len(delivered))
	}
	closeNow(t, d) // a second Close is harmless
}

// When Close's context ends, it returns and what is left is reported.
func TestDispatcherCloseDeadline(t *testing.T) {
	rec := newRecord()
	o := rec.options()
	o.AttemptTimeout = time.Hour
	n := &funcNotifier{"email", func(ctx context.Context, _ Message) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	d := NewDispatcher([]Notifier{n}, o)
	for i := range 3 {
		d.Send(msg(fmt.Sprint(i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v; want the deadline", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for rec.count("email", ResultFailed) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := rec.count("email", ResultFailed); got != 3 {
		t.Errorf("%d abandoned messages reported failed; want 3", got)
	}
}

func TestDispatcherAttemptTimeoutAndPanic(t *testing.T) {
	rec := newRecord()
	o := rec.options()
	o.Attempts, o.AttemptTimeout = 2, 20*time.Millisecond
	hang := &funcNotifier{"webhook", func(ctx context.Context, _ Message) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	boom := &funcNotifier{"slack", func(context.Context, Message) error { panic("nil map") }}
	d := NewDispatcher([]Notifier{hang, boom}, o)
	d.Send(msg("apr_t"))
	closeNow(t, d)
	if rec.get("webhook") != "retry failed" || rec.get("slack") != "retry failed" {
		t.Errorf("results webhook %q, slack %q", rec.get("webhook"), rec.get("slack"))
	}
	if logs := rec.allLogs(); !strings.Contains(logs, "context deadline exceeded") || !strings.Contains(logs, "notifier panicked: nil map") {
		t.Errorf("logs:\n%s", logs)
	}
}

// A retried message shows the TTL at delivery, not at Send: its Now
// moves on by the time it spent queued and waiting, on the dispatcher's
// clock (here one that moves only when the dispatcher sleeps, or when the
// test says so).
func TestDispatcherAdvancesNow(t *testing.T) {
	rec := newRecord()
	var nows []time.Time
	n := &funcNotifier{"slack", func(_ context.Context, m Message) error {
		nows = append(nows, m.Now)
		if len(nows) < 3 {
			rec.advance(time.Second) // the failing attempt's own time
			return errors.New("try again")
		}
		return nil
	}}
	d := NewDispatcher([]Notifier{n}, rec.options())
	d.Send(msg("apr_n"))
	closeNow(t, d)
	if len(rec.sleeps) != 2 || len(nows) != 3 {
		t.Fatalf("%d attempts, sleeps %v; want 3 and 2", len(nows), rec.sleeps)
	}
	want := []time.Time{now, now.Add(time.Second + rec.sleeps[0]), now.Add(2*time.Second + rec.sleeps[0] + rec.sleeps[1])}
	for i := range want {
		if !nows[i].Equal(want[i]) {
			t.Errorf("attempt %d: Now %v, want %v (sleeps %v)", i+1, nows[i], want[i], rec.sleeps)
		}
	}
}

// A message sent without a Now gets the dispatcher's clock's, never the
// wall clock's; one sent with its own keeps it.
func TestDispatcherStampsNow(t *testing.T) {
	rec := newRecord()
	rec.advance(time.Hour)
	var got []time.Time
	n := &funcNotifier{"slack", func(_ context.Context, m Message) error {
		got = append(got, m.Now)
		return nil
	}}
	d := NewDispatcher([]Notifier{n}, rec.options())
	d.Send(Message{Kind: KindNotice, Notice: &Notice{Subject: "x"}})
	d.Send(msg("apr_own"))
	closeNow(t, d)
	if len(got) != 2 || !got[0].Equal(now.Add(time.Hour)) || !got[1].Equal(now) {
		t.Errorf("Now = %v; want %v, then the message's own %v", got, now.Add(time.Hour), now)
	}
}

func TestDispatcherNeedsAClock(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewDispatcher without Options.Now did not panic")
		}
	}()
	NewDispatcher(nil, Options{})
}

// End to end through the real Slack notifier: the log names the notifier,
// the approval and the error, never the webhook's secret path.
func TestDispatcherLogsRedactSlackURL(t *testing.T) {
	h := newHook(t)
	h.status = http.StatusInternalServerError
	ns, err := New(Config{SlackWebhook: h.srv.URL + "/services/T0/B0/topsecret"})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecord()
	o := rec.options()
	o.Attempts = 2
	d := NewDispatcher(ns, o)
	d.Send(Message{Kind: Requested, Request: pending(t), Now: now})
	closeNow(t, d)
	logs := rec.allLogs()
	if strings.Contains(logs, "topsecret") || strings.Contains(logs, "/services/") {
		t.Errorf("logs show the webhook URL:\n%s", logs)
	}
	for _, want := range []string{"slack:", "approval apr_01HX", "500 Internal Server Error"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if rec.get("slack") != "retry failed" {
		t.Errorf("results = %q", rec.get("slack"))
	}
}
