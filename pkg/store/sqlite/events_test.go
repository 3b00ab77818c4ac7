package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
)

func TestAppendHeadGet(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()

	seq, hash, err := s.Head(ctx)
	if err != nil || seq != 0 || hash != audit.ZeroHash {
		t.Fatalf("Head of an empty log = %d, %q, %v; want 0, ZeroHash", seq, hash, err)
	}

	first := chain(0, audit.ZeroHash, 3, 600, func(r *audit.Record) {
		r.TraceID, r.SessionID = "trace-1", "sess-1"
		// Not on a second: the column keeps all nine digits.
		r.Timestamp = r.Timestamp.Add(123456789 * time.Nanosecond)
	})
	appendAll(t, s, first)
	second := chain(3, first[2].EventHash, 2, 600, func(r *audit.Record) {
		// A local time is stored, and returned, as the same instant in UTC.
		r.Timestamp = r.Timestamp.In(time.FixedZone("CET", 3600))
	})
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
		if d := sameRecord(got, want); d != "" {
			t.Errorf("Get(%q): %s", want.EventID, d)
		}
	}
	if _, ok, err := s.Get(ctx, "no-such-event"); ok || err != nil {
		t.Errorf("Get(missing) = %v, %v; want false, nil", ok, err)
	}
	if err := s.Append(ctx, nil); err != nil {
		t.Errorf("Append(empty batch) = %v", err)
	}
}

