package intent

import (
	"slices"
	"strings"
)

// argKind says whether an option takes a value.
type argKind uint8

const (
	noValue argKind = iota
	needsValue
	optionalValue // only attached: -xVAL or --long=VAL
)

// optSpec describes a program's options precisely enough to tell options
// from operands: short clusters (-fn5), GNU long options with abbreviations
// (--out=x for --output), and "--".
type optSpec struct {
	short      map[byte]argKind
	long       map[string]argKind
	noAbbrev   bool // pflag/cobra programs (kubectl, docker) take no abbreviations
	posixStop  bool // options end at the first operand (wrappers, subcommand CLIs)
	singleDash bool // long options may also be spelled with one dash (sqlite3, find-style)
	// ordered is iproute2's matching (ip, tc, bridge): every option is a
	// word "-name" or "--name" that names the FIRST entry of ordered it is a
	// prefix of, so ip -s is -stats and ip -b is -batch (not -brief); there
	// are no clusters and no uniqueness rule. Entries are written like long
	// names ("family=" takes the next word); a word matching none is
	// unknown. Set it with orderedSpec.
	ordered []string
}

// orderedSpec builds an optSpec in iproute2's ordered-prefix mode.
func orderedSpec(names ...string) *optSpec {
	s := spec("", names...)
	s.ordered = names
	return s
}

// firstPrefix returns the first entry of table that word is a prefix of:
// iproute2's matches() walked over a fixed, ordered list of objects,
// verbs or options (ip l is link, ip l s is link set, ip a s is address
// show). An empty word matches nothing.
func firstPrefix(word string, table []string) (string, bool) {
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

// spec builds an optSpec from a getopt-style short string ("fn:b::" — ':'
// needs a value, '::' optional) and long names suffixed "=" (needs a value)
// or "?" (optional value).
func spec(short string, longs ...string) *optSpec {
	s := &optSpec{short: map[byte]argKind{}, long: map[string]argKind{}}
	for i := 0; i < len(short); i++ {
		c, k := short[i], noValue
		if i+1 < len(short) && short[i+1] == ':' {
			k = needsValue
			i++
			if i+1 < len(short) && short[i+1] == ':' {
				k = optionalValue
				i++
			}
		}
		s.short[c] = k
	}
	for _, l := range longs {
		switch {
		case strings.HasSuffix(l, "="):
			s.long[strings.TrimSuffix(l, "=")] = needsValue
		case strings.HasSuffix(l, "?"):
			s.long[strings.TrimSuffix(l, "?")] = optionalValue
		default:
			s.long[l] = noValue
		}
	}
	return s
}

// stopAtOperand makes options end at the first operand (wrappers,
// subcommand CLIs); it returns s, for var x = spec(…).stopAtOperand().
func (s *optSpec) stopAtOperand() *optSpec { s.posixStop = true; return s }

// noAbbreviations makes only whole long names match (pflag, cobra).
func (s *optSpec) noAbbreviations() *optSpec { s.noAbbrev = true; return s }

// singleDashLongs lets long options be spelled with one dash too.
func (s *optSpec) singleDashLongs() *optSpec { s.singleDash = true; return s }

// withShort returns a copy of s in which short option c takes k: the same
// letter means different things in different subcommands (kubectl logs -f
// is --follow, kubectl get -f is --filename).
func (s *optSpec) withShort(c byte, k argKind) *optSpec {
	t := *s
	t.short = make(map[byte]argKind, len(s.short))
	for x, v := range s.short {
		t.short[x] = v
	}
	t.short[c] = k
	return &t
}

// opt is one option occurrence.
type opt struct {
	name     string // "-f" or "--follow" (long names expanded from abbreviations)
	value    string
	hasValue bool
	index    int  // index into the args it was parsed from
	cluster  bool // part of a multi-letter short cluster
	sepValue bool // the value is the next argument
}

// parsedArgs is a program's argv split into options and operands.
type parsedArgs struct {
	opts     []opt
	operands []int    // indices of operand args
	dashdash int      // index of "--", or -1
	unknown  []string // options the spec does not know
	dynamic  []string // words that may expand into options (before "--")
}

// has reports whether any of the named options occurs.
func (p *parsedArgs) has(names ...string) bool {
	_, ok := p.get(names...)
	return ok
}

// get returns the last occurrence of any of the named options.
func (p *parsedArgs) get(names ...string) (opt, bool) {
	for i := len(p.opts) - 1; i >= 0; i-- {
		for _, n := range names {
			if p.opts[i].name == n {
				return p.opts[i], true
			}
		}
	}
	return opt{}, false
}

// shifted returns the options with indices moved by n: for arguments parsed
// from a tail of a call's words (docker logs …) that srcExcept edits.
func (p *parsedArgs) shifted(n int) *parsedArgs {
	q := &parsedArgs{dashdash: -1}
	for _, o := range p.opts {
		o.index += n
		q.opts = append(q.opts, o)
	}
	return q
}

// parseArgs parses args (without the program name) against s.
func parseArgs(args []*arg, s *optSpec) *parsedArgs {
	p := &parsedArgs{}
	p.parse(args, s)
	return p
}

// parse fills p from args, reusing its slices (scratch.takeParsed).
func (p *parsedArgs) parse(args []*arg, s *optSpec) {
	p.opts, p.operands, p.unknown, p.dynamic = p.opts[:0], p.operands[:0], p.unknown[:0], p.dynamic[:0]
	p.dashdash = -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		if a.mayBeOption() {
			p.dynamic = append(p.dynamic, a.src)
		}
		switch {
		case v == "--" && a.literal():
			p.dashdash = i
			for j := i + 1; j < len(args); j++ {
				p.operands = append(p.operands, j)
			}
			return
		case s.ordered != nil && len(v) > 1 && v[0] == '-' && !a.procSub:
			i = p.parseOrdered(args, i, s)
		case strings.HasPrefix(v, "--") && !a.procSub:
			name, val, hasVal := strings.Cut(v[2:], "=")
			full, kind, ok := s.lookupLong(name)
			if !ok {
				p.unknown = append(p.unknown, "--"+name+s.ambiguity(name))
				continue
			}
			o := opt{name: "--" + full, value: val, hasValue: hasVal, index: i}
			if kind == needsValue && !hasVal && i+1 < len(args) {
				i++
				o.value, o.hasValue, o.sepValue = args[i].val, true, true
			}
			p.opts = append(p.opts, o)
		case len(v) > 1 && v[0] == '-' && !a.procSub:
			if name, val, hasVal := strings.Cut(v[1:], "="); s.singleDash && len(name) > 1 {
				if kind, ok := s.long[name]; ok {
					o := opt{name: "--" + name, value: val, hasValue: hasVal, index: i}
					if kind == needsValue && !hasVal && i+1 < len(args) {
						i++
						o.value, o.hasValue = args[i].val, true
					}
					p.opts = append(p.opts, o)
					continue
				}
			}
			i = p.parseCluster(args, i, s)
		default:
			p.operands = append(p.operands, i)
			if s.posixStop {
				for j := i + 1; j < len(args); j++ {
					p.operands = append(p.operands, j)
				}
				return
			}
		}
	}
	return
}

