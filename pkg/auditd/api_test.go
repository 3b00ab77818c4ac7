package auditd_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
)

// 64 writers × 500 events against a real server and SQLite file: seq is
// continuous, the chain verifies, no event is missing or duplicated.
func TestConcurrentAppends(t *testing.T) {
	writers, each := 64, 500
	if raceEnabled || testing.Short() {
		each = 60
	}
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)

	var mu sync.Mutex
	bySeq := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				ev, err := d.c.Append(ctx, toolEvent(fmt.Sprintf("agent-%d", g), fmt.Sprintf("echo %d", i)))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if prev, dup := bySeq[ev.Seq]; dup {
					mu.Unlock()
					errs <- fmt.Errorf("seq %d given to %s and %s", ev.Seq, prev, ev.EventID)
					return
				}
				bySeq[ev.Seq] = ev.EventID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := int64(writers * each)
	for seq := int64(1); seq <= total; seq++ {
		if _, ok := bySeq[seq]; !ok {
			t.Fatalf("no event got seq %d", seq)
		}
	}
	rep, err := d.c.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verified || rep.TotalEvents != total || len(rep.BrokenLinks) != 0 {
		t.Fatalf("verify: %+v", rep)
	}
	// Every acknowledged event is stored under its seq, and nothing else.
	var n int64
	for ev, err := range d.c.QueryAll(ctx, govapi.EventQuery{Cursor: govapi.Cursor{Limit: govapi.MaxLimit}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if bySeq[ev.Seq] != ev.EventID {
			t.Fatalf("seq %d is %s in the store, %s was acknowledged", ev.Seq, ev.EventID, bySeq[ev.Seq])
		}
	}
	if n != total {
		t.Fatalf("query returned %d events, want %d", n, total)
	}
}

