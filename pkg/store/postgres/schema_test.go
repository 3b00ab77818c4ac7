package postgres

import (
	"context"
	"slices"
	"testing"
)

// The events table keeps the indexes a query needs, as SQLite's schema
// does (its migration 6 lists which query needs each), and timestamp's
// (issue 20): every other index is one more b-tree each append writes.
func TestEventIndexes(t *testing.T) {
	s, _ := openTest(t)
	rows, err := s.pool.Query(context.Background(), "SELECT indexname FROM pg_indexes WHERE tablename = 'events' ORDER BY indexname")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	want := []string{"events_approval_id", "events_event_id_key", "events_event_type", "events_pkey", "events_session_id", "events_timestamp"}
	if !slices.Equal(got, want) {
		t.Errorf("indexes on events = %v, want %v", got, want)
	}
}
