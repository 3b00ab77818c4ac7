package sqlinspect

import "testing"

// FuzzInspectSQL checks the property the classifier relies on: no text makes
// a trailing "DELETE FROM t" disappear. A newline ends any line comment, and
// anything else left open (string, block comment, dollar quote, variable) is
// itself a finding, so text + "\n; DELETE FROM t" is never read-only. Without
// the newline, the DELETE may only vanish into a line comment the text left
// open, and then the text alone was already read-only.
func FuzzInspectSQL(f *testing.F) {
	for _, c := range sqlCases {
		if len(c.sql) < 4096 && c.d.valid() {
			f.Add(uint8(c.d), c.sql)
		}
	}
	f.Fuzz(func(t *testing.T, d uint8, sql string) {
		dialect := Dialect(d % 3)
		v := InspectSQL(dialect, sql)
		if v.ReadOnly && v.Destructive {
			t.Fatalf("%v %q: read-only and destructive: %+v", dialect, sql, v)
		}
		if v.REPL || v.Detail == "" {
			t.Fatalf("%v %q: unexpected verdict %+v", dialect, sql, v)
		}
		if w := InspectSQL(dialect, sql+"\n; DELETE FROM t"); w.ReadOnly {
			t.Fatalf("%v %q + newline DELETE is read-only: %+v", dialect, sql, w)
		}
		if w := InspectSQL(dialect, sql+"; DELETE FROM t"); w.ReadOnly && !v.ReadOnly {
			t.Fatalf("%v %q + DELETE is read-only but the text alone is not (%s)", dialect, sql, v.Detail)
		}
	})
}

func BenchmarkInspectSQL(b *testing.B) {
	inputs := []struct {
		d   Dialect
		sql string
	}{
		{SQLite, "SELECT count(*) FROM users"},
		{SQLite, "SELECT id, name, email FROM users WHERE created_at > datetime('now', '-7 days') ORDER BY id LIMIT 50"},
		{Postgres, "SELECT u.id, count(o.id) FROM users u LEFT JOIN orders o ON o.user_id = u.id GROUP BY u.id HAVING count(o.id) > 3"},
		{Postgres, "WITH recent AS (SELECT * FROM events WHERE ts > now() - interval '1 day') SELECT type, count(*) FROM recent GROUP BY type"},
		{MySQL, "SELECT table_name, table_rows FROM information_schema.tables WHERE table_schema = 'app'"},
		{MySQL, "SELECT 'it\\'s', a FROM t WHERE b = \"x\"; SHOW TABLES"},
		{Postgres, "DELETE FROM sessions WHERE expires_at < now()"},
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, in := range inputs {
			InspectSQL(in.d, in.sql)
		}
	}
}
