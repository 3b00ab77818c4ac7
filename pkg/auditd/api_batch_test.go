package auditd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
)

// batchAnswer is govapi.BatchAnswer, or an error, as a client reads it.
type batchAnswer struct {
	SchemaVersion int           `json:"schema_version"`
	Events        []audit.Event `json:"events"`
	Created       int           `json:"created"`
	ExistingLines []int         `json:"existing_lines"`
	Error         string        `json:"error"`
}

// postBatch posts body to POST /api/events as contentType.
func postBatch(t *testing.T, url, contentType string, body []byte) (int, batchAnswer) {
	t.Helper()
	resp, err := http.Post(url+"/api/events", contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var a batchAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("answer %d %q is not JSON: %v", resp.StatusCode, b, err)
	}
	return resp.StatusCode, a
}

// jsonLines encodes evs as a client does, each followed by end.
func jsonLines(t testing.TB, evs []audit.Event, end string) []byte {
	t.Helper()
	var b []byte
	for _, ev := range evs {
		line, err := client.EncodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), end...)
	}
	return b
}

func toolEvents(agent string, n int) []audit.Event {
	evs := make([]audit.Event, n)
	for i := range evs {
		evs[i] = toolEvent(agent, fmt.Sprintf("echo %d", i))
	}
	return evs
}

// A batch is stored in line order with continuous seqs (one client), each
// event chained to the one before, whatever the media type's spelling, the
// line ends, and whether it spans several commits.
func TestBatchAppendStoresInOrder(t *testing.T) {
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	prev := audit.ZeroHash
	seq := int64(0)
	for _, tc := range []struct {
		name, contentType, end string
		n                      int
		dropLastEnd            bool
	}{
		{"one event", "application/x-ndjson", "\n", 1, false},
		{"jsonl", "application/jsonl", "\n", 7, false},
		{"parameters and case", "Application/X-NDJSON; charset=utf-8", "\n", 5, false},
		{"CRLF", "application/x-ndjson", "\r\n", 4, false},
		{"no final newline", "application/x-ndjson", "\n", 3, true},
		{"over one commit (MaxBatch 256)", "application/x-ndjson", "\n", 300, false},
		{"the most events", "application/x-ndjson", "\n", govapi.MaxBatchEvents, false},
	} {
		evs := toolEvents(tc.name, tc.n)
		body := jsonLines(t, evs, tc.end)
		if tc.dropLastEnd {
			body = bytes.TrimSuffix(body, []byte(tc.end))
		}
		code, a := postBatch(t, d.url, tc.contentType, body)
		if code != http.StatusCreated || a.SchemaVersion != 1 || a.Created != tc.n || len(a.Events) != tc.n || len(a.ExistingLines) != 0 {
			t.Fatalf("%s: %d, schema_version %d, created %d, %d events, existing %v, error %q", tc.name, code, a.SchemaVersion, a.Created, len(a.Events), a.ExistingLines, a.Error)
		}
		for i, ev := range a.Events {
			seq++
			if ev.Seq != seq || ev.PrevHash != prev || ev.Agent != tc.name || ev.Tool.RawCommand != evs[i].Tool.RawCommand || !strings.HasPrefix(ev.EventID, "evt_") {
				t.Fatalf("%s: line %d stored as seq %d prev %.8s agent %q command %q id %q; want seq %d after %.8s", tc.name, i+1, ev.Seq, ev.PrevHash, ev.Agent, ev.Tool.RawCommand, ev.EventID, seq, prev)
			}
			prev = ev.EventHash
		}
		// What the answer says is what is stored.
		last := a.Events[len(a.Events)-1]
		if got, err := d.c.Get(ctx, last.EventID); err != nil || got.EventHash != last.EventHash {
			t.Fatalf("%s: stored %+v, %v", tc.name, got, err)
		}
	}
	rep, err := d.c.Verify(ctx)
	if err != nil || !rep.Verified || rep.TotalEvents != seq {
		t.Fatalf("verify %+v, %v (want %d events)", rep, err, seq)
	}
}

