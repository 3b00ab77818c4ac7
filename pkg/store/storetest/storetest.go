// Package storetest is the conformance suite of store.Store: one set of tests that every store (store/sqlite, store/postgres) passes, so that auditd behaves alike on each (issue 19).
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
)

// Open returns a new, empty, read-write store for t, closed when t ends.
type Open func(t *testing.T) store.Store

// Run runs the suite against the stores open makes, each subtest on a
// store of its own. A store that implements store.Sequencer is also tested
// as one.
func Run(t *testing.T, open Open) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Open)
	}{
		{"AppendHeadGet", testAppendHeadGet},
		{"AppendDuplicate", testAppendDuplicate},
		{"AppendCancelled", testAppendCancelled},
		{"AppendConcurrent", testAppendConcurrent},
		{"QueryFilters", testQueryFilters},
		{"QueryApprovalID", testQueryApprovalID},
		{"QueryPagination", testQueryPagination},
		{"QueryLimits", testQueryLimits},
		{"Scan", testScan},
		{"Approvals", testApprovals},
		{"ApprovalsSnapshot", testApprovalsSnapshot},
		{"Sequence", testSequence},
		{"SequenceConcurrent", testSequenceConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, open) })
	}
}

// T0 is the first test event's time.
var T0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// Chain builds n records after seq from, chained by hand (pkg/audit's
// sealing is not needed to test storage): record i has seq from+i+1, a
// timestamp a second after the previous, and a body padded to bodySize.
func Chain(from int64, prev string, n, bodySize int, edit func(*audit.Record)) []audit.Record {
	out := make([]audit.Record, n)
	for i := range out {
		seq := from + int64(i) + 1
		r := audit.Record{
			Seq:         seq,
			EventID:     fmt.Sprintf("evt-%06d", seq),
			Timestamp:   T0.Add(time.Duration(seq) * time.Second),
			EventType:   audit.TypeToolExecution,
			Agent:       "agent-a",
			ActionClass: "read",
			ToolName:    "shell",
			PrevHash:    prev,
		}
		if edit != nil {
			edit(&r)
		}
		body := fmt.Sprintf(`{"agent":%q,"event_id":%q,"prev_hash":%q,"seq":%d,"pad":"`, r.Agent, r.EventID, r.PrevHash, r.Seq)
		body += strings.Repeat("x", max(0, bodySize-len(body)-2)) + `"}`
		r.Body = []byte(body)
		sum := sha256.Sum256(r.Body)
		r.EventHash = hex.EncodeToString(sum[:])
		prev = r.EventHash
		out[i] = r
	}
	return out
}

// SameRecord reports how got differs from want ("" when equal).
func SameRecord(got, want audit.Record) string {
	if !got.Timestamp.Equal(want.Timestamp) {
		return fmt.Sprintf("timestamp %v, want %v", got.Timestamp, want.Timestamp)
	}
	if got.Timestamp.Location() != time.UTC {
		return fmt.Sprintf("timestamp location %v, want UTC", got.Timestamp.Location())
	}
	got.Timestamp, want.Timestamp = time.Time{}, time.Time{}
	if string(got.Body) != string(want.Body) {
		return fmt.Sprintf("body %q, want %q", got.Body, want.Body)
	}
	got.Body, want.Body = nil, nil
	// Scan reads approval_id back; other reads do not (audit.Record.ApprovalID).
	if got.HasApprovalID && got.ApprovalID != want.ApprovalID {
		return fmt.Sprintf("approval_id %q, want %q", got.ApprovalID, want.ApprovalID)
	}
	got.ApprovalID, got.HasApprovalID, want.ApprovalID, want.HasApprovalID = "", false, "", false
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("got %+v, want %+v", got, want)
	}
	return ""
}

// Seqs returns the seqs of records.
func Seqs(records []audit.Record) []int64 {
	out := make([]int64, len(records))
	for i, r := range records {
		out[i] = r.Seq
	}
	return out
}

func appendAll(t testing.TB, s store.Store, records []audit.Record) {
	t.Helper()
	if err := s.Append(context.Background(), records); err != nil {
		t.Fatal(err)
	}
}

