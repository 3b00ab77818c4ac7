package getopt

import (
	"fmt"
	"strings"
	"testing"
)

// words is an Args with per-word flags, as a shell front end supplies.
type words []Word

func (w words) Len() int      { return len(w) }
func (w words) At(i int) Word { return w[i] }

// lit, dyn and sub build test words: literal, may expand, process substitution.
func lit(s string) Word { return Word{Text: s, Src: s, Literal: true} }
func dyn(text, src string) Word {
	return Word{Text: text, Src: src, MayExpand: true}
}
func sub(src string) Word { return Word{Src: src, Opaque: true} }

// render is a Parsed in one line: each option as name[=value]@index with
// flags s (separate value), c (cluster), off; then operands, unknown,
// dynamic and "--".
func render(p *Parsed) string {
	var parts []string
	var opts []string
	for _, o := range p.Opts {
		s := o.Name
		if o.HasValue {
			s += "=" + o.Value
		}
		s += fmt.Sprintf("@%d", o.Index)
		if o.SepValue {
			s += "s"
		}
		if o.Cluster {
			s += "c"
		}
		if o.Off {
			s += "off"
		}
		opts = append(opts, s)
	}
	if len(opts) > 0 {
		parts = append(parts, strings.Join(opts, " "))
	}
	if len(p.Operands) > 0 {
		parts = append(parts, "ops "+strings.Trim(fmt.Sprint(p.Operands), "[]"))
	}
	if len(p.Unknown) > 0 {
		parts = append(parts, "unk "+strings.Join(p.Unknown, ", "))
	}
	if len(p.Dynamic) > 0 {
		parts = append(parts, "dyn "+strings.Join(p.Dynamic, " "))
	}
	if p.DashDash >= 0 {
		parts = append(parts, fmt.Sprintf("dd %d", p.DashDash))
	}
	return strings.Join(parts, " | ")
}

var (
	// tarSpec is GNU: clusters, attached and separate values, unique
	// abbreviations (issue 14: tar --index-file writes its listing).
	tarSpec = New("xtvf:C:zg::", "list", "listed-incremental=", "file=", "extract",
		"to-command=", "index-file=", "verbose", "directory=", "color?", "exclude=")
	envSpec     = New("iu:", "ignore-environment", "unset=").StopAtOperand()
	kubectlSpec = New("n:f:w", "namespace=", "follow", "filename=", "watch").NoAbbreviations()
	opensslSpec = New("v", "in=", "noout", "text", "out=").SingleDashLongs().NoAbbreviations()
	ipSpec      = Ordered("Version", "human", "stats", "details", "family=", "batch=",
		"netns=", "color?", "brief", "json")
	sqliteSpec = New("", "cmd=", "lookaside==", "A...", "json", "bail", "separator=", "init=", "readonly").WholeWords()
	mysqlSpec  = New("e:p::uG#::", "execute=", "password?", "local-infile", "pager?", "tee=",
		"skip-column-names", "column-names", "host=", "html", "help", "ssl_mode=").MyGetopt()
	jqSpec = New("nr", "arg==", "rawfile==", "null-input", "raw-output")
)

type parseCase struct {
	name string
	spec *Spec
	args []string
	want string
}

