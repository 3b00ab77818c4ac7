package aggregate

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// numbered returns lines "lN" for N in lo..hi, newline-terminated.
func numbered(lo, hi int) string {
	var b strings.Builder
	for n := lo; n <= hi; n++ {
		fmt.Fprintf(&b, "l%d\n", n)
	}
	return b.String()
}

type add struct {
	path    string
	start   int
	content string
	brk     bool // Break before this Add
}

func TestAdd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxChars int
		adds     []add
		want     Output // of the last Add; ContextBundleID checked apart
	}{
		{name: "first read passes through", adds: []add{{path: "a.go", start: 1, content: numbered(1, 3)}},
			want: Output{Text: "l1\nl2\nl3\n"}},
		{name: "overlap becomes a marker (S-14)", adds: []add{
			{path: "a.go", start: 1, content: numbered(1, 10)},
			{path: "a.go", start: 5, content: numbered(5, 12)}},
			want: Output{Text: "[a.go:5-10 already shown above]\nl11\nl12\n", DedupedLines: 6}},
		{name: "a single repeated line", adds: []add{
			{path: "a.go", start: 3, content: "l3\n"},
			{path: "a.go", start: 1, content: numbered(1, 4)}},
			want: Output{Text: "l1\nl2\n[a.go:3 already shown above]\nl4\n", DedupedLines: 1}},
		{name: "two delivered ranges, two markers", adds: []add{
			{path: "a.go", start: 2, content: numbered(2, 3)},
			{path: "a.go", start: 6, content: numbered(6, 6)},
			{path: "a.go", start: 1, content: numbered(1, 7)}},
			want: Output{Text: "l1\n[a.go:2-3 already shown above]\nl4\nl5\n[a.go:6 already shown above]\nl7\n", DedupedLines: 3}},
		{name: "another path is not a duplicate", adds: []add{
			{path: "a.go", start: 1, content: numbered(1, 2)},
			{path: "b.go", start: 1, content: numbered(1, 2)}},
			want: Output{Text: "l1\nl2\n"}},
		{name: "Break ends the run", adds: []add{
			{path: "a.go", start: 1, content: numbered(1, 2)},
			{path: "a.go", start: 1, content: numbered(1, 2), brk: true}},
			want: Output{Text: "l1\nl2\n"}},
		{name: "blank runs collapse", adds: []add{{path: "a.go", start: 1, content: "a\n\n  \n\t\nb\n\nc\n"}},
			want: Output{Text: "a\n\nb\n\nc\n", CompressedLines: 2}},
		{name: "three identical lines fold, two stay", adds: []add{{path: "a.go", start: 1, content: "x\nx\nx\nx\ny\ny\nz\n"}},
			want: Output{Text: "x\n(4 identical lines)\ny\ny\nz\n", CompressedLines: 3}},
		{name: "compression never spans a delivered line", adds: []add{
			{path: "a.go", start: 2, content: "x\n"},
			{path: "a.go", start: 1, content: "x\nx\nx\nx\n"}},
			want: Output{Text: "x\n[a.go:2 already shown above]\nx\nx\n", DedupedLines: 1}},
		{name: "truncated at a line boundary", maxChars: 10, adds: []add{{path: "a.go", start: 1, content: numbered(1, 9)}},
			want: Output{Text: "l1\nl2\nl3\n", Truncated: true}},
		{name: "truncated lines are not delivered", maxChars: 40, adds: []add{
			{path: "a.go", start: 1, content: numbered(1, 20)},
			{path: "a.go", start: 1, content: numbered(1, 15)}},
			want: Output{Text: "[a.go:1-12 already shown above]\nl13\nl14\n", DedupedLines: 12, Truncated: true}},
		{name: "start line below 1 reads as 1", adds: []add{
			{path: "a.go", start: 0, content: numbered(1, 2)},
			{path: "a.go", start: 1, content: numbered(1, 2)}},
			want: Output{Text: "[a.go:1-2 already shown above]\n", DedupedLines: 2}},
		{name: "empty content", adds: []add{{path: "a.go", start: 1, content: ""}}, want: Output{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.maxChars)
			var got Output
			for _, ad := range tc.adds {
				if ad.brk {
					a.Break()
				}
				got = a.Add(ad.path, ad.start, ad.content)
			}
			got.ContextBundleID = ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestOverlongFirstLine(t *testing.T) {
	out := New(5).Add("a.go", 1, "ééééé\nb\n")
	if !out.Truncated || out.Text != "éé" || !utf8.ValidString(out.Text) {
		t.Errorf("got %+v", out)
	}
	if out.ContextBundleID != "" {
		t.Errorf("a cut line counted as delivered: %q", out.ContextBundleID)
	}
}

// TestStable: S-14, S-22 "aggregation dedupe stable output" — the same
// sequence gives the same outputs, and the bundle id names the delivered set.
func TestStable(t *testing.T) {
	seq := []add{
		{path: "pkg/a.go", start: 1, content: numbered(1, 40)},
		{path: "pkg/b.go", start: 10, content: "\n\n\nfunc f() {}\n" + strings.Repeat("}\n", 5)},
		{path: "pkg/a.go", start: 30, content: numbered(30, 60)},
		{path: "pkg/a.go", start: 1, content: numbered(1, 5), brk: true},
	}
	run := func() []Output {
		a := New(200)
		var outs []Output
		for _, ad := range seq {
			if ad.brk {
				a.Break()
			}
			outs = append(outs, a.Add(ad.path, ad.start, ad.content))
		}
		return outs
	}
	first, second := run(), run()
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("outputs differ:\n%+v\n%+v", first, second)
	}
	for i, o := range first {
		if !strings.HasPrefix(o.ContextBundleID, "ctx_") || len(o.ContextBundleID) != 16 {
			t.Errorf("output %d: bundle id %q", i, o.ContextBundleID)
		}
	}
	if first[0].ContextBundleID == first[1].ContextBundleID {
		t.Error("a new delivery kept the bundle id")
	}

	// The id names the set, not the order it arrived in.
	x, y := New(0), New(0)
	x.Add("a", 1, numbered(1, 3))
	ix := x.Add("b", 1, numbered(1, 3)).ContextBundleID
	y.Add("b", 1, numbered(1, 3))
	iy := y.Add("a", 1, numbered(1, 3)).ContextBundleID
	if ix != iy {
		t.Errorf("same set, ids %s / %s", ix, iy)
	}
	// A fully duplicate read delivers nothing new: same id.
	if again := x.Add("a", 2, numbered(2, 3)); again.ContextBundleID != ix {
		t.Errorf("duplicate read changed the id")
	}
}

func TestSpans(t *testing.T) {
	var s []span
	for _, in := range []span{{10, 12}, {1, 2}, {5, 5}, {3, 4}, {13, 20}, {7, 8}, {9, 9}, {6, 6}} {
		s = insert(s, in)
	}
	if want := []span{{1, 20}}; !reflect.DeepEqual(s, want) {
		t.Errorf("merged %v", s)
	}
	s = insert(insert(nil, span{1, 2}), span{5, 6})
	for n, want := range map[int]bool{0: false, 1: true, 2: true, 3: false, 4: false, 5: true, 6: true, 7: false} {
		if covered(s, n) != want {
			t.Errorf("covered(%d) = %v", n, !want)
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	first, second := numbered(1, 200), numbered(150, 300)
	a := New(12000)
	b.ReportAllocs()
	for b.Loop() {
		a.Break()
		a.Add("pkg/a.go", 1, first)
		a.Add("pkg/a.go", 150, second)
	}
}
