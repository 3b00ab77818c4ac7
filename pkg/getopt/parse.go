package getopt

import (
	"strings"
	"unicode/utf8"
)

// Word is one argument as the parser sees it.
type Word struct {
	Text string // the value the program receives, as far as it is known
	Src  string // the word as written, reported in Parsed.Dynamic

	// Literal: Text is exactly what was written, so "--" really ends the
	// options (a "--" that comes out of an expansion is read as an option).
	Literal bool
	// Opaque: a process substitution, <(…): the program gets a pipe's
	// path, never an option.
	Opaque bool
	// MayExpand: the word may expand into an option at run time (a
	// variable, or a glob that can match a file named "--in-place=.txt").
	MayExpand bool
}

// Args is a program's arguments, without the program name. Parse is
// generic over it so that a caller's own word type is read in place.
type Args interface {
	Len() int
	At(i int) Word
}

// Strings is a plain argv: every word is literal.
type Strings []string

func (s Strings) Len() int      { return len(s) }
func (s Strings) At(i int) Word { return Word{Text: s[i], Src: s[i], Literal: true} }

// Opt is one option occurrence.
type Opt struct {
	// Name is "-f" for a short option and "--follow" for a long one, with
	// abbreviations expanded and MyGetopt's '_' and prefixes resolved; a
	// long option spelled with one dash (SingleDashLongs, WholeWords) is
	// "--name" too. Ordered options are "-name".
	Name     string
	Value    string
	HasValue bool
	Index    int  // index into the args it was parsed from
	Cluster  bool // part of a multi-letter short cluster (-xvf)
	SepValue bool // the value is the next argument
	// Off: MyGetopt turned the option off (--skip-X, --disable-X, or a
	// flag given =0, =off or =false).
	Off bool
}

// Parsed is a program's arguments split into options and operands.
type Parsed struct {
	Opts     []Opt
	Operands []int    // indices of operand args
	DashDash int      // index of "--", or -1
	Unknown  []string // options the spec does not know, as written (with why, if ambiguous)
	Dynamic  []string // Src of words that may expand into options (before "--")

	// Most command lines fit here: one allocation per Parse.
	optBuf     [4]Opt
	operandBuf [6]int
}

// Has reports whether any of the named options occurs.
func (p *Parsed) Has(names ...string) bool {
	_, ok := p.Get(names...)
	return ok
}

// Get returns the last occurrence of any of the named options.
func (p *Parsed) Get(names ...string) (Opt, bool) {
	for i := len(p.Opts) - 1; i >= 0; i-- {
		for _, n := range names {
			if p.Opts[i].Name == n {
				return p.Opts[i], true
			}
		}
	}
	return Opt{}, false
}

// Shifted returns the options (only) with indices moved by n: for
// arguments parsed from a tail of a longer list that the caller indexes.
func (p *Parsed) Shifted(n int) *Parsed {
	q := &Parsed{DashDash: -1}
	q.Opts = q.optBuf[:0]
	for _, o := range p.Opts {
		o.Index += n
		q.Opts = append(q.Opts, o)
	}
	return q
}

// Parse splits args against s. It never fails: options s does not know
// are listed in Unknown (callers fail closed on them), and parsing goes on
// as if they took no value.
func Parse[A Args](args A, s *Spec) *Parsed {
	p := new(Parsed)
	ParseInto(p, args, s)
	return p
}

// ParseInto is Parse into p, reusing the memory of p's slices: for a caller
// that parses many command lines and is done with each Parsed before it
// parses into it again (classify's batch mode).
func ParseInto[A Args](p *Parsed, args A, s *Spec) {
	p.Opts, p.Operands, p.Unknown, p.Dynamic = p.Opts[:0], p.Operands[:0], p.Unknown[:0], p.Dynamic[:0]
	if p.Opts == nil {
		p.Opts = p.optBuf[:0]
	}
	if p.Operands == nil {
		p.Operands = p.operandBuf[:0]
	}
	p.DashDash = -1
	r := parser[A]{p: p, args: args, s: s, n: args.Len()}
	for i := 0; i < r.n; i++ {
		a := args.At(i)
		v := a.Text
		if a.MayExpand {
			p.Dynamic = append(p.Dynamic, a.Src)
		}
		switch {
		case v == "--" && a.Literal:
			p.DashDash = i
			r.operandsFrom(i + 1)
			return
		case a.Opaque || len(v) < 2 || v[0] != '-':
			if s.wholeWords && v == "-" && !a.Opaque {
				p.Unknown = append(p.Unknown, v)
				continue
			}
			p.Operands = append(p.Operands, i)
			if s.posixStop {
				r.operandsFrom(i + 1)
				return
			}
		case s.ordered != nil:
			i = r.ordered(v, i)
		case s.wholeWords:
			i = r.whole(v, i)
		case v[1] == '-':
			i = r.long(v, i)
		default:
			if name, val, hasVal := strings.Cut(v[1:], "="); s.singleDash && len(name) > 1 {
				if e, ok := s.tab.get().long[name]; ok {
					i = r.add(Opt{Name: e.dashed, Value: val, HasValue: hasVal, Index: i}, e.kind)
					continue
				}
			}
			i = r.cluster(v, i)
		}
	}
}

// parser is one Parse call; it is generic so that args are never boxed.
type parser[A Args] struct {
	p    *Parsed
	args A
	s    *Spec
	n    int
}

