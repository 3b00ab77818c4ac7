package aggregate

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A run restored from its snapshot de-duplicates the next read as the
// original run does.
func TestSnapshotRoundTrip(t *testing.T) {
	a := New(200)
	a.Add("a.go", 1, "one\ntwo\nthree\n")
	a.Add("b.go", 10, "x\ny\n")
	a.Add("a.go", 5, "five\n")
	b, err := json.Marshal(a.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, err := Restore(a.MaxChars(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Add("a.go", 2, "two\nthree\nfour\nfive\n"), a.Add("a.go", 2, "two\nthree\nfour\nfive\n"); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored run gives %+v, want %+v", got, want)
	}
}

func TestRestoreRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Snapshot
		want string
	}{
		{"empty", Snapshot{Delivered: map[string][][2]int{"a": {}}}, `delivered["a"]: no spans`},
		{"line 0", Snapshot{Delivered: map[string][][2]int{"a": {{0, 2}}}}, `delivered["a"][0]`},
		{"reversed", Snapshot{Delivered: map[string][][2]int{"a": {{3, 2}}}}, `delivered["a"][0]`},
		{"touching", Snapshot{Delivered: map[string][][2]int{"a": {{1, 2}, {3, 4}}}}, `delivered["a"][1]`},
		{"overflow", Snapshot{Delivered: map[string][][2]int{"a": {{1, int(^uint(0) >> 1)}, {1, 2}}}}, `delivered["a"][1]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Restore(0, c.s); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Restore: %v, want an error with %q", err, c.want)
			}
		})
	}
}