var parseCases = []parseCase{
	// GNU getopt_long.
	// A word of more than two characters is a cluster even with one
	// option in it (-Cdir): srcExcept removes letters from such words.
	{"cluster", tarSpec, []string{"-tvf", "a.tar"}, "-t@0c -v@0c -f=a.tar@0sc"},
	{"cluster attached value", tarSpec, []string{"-tvfa.tar"}, "-t@0c -v@0c -f=a.tar@0c"},
	{"short attached", tarSpec, []string{"-Cdir", "-x"}, "-C=dir@0c -x@1"},
	{"short separate", tarSpec, []string{"-C", "dir", "x"}, "-C=dir@0s | ops 2"},
	{"short optional attached only", tarSpec, []string{"-g", "x", "-gy"}, "-g@0 -g=y@2c | ops 1"},
	{"short needs value at end", tarSpec, []string{"-f"}, "-f@0"},
	{"unknown short in cluster", tarSpec, []string{"-tZv"}, "-t@0c -v@0c | unk -Z"},
	{"unknown non-ascii short names the character", tarSpec, []string{"-té"}, "-t@0c | unk -é"},
	{"long exact", tarSpec, []string{"--list", "--file=a.tar"}, "--list@0 --file=a.tar@1"},
	{"long separate value", tarSpec, []string{"--file", "a.tar", "b"}, "--file=a.tar@0s | ops 2"},
	{"long abbreviation", tarSpec, []string{"--to=sh", "--ind", "f"}, "--to-command=sh@0 --index-file=f@1s"},
	{"long ambiguous", tarSpec, []string{"--li", "-f", "a"}, "-f=a@1s | unk --li (ambiguous: --list, --listed-incremental)"},
	{"long exact beats prefix", New("", "list", "listed="), []string{"--list"}, "--list@0"},
	{"long unknown", tarSpec, []string{"--bogus=1", "x"}, "ops 1 | unk --bogus"},
	{"long optional value", tarSpec, []string{"--color", "x", "--col=always"}, "--color@0 --color=always@2 | ops 1"},
	{"long no-value option given a value", tarSpec, []string{"--verbose=2"}, "--verbose=2@0"},
	{"long needs value at end", tarSpec, []string{"--exclude"}, "--exclude@0"},
	{"bare -- ends options", tarSpec, []string{"-t", "--", "-x", "--list"}, "-t@0 | ops 2 3 | dd 1"},
	{"lone - is an operand", tarSpec, []string{"-", "-f", "-"}, "-f=-@1s | ops 0"},
	{"permutation", tarSpec, []string{"a", "-t", "b", "--list"}, "-t@1 --list@3 | ops 0 2"},
	{"empty long name", tarSpec, []string{"--="}, "unk --"},
	{"value that looks like an option", tarSpec, []string{"-f", "--list"}, "-f=--list@0s"},

	// Options end at the first operand.
	{"stop at operand", envSpec, []string{"-i", "-u", "X", "ls", "-l", "--", "x"}, "-i@0 -u=X@1s | ops 3 4 5 6"},
	{"stop at operand before --", envSpec, []string{"--", "ls"}, "ops 1 | dd 0"},
	{"stop at operand abbreviation", envSpec, []string{"--uns=X", "--ig", "ls"}, "--unset=X@0 --ignore-environment@1 | ops 2"},

	// pflag: no abbreviations, -n=prod.
	{"pflag exact", kubectlSpec, []string{"--namespace", "x", "--follow"}, "--namespace=x@0s --follow@2"},
	{"pflag no abbreviation", kubectlSpec, []string{"--fol", "--name=x"}, "unk --fol, --name"},
	{"pflag short equals", kubectlSpec, []string{"-n=prod", "-w=false"}, "-n=prod@0 -w=false@1"},
	{"pflag short equals unknown letter", kubectlSpec, []string{"-z=x"}, "unk -z, -=, -x"},
	{"getopt short equals is the value", tarSpec, []string{"-C=x"}, "-C==x@0c"},

	// Long options with one dash.
	{"single dash long", opensslSpec, []string{"-in", "c.pem", "-noout", "-text"}, "--in=c.pem@0s --noout@2 --text@3"},
	{"single dash long attached", opensslSpec, []string{"-in=c.pem", "--out", "x"}, "--in=c.pem@0 --out=x@1s"},
	{"single dash falls back to cluster", opensslSpec, []string{"-v", "-vv", "-nout"}, "-v@0 -v@1c -v@1c | unk -n, -o, -u, -t"},
	{"single dash no abbreviation", opensslSpec, []string{"-tex"}, "unk -t, -e, -x"},

	// iproute2: first entry in order that the word is a prefix of.
	{"ordered first prefix", ipSpec, []string{"-s", "-b", "f", "-br", "link"}, "-stats@0 -batch=f@1s -brief@3 | ops 4"},
	{"ordered double dash", ipSpec, []string{"--json", "--det"}, "-json@0 -details@1"},
	{"ordered value", ipSpec, []string{"-f", "inet", "-n", "ns1"}, "-family=inet@0s -netns=ns1@2s"},
	{"ordered optional value", ipSpec, []string{"-c=always", "-color"}, "-color=always@0 -color@1"},
	{"ordered unknown", ipSpec, []string{"-stats2", "-z", "-"}, "ops 2 | unk -stats2, -z"},
	{"ordered -- ends", ipSpec, []string{"--", "-s"}, "ops 1 | dd 0"},
	{"ordered V before", ipSpec, []string{"-V"}, "-Version@0"},

	// sqlite3: whole words, two values, the rest.
	{"whole words", sqliteSpec, []string{"-json", "--bail", "db", "-cmd", ".x"}, "--json@0 --bail@1 --cmd=.x@3s | ops 2"},
	{"whole words no clusters", sqliteSpec, []string{"-jsonbail", "-js"}, "unk -jsonbail, -js"},
	{"whole words no equals", sqliteSpec, []string{"--separator=x", "-separator", "|"}, "--separator=|@1s | unk --separator=x"},
	{"whole words two values", sqliteSpec, []string{"-lookaside", "64", "128", "db"}, "--lookaside=64@0s | ops 3"},
	{"whole words two values short", sqliteSpec, []string{"-lookaside", "64"}, "--lookaside@0s"},
	{"whole words two values none", sqliteSpec, []string{"-lookaside"}, "--lookaside@0"},
	{"whole words rest", sqliteSpec, []string{"db", "-A", "-x", "--", "f"}, "--A=-x@1s | ops 0"},
	{"whole words rest at end", sqliteSpec, []string{"-A"}, "--A@0"},
	{"whole words lone dash", sqliteSpec, []string{"-", "db"}, "ops 1 | unk -"},
	{"whole words triple dash", sqliteSpec, []string{"---json"}, "unk ---json"},
	{"whole words --", sqliteSpec, []string{"--", "-json"}, "ops 1 | dd 0"},

	// jq-style two values in GNU mode.
	{"two values long", jqSpec, []string{"-n", "--arg", "x", "1", "."}, "-n@0 --arg=x@1s | ops 4"},
	{"two values attached is unknown", jqSpec, []string{"--arg=x", "1"}, "ops 1 | unk --arg (takes two separate values)"},
	{"two values abbreviated", jqSpec, []string{"--ra", "f", "p"}, "ops 1 2 | unk --ra (ambiguous: --raw-output, --rawfile)"},

	// MySQL's my_getopt.
	{"my exact and underscore", mysqlSpec, []string{"--skip_column_names", "--ssl-mode=R", "--ssl_mode", "V"}, "--skip-column-names@0 --ssl-mode=R@1 --ssl-mode=V@2s"},
	{"my prefix", mysqlSpec, []string{"--exec=SELECT 1", "--ho", "h"}, "--execute=SELECT 1@0 --host=h@1s"},
	{"my skip off", mysqlSpec, []string{"--skip-pager", "--disable-local_infile"}, "--pager=0@0off --local-infile=0@1off"},
	{"my skip=0 is on", mysqlSpec, []string{"--skip-local-infile=0", "--skip-local-infile=1"}, "--local-infile=1@0 --local-infile=0@1off"},
	{"my enable", mysqlSpec, []string{"--enable-local-infile", "--enable-pager=0", "--enable-tee"}, "--local-infile=1@0 --pager=0@1off --tee=1@2"},
	{"my loose", mysqlSpec, []string{"--loose-tee", "f", "--loose-skip-pager", "--skip-loose-pager"}, "--tee=f@0s --pager=0@2off --pager@3"},
	{"my unknown loose", mysqlSpec, []string{"--loose-bogus", "--maximum-host=1"}, "unk --loose-bogus, --maximum-host"},
	{"my flag values", mysqlSpec, []string{"--local-infile=0", "--local-infile=ON", "--local-infile=OFF", "--html=2"}, "--local-infile=0@0off --local-infile=ON@1 --local-infile=OFF@2off --html=2@3"},
	{"my ambiguous", mysqlSpec, []string{"--h"}, "unk --h (ambiguous: --help, --host, --html)"},
	{"my ambiguous after prefix", mysqlSpec, []string{"--skip-h"}, "unk --skip-h (ambiguous: --help, --host, --html)"},
	{"my real skip option prefix", mysqlSpec, []string{"--skip-col"}, "--skip-column-names@0"},
	{"my shorts", mysqlSpec, []string{"-uGp", "-psecret", "-#d:t", "-e", "SELECT 1"}, "-u@0c -G@0c -p@0c -p=secret@1c -#=d:t@2c -e=SELECT 1@3s"},
}

