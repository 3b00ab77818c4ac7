package getopt

import (
	"slices"
	"strings"
	"testing"
)

// fuzzSpecs are the specs FuzzParse draws from: one of every mode, and
// short options that take two values or the rest.
var fuzzSpecs = []*Spec{
	tarSpec, envSpec, kubectlSpec, opensslSpec, ipSpec, sqliteSpec, mysqlSpec, jqSpec,
	tarSpec.WithShort('t', Rest).WithShort('x', TwoValues),
}

// unknownLong is an option no fuzz spec knows or abbreviates, in any mode.
const unknownLong = "--zq-unknown-option"

// fuzzWords splits line into words; two bits of flags per word make it
// literal, possibly expanding, a process substitution or just not literal.
func fuzzWords(flags uint64, line string) words {
	parts := strings.Split(line, "\n")
	if len(parts) > 64 {
		parts = parts[:64]
	}
	ws := make(words, len(parts))
	for i, s := range parts {
		w := Word{Text: s, Src: s}
		switch flags >> (2 * (i % 32)) & 3 {
		case 0:
			w.Literal = true
		case 1:
			w.MayExpand = true
		case 2:
			w.Opaque = true
		}
		ws[i] = w
	}
	return ws
}

// kindOf is the kind of a parsed option in s.
func kindOf(s *Spec, o Opt) Kind {
	switch {
	case s.ordered != nil:
		for _, e := range s.ordered {
			if e.dashed == o.Name {
				return e.kind
			}
		}
	case strings.HasPrefix(o.Name, "--"):
		if e, ok := s.tab.get().long[o.Name[2:]]; ok {
			return e.kind
		}
	case len(o.Name) == 2 && s.short[o.Name[1]] != 0:
		return s.short[o.Name[1]] - 1
	}
	panic("option " + o.Name + " is not in the spec")
}

const (
	unmarked = iota
	optWord
	valueWord
	operandWord
	dashDashWord
)

// roles checks that every word is an option, a value, an operand or "--"
// exactly once, or else an option-looking word named in Unknown, and
// returns what each word is.
func roles(t *testing.T, s *Spec, ws words, p *Parsed) []int {
	t.Helper()
	n := len(ws)
	role := make([]int, n)
	mark := func(i, r int, why string) {
		if i < 0 || i >= n {
			t.Fatalf("%s: index %d out of range [0,%d): %s", why, i, n, render(p))
		}
		if role[i] != unmarked && !(role[i] == r && r == optWord) {
			t.Fatalf("%s: word %d (%q) is %d and %d: %s", why, i, ws[i].Text, role[i], r, render(p))
		}
		role[i] = r
	}
	last := -1
	for _, o := range p.Opts {
		if o.Index < last {
			t.Fatalf("options out of order: %s", render(p))
		}
		last = o.Index
		if role[o.Index] == optWord && !o.Cluster {
			t.Fatalf("two options in word %d (%q) that is not a cluster: %s", o.Index, ws[o.Index].Text, render(p))
		}
		mark(o.Index, optWord, "option "+o.Name)
		if ws[o.Index].Opaque {
			t.Fatalf("process substitution %d read as option %s", o.Index, o.Name)
		}
		end := o.Index
		switch k := kindOf(s, o); {
		case k == Rest:
			end = n - 1
		case !o.SepValue:
		case k == TwoValues:
			end = min(o.Index+2, n-1)
		default:
			end = o.Index + 1
		}
		if o.SepValue && (end == o.Index || ws[o.Index+1].Text != o.Value) {
			t.Fatalf("option %s: separate value %q is not the next word: %s", o.Name, o.Value, render(p))
		}
		for j := o.Index + 1; j <= end; j++ {
			mark(j, valueWord, "value of "+o.Name)
		}
	}
	if !slices.IsSorted(p.Operands) {
		t.Fatalf("operands out of order: %s", render(p))
	}
	for _, i := range p.Operands {
		mark(i, operandWord, "operand")
	}
	if p.DashDash >= 0 {
		mark(p.DashDash, dashDashWord, `"--"`)
		if ws[p.DashDash].Text != "--" || !ws[p.DashDash].Literal {
			t.Fatalf(`word %d (%q) taken for "--"`, p.DashDash, ws[p.DashDash].Text)
		}
	}
	free := 0
	for i, r := range role {
		if r != unmarked {
			continue
		}
		free++
		if v := ws[i].Text; ws[i].Opaque || !strings.HasPrefix(v, "-") || len(v) < 2 && !s.wholeWords {
			t.Fatalf("word %d (%q) is nothing: %s", i, v, render(p))
		}
	}
	if free > len(p.Unknown) {
		t.Fatalf("%d words are nothing but %d are unknown: %s", free, len(p.Unknown), render(p))
	}
	expand := 0
	for _, w := range ws {
		if w.MayExpand {
			expand++
		}
	}
	if len(p.Dynamic) > expand {
		t.Fatalf("%d dynamic words from %d that may expand", len(p.Dynamic), expand)
	}
	return role
}