func TestAppendAssignsServerFields(t *testing.T) {
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	before := time.Now().UTC()
	a, err := d.c.Append(ctx, toolEvent("a1", "ls"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.c.Append(ctx, toolEvent("a1", "pwd"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Seq != 1 || b.Seq != 2 || a.PrevHash != audit.ZeroHash || b.PrevHash != a.EventHash {
		t.Fatalf("chain: a=%d %s b=%d prev %s", a.Seq, a.EventHash, b.Seq, b.PrevHash)
	}
	if a.Timestamp.Before(before) || b.Timestamp.Before(a.Timestamp) || a.Timestamp.Location() != time.UTC {
		t.Fatalf("timestamps %v %v (started %v)", a.Timestamp, b.Timestamp, before)
	}
	if !strings.HasPrefix(a.EventID, "evt_") || a.SchemaVersion != 1 {
		t.Fatalf("event_id %q schema_version %d", a.EventID, a.SchemaVersion)
	}
	got, err := d.c.Get(ctx, b.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if got.EventHash != b.EventHash || got.Tool.RawCommand != "pwd" {
		t.Fatalf("Get returned %+v", got)
	}
	if _, err := d.c.Get(ctx, "evt_nope"); !client.IsNotFound(err) {
		t.Fatalf("Get of a missing id: %v, want 404", err)
	}
	h, err := d.c.Health(ctx)
	if err != nil || h.Status != "ok" || h.HeadSeq != 2 || h.HeadHash != b.EventHash {
		t.Fatalf("health %+v, %v", h, err)
	}
	// The client refuses to send server-assigned fields.
	ev := toolEvent("a1", "ls")
	ev.Seq = 9
	if _, err := d.c.Append(ctx, ev); err == nil || !strings.Contains(err.Error(), "seq is assigned") {
		t.Fatalf("Append with seq: %v", err)
	}
}

// The same event_id twice, one after the other: one event, and the retry
// gets the original (200). The same id with other content, or from another
// caller, is 409 event_id_reused and shows nothing of the stored event
// (DESIGN §11): before issue 13 re-posting a known event_id read another
// agent's event.
func TestIdempotentSequential(t *testing.T) {
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	a1 := d.as(t, "a1")
	ev := toolEvent("a1", "ls")
	ev.EventID = "req-1"
	first, err := a1.AppendResult(ctx, ev)
	if err != nil || !first.Created {
		t.Fatalf("first append: %+v, %v", first, err)
	}
	changed := ev
	changed.Tool = &audit.Tool{Name: "bash", RawCommand: "rm -rf /", DurationMS: 3} // a retry must not rewrite history
	_, err = a1.AppendResult(ctx, changed)
	refusal(t, err, http.StatusConflict, govapi.CodeEventIDReused)
	other := ev
	other.Agent = ""
	_, err = d.as(t, "a2").AppendResult(ctx, other) // replay-to-read
	refusal(t, err, http.StatusConflict, govapi.CodeEventIDReused)
	if strings.Contains(err.Error(), `"ls"`) {
		t.Errorf("the refusal shows the stored event: %v", err)
	}
	again, err := a1.AppendResult(ctx, ev)
	if err != nil || again.Created {
		t.Fatalf("retry: %+v, %v", again, err)
	}
	if again.Event.Seq != 1 || again.Event.EventHash != first.Event.EventHash || again.Event.Tool.RawCommand != "ls" {
		t.Fatalf("retry returned %+v, want the original", again.Event)
	}
	if h, _ := d.c.Health(ctx); h.HeadSeq != 1 {
		t.Fatalf("head %d after a retry, want 1", h.HeadSeq)
	}
}

// The same event_id from many clients at once (some in one batch, some in
// later ones): exactly one is created, everyone gets it.
func TestIdempotentConcurrent(t *testing.T) {
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	for round := range 5 {
		id := fmt.Sprintf("same-%d", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		created := 0
		hashes := map[string]int{}
		for range 24 {
			wg.Go(func() {
				ev := toolEvent("a1", "ls")
				ev.EventID = id
				res, err := d.c.AppendResult(ctx, ev)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if res.Created {
					created++
				}
				hashes[res.Event.EventHash]++
			})
			// Unrelated events in between, so duplicates land in batches
			// with others.
			wg.Go(func() { d.c.Append(ctx, toolEvent("a2", "pwd")) })
		}
		wg.Wait()
		if created != 1 || len(hashes) != 1 {
			t.Fatalf("round %d: %d created, %d distinct events", round, created, len(hashes))
		}
	}
	rep, err := d.c.Verify(ctx)
	if err != nil || !rep.Verified || rep.TotalEvents != 5+5*24 {
		t.Fatalf("verify %+v, %v", rep, err)
	}
}

// A retry of an event stored long ago, by an auditd restarted since, gets
// the original (200), and another event under its id is 409, as for a
// recent one: the writer finds stored ids through the event_id index, not
// in memory (issue 20). Retries of old ids landing in commits with new
// events leave those stored once each and the chain whole.
func TestIdempotentAcrossRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	d := startDaemon(t, db, nil)
	ctx := ctxT(t)
	a1 := d.as(t, "a1")
	const n = 40
	first := make([]audit.Event, n)
	for i := range first {
		ev := toolEvent("a1", fmt.Sprintf("ls %d", i))
		ev.EventID = fmt.Sprintf("old-%d", i)
		res, err := a1.AppendResult(ctx, ev)
		if err != nil || !res.Created {
			t.Fatalf("append %d: %+v, %v", i, res, err)
		}
		first[i] = res.Event
	}
	d.stop()

	d = startDaemon(t, db, nil)
	a1 = d.as(t, "a1")
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ev := toolEvent("a1", fmt.Sprintf("ls %d", i))
			ev.EventID = fmt.Sprintf("old-%d", i)
			res, err := a1.AppendResult(ctx, ev)
			if err != nil || res.Created || res.Event.Seq != first[i].Seq || res.Event.EventHash != first[i].EventHash {
				t.Errorf("retry of old-%d: %+v, %v; want the original seq %d", i, res, err, first[i].Seq)
			}
		})
		wg.Go(func() {
			if res, err := a1.AppendResult(ctx, toolEvent("a1", "pwd")); err != nil || !res.Created {
				t.Errorf("new event: %+v, %v", res, err)
			}
		})
	}
	wg.Wait()
	changed := toolEvent("a1", "rm -rf /")
	changed.EventID = "old-3"
	_, err := a1.AppendResult(ctx, changed)
	refusal(t, err, http.StatusConflict, govapi.CodeEventIDReused)
	rep, err := d.c.Verify(ctx)
	if err != nil || !rep.Verified || rep.TotalEvents != 2*n {
		t.Fatalf("verify %+v, %v; want %d events", rep, err, 2*n)
	}
}

func post(t *testing.T, url string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/api/events", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Each bad request gets a 400 (or 413) naming the problem, as a JSON error,
// and writes nothing.
func TestBadInputWritesNothing(t *testing.T) {
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	big := `{"event_type":"x","data":"` + strings.Repeat("a", 1<<20) + `"}`
	for _, tc := range []struct {
		name, body string
		code       int
		msg        string
	}{
		{"malformed", `{"event_type":`, 400, ""},
		{"not an object", `["event_type"]`, 400, "object"},
		{"empty", ``, 400, ""},
		{"unknown field", `{"event_type":"x","colour":"red"}`, 400, "colour"},
		{"unknown nested field", `{"event_type":"x","tool":{"nme":"bash"}}`, 400, "tool.nme"},
		{"two objects", `{"event_type":"x"}{"event_type":"y"}`, 400, ""},
		{"client seq", `{"event_type":"x","seq":7}`, 400, "seq is assigned by auditd"},
		{"client timestamp", `{"event_type":"x","timestamp":"2026-01-01T00:00:00Z"}`, 400, "timestamp is assigned"},
		{"client prev_hash", `{"event_type":"x","prev_hash":"` + audit.ZeroHash + `"}`, 400, "prev_hash is assigned"},
		{"client event_hash", `{"event_type":"x","event_hash":"ab"}`, 400, "event_hash is assigned"},
		{"no event_type", `{"agent":"a1"}`, 400, "event_type"},
		{"bad action_class", `{"event_type":"x","action_class":"delete"}`, 400, "action_class"},
		{"bad event_id", `{"event_type":"x","event_id":"a b"}`, 400, "event_id"},
		{"over 1 MiB", big, 413, "larger than"},
	} {
		code, body := post(t, d.url, []byte(tc.body))
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
			t.Errorf("%s: body %q is not a JSON error", tc.name, body)
		}
		if code != tc.code || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("%s: %d %q, want %d and a message containing %q", tc.name, code, e.Error, tc.code, tc.msg)
		}
	}
	for _, q := range []string{
		"since=yesterday", "until=2026-13-01T00:00:00Z", "after_seq=-1", "after_seq=x",
		"limit=0", "limit=1001", "limit=ten", "colour=red", "agent=a&agent=b",
	} {
		resp, err := http.Get(d.url + "/api/events?" + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"error":`) {
			t.Errorf("GET ?%s: %d %s, want 400", q, resp.StatusCode, b)
		}
	}
	if h, err := d.c.Health(ctx); err != nil || h.HeadSeq != 0 {
		t.Fatalf("head %+v, %v after bad requests; want nothing written", h, err)
	}
	if n := countRows(t, d.db); n != 0 {
		t.Fatalf("%d rows in events after bad requests", n)
	}
}

func countRows(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestQueryFiltersAndPagination(t *testing.T) {
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	add := func(agent, tool, class, trace string) audit.Event {
		ev := audit.Event{EventType: audit.TypeToolExecution, Agent: agent, ActionClass: class, TraceID: trace, SessionID: "s-" + agent,
			Tool: &audit.Tool{Name: tool}}
		got, err := d.c.Append(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for i := range 10 {
		add("a1", "bash", audit.ActionRead, fmt.Sprintf("t%d", i%2))
	}
	mid := time.Now().UTC()
	for range 5 {
		add("a2", "psql", audit.ActionWrite, "t9")
	}
	if _, err := d.c.Append(ctx, audit.Event{EventType: audit.TypeDelegation, Agent: "a2", ApprovalID: "apr-x"}); err != nil {
		t.Fatal(err)
	}
	count := func(f govapi.EventQuery) int {
		t.Helper()
		n := 0
		for _, err := range d.c.QueryAll(ctx, f) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	for _, tc := range []struct {
		f    govapi.EventQuery
		want int
	}{
		{govapi.EventQuery{}, 16},
		{govapi.EventQuery{Agent: "a1"}, 10},
		{govapi.EventQuery{Agent: "a2"}, 6},
		{govapi.EventQuery{Agent: "a2", EventType: audit.TypeToolExecution}, 5},
		{govapi.EventQuery{ToolName: "psql"}, 5},
		{govapi.EventQuery{ActionClass: audit.ActionRead, TraceID: "t1"}, 5},
		{govapi.EventQuery{SessionID: "s-a1", ToolName: "psql"}, 0},
		{govapi.EventQuery{ApprovalID: "apr-x"}, 1},
		{govapi.EventQuery{ApprovalID: "apr-y"}, 0},
		{govapi.EventQuery{Since: mid}, 6},
		{govapi.EventQuery{Until: mid}, 10},
		{govapi.EventQuery{Cursor: govapi.Cursor{AfterSeq: 12}}, 4},
		{govapi.EventQuery{Agent: "a1", Cursor: govapi.Cursor{Limit: 3}}, 10}, // QueryAll follows the cursor
	} {
		if got := count(tc.f); got != tc.want {
			t.Errorf("%+v: %d events, want %d", tc.f, got, tc.want)
		}
	}

	// The cursor by hand: pages of 4 over the 10 events of a1.
	f := govapi.EventQuery{Agent: "a1", Cursor: govapi.Cursor{Limit: 4}}
	var pages []string
	for {
		p, err := d.c.Query(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, ev := range p.Events {
			seqs = append(seqs, ev.Seq)
		}
		pages = append(pages, fmt.Sprintf("%v next=%d more=%v", seqs, p.NextAfterSeq, p.HasMore))
		if !p.HasMore {
			break
		}
		f.AfterSeq = p.NextAfterSeq
	}
	want := []string{"[1 2 3 4] next=4 more=true", "[5 6 7 8] next=8 more=true", "[9 10] next=10 more=false"}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Fatalf("pages\n%v\nwant\n%v", pages, want)
	}
	// An exactly full last page says there is no more; an empty one keeps
	// the cursor.
	p, err := d.c.Query(ctx, govapi.EventQuery{Agent: "a2", Cursor: govapi.Cursor{AfterSeq: 10, Limit: 6}})
	if err != nil || len(p.Events) != 6 || p.HasMore || p.NextAfterSeq != 16 {
		t.Fatalf("full last page: %d events next=%d more=%v, %v", len(p.Events), p.NextAfterSeq, p.HasMore, err)
	}
	p, err = d.c.Query(ctx, govapi.EventQuery{Cursor: govapi.Cursor{AfterSeq: 16}})
	if err != nil || len(p.Events) != 0 || p.NextAfterSeq != 16 || p.HasMore {
		t.Fatalf("empty page: %+v, %v", p, err)
	}
	// The raw shape, as a script sees it.
	resp, err := http.Get(d.url + "/api/events?" + url.Values{"limit": {"1"}, "agent": {"a2"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if string(raw["schema_version"]) != "1" || string(raw["next_after_seq"]) != "11" || string(raw["has_more"]) != "true" {
		t.Fatalf("page object %v", raw)
	}
}

func TestMethodsAndUnknownPaths(t *testing.T) {
	d := startDaemon(t, "", nil)
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"DELETE", "/api/events", 405},
		{"PUT", "/api/events/x", 405},
		{"POST", "/api/verify", 405},
		{"GET", "/api/nope", 404},
		{"GET", "/", 404},
	} {
		req, _ := http.NewRequest(tc.method, d.url+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), `"error":`) {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, b)
		}
	}
}

func TestMetrics(t *testing.T) {
	d := startDaemon(t, "", nil)
	ctx := ctxT(t)
	for range 3 {
		if _, err := d.c.Append(ctx, toolEvent("a1", "ls")); err != nil {
			t.Fatal(err)
		}
	}
	post(t, d.url, []byte(`{"seq":1}`))
	if _, err := d.c.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(d.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"govkit_auditd_events_appended_total 3",
		"govkit_auditd_batch_size_events_count 3",
		"govkit_auditd_commit_duration_seconds_count 3",
		"govkit_auditd_stream_subscribers 0",
		"govkit_auditd_stream_subscribers_dropped_total 0",
		`govkit_auditd_verifications_total{result="verified"}`,
		`govkit_auditd_requests_rejected_total{code="400"} 1`,
		"govkit_auditd_chain_head_seq 3",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
