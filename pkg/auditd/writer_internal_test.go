package auditd

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store/sqlite"
	"github.com/govkit/govkit/pkg/stream"
)

// newTestWriter is a writer over a real SQLite file that the test drives
// batch by batch (its goroutine is not started).
func newTestWriter(t *testing.T) (*writer, *sqlite.Store) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := DefaultConfig()
	cfg.setDefaults()
	hub := stream.NewHub(0, 0)
	head := &headState{}
	head.set(0, audit.ZeroHash)
	m := newMetrics(hub, head)
	return newWriter(st, &cfg, hub, m, head, time.Time{}, &dbHealth{gauge: m.degraded}), st
}

func req(w *writer, id string, clientID bool) *appendReq {
	return &appendReq{
		w:        w,
		ev:       audit.Event{EventID: id, EventType: "tool_execution", Agent: "a1"},
		recv:     time.Now(),
		clientID: clientID,
		done:     make(chan appendResult, 1),
	}
}

// commit prepares reqs, as submit does, and commits them as one batch.
func commit(t *testing.T, w *writer, reqs ...*appendReq) {
	t.Helper()
	for _, r := range reqs {
		if err := r.prepare(); err != nil {
			t.Fatal(err)
		}
	}
	w.commit(reqs)
}

func result(t *testing.T, r *appendReq) (audit.Event, bool) {
	t.Helper()
	res := <-r.done
	if res.err != nil {
		t.Fatal(res.err)
	}
	var ev audit.Event
	if err := json.Unmarshal(res.json, &ev); err != nil {
		t.Fatal(err)
	}
	return ev, res.created
}

// Two requests for one event_id in the same batch: one event, both get it.
func TestCommitDedupesWithinBatch(t *testing.T) {
	w, st := newTestWriter(t)
	a, b, dup, c := req(w, "k1", true), req(w, "gen-1", false), req(w, "k1", true), req(w, "gen-2", false)
	commit(t, w, a, b, dup, c)
	evA, createdA := result(t, a)
	evDup, createdDup := result(t, dup)
	evC, _ := result(t, c)
	if !createdA || createdDup || evA.EventHash != evDup.EventHash || evA.Seq != 1 || evC.Seq != 3 {
		t.Fatalf("a=%d created=%v dup=%d created=%v c=%d", evA.Seq, createdA, evDup.Seq, createdDup, evC.Seq)
	}
	if seq, _, _ := st.Head(context.Background()); seq != 3 {
		t.Fatalf("head %d, want 3", seq)
	}
}

// A retry whose original an earlier batch committed (the store reports a
// duplicate; handlers do not look event ids up, issue 20): the retry gets
// the original, the rest of the batch is stored, the chain stays
// continuous.
func TestCommitDuplicateFromEarlierBatch(t *testing.T) {
	w, st := newTestWriter(t)
	orig := req(w, "k1", true)
	commit(t, w, orig)
	first, _ := result(t, orig)

	x, retry, y := req(w, "gen-1", false), req(w, "k1", true), req(w, "gen-2", false)
	retry.ev.Agent = "someone-else"
	commit(t, w, x, retry, y)
	evRetry, created := result(t, retry)
	evX, _ := result(t, x)
	evY, _ := result(t, y)
	if created || evRetry.EventHash != first.EventHash || evRetry.Agent != "a1" {
		t.Fatalf("retry got %+v (created=%v), want the original", evRetry, created)
	}
	if evX.Seq != 2 || evY.Seq != 3 || evX.PrevHash != first.EventHash || evY.PrevHash != evX.EventHash {
		t.Fatalf("chain after the duplicate: x=%d y=%d", evX.Seq, evY.Seq)
	}
	v := audit.NewVerifier()
	st.Scan(context.Background(), 0, func(r audit.Record) error { v.Add(r); return nil })
	if rep := v.Report(); !rep.Verified || rep.TotalEvents != 3 {
		t.Fatalf("verify: %+v", rep)
	}
}