func testAppendHeadGet(t *testing.T, open Open) {
	s := open(t)
	ctx := context.Background()

	seq, hash, err := s.Head(ctx)
	if err != nil || seq != 0 || hash != audit.ZeroHash {
		t.Fatalf("Head of an empty log = %d, %q, %v; want 0, ZeroHash", seq, hash, err)
	}

	first := Chain(0, audit.ZeroHash, 3, 600, func(r *audit.Record) {
		r.TraceID, r.SessionID = "trace-1", "sess-1"
		// Not on a second: the column keeps all nine digits.
		r.Timestamp = r.Timestamp.Add(123456789 * time.Nanosecond)
	})
	appendAll(t, s, first)
	second := Chain(3, first[2].EventHash, 2, 600, func(r *audit.Record) {
		// A local time is stored, and returned, as the same instant in UTC.
		r.Timestamp = r.Timestamp.In(time.FixedZone("CET", 3600))
	})
	// Any bytes in the body are stored as they are.
	second[1].Body = append([]byte{0, 0xff, '\n'}, second[1].Body...)
	appendAll(t, s, second)

	seq, hash, err = s.Head(ctx)
	if err != nil || seq != 5 || hash != second[1].EventHash {
		t.Fatalf("Head = %d, %q, %v; want 5, %q", seq, hash, err, second[1].EventHash)
	}
	for _, want := range slices.Concat(first, second) {
		got, ok, err := s.Get(ctx, want.EventID)
		if err != nil || !ok {
			t.Fatalf("Get(%q) = %v, %v", want.EventID, ok, err)
		}
		if d := SameRecord(got, want); d != "" {
			t.Errorf("Get(%q): %s", want.EventID, d)
		}
	}
	if _, ok, err := s.Get(ctx, "no-such-event"); ok || err != nil {
		t.Errorf("Get(missing) = %v, %v; want false, nil", ok, err)
	}
	all := slices.Concat(first, second)
	for _, tc := range []struct {
		name string
		ids  []string
		want []audit.Record
	}{
		{"none", nil, nil},
		{"missing only", []string{"no-such-event", ""}, nil},
		{"some, out of order, repeated, with missing", []string{all[4].EventID, "nope", all[1].EventID, all[4].EventID, "a\"b"}, []audit.Record{all[1], all[4]}},
		{"all", []string{all[0].EventID, all[1].EventID, all[2].EventID, all[3].EventID, all[4].EventID}, all},
	} {
		got, err := s.GetMany(ctx, tc.ids)
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("GetMany %s = %v, %v; want seqs %v", tc.name, Seqs(got), err, Seqs(tc.want))
			continue
		}
		for i := range got {
			if d := SameRecord(got[i], tc.want[i]); d != "" {
				t.Errorf("GetMany %s, record %d: %s", tc.name, i, d)
			}
		}
	}
	if err := s.Append(ctx, nil); err != nil {
		t.Errorf("Append(empty batch) = %v", err)
	}
}

func testAppendDuplicate(t *testing.T, open Open) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		batch func(stored []audit.Record) []audit.Record
		dup   bool // errors.Is(err, store.ErrDuplicate)
		want  string
	}{{
		name: "event_id already stored",
		batch: func(stored []audit.Record) []audit.Record {
			return Chain(3, stored[2].EventHash, 3, 100, func(r *audit.Record) {
				if r.Seq == 6 {
					r.EventID = stored[0].EventID
				}
			})
		},
		dup:  true,
		want: `store: duplicate event_id: "evt-000001"`,
	}, {
		name: "event_id twice in the batch",
		batch: func(stored []audit.Record) []audit.Record {
			return Chain(3, stored[2].EventHash, 3, 100, func(r *audit.Record) {
				if r.Seq == 6 {
					r.EventID = "evt-000004"
				}
			})
		},
		dup:  true,
		want: `store: duplicate event_id: "evt-000004"`,
	}, {
		name: "seq already stored (a forked chain)",
		batch: func(stored []audit.Record) []audit.Record {
			b := Chain(3, stored[2].EventHash, 3, 100, nil)
			b[2].Seq = 3
			return b
		},
		want: "store: append: seq 3 is already stored",
	}, {
		name: "seq zero",
		batch: func(stored []audit.Record) []audit.Record {
			b := Chain(3, stored[2].EventHash, 3, 100, nil)
			b[1].Seq = 0
			return b
		},
		want: "seq 0, want > 0",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			stored := Chain(0, audit.ZeroHash, 3, 100, nil)
			appendAll(t, s, stored)
			batch := tc.batch(stored)
			err := s.Append(ctx, batch)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Append = %v, want an error containing %q", err, tc.want)
			}
			if got := errors.Is(err, store.ErrDuplicate); got != tc.dup {
				t.Errorf("errors.Is(%v, ErrDuplicate) = %v, want %v", err, got, tc.dup)
			}
			// Nothing of the batch is stored, and the store still works.
			if seq, hash, _ := s.Head(ctx); seq != 3 || hash != stored[2].EventHash {
				t.Errorf("Head after the failed batch = %d, %s; want 3", seq, hash)
			}
			for _, r := range batch {
				if got, ok, _ := s.Get(ctx, r.EventID); ok && got.Seq == r.Seq {
					t.Errorf("event %s of the failed batch is stored", r.EventID)
				}
			}
			appendAll(t, s, Chain(3, stored[2].EventHash, 1, 100, nil))
		})
	}
}

