package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// queryPlan is SQLite's plan for q, its steps joined by "; ".
func queryPlan(t *testing.T, path, q string, args ...any) string {
	t.Helper()
	rows, err := rawDB(t, path).Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}

// Each index that migration 6 keeps answers the query it is kept for
// (issue 20), as Query and Get build them.
func TestIndexesServeTheirQueries(t *testing.T) {
	s, path := openTest(t)
	appendAll(t, s, storetest.Chain(0, audit.ZeroHash, 50, 200, nil))
	for _, tc := range []struct {
		name, query, index string
		args               []any
	}{
		{"Get, and the writer's duplicate check", getSQL, "sqlite_autoindex_events_1", []any{"evt-1"}},
		{"GetMany, a batch append's check", getManySQL, "sqlite_autoindex_events_1", []any{`["evt-1","evt-2"]`}},
		{"approvals.catchUp", "SELECT " + columns + " FROM events WHERE event_type = ? AND seq > ? ORDER BY seq LIMIT ?",
			"events_event_type", []any{"approval_requested", 10, 1000}},
		{"guardrails' session history",
			"SELECT " + columns + " FROM events WHERE session_id = ? AND event_type = ? AND action_class = ? AND timestamp >= ? AND seq > ? ORDER BY seq LIMIT ?",
			"events_session_id", []any{"s1", "policy_decision", "write", "2025-03-01", 10, 1000}},
	} {
		if plan := queryPlan(t, path, tc.query, tc.args...); !strings.Contains(plan, "INDEX "+tc.index) {
			t.Errorf("%s: plan %q does not use %s", tc.name, plan, tc.index)
		}
	}
}

// Migration 6 drops the indexes no query needs from a database that an
// older auditd created, and Query still filters on their columns.
func TestMigrateDropsUnneededIndexes(t *testing.T) {
	ctx := context.Background()
	recs := storetest.Chain(0, audit.ZeroHash, 40, 200, func(r *audit.Record) {
		r.Agent = fmt.Sprintf("agent-%d", r.Seq%2)
		r.TraceID = fmt.Sprintf("trace-%d", r.Seq%3)
		r.ActionClass = []string{"read", "write", "destructive", "read"}[r.Seq%4]
		r.ToolName = fmt.Sprintf("tool-%d", r.Seq%5)
	})
	path := oldDatabase(t, 5, recs)
	indexes := func() []string {
		rows, err := rawDB(t, path).Query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' ORDER BY name")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			names = append(names, n)
		}
		return names
	}
	if got := indexes(); len(got) != 8 {
		t.Fatalf("version 5 indexes = %v, want 8", got)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("migrating version 5: %v", err)
	}
	defer s.Close()
	want := []string{"events_approval_id", "events_event_type", "events_session_id", "sqlite_autoindex_events_1"}
	if got := indexes(); !slices.Equal(got, want) {
		t.Errorf("indexes after migration = %v, want %v", got, want)
	}
	r := recs[7]
	for _, f := range []store.Filter{{Agent: r.Agent}, {TraceID: r.TraceID}, {ActionClass: r.ActionClass}, {ToolName: r.ToolName}} {
		var want []int64
		for _, c := range recs {
			if (f.Agent == "" || c.Agent == f.Agent) && (f.TraceID == "" || c.TraceID == f.TraceID) &&
				(f.ActionClass == "" || c.ActionClass == f.ActionClass) && (f.ToolName == "" || c.ToolName == f.ToolName) {
				want = append(want, c.Seq)
			}
		}
		if got, err := s.Query(ctx, f); err != nil || !slices.Equal(storetest.Seqs(got), want) {
			t.Errorf("Query(%+v) after migration = %v, %v; want %v", f, storetest.Seqs(got), err, want)
		}
	}
}

// A new database has pageSize pages (set before WAL writes the header);
// an existing one keeps the size it was created with.
func TestPageSize(t *testing.T) {
	pageSizeOf := func(path string) int {
		var n int
		if err := rawDB(t, path).QueryRow("PRAGMA page_size").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	s, path := openTest(t)
	appendAll(t, s, storetest.Chain(0, audit.ZeroHash, 10, 200, nil))
	if got := pageSizeOf(path); got != pageSize {
		t.Errorf("new database: page size %d, want %d", got, pageSize)
	}
	var mode string
	if err := rawDB(t, path).QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("new database: journal mode %q, %v; want wal", mode, err)
	}

	// oldDatabase's file was created by the driver with SQLite's default.
	old := oldDatabase(t, 5, storetest.Chain(0, audit.ZeroHash, 10, 200, nil))
	if got := pageSizeOf(old); got != 4096 {
		t.Fatalf("old database: page size %d, want 4096", got)
	}
	s2, err := Open(old, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, s2, storetest.Chain(10, s2Head(t, s2), 5, 200, nil))
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := pageSizeOf(old); got != 4096 {
		t.Errorf("old database after Open: page size %d, want 4096 kept", got)
	}
}

func s2Head(t *testing.T, s *Store) string {
	t.Helper()
	_, hash, err := s.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return hash
}