func TestParse(t *testing.T) {
	for _, c := range parseCases {
		if got := render(Parse(Strings(c.args), c.spec)); got != c.want {
			t.Errorf("%s: Parse(%q)\n got %s\nwant %s", c.name, c.args, got, c.want)
		}
	}
}

// ParseInto reuses one Parsed for every case in turn, as classify's batch
// mode does: no result may keep anything of the one before.
func TestParseIntoReuses(t *testing.T) {
	var p Parsed
	for round := 0; round < 2; round++ {
		for _, c := range parseCases {
			ParseInto(&p, Strings(c.args), c.spec)
			if got := render(&p); got != c.want {
				t.Errorf("round %d, %s: ParseInto(%q)\n got %s\nwant %s", round, c.name, c.args, got, c.want)
			}
		}
	}
}

// Words from a shell: only a literal "--" ends options, a process
// substitution is never an option, and a word that may expand into an
// option is reported (issue 14: a file named "--in-place=.txt" matches
// *.txt).
func TestParseShellWords(t *testing.T) {
	cases := []struct {
		name string
		spec *Spec
		args words
		want string
	}{
		{"dynamic", tarSpec, words{lit("-t"), dyn("", "$X"), lit("a")}, "-t@0 | ops 1 2 | dyn $X"},
		{"dynamic glob", tarSpec, words{dyn("*.txt", "*.txt")}, "ops 0 | dyn *.txt"},
		{"dynamic after -- is not reported", tarSpec, words{lit("--"), dyn("", "$X")}, "ops 1 | dd 0"},
		{"dynamic value is not reported", tarSpec, words{lit("-f"), dyn("", "$F")}, "-f=@0s"},
		{"dynamic after stop is not reported", envSpec, words{lit("ls"), dyn("", "$X")}, "ops 0 1"},
		{"expanded -- is an option", tarSpec, words{{Text: "--", Src: `-"$E"-`}, lit("-x")}, "-x@1 | unk --"},
		{"expanded option-looking word", tarSpec, words{{Text: "--list", Src: `--li"st"`, Literal: true}}, "--list@0"},
		{"process substitution", tarSpec, words{lit("-f"), sub("<(x)"), sub("<(y)")}, "-f=@0s | ops 2"},
		{"process substitution ordered", ipSpec, words{sub("<(x)")}, "ops 0"},
		{"process substitution whole words", sqliteSpec, words{sub("<(x)")}, "ops 0"},
	}
	for _, c := range cases {
		if got := render(Parse(c.args, c.spec)); got != c.want {
			t.Errorf("%s: got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestLookup(t *testing.T) {
	cases := []struct {
		spec *Spec
		name string
		full string
		kind Kind
		ok   bool
	}{
		{tarSpec, "file", "file", NeedsValue, true},
		{tarSpec, "ind", "index-file", NeedsValue, true},
		{tarSpec, "col", "color", OptionalValue, true},
		{tarSpec, "li", "", 0, false},
		{tarSpec, "", "", 0, false},
		{kubectlSpec, "fol", "", 0, false},
		{sqliteSpec, "lookaside", "lookaside", TwoValues, true},
		{sqliteSpec, "A", "A", Rest, true},
		{mysqlSpec, "skip_pag", "pager", OptionalValue, true},
		{mysqlSpec, "ssl_mode", "ssl-mode", NeedsValue, true},
		{mysqlSpec, "maximum-host", "", 0, false},
		{ipSpec, "b", "batch", NeedsValue, true},
		{ipSpec, "br", "brief", NoValue, true},
		{ipSpec, "x", "", 0, false},
		{ipSpec, "", "", 0, false},
	}
	for _, c := range cases {
		full, k, ok := c.spec.Lookup(c.name)
		if full != c.full || k != c.kind || ok != c.ok {
			t.Errorf("Lookup(%q) = %q, %v, %v; want %q, %v, %v", c.name, full, k, ok, c.full, c.kind, c.ok)
		}
	}
	if got := tarSpec.Ambiguity("li"); got != " (ambiguous: --list, --listed-incremental)" {
		t.Errorf("Ambiguity(li) = %q", got)
	}
	for _, name := range []string{"list", "ind", "zz", ""} {
		if got := tarSpec.Ambiguity(name); got != "" {
			t.Errorf("Ambiguity(%q) = %q, want none", name, got)
		}
	}
	if got := kubectlSpec.Ambiguity("f"); got != "" {
		t.Errorf("no-abbreviation Ambiguity(f) = %q, want none", got)
	}
}

func TestFirstPrefix(t *testing.T) {
	table := []string{"link", "address", "addrlabel", "route", "rule"}
	cases := []struct{ word, want string }{
		{"l", "link"}, {"a", "address"}, {"addrl", "addrlabel"}, {"r", "route"},
		{"ru", "rule"}, {"x", ""}, {"", ""}, {"links", ""},
	}
	for _, c := range cases {
		got, ok := FirstPrefix(c.word, table)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("FirstPrefix(%q) = %q, %v; want %q", c.word, got, ok, c.want)
		}
	}
}

// WithShort changes one letter in a copy: kubectl logs -f is --follow,
// kubectl get -f is --filename.
func TestPlus(t *testing.T) {
	lead := New("qo:", "quiet", "option=").NoAbbreviations().StopAtOperand()
	list := lead.Plus("ao", "all", "option")
	cases := []struct {
		spec *Spec
		args []string
		want string
	}{
		// the lead keeps its own options and modes
		{lead, []string{"-o", "x", "list", "-q"}, "-o=x@0s | ops 2 3"},
		{lead, []string{"--qui"}, "unk --qui"},
		// the verb's spec has both sets, the new -o and --option win, names
		// are still matched whole, and options go on after operands
		{list, []string{"-q", "-a", "-o", "pkg", "--all"}, "-q@0 -a@1 -o@2 --all@4 | ops 3"},
		{list, []string{"--option", "pkg", "--quiet"}, "--option@0 --quiet@2 | ops 1"},
		{list, []string{"--al"}, "unk --al"},
	}
	for _, c := range cases {
		if got := render(Parse(Strings(c.args), c.spec)); got != c.want {
			t.Errorf("Parse(%q)\n got %s\nwant %s", c.args, got, c.want)
		}
	}
}

func TestWithShort(t *testing.T) {
	logs := kubectlSpec.WithShort('f', NoValue)
	if got := render(Parse(Strings{"-f", "pod"}, logs)); got != "-f@0 | ops 1" {
		t.Errorf("logs -f pod: %s", got)
	}
	if got := render(Parse(Strings{"-f", "x.yaml"}, kubectlSpec)); got != "-f=x.yaml@0s" {
		t.Errorf("get -f x.yaml: %s (the original must not change)", got)
	}
	if got := render(Parse(Strings{"--follow"}, logs)); got != "--follow@0" {
		t.Errorf("logs --follow: %s", got)
	}
}

func TestParsedAccessors(t *testing.T) {
	p := Parse(Strings{"-f", "a", "-t", "--file=b", "x"}, tarSpec)
	if o, ok := p.Get("-f", "--file"); !ok || o.Value != "b" {
		t.Errorf("Get = %+v, %v; want the last, --file=b", o, ok)
	}
	if !p.Has("-t") || p.Has("-x") || p.Has() {
		t.Errorf("Has is wrong on %s", render(p))
	}
	q := p.Shifted(2)
	if got := render(q); got != "-f=a@2s -t@4 --file=b@5" {
		t.Errorf("Shifted(2) = %s", got)
	}
	if p.Opts[0].Index != 0 {
		t.Errorf("Shifted changed the original")
	}
}

// New reads every spelling of a long name's kind.
func TestNewKinds(t *testing.T) {
	s := New("ab:c::", "n", "v=", "o?", "two==", "rest...")
	want := map[string]Kind{"n": NoValue, "v": NeedsValue, "o": OptionalValue, "two": TwoValues, "rest": Rest}
	for name, k := range want {
		if _, got, ok := s.Lookup(name); !ok || got != k {
			t.Errorf("%s: kind %v, %v; want %v", name, got, ok, k)
		}
	}
	for c, k := range map[byte]Kind{'a': NoValue, 'b': NeedsValue, 'c': OptionalValue} {
		if got, ok := s.Short(c); !ok || got != k {
			t.Errorf("-%c: kind %v, %v; want %v", c, got, ok, k)
		}
	}
	if _, ok := s.Short('d'); ok {
		t.Errorf("-d is not an option")
	}
	if k, ok := s.WithShort('d', Rest).Short('d'); !ok || k != Rest {
		t.Errorf("WithShort('d', Rest): %v, %v", k, ok)
	}
}

func TestMyBool(t *testing.T) {
	for v, want := range map[string][2]bool{
		"1": {true, true}, "ON": {true, true}, "true": {true, true},
		"0": {false, true}, "off": {false, true}, "FALSE": {false, true},
		"2": {false, false}, "": {false, false}, "yes": {false, false},
	} {
		if on, ok := MyBool(v); on != want[0] || ok != want[1] {
			t.Errorf("MyBool(%q) = %v, %v; want %v", v, on, ok, want)
		}
	}
}