// A batch whose context is done stores nothing, and the store works
// afterwards.
func testAppendCancelled(t *testing.T, open Open) {
	s := open(t)
	ctx := context.Background()
	stored := Chain(0, audit.ZeroHash, 2, 100, nil)
	appendAll(t, s, stored)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Append(cctx, Chain(2, stored[1].EventHash, 3, 100, nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context = %v, want context.Canceled", err)
	}
	if seq, _, _ := s.Head(ctx); seq != 2 {
		t.Fatalf("Head after the failed batch = %d, want 2", seq)
	}
	appendAll(t, s, Chain(2, stored[1].EventHash, 3, 100, nil))
}

// A Store is safe for concurrent use as the contract has it: one writer
// appends (in seq order: each batch continues the log and its Merkle
// tree) while readers query, scan and read the head beside it.
func testAppendConcurrent(t *testing.T, open Open) {
	s := open(t)
	const batches, size, readers = 40, 5, 3
	ctx := context.Background()
	records := Chain(0, audit.ZeroHash, batches*size, 200, nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				seq, _, err := s.Head(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				var n int64
				if err := s.Scan(ctx, 0, func(audit.Record) error { n++; return nil }); err != nil || n < seq {
					t.Errorf("Scan beside the writer visited %d records (%v), head %d", n, err, seq)
					return
				}
				if _, err := s.Query(ctx, store.Filter{Limit: 10}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for b := range batches {
		if err := s.Append(ctx, records[b*size:(b+1)*size]); err != nil {
			t.Error(err)
			break
		}
	}
	close(done)
	wg.Wait()
	var n int64
	if err := s.Scan(ctx, 0, func(audit.Record) error { n++; return nil }); err != nil || n != batches*size {
		t.Fatalf("Scan visited %d records, %v; want %d", n, err, batches*size)
	}
}

// queryLog is 24 events: agents a/b/c in turn, trace t0..t3 every six,
// action classes read/write/destructive, every fourth a policy decision.
func queryLog(t *testing.T, open Open) (store.Store, []audit.Record) {
	s := open(t)
	records := Chain(0, audit.ZeroHash, 24, 200, func(r *audit.Record) {
		i := int(r.Seq - 1)
		r.Agent = "agent-" + string(rune('a'+i%3))
		r.TraceID = fmt.Sprintf("t%d", i/6)
		r.SessionID = fmt.Sprintf("s%d", i%2)
		r.ActionClass = []string{"read", "write", "destructive"}[i%3]
		r.ToolName = []string{"shell", "kubectl"}[i%2]
		if i%4 == 3 {
			r.EventType = audit.TypePolicyDecision
			r.ToolName = ""
		}
	})
	appendAll(t, s, records)
	return s, records
}

func testQueryFilters(t *testing.T, open Open) {
	s, records := queryLog(t, open)
	ctx := context.Background()
	match := func(pred func(audit.Record) bool) []int64 {
		var out []int64
		for _, r := range records {
			if pred(r) {
				out = append(out, r.Seq)
			}
		}
		return out
	}
	at := func(seq int64) time.Time { return T0.Add(time.Duration(seq) * time.Second) }

	for _, tc := range []struct {
		name string
		f    store.Filter
		want []int64
	}{
		{"no filter", store.Filter{}, match(func(audit.Record) bool { return true })},
		{"agent", store.Filter{Agent: "agent-b"}, match(func(r audit.Record) bool { return r.Agent == "agent-b" })},
		{"trace_id", store.Filter{TraceID: "t2"}, []int64{13, 14, 15, 16, 17, 18}},
		{"session_id", store.Filter{SessionID: "s1"}, match(func(r audit.Record) bool { return r.Seq%2 == 0 })},
		{"action_class", store.Filter{ActionClass: "destructive"}, []int64{3, 6, 9, 12, 15, 18, 21, 24}},
		{"tool_name", store.Filter{ToolName: "kubectl"}, match(func(r audit.Record) bool { return r.ToolName == "kubectl" })},
		{"event_type", store.Filter{EventType: audit.TypePolicyDecision}, []int64{4, 8, 12, 16, 20, 24}},
		{"since (inclusive)", store.Filter{Since: at(20)}, []int64{20, 21, 22, 23, 24}},
		{"until (exclusive)", store.Filter{Until: at(3)}, []int64{1, 2}},
		{"since and until", store.Filter{Since: at(10), Until: at(12).Add(time.Nanosecond)}, []int64{10, 11, 12}},
		{"since in another zone", store.Filter{Since: at(23).In(time.FixedZone("X", -7*3600))}, []int64{23, 24}},
		{"since between seconds", store.Filter{Since: at(22).Add(-time.Nanosecond)}, []int64{22, 23, 24}},
		{"since after the last", store.Filter{Since: at(25)}, nil},
		{"until before the first", store.Filter{Until: at(1)}, nil},
		{"after_seq", store.Filter{AfterSeq: 21}, []int64{22, 23, 24}},
		{"since and after_seq", store.Filter{Since: at(10), AfterSeq: 20}, []int64{21, 22, 23, 24}},
		{"ANDed", store.Filter{Agent: "agent-a", TraceID: "t1", SessionID: "s0", ActionClass: "read"}, []int64{7}},
		{"ANDed with after_seq", store.Filter{Agent: "agent-c", EventType: audit.TypePolicyDecision, AfterSeq: 12}, []int64{24}},
		{"no match", store.Filter{Agent: "agent-a", ActionClass: "write"}, nil},
		{"unknown value", store.Filter{Agent: "nobody"}, nil},
		{"limit", store.Filter{Agent: "agent-a", Limit: 3}, []int64{1, 4, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Query(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(Seqs(got), tc.want) {
				t.Errorf("Query(%+v) seqs = %v, want %v", tc.f, Seqs(got), tc.want)
			}
			for _, r := range got {
				if d := SameRecord(r, records[r.Seq-1]); d != "" {
					t.Errorf("seq %d: %s", r.Seq, d)
				}
			}
		})
	}
}

// Citing seals n events; event i cites the approval cite(i) ("" for none).
// Each event's data names another approval_id, which must not count.
func Citing(t testing.TB, n int, cite func(i int) string) []audit.Record {
	t.Helper()
	recs := make([]audit.Record, 0, n)
	prev := audit.ZeroHash
	for i := range n {
		e := audit.Event{
			EventID: fmt.Sprintf("evt_%d", i+1), EventType: audit.TypeToolExecution, Agent: "agent-a",
			ActionClass: audit.ActionRead, ApprovalID: cite(i),
			// An approval_id that is not the event's own must not count.
			Data: []byte(`{"approval_id":"apr-nested"}`),
		}
		rec, err := audit.Seal(&e, int64(i+1), prev, T0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		prev = rec.EventHash
	}
	return recs
}

// Every3 is a cite for Citing: apr-1 from every third event, and apr-2
// from the others at an even index.
func Every3(i int) string {
	switch {
	case i%3 == 0:
		return "apr-1"
	case i%2 == 0:
		return "apr-2"
	}
	return ""
}

// CitingSeqs is the seqs of the events of Citing(t, n, cite) that cite id.
func CitingSeqs(cite func(i int) string, id string, n int) []int64 {
	var seqs []int64
	for i := range n {
		if cite(i) == id {
			seqs = append(seqs, int64(i+1))
		}
	}
	return seqs
}

// The approval_id filter (DESIGN §11 "one use per approval", issue 13):
// a watcher that learns an approval from auditd asks for the events that
// cited it; Scan reads the column back for verification.
func testQueryApprovalID(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t)
	const n = 30
	recs := Citing(t, n, Every3)
	appendAll(t, s, recs)
	citingSeqs := func(id string) []int64 { return CitingSeqs(Every3, id, n) }
	for _, tt := range []struct {
		name string
		f    store.Filter
		want []int64
	}{
		{"apr-1", store.Filter{ApprovalID: "apr-1"}, citingSeqs("apr-1")},
		{"apr-2", store.Filter{ApprovalID: "apr-2"}, citingSeqs("apr-2")},
		{"page", store.Filter{ApprovalID: "apr-1", AfterSeq: 4, Limit: 2}, []int64{7, 10}},
		{"and agent", store.Filter{ApprovalID: "apr-1", Agent: "agent-b"}, nil},
		{"nested is not cited", store.Filter{ApprovalID: "apr-nested"}, nil},
		{"unknown", store.Filter{ApprovalID: "apr-9"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Query(ctx, tt.f)
			if err != nil || !slices.Equal(Seqs(got), tt.want) {
				t.Errorf("Query(%+v) = %v, %v; want %v", tt.f, Seqs(got), err, tt.want)
			}
		})
	}
	i := 0
	err := s.Scan(ctx, 0, func(r audit.Record) error {
		if !r.HasApprovalID || r.ApprovalID != recs[i].ApprovalID {
			return fmt.Errorf("seq %d: Scan read approval_id %q (%v), want %q", r.Seq, r.ApprovalID, r.HasApprovalID, recs[i].ApprovalID)
		}
		i++
		return nil
	})
	if err != nil || i != n {
		t.Errorf("Scan: %d records, %v", i, err)
	}
}

func testQueryPagination(t *testing.T, open Open) {
	s, _ := queryLog(t, open)
	ctx := context.Background()
	f := store.Filter{SessionID: "s0", Limit: 5}
	var pages [][]int64
	for {
		page, err := s.Query(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		pages = append(pages, Seqs(page))
		f.AfterSeq = page[len(page)-1].Seq
	}
	want := [][]int64{{1, 3, 5, 7, 9}, {11, 13, 15, 17, 19}, {21, 23}}
	if !slices.EqualFunc(pages, want, slices.Equal) {
		t.Errorf("pages = %v, want %v", pages, want)
	}
}

func testQueryLimits(t *testing.T, open Open) {
	s := open(t)
	ctx := context.Background()
	appendAll(t, s, Chain(0, audit.ZeroHash, store.MaxLimit+200, 50, nil))
	for _, tc := range []struct{ limit, want int }{
		{0, store.DefaultLimit},
		{-1, store.DefaultLimit},
		{7, 7},
		{store.MaxLimit, store.MaxLimit},
		{store.MaxLimit + 1, store.MaxLimit},
		{1 << 30, store.MaxLimit},
	} {
		got, err := s.Query(ctx, store.Filter{Limit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want {
			t.Errorf("Query(Limit: %d) returned %d records, want %d", tc.limit, len(got), tc.want)
		}
	}
}

// scanRecords is more than two pages of either store's Scan (4096 rows),
// so that Scan crosses page boundaries.
const scanRecords = 2*4096 + 10

func testScan(t *testing.T, open Open) {
	s := open(t)
	ctx := context.Background()
	n := scanRecords
	records := Chain(0, audit.ZeroHash, n, 64, nil)
	for b := range slices.Chunk(records, 1000) {
		appendAll(t, s, b)
	}

	for _, after := range []int64{0, 1, 4095, 4096, int64(n) - 1, int64(n), int64(n) + 5} {
		var got []int64
		prev := audit.ZeroHash
		if after > 0 && after <= int64(n) {
			prev = records[after-1].EventHash
		}
		err := s.Scan(ctx, after, func(r audit.Record) error {
			got = append(got, r.Seq)
			if r.PrevHash != prev {
				return fmt.Errorf("seq %d: prev_hash does not link", r.Seq)
			}
			if d := SameRecord(r, records[r.Seq-1]); d != "" {
				return fmt.Errorf("seq %d: %s", r.Seq, d)
			}
			prev = r.EventHash
			return nil
		})
		if err != nil {
			t.Fatalf("Scan(after %d): %v", after, err)
		}
		want := max(0, int64(n)-after)
		if int64(len(got)) != want || (want > 0 && (got[0] != after+1 || got[len(got)-1] != int64(n))) {
			t.Errorf("Scan(after %d) visited %d records, want %d from seq %d", after, len(got), want, after+1)
		}
		if !slices.IsSorted(got) {
			t.Errorf("Scan(after %d) is not in seq order", after)
		}
	}

	// fn's error ends the scan and is returned as is.
	stop := errors.New("enough")
	var visited int
	err := s.Scan(ctx, 0, func(r audit.Record) error {
		visited++
		if r.Seq == 4096+2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Errorf("Scan returned %v, want fn's error as is", err)
	}
	if visited != 4096+2 {
		t.Errorf("Scan visited %d records after fn's error, want %d", visited, 4096+2)
	}

	// A cancelled context ends it too.
	cctx, cancel := context.WithCancel(ctx)
	visited = 0
	err = s.Scan(cctx, 0, func(r audit.Record) error {
		visited++
		if visited == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Scan with a cancelled context = %v, want context.Canceled", err)
	}
}

// request is a pending request created at T0 plus i minutes.
func request(id, by string, i int) approval.Request {
	res := audit.Resource{Type: "database", Name: "prod-db"}
	created := T0.Add(time.Duration(i) * time.Minute)
	return approval.Request{
		SchemaVersion: approval.SchemaVersion, ID: id, CreatedAt: created, ExpiresAt: created.Add(time.Hour),
		Status: approval.Pending, RequestedBy: by, Resource: res, Action: "write", Quorum: 1,
		ActionHash: approval.ActionHash(res, "write", "", ""), Votes: []approval.Vote{},
	}
}

// The approvals table (store.Approvals): a put never moves a row back,
// and each filter and order of ListApprovals.
func testApprovals(t *testing.T, open Open) {
	s := open(t)
	ctx := context.Background()
	if seq, err := s.ApprovalsSeq(ctx); err != nil || seq != 0 {
		t.Fatalf("ApprovalsSeq of an empty store = %d, %v", seq, err)
	}
	// Created in the order c, a, b; changed last in the order a, b, c.
	a, b, c := request("apr_a", "alice", 2), request("apr_b", "bob", 3), request("apr_c", "alice", 1)
	put := func(r approval.Request, seq int64) {
		t.Helper()
		if err := s.PutApproval(ctx, r, seq); err != nil {
			t.Fatal(err)
		}
	}
	put(a, 1)
	put(b, 2)
	put(c, 3)
	b.Status = approval.Denied
	put(b, 5)
	stale := b
	stale.Status = approval.Pending
	put(stale, 4) // a replay of an older state: ignored
	if row, ok, err := s.GetApproval(ctx, "apr_b"); err != nil || !ok || row.Seq != 5 || row.Request.Status != approval.Denied {
		t.Fatalf("GetApproval(apr_b) = %+v, %v, %v; want denied at seq 5", row, ok, err)
	}
	if _, ok, err := s.GetApproval(ctx, "apr_none"); ok || err != nil {
		t.Fatalf("GetApproval(missing) = %v, %v", ok, err)
	}
	if seq, err := s.ApprovalsSeq(ctx); err != nil || seq != 5 {
		t.Fatalf("ApprovalsSeq = %d, %v; want 5", seq, err)
	}
	ids := func(rows []store.ApprovalRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Request.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.ApprovalFilter
		want []string
	}{
		{"all, by last change", store.ApprovalFilter{}, []string{"apr_a", "apr_c", "apr_b"}},
		{"status", store.ApprovalFilter{Status: approval.Pending}, []string{"apr_a", "apr_c"}},
		{"requested_by", store.ApprovalFilter{RequestedBy: "alice"}, []string{"apr_a", "apr_c"}},
		{"after_seq", store.ApprovalFilter{AfterSeq: 1}, []string{"apr_c", "apr_b"}},
		{"due by", store.ApprovalFilter{DueBy: T0.Add(time.Hour + 2*time.Minute)}, []string{"apr_a", "apr_c"}},
		{"due by, exclusive of later", store.ApprovalFilter{DueBy: T0.Add(time.Hour + time.Minute)}, []string{"apr_c"}},
		{"newest", store.ApprovalFilter{Newest: true, Limit: 2}, []string{"apr_c", "apr_b"}},
		{"by creation", store.ApprovalFilter{ByCreation: true}, []string{"apr_c", "apr_a", "apr_b"}},
		{"limit", store.ApprovalFilter{Limit: 1}, []string{"apr_a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := s.ListApprovals(ctx, tc.f)
			if err != nil || !slices.Equal(ids(rows), tc.want) {
				t.Errorf("ListApprovals(%+v) = %v, %v; want %v", tc.f, ids(rows), err, tc.want)
			}
		})
	}
	row, _, _ := s.GetApproval(ctx, "apr_a")
	if got, _ := json.Marshal(row.Request); string(got) != string(must(json.Marshal(a))) {
		t.Errorf("GetApproval(apr_a).Request = %s, want %s", got, must(json.Marshal(a)))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ApprovalLog appends a tool event, a request and its approval to s, the
// way auditd records them (append, then put with the event's seq), and
// returns the request as approved.
func ApprovalLog(t testing.TB, s store.Store) approval.Request {
	t.Helper()
	ctx := context.Background()
	r := request("apr_1", "alice", 0)
	prev, seq := audit.ZeroHash, int64(0)
	add := func(e audit.Event) int64 {
		seq++
		e.EventID = fmt.Sprintf("evt_%d", seq)
		rec, err := audit.Seal(&e, seq, prev, T0.Add(time.Duration(seq)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		appendAll(t, s, []audit.Record{rec})
		prev = rec.EventHash
		return seq
	}
	record := func(r approval.Request) {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		n := add(audit.Event{EventType: approval.ChangeType(&r), ApprovalID: r.ID, Data: data})
		if err := s.PutApproval(ctx, r, n); err != nil {
			t.Fatal(err)
		}
	}
	add(audit.Event{EventType: audit.TypeToolExecution, Agent: "sre-bot"})
	record(r)
	at := T0.Add(time.Minute)
	r.Votes = append(r.Votes, approval.Vote{By: "bob", Decision: approval.Approve, At: at})
	r.Status, r.DecidedAt = approval.Approved, &at
	record(r)
	return r
}

// The snapshot holds the table and the approval events, and agrees with
// them when auditd recorded each state as it does (append, then put).
func testApprovalsSnapshot(t *testing.T, open Open) {
	s := open(t)
	ctx := context.Background()
	r := ApprovalLog(t, s)

	snap, ok, err := s.ApprovalsSnapshot(ctx)
	if err != nil || !ok {
		t.Fatalf("ApprovalsSnapshot = %v, %v", ok, err)
	}
	if snap.Origin != 0 || len(snap.Rows) != 1 || snap.Rows[0].ID != r.ID || snap.Rows[0].Seq != 3 || snap.Rows[0].Status != "approved" ||
		!slices.Equal(Seqs(snap.Events), []int64{2, 3}) {
		t.Fatalf("snapshot: origin %d, rows %+v, event seqs %v", snap.Origin, snap.Rows, Seqs(snap.Events))
	}
	if ms, err := snap.Mismatches(true); err != nil || len(ms) != 0 {
		t.Fatalf("intact: %+v, %v", ms, err)
	}
}

// drafts prepares n events with event ids prefix-1 … prefix-n.
func drafts(t testing.TB, prefix string, n int, idempotent bool, received time.Time) []store.Draft {
	t.Helper()
	out := make([]store.Draft, n)
	for i := range out {
		e := audit.Event{
			EventID: fmt.Sprintf("%s-%d", prefix, i+1), EventType: audit.TypeToolExecution,
			Agent: "agent-" + prefix, ActionClass: audit.ActionRead,
		}
		d, err := audit.Prepare(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = store.Draft{EventID: e.EventID, Draft: d, Received: received, Idempotent: idempotent}
	}
	return out
}

// checkChain scans s and checks that its seqs are 1..n, each prev_hash is
// the previous event_hash, each hash is its body's, and timestamps never
// go backwards; it returns the records.
func checkChain(t testing.TB, s store.Store) []audit.Record {
	t.Helper()
	var recs []audit.Record
	prev, last := audit.ZeroHash, time.Time{}
	err := s.Scan(context.Background(), 0, func(r audit.Record) error {
		switch {
		case r.Seq != int64(len(recs))+1:
			return fmt.Errorf("seq %d after %d", r.Seq, len(recs))
		case r.PrevHash != prev:
			return fmt.Errorf("seq %d: prev_hash %s, want %s (a fork)", r.Seq, r.PrevHash, prev)
		case audit.Hash(r.Body) != r.EventHash:
			return fmt.Errorf("seq %d: event_hash is not its body's", r.Seq)
		case r.Timestamp.Before(last):
			return fmt.Errorf("seq %d: timestamp %v before the previous %v", r.Seq, r.Timestamp, last)
		}
		recs = append(recs, r)
		prev, last = r.EventHash, r.Timestamp
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A Sequencer numbers and chains after the head the database holds, also
// after plain Appends; answers a stored idempotent id with the stored event;
// and refuses a stored id that is not idempotent, storing nothing.
func testSequence(t *testing.T, open Open) {
	s := open(t)
	sq, ok := s.(store.Sequencer)
	if !ok {
		t.Skip("not a store.Sequencer")
	}
	ctx := context.Background()
	appendAll(t, s, Chain(0, audit.ZeroHash, 2, 100, nil)) // stamped T0+1s, T0+2s
	// Received before the head's timestamp: stamped with the head's.
	got, err := sq.Sequence(ctx, drafts(t, "a", 3, true, T0))
	if err != nil {
		t.Fatal(err)
	}
	for i, sd := range got {
		if sd.Err != nil || sd.Stored || sd.Record.Seq != int64(3+i) || !sd.Record.Timestamp.Equal(T0.Add(2*time.Second)) {
			t.Errorf("Sequence[%d] = seq %d at %v, stored %v, %v", i, sd.Record.Seq, sd.Record.Timestamp, sd.Stored, sd.Err)
		}
	}
	// A retry of a-2 beside a new event: the stored a-2 comes back.
	later := T0.Add(time.Hour)
	batch := append(drafts(t, "a", 2, true, later)[1:], drafts(t, "b", 1, false, later)...)
	got, err = sq.Sequence(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Stored || got[0].Record.Seq != 4 || got[0].Record.EventID != "a-2" || got[1].Stored || got[1].Record.Seq != 6 ||
		!got[1].Record.Timestamp.Equal(later) {
		t.Errorf("Sequence(retry, new) = %+v", got)
	}
	// A stored id that is not idempotent: an error, nothing stored.
	_, err = sq.Sequence(ctx, append(drafts(t, "c", 1, false, later), drafts(t, "b", 1, false, later)...))
	if !errors.Is(err, store.ErrDuplicate) {
		t.Errorf("Sequence(stored id, not idempotent) = %v, want ErrDuplicate", err)
	}
	if _, ok, _ := s.Get(ctx, "c-1"); ok {
		t.Error("c-1 of the failed batch is stored")
	}
	recs := checkChain(t, s)
	if len(recs) != 6 {
		t.Fatalf("%d records, want 6", len(recs))
	}
	for _, sd := range got[1:] {
		if d := SameRecord(recs[sd.Record.Seq-1], sd.Record); d != "" {
			t.Errorf("stored seq %d: %s", sd.Record.Seq, d)
		}
	}
}

// Writers sequencing concurrently never fork the chain: what several
// auditd instances on one database do (issue 19).
func testSequenceConcurrent(t *testing.T, open Open) {
	s := open(t)
	sq, ok := s.(store.Sequencer)
	if !ok {
		t.Skip("not a store.Sequencer")
	}
	const writers, batches, size = 4, 15, 7
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				ds := drafts(t, fmt.Sprintf("w%d-b%d", w, b), size, b%2 == 0, time.Now())
				got, err := sq.Sequence(context.Background(), ds)
				if err != nil {
					t.Error(err)
					return
				}
				for i := 1; i < len(got); i++ {
					if got[i].Record.Seq != got[i-1].Record.Seq+1 || got[i].Record.PrevHash != got[i-1].Record.EventHash {
						t.Errorf("batch %d of writer %d is not contiguous", b, w)
					}
				}
			}
		})
	}
	wg.Wait()
	if recs := checkChain(t, s); len(recs) != writers*batches*size {
		t.Fatalf("%d records, want %d", len(recs), writers*batches*size)
	}
}
