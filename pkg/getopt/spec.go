// Package getopt splits a program's arguments into options and operands the way that program itself does.
package getopt

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// Kind says what an option takes after its name.
type Kind uint8

const (
	NoValue       Kind = iota
	NeedsValue         // attached (-xVAL, --long=VAL) or the next argument
	OptionalValue      // only attached: -xVAL or --long=VAL
	// TwoValues takes the next two arguments, never an attached value
	// (sqlite3 -lookaside SIZE N, jq --arg NAME VALUE): Value is the first,
	// the second is the argument at Index+2. Written with an attached value
	// (--arg=x, -lookaside5) the option is unknown, which fails closed.
	TwoValues
	// Rest takes every later argument, which are then neither options nor
	// operands (sqlite3 -A ARGS…): Value is the first of them, the others
	// follow it.
	Rest
)

// Spec describes a program's options precisely enough to tell options from
// operands: short clusters (-fn5), GNU long options with unique
// abbreviations (--out=x for --output), and "--". The zero modes are GNU
// getopt_long with argument permutation; the methods below switch to the
// way other programs read their options. A Spec is read-only once built
// and safe for concurrent use.
type Spec struct {
	short [256]Kind // +1: 0 is "not an option"
	tab   *longTable

	noAbbrev   bool // pflag/cobra programs (kubectl, docker) take no abbreviations
	posixStop  bool // options end at the first operand (wrappers, subcommand CLIs)
	singleDash bool // long options may also be spelled with one dash (openssl, nvidia-smi)
	wholeWords bool // every option is one whole word, -name or --name (sqlite3)
	myGetopt   bool // MySQL's my_getopt (mysql, mariadb)

	// ordered is iproute2's matching (ip, tc, bridge): every option is a
	// word "-name" or "--name" that names the FIRST entry of ordered it is a
	// prefix of, so ip -s is -stats and ip -b is -batch (not -brief); there
	// are no clusters and no uniqueness rule. Entries are written like long
	// names ("family=" takes the next word); a word matching none is
	// unknown. Set it with Ordered.
	ordered []orderedOpt
}

// longTable is a Spec's long options, built on first use: govkit declares
// some 150 Specs as package variables, and a process that parses no options
// (gate's sandboxed child, re-executed only to exec its command) must not
// spend milliseconds building them at start-up (issue 15: gate's overhead).
// WithShort copies share it.
type longTable struct {
	once sync.Once
	src  []string   // as written for New
	base *longTable // Plus: the options of the Spec it extends, under src's
	my   bool       // my_getopt: '_' is spelled '-' in names

	long  map[string]*longOpt
	names []*longOpt // sorted by name, for prefix matching
}

// get builds t on first use.
func (t *longTable) get() *longTable {
	t.once.Do(t.build)
	return t
}

func (t *longTable) build() {
	t.long = make(map[string]*longOpt, len(t.src))
	for _, l := range t.src {
		t.add(parseLong(l))
	}
	if t.base != nil {
		for name, e := range t.base.get().long {
			if _, ok := t.long[name]; !ok {
				t.add(name, e.kind)
			}
		}
	}
	if t.my {
		for _, e := range t.names {
			if n := dashes(e.name); n != e.name {
				delete(t.long, e.name)
				e.name, e.dashed = n, "--"+n
				t.long[n] = e
			}
		}
	}
	sort.Slice(t.names, func(i, j int) bool { return t.names[i].name < t.names[j].name })
}

func (t *longTable) add(name string, k Kind) {
	if e, ok := t.long[name]; ok {
		e.kind = k
		return
	}
	e := &longOpt{name: name, dashed: "--" + name, kind: k}
	t.long[name] = e
	t.names = append(t.names, e)
}

type longOpt struct {
	name   string // without dashes
	dashed string // "--" + name, so that a parse allocates no names
	kind   Kind
}

type orderedOpt struct {
	name   string // without dashes
	dashed string // "-" + name
	kind   Kind
}

// New builds a Spec from a getopt-style short string ("fn:b::" — ':' needs
// a value, '::' optional) and long names, each plain (no value) or suffixed
// "=" (needs a value), "?" (optional value), "==" (TwoValues) or "..."
// (Rest).
func New(short string, longs ...string) *Spec {
	s := &Spec{tab: &longTable{src: longs}}
	for i := 0; i < len(short); i++ {
		c, k := short[i], NoValue
		if i+1 < len(short) && short[i+1] == ':' {
			k = NeedsValue
			i++
			if i+1 < len(short) && short[i+1] == ':' {
				k = OptionalValue
				i++
			}
		}
		s.short[c] = k + 1
	}
	return s
}

