package audit

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// columnLayout is the stores' timestamp column layout (pkg/store/sqlite,
// pkg/store/postgres).
const columnLayout = "2006-01-02T15:04:05.000000000Z07:00"

// The byte comparison of the timestamp column with the body's gives the
// verdict parsing gives, for columns and bodies as the stores and Seal write
// them and for the ways a tampered or foreign row differs (issue 20: no
// time.Parse per row, and every check kept).
func TestTimestampsAgree(t *testing.T) {
	var buf [64]byte
	check := func(column, body string) {
		t.Helper()
		got := timestampsAgree([]byte(column), []byte(body), &buf)
		want := timestampsAgreeParsed([]byte(column), []byte(body), &buf)
		if got != want {
			t.Errorf("column %q, body %q: byte comparison says %v, parsing %v", column, body, got, want)
		}
	}
	for _, tt := range []struct {
		column, body string
		agree        bool
	}{
		{"2025-03-01T12:00:00.123456789Z", "2025-03-01T12:00:00.123456789Z", true},
		{"2025-03-01T12:00:00.120000000Z", "2025-03-01T12:00:00.12Z", true},
		{"2025-03-01T12:00:00.000000000Z", "2025-03-01T12:00:00Z", true},
		{"2025-03-01T12:00:00.000000000Z", "2025-03-01T12:00:00.Z", false},
		{"2025-03-01T12:00:00.000000000Z", "2025-03-01T12:00:00.000000000Z", true},
		{"2025-03-01T12:00:00.100000000Z", "2025-03-01T12:00:00.1Z", true},
		{"2025-03-01T12:00:00.100000000Z", "2025-03-01T12:00:00.10Z", true}, // parsed: the same time
		{"2025-03-01T12:00:00.100000000Z", "2025-03-01T13:00:00.1+01:00", true},
		{"2025-03-01T12:00:00.100000000Z", "2025-03-01T12:00:00.2Z", false},
		{"2025-03-01T12:00:00.100000000Z", "", false},
		{"2024-02-29T00:00:00.000000000Z", "2024-02-29T00:00:00Z", true},
		{"2025-02-29T00:00:00.000000000Z", "2025-02-29T00:00:00Z", false}, // no such day: the column is the zero time
		{"2025-02-29T00:00:00.000000000Z", "2025-02-29T00:00:00.000000000Z", false},
		{"2025-03-01T24:00:00.000000000Z", "2025-03-02T00:00:00Z", false},
		{"2025-03-01T12:00:60.000000000Z", "2025-03-01T12:01:00Z", false},
		{"not a time", "not a time", false},
		{"not a time", "0001-01-01T00:00:00Z", true}, // as before: an unparsable column is the zero time
		{"", "0001-01-01T00:00:00Z", true},
		{"2025-03-01T12:00:00.1Z", "2025-03-01T12:00:00.1Z", true}, // another layout, still a time
		{"2025-03-01T12:00:00.1Z", "2025-03-01T12:00:00.100Z", true},
		{"2025-03-01t12:00:00.100000000z", "2025-03-01T12:00:00.1Z", false}, // time.Parse wants T and Z
		{"0000-01-01T00:00:00.000000000Z", "0000-01-01T00:00:00Z", true},
		{"9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59.999999999Z", true},
	} {
		var buf [64]byte
		if got := timestampsAgree([]byte(tt.column), []byte(tt.body), &buf); got != tt.agree {
			t.Errorf("timestampsAgree(%q, %q) = %v, want %v", tt.column, tt.body, got, tt.agree)
		}
		check(tt.column, tt.body)
	}

	// Random times as the stores and Seal write them, and one byte of
	// either changed.
	rng := rand.New(rand.NewPCG(20, 11))
	for range 20000 {
		ts := time.Unix(rng.Int64N(400*365*86400)-100*365*86400, 0).UTC()
		switch rng.IntN(4) {
		case 0: // whole seconds
		case 1:
			ts = ts.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		case 2:
			ts = ts.Add(time.Duration(rng.IntN(1e9)))
		case 3:
			ts = ts.Add(time.Duration(rng.IntN(10)) * 100 * time.Millisecond)
		}
		column := []byte(ts.Format(columnLayout))
		body := []byte(ts.Format(time.RFC3339Nano))
		check(string(column), string(body))
		check(string(column), string(column))
		for _, b := range [][]byte{column, body} {
			i := rng.IntN(len(b))
			saved := b[i]
			b[i] = "0123456789:-.TZtz+ x"[rng.IntN(20)]
			check(string(column), string(body))
			b[i] = saved
		}
	}
	// Every day of two years, one a leap year, and the days after them.
	for _, year := range []int{2024, 2025, 1900, 2000} {
		for month := 1; month <= 12; month++ {
			for day := 28; day <= 32; day++ {
				column := fmt.Sprintf("%04d-%02d-%02dT23:59:59.500000000Z", year, month, day)
				check(column, fmt.Sprintf("%04d-%02d-%02dT23:59:59.5Z", year, month, day))
			}
		}
	}
}

// FuzzTimestampsAgree: the byte comparison and parsing agree on any pair.
func FuzzTimestampsAgree(f *testing.F) {
	for _, s := range [][2]string{
		{"2025-03-01T12:00:00.120000000Z", "2025-03-01T12:00:00.12Z"},
		{"2025-03-01T12:00:00.000000000Z", "2025-03-01T12:00:00Z"},
		{"2025-02-29T00:00:00.000000000Z", "2025-02-29T00:00:00Z"},
		{"2025-03-01T12:00:00.1Z", "2025-03-01T13:00:00.1+01:00"},
		{"x", "0001-01-01T00:00:00Z"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, column, body []byte) {
		var buf [64]byte
		if got, want := timestampsAgree(column, body, &buf), timestampsAgreeParsed(column, body, &buf); got != want {
			t.Fatalf("column %q, body %q: byte comparison says %v, parsing %v", column, body, got, want)
		}
	})
}