func TestAppendDuplicate(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		batch func(stored []audit.Record) []audit.Record
		dup   bool // errors.Is(err, store.ErrDuplicate)
		want  string
	}{{
		name: "event_id already stored",
		batch: func(stored []audit.Record) []audit.Record {
			return chain(3, stored[2].EventHash, 3, 100, func(r *audit.Record) {
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
			return chain(3, stored[2].EventHash, 3, 100, func(r *audit.Record) {
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
			b := chain(3, stored[2].EventHash, 3, 100, nil)
			b[2].Seq = 3
			return b
		},
		want: "store: append: seq 3 is already stored",
	}, {
		name: "seq zero",
		batch: func(stored []audit.Record) []audit.Record {
			b := chain(3, stored[2].EventHash, 3, 100, nil)
			b[1].Seq = 0
			return b
		},
		want: "seq 0, want > 0",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTest(t)
			stored := chain(0, audit.ZeroHash, 3, 100, nil)
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
			appendAll(t, s, chain(3, stored[2].EventHash, 1, 100, nil))
		})
	}
}

// queryLog is 24 events: agents a/b/c in turn, trace t0..t3 every six,
// action classes read/write/destructive, every fourth a policy decision.
func queryLog(t *testing.T) (*Store, []audit.Record) {
	s, _ := openTest(t)
	records := chain(0, audit.ZeroHash, 24, 200, func(r *audit.Record) {
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

func TestQueryFilters(t *testing.T) {
	s, records := queryLog(t)
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
	at := func(seq int64) time.Time { return t0.Add(time.Duration(seq) * time.Second) }

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
		{"after_seq", store.Filter{AfterSeq: 21}, []int64{22, 23, 24}},
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
			if !slices.Equal(seqs(got), tc.want) {
				t.Errorf("Query(%+v) seqs = %v, want %v", tc.f, seqs(got), tc.want)
			}
			for _, r := range got {
				if d := sameRecord(r, records[r.Seq-1]); d != "" {
					t.Errorf("seq %d: %s", r.Seq, d)
				}
			}
		})
	}
}

func TestQueryPagination(t *testing.T) {
	s, _ := queryLog(t)
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
		pages = append(pages, seqs(page))
		f.AfterSeq = page[len(page)-1].Seq
	}
	want := [][]int64{{1, 3, 5, 7, 9}, {11, 13, 15, 17, 19}, {21, 23}}
	if !slices.EqualFunc(pages, want, slices.Equal) {
		t.Errorf("pages = %v, want %v", pages, want)
	}
}

func TestQueryLimits(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	appendAll(t, s, chain(0, audit.ZeroHash, store.MaxLimit+200, 50, nil))
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

func TestScan(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	// More than two pages, so that Scan crosses page boundaries.
	n := 2*scanPage + 10
	records := chain(0, audit.ZeroHash, n, 64, nil)
	for b := range slices.Chunk(records, 1000) {
		appendAll(t, s, b)
	}

	for _, after := range []int64{0, 1, scanPage - 1, scanPage, int64(n) - 1, int64(n), int64(n) + 5} {
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
			if d := sameRecord(r, records[r.Seq-1]); d != "" {
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
		if r.Seq == scanPage+2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Errorf("Scan returned %v, want fn's error as is", err)
	}
	if visited != scanPage+2 {
		t.Errorf("Scan visited %d records after fn's error, want %d", visited, scanPage+2)
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

// TestTamperedRowsAsStored: the store returns what the file holds and
// never repairs it; finding the damage is pkg/audit's verification.
func TestTamperedRowsAsStored(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	records := chain(0, audit.ZeroHash, 5, 200, nil)
	appendAll(t, s, records)

	db := rawDB(t, path)
	for _, q := range []string{
		`UPDATE events SET body = CAST('{"tampered":true}' AS BLOB) WHERE seq = 2`,
		`UPDATE events SET agent = 'someone-else' WHERE seq = 3`,
		`UPDATE events SET timestamp = 'yesterday' WHERE seq = 4`,
		`UPDATE events SET body = 'stored as text' WHERE seq = 5`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := slices.Clone(records)
	want[1].Body = []byte(`{"tampered":true}`)
	want[2].Agent = "someone-else"
	want[3].Timestamp = time.Time{}.UTC() // unparseable: the zero time, a column mismatch for verification
	want[4].Body = []byte("stored as text")

	var scanned []audit.Record
	if err := s.Scan(ctx, 0, func(r audit.Record) error { scanned = append(scanned, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(scanned) != len(want) {
		t.Fatalf("Scan returned %d records, want %d", len(scanned), len(want))
	}
	for i, w := range want {
		if d := sameRecord(scanned[i], w); d != "" {
			t.Errorf("Scan seq %d: %s", w.Seq, d)
		}
		got, ok, err := s.Get(ctx, w.EventID)
		if err != nil || !ok {
			t.Fatalf("Get(%s) = %v, %v", w.EventID, ok, err)
		}
		if d := sameRecord(got, w); d != "" {
			t.Errorf("Get seq %d: %s", w.Seq, d)
		}
	}
	// The head is the stored hash, whatever the body says.
	if seq, hash, _ := s.Head(ctx); seq != 5 || hash != records[4].EventHash {
		t.Errorf("Head = %d, %s", seq, hash)
	}
}

func TestStats(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	appendAll(t, s, chain(0, audit.ZeroHash, 50, 600, nil))
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != 50 || st.FileBytes <= 0 || st.WALBytes <= 0 {
		t.Errorf("Stats = %+v, want 50 events and non-empty files", st)
	}
}

// timeBounds is a binary search that relies on timestamps never going
// backwards along the chain; it must agree with a linear scan, also when
// many events share a timestamp (a batch append stamps them all with its
// receive time) and when rows are missing from the seq range.
func TestTimeBound(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	if got, err := s.timeBounds(ctx, t0); err != nil || got[0] != 1 {
		t.Fatalf("empty log: timeBounds = %v, %v; want [1]", got, err)
	}
	// 200 events in runs of equal timestamps: seq n at t0 + (n/7) seconds.
	records := chain(0, audit.ZeroHash, 200, 300, func(r *audit.Record) {
		r.Timestamp = t0.Add(time.Duration(r.Seq/7) * time.Second)
	})
	appendAll(t, s, records)
	// Delete a few rows, as a damaged or edited file could have them.
	db := rawDB(t, path)
	if _, err := db.Exec("DELETE FROM events WHERE seq IN (1, 50, 51, 52, 130, 200)"); err != nil {
		t.Fatal(err)
	}
	var kept []audit.Record
	for _, r := range records {
		switch r.Seq {
		case 1, 50, 51, 52, 130, 200:
		default:
			kept = append(kept, r)
		}
	}
	linear := func(at time.Time) int64 {
		for _, r := range kept {
			if !r.Timestamp.Before(at) {
				return r.Seq
			}
		}
		return kept[len(kept)-1].Seq + 1
	}
	for sec := -1; sec <= 30; sec++ {
		for _, off := range []time.Duration{-time.Nanosecond, 0, time.Nanosecond} {
			at := t0.Add(time.Duration(sec)*time.Second + off)
			bounds, err := s.timeBounds(ctx, at)
			if err != nil {
				t.Fatal(err)
			}
			got := bounds[0]
			// Both name the same first event at or after at; the search
			// may land on a deleted seq just before it.
			want := linear(at)
			if got > want || (got < want && slices.ContainsFunc(kept, func(r audit.Record) bool { return r.Seq >= got && r.Seq < want })) {
				t.Errorf("timeBounds(t0%+v) = %d, want %d", at.Sub(t0), got, want)
			}
		}
	}
}