func parseLong(l string) (string, Kind) {
	switch {
	case strings.HasSuffix(l, "=="):
		return strings.TrimSuffix(l, "=="), TwoValues
	case strings.HasSuffix(l, "..."):
		return strings.TrimSuffix(l, "..."), Rest
	case strings.HasSuffix(l, "="):
		return strings.TrimSuffix(l, "="), NeedsValue
	case strings.HasSuffix(l, "?"):
		return strings.TrimSuffix(l, "?"), OptionalValue
	}
	return l, NoValue
}

// Ordered builds a Spec in iproute2's ordered-prefix mode (see
// FirstPrefix): names are written like New's long names and tried in the
// order given.
func Ordered(names ...string) *Spec {
	s := New("", names...)
	for _, n := range names {
		name, k := parseLong(n)
		s.ordered = append(s.ordered, orderedOpt{name: name, dashed: "-" + name, kind: k})
	}
	return s
}

// FirstPrefix returns the first entry of table that word is a prefix of:
// iproute2's matches() walked over a fixed, ordered list of objects, verbs
// or options (ip l is link, ip l s is link set, ip a s is address show).
// An empty word matches nothing.
func FirstPrefix(word string, table []string) (string, bool) {
	if word == "" {
		return "", false
	}
	for _, t := range table {
		if strings.HasPrefix(t, word) {
			return t, true
		}
	}
	return "", false
}

// StopAtOperand makes options end at the first operand (wrappers,
// subcommand CLIs); it returns s, for var x = New(…).StopAtOperand().
func (s *Spec) StopAtOperand() *Spec { s.posixStop = true; return s }

// NoAbbreviations makes only whole long names match (pflag, cobra); pflag
// also takes -n=prod for a short option with a value.
func (s *Spec) NoAbbreviations() *Spec { s.noAbbrev = true; return s }

// SingleDashLongs lets long options of two letters or more be spelled with
// one dash too (-name, -name=VAL); a word that is no long name is read as a
// short cluster.
func (s *Spec) SingleDashLongs() *Spec { s.singleDash = true; return s }

// WholeWords makes every option one whole word, "-name" or "--name"
// exactly as a long name is written (even one letter: sqlite3 -A), with no
// short clusters, no abbreviations and no "=VALUE": a value is always the
// next argument. That is how sqlite3's shell reads its command line
// (strcmp after skipping one '-'). A lone "-" is unknown: new sqlite3
// versions end options there and older ones reject it, so it fails closed.
func (s *Spec) WholeWords() *Spec { s.wholeWords = true; s.noAbbrev = true; return s }

// MyGetopt switches long options to MySQL's my_getopt (mysql, mariadb):
//   - '_' and '-' are the same character in names (--skip_column_names);
//   - a name that is neither an option nor a unique prefix of one may carry
//     the prefixes --skip-, --disable-, --enable- and --loose-, stripped
//     one at a time (--loose-skip-pager); the last one stripped decides:
//     skip/disable report the option with Off set and Value "0", enable
//     with Value "1" (a value of exactly "0" reverses either: --skip-X=0
//     turns X on), loose reports it as written;
//   - a flag (NoValue) given =0, =off or =false is reported with Off set;
//     any other value is kept in Value for the caller to judge (my_getopt
//     ignores an unreadable boolean with a warning; callers fail closed).
//
// An unknown --loose- option, which my_getopt ignores with a warning, is
// unknown here (fail closed); so is --maximum-, which sets limits on server
// variables. Short options are read as getopt's.
// Call it when declaring the Spec, before any use.
func (s *Spec) MyGetopt() *Spec {
	s.myGetopt, s.tab.my = true, true
	return s
}

// dashes is a my_getopt name with every '_' spelled '-'.
func dashes(name string) string { return strings.ReplaceAll(name, "_", "-") }

// WithShort returns a copy of s in which short option c takes k: the same
// letter means different things in different subcommands (kubectl logs -f
// is --follow, kubectl get -f is --filename). The copy shares s's long
// options, so set modes before taking copies.
func (s *Spec) WithShort(c byte, k Kind) *Spec {
	t := *s
	t.short[c] = k + 1
	return &t
}

// Plus returns a new Spec with the options of s and more, written as for
// New; the new ones win where a letter or name is in both: a verb's options
// on top of those its program takes anywhere (pip list, apt-get install).
// It keeps how s matches names (NoAbbreviations, SingleDashLongs), not
// StopAtOperand, which belongs to where the options are read.
func (s *Spec) Plus(short string, longs ...string) *Spec {
	t := New(short, longs...)
	for c, k := range s.short {
		if t.short[c] == 0 {
			t.short[c] = k
		}
	}
	t.tab.base = s.tab
	t.noAbbrev, t.singleDash = s.noAbbrev, s.singleDash
	return t
}