// FuzzParse: Parse never panics; every word is an option, a value, an
// operand, "--" or an unknown option; and an unknown long option is never
// read as a known one (issue 14: appending an unknown long option never
// turns a verdict into read-only): first on the line it is always Unknown,
// and appended it is Unknown unless it is an operand or the value of the
// option before it.
func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		for i, s := range fuzzSpecs {
			if s == c.spec {
				f.Add(uint8(i), uint64(0), strings.Join(c.args, "\n"))
			}
		}
	}
	f.Add(uint8(0), uint64(0b0110), "-t\n$X\n<(y)")
	f.Add(uint8(8), uint64(0), "-vx\na\nb\n-t\nrest")
	f.Fuzz(func(t *testing.T, which uint8, flags uint64, line string) {
		s := fuzzSpecs[int(which)%len(fuzzSpecs)]
		ws := fuzzWords(flags, line)
		roles(t, s, ws, Parse(ws, s))

		first := append(words{lit(unknownLong)}, ws...)
		if p := Parse(first, s); len(p.Unknown) == 0 || p.Unknown[0] != unknownLong {
			t.Fatalf("leading %s is not the first unknown: %s", unknownLong, render(p))
		}

		ws = append(ws, lit(unknownLong))
		p := Parse(ws, s)
		role := roles(t, s, ws, p)
		switch role[len(ws)-1] {
		case optWord:
			t.Fatalf("appended %s read as a known option: %s", unknownLong, render(p))
		case unmarked:
			if p.Unknown[len(p.Unknown)-1] != unknownLong {
				t.Fatalf("appended %s is not the last unknown: %s", unknownLong, render(p))
			}
		}
	})
}

// BenchmarkParse parses typical command lines, as classify does once per
// program in a command.
func BenchmarkParse(b *testing.B) {
	lines := []struct {
		s    *Spec
		args Strings
	}{
		{tarSpec, Strings{"-tvf", "a.tar", "--exclude=*.o", "dir"}},
		{tarSpec, Strings{"--list", "--file", "a.tar", "--to-com=sh", "-C", "/tmp", "x", "y"}},
		{kubectlSpec, Strings{"-n", "prod", "--follow", "pod/x"}},
		{ipSpec, Strings{"-s", "-d", "link", "show", "dev", "eth0"}},
		{mysqlSpec, Strings{"-G", "--skip-column-names", "--ssl-mode=REQUIRED", "-e", "SELECT 1", "app"}},
		{sqliteSpec, Strings{"-readonly", "-json", "app.db", "SELECT 1"}},
	}
	shell := words{lit("-t"), lit("-v"), dyn("", "$F"), lit("--"), lit("x")}
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			Parse(l.args, l.s)
		}
		Parse(shell, tarSpec)
	}
}