func (r *parser[A]) operandsFrom(j int) {
	for ; j < r.n; j++ {
		r.p.Operands = append(r.p.Operands, j)
	}
}

// add appends o, an option of kind k, taking its values from the words
// after it unless it has one attached, and returns the index of the last
// word it consumed.
func (r *parser[A]) add(o Opt, k Kind) int {
	p, i, n := r.p, o.Index, r.n
	switch {
	case k == TwoValues && o.HasValue:
		// sqlite3 and jq take both values as separate words only.
		p.Unknown = append(p.Unknown, o.Name+" (takes two separate values)")
		return i
	case k == Rest:
		if !o.HasValue && i+1 < n {
			o.Value, o.HasValue, o.SepValue = r.args.At(i+1).Text, true, true
		}
		p.Opts = append(p.Opts, o)
		return n - 1
	case o.HasValue || k == NoValue || k == OptionalValue:
	case k == NeedsValue && i+1 < n:
		o.Value, o.HasValue, o.SepValue = r.args.At(i+1).Text, true, true
		i++
	case k == TwoValues && i+1 < n:
		// The second value is at Index+2; with only one word left the
		// option has no value (HasValue false) and takes that word.
		o.Value, o.SepValue = r.args.At(i+1).Text, true
		o.HasValue = i+2 < n
		i = min(i+2, n-1)
	}
	p.Opts = append(p.Opts, o)
	return i
}

// long parses "--name[=value]" the way getopt_long or my_getopt does.
func (r *parser[A]) long(v string, i int) int {
	s := r.s
	name, val, hasVal := strings.Cut(v[2:], "=")
	var e *longOpt
	var n int
	off := false
	if s.myGetopt {
		var sense int8
		e, n, _, sense = s.myResolve(name)
		switch {
		case e == nil:
		case sense != 0:
			// my_getopt replaces the value: "0" exactly reverses
			// the prefix (--skip-X=0 turns X on).
			on := sense > 0
			if hasVal && val == "0" {
				on = !on
			}
			val, hasVal, off = "0", true, !on
			if on {
				val = "1"
			}
		case e.kind == NoValue && hasVal:
			on, ok := MyBool(val)
			off = ok && !on
		}
	} else {
		e, n = s.find(name)
	}
	if e == nil {
		u := v[:2+len(name)]
		if n > 1 {
			u += s.Ambiguity(name)
		}
		r.p.Unknown = append(r.p.Unknown, u)
		return i
	}
	return r.add(Opt{Name: e.dashed, Value: val, HasValue: hasVal, Index: i, Off: off}, e.kind)
}

// whole parses one option word in WholeWords mode.
func (r *parser[A]) whole(v string, i int) int {
	name := v[1:]
	if name[0] == '-' {
		name = name[1:]
	}
	e, ok := r.s.tab.get().long[name]
	if !ok {
		r.p.Unknown = append(r.p.Unknown, v)
		return i
	}
	return r.add(Opt{Name: e.dashed, Index: i}, e.kind)
}

// ordered parses one option word in iproute2's mode (Spec.ordered):
// "-name" or "--name" names the first entry it is a prefix of; "=" is part
// of the word except for an entry marked "?" (ip -color=always).
func (r *parser[A]) ordered(v string, i int) int {
	word := strings.TrimPrefix(v[1:], "-")
	for _, e := range r.s.ordered {
		w, val, hasVal := word, "", false
		if e.kind == OptionalValue {
			w, val, hasVal = strings.Cut(word, "=")
		}
		if w == "" || !strings.HasPrefix(e.name, w) {
			continue
		}
		return r.add(Opt{Name: e.dashed, Value: val, HasValue: hasVal, Index: i}, e.kind)
	}
	r.p.Unknown = append(r.p.Unknown, v)
	return i
}

// cluster parses a word of short options (-xvf, -n5, -ofile).
func (r *parser[A]) cluster(v string, i int) int {
	p, s := r.p, r.s
	if s.noAbbrev && len(v) > 2 && v[2] == '=' && s.short[v[1]] != 0 {
		// pflag accepts -w=false and -n=prod.
		p.Opts = append(p.Opts, Opt{Name: v[:2], Value: v[3:], HasValue: true, Index: i})
		return i
	}
	cluster := len(v) > 2
	for j := 1; j < len(v); j++ {
		c := v[j]
		if s.short[c] == 0 {
			if c < utf8.RuneSelf {
				p.Unknown = append(p.Unknown, shortName(c))
				continue
			}
			// Name the character, not one byte of it, in the reason.
			_, size := utf8.DecodeRuneInString(v[j:])
			p.Unknown = append(p.Unknown, "-"+v[j:j+size])
			j += size - 1
			continue
		}
		k := s.short[c] - 1
		o := Opt{Name: shortName(c), Index: i, Cluster: cluster}
		if k == NoValue {
			p.Opts = append(p.Opts, o)
			continue
		}
		if j+1 < len(v) {
			o.Value, o.HasValue = v[j+1:], true
		}
		return r.add(o, k)
	}
	return i
}

// shortNames holds "-c" for every byte c, so that naming a short option
// allocates nothing.
var shortNames = func() string {
	b := make([]byte, 512)
	for c := range 256 {
		b[2*c], b[2*c+1] = '-', byte(c)
	}
	return string(b)
}()

func shortName(c byte) string { return shortNames[2*int(c) : 2*int(c)+2] }
