package sqlite

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// TestTamperedRowsAsStored: the store returns what the file holds and
// never repairs it; finding the damage is pkg/audit's verification.
func TestTamperedRowsAsStored(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	records := storetest.Chain(0, audit.ZeroHash, 5, 200, nil)
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
		if d := storetest.SameRecord(scanned[i], w); d != "" {
			t.Errorf("Scan seq %d: %s", w.Seq, d)
		}
		got, ok, err := s.Get(ctx, w.EventID)
		if err != nil || !ok {
			t.Fatalf("Get(%s) = %v, %v", w.EventID, ok, err)
		}
		if d := storetest.SameRecord(got, w); d != "" {
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
	appendAll(t, s, storetest.Chain(0, audit.ZeroHash, 50, 600, nil))
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
	records := storetest.Chain(0, audit.ZeroHash, 200, 300, func(r *audit.Record) {
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