// parseOrdered parses one option word in iproute2's mode (optSpec.ordered):
// "-name" or "--name" names the first entry it is a prefix of; "=" is part
// of the word except for an entry marked "?" (ip -color=always).
func (p *parsedArgs) parseOrdered(args []*arg, i int, s *optSpec) int {
	word := strings.TrimPrefix(args[i].val[1:], "-")
	for _, e := range s.ordered {
		name, kind := strings.TrimRight(e, "=?"), noValue
		switch {
		case strings.HasSuffix(e, "="):
			kind = needsValue
		case strings.HasSuffix(e, "?"):
			kind = optionalValue
		}
		w, val, hasVal := word, "", false
		if kind == optionalValue {
			w, val, hasVal = strings.Cut(word, "=")
		}
		if w == "" || !strings.HasPrefix(name, w) {
			continue
		}
		o := opt{name: "-" + name, value: val, hasValue: hasVal, index: i}
		if kind == needsValue && i+1 < len(args) {
			i++
			o.value, o.hasValue, o.sepValue = args[i].val, true, true
		}
		p.opts = append(p.opts, o)
		return i
	}
	p.unknown = append(p.unknown, args[i].val)
	return i
}

func (p *parsedArgs) parseCluster(args []*arg, i int, s *optSpec) int {
	v := args[i].val
	if s.noAbbrev && len(v) > 2 && v[2] == '=' {
		// pflag accepts -w=false and -n=prod.
		if _, ok := s.short[v[1]]; ok {
			p.opts = append(p.opts, opt{name: v[:2], value: v[3:], hasValue: true, index: i})
			return i
		}
	}
	cluster := len(v) > 2
	for j := 1; j < len(v); j++ {
		c := v[j]
		kind, ok := s.short[c]
		if !ok {
			p.unknown = append(p.unknown, "-"+string(c))
			continue
		}
		o := opt{name: "-" + string(c), index: i, cluster: cluster}
		if kind != noValue {
			if j+1 < len(v) {
				o.value, o.hasValue = v[j+1:], true
			} else if kind == needsValue && i+1 < len(args) {
				i++
				o.value, o.hasValue, o.sepValue = args[i].val, true, true
			}
			p.opts = append(p.opts, o)
			return i
		}
		p.opts = append(p.opts, o)
	}
	return i
}

// ambiguity says which long options name abbreviates, when it abbreviates
// more than one (tar --li: --list or --listed-incremental?), for the
// reason of a refusal; "" otherwise.
func (s *optSpec) ambiguity(name string) string {
	if s.noAbbrev || name == "" {
		return ""
	}
	var matches []string
	for l := range s.long {
		if strings.HasPrefix(l, name) {
			matches = append(matches, "--"+l)
		}
	}
	if len(matches) < 2 {
		return ""
	}
	slices.Sort(matches)
	return " (ambiguous: " + strings.Join(matches, ", ") + ")"
}

// lookupLong resolves a long option name, allowing unique GNU abbreviations.
func (s *optSpec) lookupLong(name string) (string, argKind, bool) {
	if k, ok := s.long[name]; ok {
		return name, k, true
	}
	if s.noAbbrev || name == "" {
		return "", 0, false
	}
	found, kind, n := "", argKind(0), 0
	for l, k := range s.long {
		if strings.HasPrefix(l, name) {
			found, kind = l, k
			n++
		}
	}
	if n != 1 {
		return "", 0, false
	}
	return found, kind, true
}