// Timestamps never go backwards along the chain, even when a request
// received earlier is committed later.
func TestCommitTimestampsMonotonic(t *testing.T) {
	w, _ := newTestWriter(t)
	late, early := req(w, "", false), req(w, "", false)
	late.ev.EventID, early.ev.EventID = "l", "e"
	early.recv = late.recv.Add(-time.Second)
	commit(t, w, late, early)
	a, _ := result(t, late)
	b, _ := result(t, early)
	if b.Timestamp.Before(a.Timestamp) {
		t.Fatalf("seq %d at %v after seq %d at %v", b.Seq, b.Timestamp, a.Seq, a.Timestamp)
	}
}

// An event that cannot be sealed is answered by submit itself, in the
// request's goroutine, as a bad request: it never reaches the writer, and
// nothing is written.
func TestSubmitRefusesUnsealable(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*audit.Event)
		want string
	}{
		{"invalid data", func(e *audit.Event) { e.Data = json.RawMessage(`{`) }, "data: invalid JSON"},
		{"invalid utf-8", func(e *audit.Event) { e.Agent = "a\xff" }, "agent is not valid UTF-8"},
		{"no event id", func(e *audit.Event) { e.EventID = "" }, "event_id is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, st := newTestWriter(t)
			r := req(w, "k1", true)
			tt.edit(&r.ev)
			w.pending.Add(1) // as the handler does
			if err := w.submit(context.Background(), r); err != nil {
				t.Fatalf("submit = %v, want the answer on done", err)
			}
			res := <-r.done
			var bad *requestError
			if !errors.As(res.err, &bad) || !strings.Contains(res.err.Error(), tt.want) {
				t.Fatalf("answer %v, want a requestError containing %q", res.err, tt.want)
			}
			if n, queued := w.pending.Load(), len(w.queue); n != 0 || queued != 0 {
				t.Errorf("pending %d, queued %d; want 0, 0", n, queued)
			}
			if seq, _, _ := st.Head(context.Background()); seq != 0 {
				t.Errorf("head %d, want nothing stored", seq)
			}
		})
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:1199": true, "localhost:0": true, "[::1]:1199": true, "127.3.4.5:80": true,
		"0.0.0.0:1199": false, ":1199": false, "10.0.0.1:1199": false, "example.com:80": false,
		"[::]:1199": false, "127.0.0.1": false,
	} {
		if err := CheckLoopback(addr); (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v", addr, err)
		}
	}
}

// TestCheckAddr: a mistyped address is named as one (a walkthrough got
// "not a loopback address … authenticate clients with --tokens" for
// 1.2.3), before any question of loopback.
func TestCheckAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:1199": "", "127.0.0.1:0": "", "0.0.0.0:65535": "", "[::1]:80": "", "localhost:http": "",
		"1.2.3": "is not HOST:PORT", "0.0.0.0:99999": "is not a number", "127.0.0.1:": "is not a number",
	} {
		err := CheckAddr(addr)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("CheckAddr(%q) = %v, want %q", addr, err, want)
		}
		if want != "" {
			if err := CheckLoopback(addr); err == nil || strings.Contains(err.Error(), "loopback") {
				t.Errorf("CheckLoopback(%q) = %v, want the address error", addr, err)
			}
		}
	}
}

func TestEventJSON(t *testing.T) {
	rec := audit.Record{Seq: 1, Body: []byte(`{"a":1}`), EventHash: "ab"}
	if got := string(eventJSON(rec)); got != `{"a":1,"event_hash":"ab"}` {
		t.Fatal(got)
	}
	rec.EventHash = `x"}`
	if got := eventJSON(rec); !json.Valid(got) {
		t.Fatalf("a hostile hash column broke the JSON: %s", got)
	}
	for _, body := range []string{``, `{`, `[1]`, `{"a":}`} {
		if _, err := storedJSON(audit.Record{Body: []byte(body)}); err == nil {
			t.Errorf("storedJSON accepted %q", body)
		}
	}
}
