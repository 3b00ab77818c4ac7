package history

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/sqlitefile"
	"github.com/govkit/govkit/pkg/govreport"
)

var t0 = time.Date(2026, 3, 9, 8, 0, 0, 0, time.UTC)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func run(gateway string, at time.Time, status string, alerts, warnings int, codes ...string) govreport.Run {
	if codes == nil {
		codes = []string{}
	}
	return govreport.Run{GeneratedAt: at, Gateway: gateway, Since: "24h", Status: status, Alerts: alerts, Warnings: warnings,
		Events: 10, Decisions: 4, Codes: codes}
}

func TestRecordAndRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	s := open(t, path)
	day := 24 * time.Hour
	a := "http://a:1199"
	for _, r := range []govreport.Run{
		run(a, t0.Add(-100*day), govreport.StatusHealthy, 0, 0),
		run(a, t0.Add(-2*day), govreport.StatusWarnings, 0, 1, "STALE_APPROVAL"),
		run("http://b:1199", t0.Add(-day), govreport.StatusAlerts, 1, 0, "CHAIN_BROKEN"),
		run(a, t0.Add(-day), govreport.StatusAlerts, 2, 1, "CHAIN_BROKEN", "DEAD_RULES"),
	} {
		if _, err := s.Record(ctx, r, t0.Add(-1000*day)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		gateway string
		since   time.Time
		want    []govreport.Run
	}{
		{"all of a, oldest first", a, t0.Add(-1000 * day), []govreport.Run{
			run(a, t0.Add(-100*day), govreport.StatusHealthy, 0, 0),
			run(a, t0.Add(-2*day), govreport.StatusWarnings, 0, 1, "STALE_APPROVAL"),
			run(a, t0.Add(-day), govreport.StatusAlerts, 2, 1, "CHAIN_BROKEN", "DEAD_RULES"),
		}},
		{"within 90 days", a, t0.Add(-90 * day), []govreport.Run{
			run(a, t0.Add(-2*day), govreport.StatusWarnings, 0, 1, "STALE_APPROVAL"),
			run(a, t0.Add(-day), govreport.StatusAlerts, 2, 1, "CHAIN_BROKEN", "DEAD_RULES"),
		}},
		{"another gateway", "http://b:1199", time.Time{}, []govreport.Run{run("http://b:1199", t0.Add(-day), govreport.StatusAlerts, 1, 0, "CHAIN_BROKEN")}},
		{"unknown gateway", "http://c", time.Time{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Runs(ctx, tt.gateway, tt.since)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("runs =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// Retention: recording a run deletes the runs older than the cut-off, of
// every gateway, and the file survives a reopen.
func TestRetention(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	s := open(t, path)
	day := 24 * time.Hour
	for i := range 5 {
		if _, err := s.Record(ctx, run("http://a", t0.Add(-time.Duration(100-i*30)*day), govreport.StatusHealthy, 0, 0), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Record(ctx, run("http://a", t0, govreport.StatusHealthy, 0, 0), t0.Add(-90*day))
	if err != nil || n != 1 {
		t.Fatalf("Record deleted %d runs, %v; want 1 (the one 100 days old)", n, err)
	}
	s.Close()
	s = open(t, path)
	got, err := s.Runs(ctx, "http://a", time.Time{})
	if err != nil || len(got) != 5 || !got[0].GeneratedAt.Equal(t0.Add(-70*day)) {
		t.Errorf("after reopening: %d runs from %v, %v", len(got), got[0].GeneratedAt, err)
	}
}

func TestOpenRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("not sqlite\n", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "audit.db")
	db, err := sql.Open(sqlitefile.DriverName, sqlitefile.DSN(other, sqlitefile.DSNOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE events (seq INTEGER PRIMARY KEY, body BLOB)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	newer := filepath.Join(dir, "newer.db")
	s := open(t, newer)
	if _, err := s.db.Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'x')"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for path, want := range map[string]string{
		text:  "not a SQLite database",
		other: "not a govbot history file: it has 1 other tables",
		newer: "database has schema version 99, this binary needs 1",
		filepath.Join(dir, "no", "such", "dir.db"): "does not exist",
		dir: "not a regular file",
	} {
		_, err := Open(context.Background(), path, t0)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v, want an error containing %q", filepath.Base(path), err, want)
		}
	}
	var n int
	db, _ = sql.Open(sqlitefile.DriverName, sqlitefile.DSN(other, sqlitefile.DSNOptions{ReadOnly: true}))
	defer db.Close()
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'runs'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the audit database got a runs table (%d, %v)", n, err)
	}
}

func TestNewFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	open(t, path)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}