// A batch with one bad line, or over a bound, gets a 400 (or 413) naming
// the line or the limit, and nothing of it is stored.
func TestBatchBadInputWritesNothing(t *testing.T) {
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	if _, err := d.c.Append(ctx, toolEvent("a1", "ls")); err != nil {
		t.Fatal(err)
	}
	good := string(jsonLines(t, toolEvents("a1", 2), "\n"))
	line := func(s string) string { return s + "\n" }
	many := string(jsonLines(t, toolEvents("a1", govapi.MaxBatchEvents+1), "\n"))
	big := line(`{"event_type":"x","data":"` + strings.Repeat("a", 1<<20) + `"}`)
	for _, tc := range []struct {
		name, contentType, body string
		code                    int
		msg                     string
	}{
		{"bad line in the middle", "application/x-ndjson", good + line(`{"event_type":"x","colour":"red"}`) + good, 400, `line 3: unknown field "colour"`},
		{"malformed line", "application/x-ndjson", good + line(`{"event_type":`), 400, "line 3, column 15: the JSON ends early"},
		{"not an object", "application/jsonl", line(`["event_type"]`) + good, 400, "line 1: an event must be a JSON object"},
		{"two objects on a line", "application/x-ndjson", line(`{"event_type":"x"}{"event_type":"y"}`), 400, "line 1, column 19: data after the JSON value"},
		{"blank line", "application/x-ndjson", good + "\n" + good, 400, "line 3 is blank"},
		{"whitespace line", "application/x-ndjson", good + " \r\n" + good, 400, "line 3 is blank"},
		{"blank last line", "application/x-ndjson", good + "\n", 400, "line 3 is blank"},
		{"empty body", "application/x-ndjson", "", 400, "no events"},
		{"client seq", "application/x-ndjson", good + line(`{"event_type":"x","seq":7}`), 400, "line 3: seq is assigned by auditd"},
		{"client timestamp", "application/x-ndjson", line(`{"event_type":"x","timestamp":"2026-01-01T00:00:00Z"}`), 400, "line 1: timestamp is assigned"},
		{"client prev_hash", "application/x-ndjson", good + line(`{"event_type":"x","prev_hash":"`+audit.ZeroHash+`"}`), 400, "line 3: prev_hash is assigned"},
		{"client event_hash", "application/x-ndjson", good + line(`{"event_type":"x","event_hash":"ab"}`), 400, "line 3: event_hash is assigned"},
		{"bad event_id", "application/x-ndjson", good + line(`{"event_type":"x","event_id":"a b"}`), 400, "line 3: event_id"},
		{"no event_type", "application/x-ndjson", line(`{"agent":"a1"}`), 400, "line 1: event_type is required"},
		{"approval_requested", "application/x-ndjson", good + line(`{"event_type":"approval_requested"}`), 400, `line 3: event_type "approval_requested" is recorded by auditd itself`},
		{"approval_decided", "application/x-ndjson", good + line(`{"event_type":"approval_decided"}`) + good, 400, `line 3: event_type "approval_decided" is recorded by auditd itself`},
		{"policy_decision", "application/x-ndjson", line(`{"event_type":"policy_decision"}`), 400, `line 1: event_type "policy_decision" is recorded by auditd itself`},
		{"over 1000 events", "application/x-ndjson", many, 400, "at most 1000 events; this one has 1001 lines"},
		{"over 1 MiB", "application/x-ndjson", big, 413, "larger than"},
		// Any other media type is one event, as before: two lines are
		// not one JSON value.
		{"JSON Lines sent as JSON", "application/json", good, 400, "line 2, column 1: data after the JSON value (send one event, or a batch as Content-Type application/x-ndjson)"},
		{"JSON Lines sent untyped", "", good, 415, "takes a body of Content-Type application/json, application/x-ndjson or application/jsonl; this request has no Content-Type"},
	} {
		req, err := http.NewRequest(http.MethodPost, d.url+"/api/events", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
			t.Errorf("%s: body %q is not a JSON error", tc.name, b)
		}
		if resp.StatusCode != tc.code || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("%s: %d %q, want %d and a message containing %q", tc.name, resp.StatusCode, e.Error, tc.code, tc.msg)
		}
		if h, err := d.c.Health(ctx); err != nil || h.HeadSeq != 1 {
			t.Fatalf("%s: head %+v, %v; want seq 1: the batch was partly stored", tc.name, h, err)
		}
	}
}

