package sqlite

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// Append's own connection is as durable as the read-write pool, and both
// checkpoint at the same WAL size, ~40 MB in the file's pages: 10,000 of
// 4 KiB, 2,500 of 16 KiB (a file made by the first issue-20 builds).
func TestAppenderPragmas(t *testing.T) {
	s, _ := openTest(t)
	old, err := Open(oldDatabase(t, 5, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	big, err := Open(pagedDatabase(t, 16384), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	for _, c := range []struct {
		s          *Store
		checkpoint string
	}{{s, "10000"}, {old, "10000"}, {big, "2500"}} {
		for _, tt := range []struct{ pragma, want string }{
			{"journal_mode", "wal"},
			{"synchronous", "2"}, // FULL
			{"foreign_keys", "1"},
			{"wal_autocheckpoint", c.checkpoint},
		} {
			got, err := c.s.app.queryText("PRAGMA " + tt.pragma)
			if err != nil || got != tt.want {
				t.Errorf("appender: PRAGMA %s = %q, %v; want %q", tt.pragma, got, err, tt.want)
			}
			var pool string
			if err := c.s.writer.QueryRow("PRAGMA " + tt.pragma).Scan(&pool); err != nil || pool != tt.want {
				t.Errorf("read-write pool: PRAGMA %s = %q, %v; want %q", tt.pragma, pool, err, tt.want)
			}
		}
	}
}

// The values bound from the appender's C buffer are stored exactly: empty
// strings as ” (the columns are NOT NULL), any bytes in the body, and a
// large row followed by small ones that reuse the buffer.
func TestAppendStoresValuesExactly(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	edits := []struct {
		name string
		edit func(*audit.Record)
	}{
		{"empty columns", func(r *audit.Record) {
			r.EventType, r.TraceID, r.SessionID, r.Agent, r.ActionClass, r.ToolName = "", "", "", "", "", ""
		}},
		{"unicode", func(r *audit.Record) { r.Agent, r.TraceID = "agént-😀", "trace\"quoted\"" }},
		{"every byte in the body", func(r *audit.Record) { r.Body = allBytes }},
		{"large body", func(r *audit.Record) { r.Body = []byte(strings.Repeat("x", 200_000)) }},
		{"small after large", func(r *audit.Record) { r.Body = []byte("{}") }},
		{"one-byte body", func(r *audit.Record) { r.Body = []byte("0") }},
	}
	var want []audit.Record
	seq, prev := int64(0), audit.ZeroHash
	for _, e := range edits {
		rec := storetest.Chain(seq, prev, 1, 100, e.edit)[0]
		appendAll(t, s, []audit.Record{rec}) // one per batch: each reuses the buffer
		want = append(want, rec)
		seq, prev = rec.Seq, rec.EventHash
	}
	for i, w := range want {
		got, ok, err := s.Get(ctx, w.EventID)
		if err != nil || !ok {
			t.Fatalf("%s: Get = %v, %v", edits[i].name, ok, err)
		}
		if d := storetest.SameRecord(got, w); d != "" {
			t.Errorf("%s: %s", edits[i].name, d)
		}
	}
	var nonText int
	err := rawDB(t, path).QueryRow(`SELECT count(*) FROM events WHERE typeof(trace_id) != 'text'
		OR typeof(agent) != 'text' OR typeof(event_type) != 'text' OR typeof(body) != 'blob'`).Scan(&nonText)
	if err != nil || nonText != 0 {
		t.Errorf("%d rows with a NULL or mistyped column (%v)", nonText, err)
	}
}

// A batch that cannot start (another process holds the write lock past
// the busy timeout) or whose context is done stores nothing, and the store
// works afterwards.
func TestAppendFailsWhole(t *testing.T) {
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		lock bool
		want string
	}{
		{"write lock held", ctx, true, "database is locked"},
		{"context canceled", canceled, false, "context canceled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := t.TempDir() + "/audit.db"
			s, err := Open(path, Options{BusyTimeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			stored := storetest.Chain(0, audit.ZeroHash, 2, 100, nil)
			appendAll(t, s, stored)
			var release func()
			if tt.lock {
				conn, err := rawDB(t, path).Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
					t.Fatal(err)
				}
				release = func() { conn.ExecContext(ctx, "ROLLBACK"); conn.Close() }
			}
			err = s.Append(tt.ctx, storetest.Chain(2, stored[1].EventHash, 3, 100, nil))
			if release != nil {
				release()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Append = %v, want an error containing %q", err, tt.want)
			}
			if tt.ctx.Err() != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("errors.Is(%v, context.Canceled) = false", err)
			}
			if seq, _, _ := s.Head(ctx); seq != 2 {
				t.Fatalf("Head after the failed batch = %d, want 2", seq)
			}
			appendAll(t, s, storetest.Chain(2, stored[1].EventHash, 3, 100, nil))
		})
	}
}

// Store is safe for concurrent use: Appends from several goroutines take
// turns on the one append connection, and the tree's readers read beside
// them. Each goroutine's batch continues the log (the tree needs seq
// order: store.Tree), so the goroutines take turns choosing their seqs.
func TestAppendConcurrent(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	const goroutines, batches, size = 4, 20, 5
	var mu sync.Mutex
	next := int64(0)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range batches {
				mu.Lock()
				err := s.Append(ctx, storetest.Chain(next, audit.ZeroHash, size, 200, nil))
				next += size
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for range batches {
				n, err := s.TreeSize(ctx)
				if err == nil && n > 0 {
					_, err = tlog.TreeHash(n, store.HashReader(ctx, s))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	st, err := s.Stats(ctx)
	if err != nil || st.Events != goroutines*batches*size {
		t.Fatalf("Stats = %+v, %v; want %d events", st, err, goroutines*batches*size)
	}
}

// BenchmarkAppendIngest is auditd's writer at 32 clients: batches of 32
// sealed events like ingestbench's (random event ids, 32 agents, sessions
// and traces in turn, ~600-byte bodies) appended durably to a log that
// grows to 64k events. cpu-us/event is the process's CPU time per event,
// steadier than events/s on a shared machine.
func BenchmarkAppendIngest(b *testing.B) {
	const clients, total = 32, 1 << 16
	var batches [][]audit.Record
	seq, prev := int64(0), audit.ZeroHash
	for seq < total {
		batch := make([]audit.Record, clients)
		for i := range batch {
			ev := audit.Event{
				EventID:     audit.NewEventID(time.Now(), rand.Reader),
				EventType:   audit.TypeToolExecution,
				TraceID:     fmt.Sprintf("trace-%d-%d", i, seq/320),
				SessionID:   fmt.Sprintf("session-%d", i),
				Agent:       fmt.Sprintf("agent-%d", i),
				ActionClass: audit.ActionRead,
				Principal:   &audit.Principal{UserID: "alice@example.com", Roles: []string{"sre"}},
				Tool: &audit.Tool{Name: "bash", RawCommand: fmt.Sprintf("journalctl -u nginx -n 200 # %d", seq),
					Result: strings.Repeat("Nov 21 06:00:00 web-1 nginx[812]: GET /healthz 200\n", 4)},
			}
			seq++
			rec, err := audit.Seal(&ev, seq, prev, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			batch[i], prev = rec, rec.EventHash
		}
		batches = append(batches, batch)
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		s, _ := openTest(b)
		cpu0 := cpuTime()
		b.StartTimer()
		start := time.Now()
		for _, batch := range batches {
			if err := s.Append(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		elapsed, cpu := time.Since(start), cpuTime()-cpu0
		b.ReportMetric(total/elapsed.Seconds(), "events/s")
		b.ReportMetric(float64(cpu.Microseconds())/total, "cpu-us/event")
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