// Short reports what short option c takes, and whether it is one (tar's
// old-style "tvf" letters are read against the same table).
func (s *Spec) Short(c byte) (k Kind, ok bool) {
	if s.short[c] == 0 {
		return 0, false
	}
	return s.short[c] - 1, true
}

// Lookup resolves a long option name (without dashes) the way the program
// does: the name itself or, unless NoAbbreviations, a unique prefix of one;
// in MyGetopt mode also with my_getopt's prefixes, and in Ordered mode the
// first name it is a prefix of. full is the name it stands for.
func (s *Spec) Lookup(name string) (full string, k Kind, ok bool) {
	var e *longOpt
	switch {
	case s.ordered != nil:
		for _, o := range s.ordered {
			if name != "" && strings.HasPrefix(o.name, name) {
				return o.name, o.kind, true
			}
		}
		return "", 0, false
	case s.myGetopt:
		e, _, _, _ = s.myResolve(name)
	default:
		e, _ = s.find(name)
	}
	if e == nil {
		return "", 0, false
	}
	return e.name, e.kind, true
}

// Ambiguity says which long options name abbreviates, when it abbreviates
// more than one (tar --li: --list or --listed-incremental?), for the
// reason of a refusal: " (ambiguous: --list, --listed-incremental)", or ""
// otherwise.
func (s *Spec) Ambiguity(name string) string {
	if s.noAbbrev || name == "" {
		return ""
	}
	if s.myGetopt {
		var n int
		if _, n, name, _ = s.myResolve(name); n < 2 {
			return ""
		}
	} else if _, exact := s.tab.get().long[name]; exact {
		return ""
	}
	lo := s.prefixStart(name)
	var matches []string
	for _, e := range s.tab.names[lo:] {
		if !strings.HasPrefix(e.name, name) {
			break
		}
		matches = append(matches, e.dashed)
	}
	if len(matches) < 2 {
		return ""
	}
	slices.Sort(matches)
	return " (ambiguous: " + strings.Join(matches, ", ") + ")"
}

func (s *Spec) prefixStart(name string) int {
	names := s.tab.get().names
	return sort.Search(len(names), func(i int) bool { return names[i].name >= name })
}

// find resolves name exactly or by a unique prefix; n counts the options
// name abbreviates when it is not one (more than one: ambiguous).
func (s *Spec) find(name string) (e *longOpt, n int) {
	tab := s.tab.get()
	if e, ok := tab.long[name]; ok {
		return e, 1
	}
	if s.noAbbrev || name == "" {
		return nil, 0
	}
	for _, x := range tab.names[s.prefixStart(name):] {
		if !strings.HasPrefix(x.name, name) {
			break
		}
		e = x
		n++
	}
	if n != 1 {
		return nil, n
	}
	return e, 1
}

// myPrefix is a my_getopt special prefix and what it does to the option.
var myPrefixes = [...]struct {
	prefix string
	sense  int8 // -1 turns off, 1 turns on, 0 leaves as written
}{{"skip-", -1}, {"disable-", -1}, {"enable-", 1}, {"loose-", 0}}

// myResolve resolves name as my_getopt's handle_options does: the name or
// a unique prefix of one first, then with special prefixes stripped one at
// a time. at is the name that was finally looked up (for ambiguity
// details); sense is that of the last prefix stripped.
func (s *Spec) myResolve(name string) (e *longOpt, n int, at string, sense int8) {
	name = dashes(name)
	for {
		if e, n = s.find(name); n > 0 {
			return e, n, name, sense
		}
		stripped := false
		for _, p := range myPrefixes {
			if rest, ok := strings.CutPrefix(name, p.prefix); ok {
				name, sense, stripped = rest, p.sense, true
				break
			}
		}
		if !stripped {
			return nil, 0, name, 0
		}
	}
}

// MyBool reads v as my_getopt reads the value of a flag (--local-infile=0):
// 1, on and true turn it on; 0, off and false turn it off (any case). ok is
// false for anything else, which my_getopt ignores with a warning.
func MyBool(v string) (on, ok bool) {
	switch {
	case v == "1" || strings.EqualFold(v, "on") || strings.EqualFold(v, "true"):
		return true, true
	case v == "0" || strings.EqualFold(v, "off") || strings.EqualFold(v, "false"):
		return false, true
	}
	return false, false
}