// A retried batch gets the events stored first (200, created 0), and a
// batch that repeats an event_id stores it once, in one commit or across
// commits.
func TestBatchIdempotent(t *testing.T) {
	withIDs := func(prefix string, evs []audit.Event) []audit.Event {
		for i := range evs {
			evs[i].EventID = fmt.Sprintf("%s-%d", prefix, i)
		}
		return evs
	}
	for _, maxBatch := range []int{256, 2} { // 2: a batch spans commits
		t.Run(fmt.Sprintf("MaxBatch=%d", maxBatch), func(t *testing.T) {
			d := startDaemon(t, "", func(c *auditd.Config) { c.MaxBatch = maxBatch })
			ctx := ctxT(t)
			evs := withIDs("retry", toolEvents("a1", 10))
			code, first := postBatch(t, d.url, "application/x-ndjson", jsonLines(t, evs, "\n"))
			if code != 201 || first.Created != 10 {
				t.Fatalf("first: %d %+v", code, first)
			}
			// A "retry" that changes an event is refused whole, naming the
			// line, and shows nothing of what is stored (DESIGN §11).
			changed := slices.Clone(evs)
			tool := *changed[4].Tool
			tool.RawCommand = "rm -rf /"
			changed[4].Tool = &tool
			code, refused := postBatch(t, d.url, "application/x-ndjson", jsonLines(t, changed, "\n"))
			if code != http.StatusConflict || !strings.Contains(refused.Error, "line 5: event_id retry-4 is taken by another event") || len(refused.Events) != 0 {
				t.Fatalf("changed retry: %d %+v", code, refused)
			}
			code, again := postBatch(t, d.url, "application/x-ndjson", jsonLines(t, evs, "\n"))
			if code != 200 || again.Created != 0 || !slices.Equal(again.ExistingLines, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
				t.Fatalf("retry: %d created %d existing %v error %q", code, again.Created, again.ExistingLines, again.Error)
			}
			for i := range evs {
				if again.Events[i].EventHash != first.Events[i].EventHash || again.Events[i].Seq != int64(i+1) {
					t.Fatalf("retry line %d: %+v, want the original %+v", i+1, again.Events[i], first.Events[i])
				}
			}

			// The same id for two different events in one batch: 400
			// naming both lines, nothing stored (DESIGN §11).
			twins := withIDs("twin", toolEvents("a2", 3))
			twins[2].EventID = twins[0].EventID
			code, refused = postBatch(t, d.url, "application/x-ndjson", jsonLines(t, twins, "\n"))
			if code != http.StatusBadRequest || !strings.Contains(refused.Error, "lines 1 and 3 have the same event_id twin-0 but different events") {
				t.Fatalf("twins: %d %q", code, refused.Error)
			}

			// Half stored already, half new; line 3 repeats line 1 and
			// line 7 line 5.
			mixed := append(withIDs("new", toolEvents("a2", 5)), evs[:5]...)
			mixed[2] = mixed[0]
			mixed[6] = mixed[4]
			code, a := postBatch(t, d.url, "application/x-ndjson", jsonLines(t, mixed, "\n"))
			if code != 201 || a.Created != 4 || !slices.Equal(a.ExistingLines, []int{3, 6, 7, 8, 9, 10}) {
				t.Fatalf("mixed: %d created %d existing %v error %q", code, a.Created, a.ExistingLines, a.Error)
			}
			if a.Events[2].EventHash != a.Events[0].EventHash || a.Events[0].Tool.RawCommand != "echo 0" ||
				a.Events[6].EventHash != a.Events[4].EventHash || a.Events[4].Agent != "a2" ||
				a.Events[5].EventHash != first.Events[0].EventHash || a.Events[9].EventHash != first.Events[4].EventHash {
				t.Fatalf("mixed: repeated ids did not get the event stored first: %+v", a.Events)
			}
			rep, err := d.c.Verify(ctx)
			if err != nil || !rep.Verified || rep.TotalEvents != 14 {
				t.Fatalf("verify %+v, %v; want 14 events", rep, err)
			}
		})
	}
}

