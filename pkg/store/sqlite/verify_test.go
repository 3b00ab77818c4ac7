package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// sealed returns n sealed records of typical size (bodies of about 600
// bytes, as internal/chaingen writes) whose timestamps have fraction digits
// of every length, so that the stored text and the body's differ as often
// as they agree.
func sealed(t testing.TB, n int) []audit.Record {
	t.Helper()
	recs := make([]audit.Record, 0, n)
	prev := audit.ZeroHash
	for i := range n {
		e := audit.Event{
			EventID: fmt.Sprintf("evt_%d", i+1), EventType: audit.TypeToolExecution, Agent: "agent-a",
			TraceID: fmt.Sprintf("trace-%d", i/100), ActionClass: audit.ActionRead,
			Tool: &audit.Tool{Name: "bash", RawCommand: "ls -la /var/log && grep -i error /var/log/syslog | tail -n 50",
				Result: "total 4096 drwxr-xr-x 2 root root 4096 syslog messages kern.log auth.log dpkg.log"},
		}
		ts := t0.Add(time.Duration(i) * 1_234_567_000 * time.Nanosecond)
		rec, err := audit.Seal(&e, int64(i+1), prev, ts)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		prev = rec.EventHash
	}
	return recs
}

// sequentialVerdict feeds every row, in seq order, to one Verifier: what
// VerifyChain must equal.
func sequentialVerdict(t *testing.T, s *Store) *audit.Verifier {
	t.Helper()
	recs, err := s.query(context.Background(), nil, "SELECT "+columns+" FROM events ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	// And approval_id, read through database/sql too (seq is the key: one
	// row each, in the same order).
	rows, err := s.reader.Query("SELECT coalesce(approval_id, '') FROM events ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ {
		if err := rows.Scan(&recs[i].ApprovalID); err != nil {
			t.Fatal(err)
		}
		recs[i].HasApprovalID = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	v := audit.NewVerifier()
	for _, r := range recs {
		v.Add(r)
	}
	return v
}

// VerifyChain's verdict is the sequential Verifier's on tampered databases,
// for any number of workers and chunks: broken links at chunk boundaries,
// seqs moved out of range, more than MaxBrokenLinks links.
func TestVerifyChainMatchesSequential(t *testing.T) {
	for _, tt := range []struct {
		name   string
		n      int
		tamper []string
	}{
		{"intact", 40, nil},
		{"empty", 0, nil},
		{"one record", 1, nil},
		{"indexed column", 40, []string{`UPDATE events SET agent = 'mallory' WHERE seq IN (10, 11, 20)`}},
		{"column of another type", 40, []string{`UPDATE events SET agent = 42, trace_id = x'00ff' WHERE seq = 11`}},
		{"body", 40, []string{`UPDATE events SET body = replace(body, '"agent-a"', '"agent-b"') WHERE seq = 10`}},
		{"approval_id", 40, []string{`UPDATE events SET approval_id = 'apr-1' WHERE seq IN (3, 17)`,
			`UPDATE events SET approval_id = '' WHERE seq = 18`}},
		{"body as text", 40, []string{`UPDATE events SET body = CAST(body AS TEXT) WHERE seq > 30`}},
		{"event_hash", 40, []string{`UPDATE events SET event_hash = 'ff' WHERE seq IN (1, 10, 20, 40)`}},
		{"rows deleted", 40, []string{`DELETE FROM events WHERE seq IN (1, 11, 12, 21, 40)`}},
		{"seq moved below 1", 40, []string{`UPDATE events SET seq = -1 WHERE seq = 1`, `UPDATE events SET seq = 0 WHERE seq = 2`}},
		{"seq moved far", 40, []string{`UPDATE events SET seq = 4611686018427387904 WHERE seq = 20`}},
		{"seqs at both ends", 40, []string{`UPDATE events SET seq = -9223372036854775808 WHERE seq = 5`,
			`UPDATE events SET seq = 9223372036854775807 WHERE seq = 6`}},
		{"timestamp", 40, []string{`UPDATE events SET timestamp = 'yesterday' WHERE seq = 10`,
			`UPDATE events SET timestamp = '' WHERE seq = 11`,
			`UPDATE events SET timestamp = '2025-03-01T13:00:01.234567+01:00' WHERE seq = 2`,
			`UPDATE events SET timestamp = substr(timestamp, 1, 19) || 'Z' WHERE seq BETWEEN 20 AND 30`}},
		{"pages", 2*scanPage + 5, []string{`DELETE FROM events WHERE seq IN (4096, 8194)`,
			`UPDATE events SET event_hash = 'ff' WHERE seq IN (4095, 4097, 8192, 8193)`}},
		{"full page up to the highest seq", scanPage, []string{`UPDATE events SET seq = 9223372036854775807 WHERE seq = 4096`}},
		{"more than MaxBrokenLinks", audit.MaxBrokenLinks + 200, []string{`UPDATE events SET agent = 'x' WHERE seq % 3 = 0`,
			`UPDATE events SET event_hash = 'ff' WHERE seq % 5 = 0`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, path := openTest(t)
			if tt.n > 0 {
				appendAll(t, s, sealed(t, tt.n))
			}
			db := rawDB(t, path)
			for _, q := range tt.tamper {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			want := sequentialVerdict(t, s)
			if tt.tamper == nil && !want.Report().Verified {
				t.Fatalf("the intact chain does not verify: %+v", want.Report().BrokenLinks)
			}
			for _, workers := range []int{1, 2, 3} {
				for _, chunks := range []int{1, 2, 3, 4, 7, 16, tt.n + 3} {
					got, err := s.verifyChain(context.Background(), workers, chunks)
					if err != nil {
						t.Fatalf("%d workers, %d chunks: %v", workers, chunks, err)
					}
					if g, w := got.Report(), want.Report(); !reflect.DeepEqual(g, w) || got.BrokenCount() != want.BrokenCount() {
						t.Fatalf("%d workers, %d chunks: %d broken, report\n%+v\nwant %d broken,\n%+v",
							workers, chunks, got.BrokenCount(), g, want.BrokenCount(), w)
					}
				}
			}
			got, err := s.VerifyChain(context.Background())
			if err != nil || !reflect.DeepEqual(got.Report(), want.Report()) {
				t.Fatalf("VerifyChain: %v, %+v", err, got)
			}
		})
	}
}

// A verification that runs while records are appended verifies the
// prefix that was stored when it started.
func TestVerifyChainWhileAppending(t *testing.T) {
	s, _ := openTest(t)
	recs := sealed(t, 3000)
	appendAll(t, s, recs[:1000])
	done := make(chan error)
	go func() {
		for i := 1000; i < len(recs); i += 100 {
			if err := s.Append(context.Background(), recs[i:i+100]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for {
		v, err := s.verifyChain(context.Background(), 2, 5)
		if err != nil {
			t.Fatal(err)
		}
		rep := v.Report()
		if !rep.Verified || rep.TotalEvents < 1000 || rep.LastEvent.Seq != rep.TotalEvents {
			t.Fatalf("verified %v, %d events, last seq %d: %+v", rep.Verified, rep.TotalEvents, rep.LastEvent.Seq, rep.BrokenLinks)
		}
		if rep.TotalEvents == int64(len(recs)) {
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestVerifyChainErrors(t *testing.T) {
	s, _ := openTest(t)
	appendAll(t, s, sealed(t, 10))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.verifyChain(ctx, 2, 4); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: got %v", err)
	}

	notDB := filepath.Join(t.TempDir(), "notes.db")
	if err := os.WriteFile(notDB, make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := &Store{path: notDB, busy: time.Second}
	if _, err := bad.VerifyChain(context.Background()); err == nil {
		t.Error("verified a file that is not a database")
	}
}

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		lo, hi int64
		n      int
		want   [][2]int64
	}{
		{1, 100, 4, [][2]int64{{1, 25}, {26, 50}, {51, 75}, {76, 100}}},
		{1, 100, 3, [][2]int64{{1, 34}, {35, 68}, {69, 100}}},
		{1, 3, 8, [][2]int64{{1, 1}, {2, 2}, {3, 3}}},
		{5, 5, 4, [][2]int64{{5, 5}}},
		{-3, 2, 2, [][2]int64{{-3, -1}, {0, 2}}},
		{math.MinInt64, math.MaxInt64, 1, [][2]int64{{math.MinInt64, math.MaxInt64}}},
		{math.MinInt64, math.MaxInt64, 2, [][2]int64{{math.MinInt64, -1}, {0, math.MaxInt64}}},
		{math.MaxInt64 - 1, math.MaxInt64, 3, [][2]int64{{math.MaxInt64 - 1, math.MaxInt64 - 1}, {math.MaxInt64, math.MaxInt64}}},
	} {
		if got := split(tt.lo, tt.hi, tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("split(%d, %d, %d) = %v, want %v", tt.lo, tt.hi, tt.n, got, tt.want)
		}
	}
}