// 16 clients posting batches of 50 at once: every event stored once, each
// batch in its order, seq continuous, the chain verifies; a subscriber gets
// them all in seq order.
func TestBatchConcurrent(t *testing.T) {
	clients, batches, size := 16, 5, 50
	if raceEnabled || testing.Short() {
		batches = 2
	}
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	sub := subscribe(t, d.sock, 0)
	var mu sync.Mutex
	bySeq := map[int64]string{}
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			for b := range batches {
				evs := toolEvents(fmt.Sprintf("agent-%d", g), size)
				for i := range evs {
					evs[i].Tool.RawCommand = fmt.Sprintf("batch %d line %d", b, i+1)
				}
				code, a := postBatch(t, d.url, "application/x-ndjson", jsonLines(t, evs, "\n"))
				if code != 201 || a.Created != size || len(a.Events) != size {
					t.Errorf("client %d batch %d: %d created %d error %q", g, b, code, a.Created, a.Error)
					return
				}
				mu.Lock()
				for i, ev := range a.Events {
					if i > 0 && ev.Seq <= a.Events[i-1].Seq {
						t.Errorf("client %d batch %d: line %d has seq %d after %d", g, b, i+1, ev.Seq, a.Events[i-1].Seq)
					}
					if ev.Tool.RawCommand != evs[i].Tool.RawCommand {
						t.Errorf("client %d batch %d: line %d stored %q", g, b, i+1, ev.Tool.RawCommand)
					}
					if prev, dup := bySeq[ev.Seq]; dup {
						t.Errorf("seq %d given to %s and %s", ev.Seq, prev, ev.EventID)
					}
					bySeq[ev.Seq] = ev.EventID
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	total := int64(clients * batches * size)
	for seq := int64(1); seq <= total; seq++ {
		if _, ok := bySeq[seq]; !ok {
			t.Fatalf("no event got seq %d", seq)
		}
	}
	rep, err := d.c.Verify(ctx)
	if err != nil || !rep.Verified || rep.TotalEvents != total {
		t.Fatalf("verify %+v, %v; want %d events", rep, err, total)
	}
	var n int64
	for ev, err := range d.c.QueryAll(ctx, govapi.EventQuery{Cursor: govapi.Cursor{Limit: govapi.MaxLimit}}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; bySeq[ev.Seq] != ev.EventID {
			t.Fatalf("seq %d is %s in the store, %s was acknowledged", ev.Seq, ev.EventID, bySeq[ev.Seq])
		}
	}
	if n != total {
		t.Fatalf("query returned %d events, want %d", n, total)
	}
	waitFor(t, fmt.Sprint(total, " streamed events"), func() bool { return int64(sub.len()) >= total })
	sub.check(t, 1, total)
	for _, ev := range sub.events {
		if bySeq[ev.Seq] != ev.EventID {
			t.Fatalf("streamed seq %d is %s, %s was acknowledged", ev.Seq, ev.EventID, bySeq[ev.Seq])
		}
	}
}
