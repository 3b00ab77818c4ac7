package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/govkit/govkit/pkg/termtext"
)

// MaxInputSize bounds a policy or infra file (DESIGN §3 "Bad input").
const MaxInputSize = 1 << 20

// maxNodes bounds how many YAML nodes the loader visits, aliases expanded.
// yaml.v3 keeps aliases unexpanded in a Node tree, so it is the loader that
// would multiply them ("billion laughs"); 250,000 is far above any real
// policy file (a policy is ~20 nodes) and keeps a hostile 1 MiB file cheap.
const maxNodes = 250_000

// maxErrors is how many problems one load reports before "too many errors".
const maxErrors = 10

// unnamedInput names the input in messages when Load is given no name.
const unnamedInput = "<input>"

// LoadError is one problem in a policy or infra file, located by line and
// by field path, e.g.
//
//	policies.yaml:12: policies[0].rules[1].effect: "alow" is not one of allow, deny, require_approval
//
// A load that finds several problems returns them joined (errors.Join, in
// line order); errors.As finds the first.
type LoadError struct {
	File  string // as given to LoadFile/LoadNamed; may be empty for a hand-built Config
	Line  int    // 1-based; 0 when unknown
	Field string // path of the field, e.g. policies[0].rules[1].effect; empty for the document
	Msg   string
}

func (e *LoadError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		if e.File == "" {
			b.WriteString("line ")
		}
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadFile loads and validates a policy file (seed 003's policy.LoadFile),
// which must be a regular file (ReadFile).
func LoadFile(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return LoadNamed(path, bytes.NewReader(data))
}

// Load loads and validates a policy document from r; messages call it
// "<input>". Use LoadNamed when the input has a name.
func Load(r io.Reader) (*Config, error) { return LoadNamed("", r) }

// LoadNamed is Load with a name (usually a file path) for messages and
// Config.Source. The document is decoded strictly: unknown keys, wrong
// types, duplicate keys and invalid values are errors naming line and field.
func LoadNamed(name string, r io.Reader) (*Config, error) {
	if name == "" {
		name = unnamedInput
	}
	root, err := readDocument(name, r, "policy")
	if err != nil {
		return nil, err
	}
	d := newDecoder(name)
	cfg := d.config(root)
	if err := d.err(); err != nil {
		return nil, err
	}
	cfg.Source = name
	if err := cfg.validate(d.lines); err != nil {
		return nil, err
	}
	return cfg, nil
}

// readDocument reads at most MaxInputSize bytes and parses exactly one YAML
// document, returning its root node. kind names the document in messages.
func readDocument(name string, r io.Reader, kind string) (*yaml.Node, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxInputSize {
		return nil, &LoadError{File: name, Msg: fmt.Sprintf("%s file exceeds the input size limit of %d bytes (1 MiB)", kind, MaxInputSize)}
	}
	if line, msg := checkText(data, kind); msg != "" {
		return nil, &LoadError{File: name, Line: line, Msg: msg}
	}
	return parseYAML(name, data, kind)
}

// checkText rejects what yaml.v3's reader would reject, but with a line
// number (its own messages have none): invalid UTF-8 (including UTF-16,
// which yaml.v3 would otherwise accept) and control characters.
func checkText(data []byte, kind string) (line int, msg string) {
	line = 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, "invalid UTF-8: " + kind + " files must be UTF-8 text"
		case r == '\n':
			line++
		case r == '\t', r == '\r', r == 0x85:
		case r < 0x20, r == 0x7f, r > 0x7f && r < 0xa0, r == 0xfffe, r == 0xffff:
			return line, fmt.Sprintf("control character %U is not allowed", r)
		}
		i += size
	}
	return 0, ""
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML parses one document. yaml.v3 reports problems on the first line
// without a line number (its marks are 0-based and it prints only nonzero
// ones), so an error without one is on line 1.
func parseYAML(name string, data []byte, kind string) (root *yaml.Node, err error) {
	defer func() {
		// yaml.v3 re-panics on anything that is not its own error; a policy
		// file must never crash the caller (DESIGN §3 fail closed).
		if r := recover(); r != nil {
			root, err = nil, &LoadError{File: name, Line: 1, Msg: fmt.Sprintf("invalid YAML: parser failed (%v)", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &LoadError{File: name, Line: 1, Msg: "empty " + kind + " file"}
		}
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &LoadError{File: name, Line: max(extra.Line, 1), Msg: "more than one YAML document (remove the second \"---\")"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(name, err)
	}
	if len(doc.Content) == 0 {
		return nil, &LoadError{File: name, Line: 1, Msg: "empty " + kind + " file"}
	}
	return doc.Content[0], nil
}

func yamlError(name string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if yamlParserProblem(m[2]) {
			line++
		}
		return &LoadError{File: name, Line: max(line, 1), Msg: "invalid YAML: " + m[2]}
	}
	return &LoadError{File: name, Line: 1, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// yamlParserProblem recognises yaml.v3's parser (not scanner) errors: its
// fail() reports their line 0-based and only adds 1 for scanner errors, so
// "resources: [unclosed" on line 4 comes out as "line 3".
func yamlParserProblem(msg string) bool {
	for _, p := range []string{
		"did not find expected <document start>", "did not find expected node content",
		"did not find expected key", "did not find expected '-' indicator",
		"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// decoder walks a yaml.Node tree strictly, filling Go values, recording the
// line of every field path it visits (for validate's messages) and
// collecting problems.
type decoder struct {
	file  string
	lines map[string]int
	errs  []*LoadError
	nodes int
	stop  bool // the node budget ran out: report that once and stop
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, lines: map[string]int{}}
}

func (d *decoder) errorf(line int, field, format string, args ...any) {
	d.errs = append(d.errs, &LoadError{File: d.file, Line: max(line, 1), Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) err() error { return joinErrors(d.errs) }

// joinErrors sorts problems by line (stable: same-line problems keep their
// order) and caps them at maxErrors.
func joinErrors(list []*LoadError) error {
	if len(list) == 0 {
		return nil
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Line < list[j].Line })
	if len(list) > maxErrors {
		next := list[maxErrors]
		list = append(list[:maxErrors:maxErrors], &LoadError{File: next.File, Line: next.Line, Msg: "too many errors"})
	}
	if len(list) == 1 {
		return list[0]
	}
	errs := make([]error, len(list))
	for i, e := range list {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// visit resolves aliases and charges the node budget; nil means stop.
func (d *decoder) visit(n *yaml.Node, field string) *yaml.Node {
	if d.stop {
		return nil
	}
	line := n.Line
	for depth := 0; n.Kind == yaml.AliasNode; depth++ {
		if n.Alias == nil || depth > 100 {
			d.errorf(line, field, "unresolvable alias")
			return nil
		}
		n = n.Alias
	}
	d.nodes++
	if d.nodes > maxNodes {
		d.errorf(line, field, "document too large: more than %d YAML nodes (aliases expanded)", maxNodes)
		d.stop = true
		return nil
	}
	d.lines[field] = line
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	}
	return "something else"
}

// mapping calls fn for each key of a mapping node, rejecting unknown and
// duplicate keys. A null node is an empty mapping.
func (d *decoder) mapping(n *yaml.Node, field string, keys []string, fn func(key string, v *yaml.Node, field string)) {
	if n = d.visit(n, field); n == nil || isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, field, "want a mapping with keys %s, got %s", strings.Join(keys, ", "), kindName(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content) && !d.stop; i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		sub := join(field, key)
		switch {
		case k.Kind != yaml.ScalarNode:
			d.errorf(k.Line, field, "keys must be plain strings")
			continue
		case key == "<<" && k.ShortTag() == "!!merge":
			d.errorf(k.Line, field, "merge keys (<<) are not supported; repeat the fields or use an alias for the whole value")
			continue
		case !contains(keys, key):
			d.errorf(k.Line, sub, "unknown key (want one of %s)", strings.Join(keys, ", "))
			continue
		}
		if first, dup := seen[key]; dup {
			d.errorf(k.Line, sub, "duplicate key (first at line %d)", first)
			continue
		}
		seen[key] = k.Line
		fn(key, v, sub)
	}
}

// sequence calls fn for each item of a list node. A null node is empty.
func (d *decoder) sequence(n *yaml.Node, field string, fn func(i int, item *yaml.Node, field string)) {
	if n = d.visit(n, field); n == nil || isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, field, "want a list, got %s", kindName(n))
		return
	}
	for i, item := range n.Content {
		if d.stop {
			return
		}
		fn(i, item, field+"["+strconv.Itoa(i)+"]")
	}
}

// str decodes a scalar as a string; null is "".
func (d *decoder) str(n *yaml.Node, field string) string {
	if n = d.visit(n, field); n == nil || isNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		d.errorf(n.Line, field, "want a string, got %s", kindName(n))
		return ""
	}
	return n.Value
}

// strings decodes a list of strings; a single scalar is not accepted.
func (d *decoder) strings(n *yaml.Node, field string) []string {
	var out []string
	d.sequence(n, field, func(_ int, item *yaml.Node, field string) {
		out = append(out, d.str(item, field))
	})
	return out
}

// boolean accepts only YAML booleans (true/false), not "yes" or "on".
func (d *decoder) boolean(n *yaml.Node, field string) bool {
	if n = d.visit(n, field); n == nil || isNull(n) {
		return false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		d.errorf(n.Line, field, "want true or false, got %s", quoteNode(n))
	}
	return b
}

// integer decodes an int; ok is false for null or a bad value (reported).
func (d *decoder) integer(n *yaml.Node, field string) (v int, ok bool) {
	if n = d.visit(n, field); n == nil || isNull(n) {
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		d.errorf(n.Line, field, "want an integer, got %s", quoteNode(n))
		return 0, false
	}
	return v, true
}

func quoteNode(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return kindName(n)
	}
	return quote(n.Value)
}

// quote quotes a user value for a message, bounded so that an error never
// echoes a whole untrusted input (DESIGN §3).
func quote(s string) string { return termtext.Quote(s, 40) }

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// config decodes the policy document (DESIGN §5 file format).
func (d *decoder) config(root *yaml.Node) *Config {
	cfg := &Config{}
	d.mapping(root, "", []string{"version", "default_effect", "policies", "guardrails"}, func(key string, v *yaml.Node, field string) {
		switch key {
		case "version":
			cfg.Version = d.str(v, field)
		case "default_effect":
			cfg.DefaultEffect = Effect(d.str(v, field))
			cfg.DefaultEffectLine = v.Line
		case "policies":
			d.sequence(v, field, func(_ int, item *yaml.Node, field string) {
				cfg.Policies = append(cfg.Policies, d.policy(item, field))
			})
		case "guardrails":
			if isNull(v) {
				d.errorf(v.Line, field, "empty: give rate_limit, circuit_breaker or both, or remove guardrails")
				return
			}
			cfg.Guardrails = d.guardrails(v, field)
		}
	})
	return cfg
}

func (d *decoder) policy(n *yaml.Node, field string) Policy {
	p := Policy{Line: n.Line}
	keys := []string{"name", "description", "enabled", "enforcement", "principals", "resources", "rules"}
	d.mapping(n, field, keys, func(key string, v *yaml.Node, field string) {
		switch key {
		case "name":
			p.Name = d.str(v, field)
		case "description":
			p.Description = d.str(v, field)
		case "enabled":
			if !isNull(v) {
				b := d.boolean(v, field)
				p.Enabled = &b
			}
		case "enforcement":
			p.Enforcement = d.str(v, field)
		case "principals":
			d.sequence(v, field, func(_ int, item *yaml.Node, field string) {
				var pr Principal
				d.mapping(item, field, []string{"role", "user", "service"}, func(key string, v *yaml.Node, field string) {
					switch key {
					case "role":
						pr.Role = d.str(v, field)
					case "user":
						pr.User = d.str(v, field)
					case "service":
						pr.Service = d.str(v, field)
					}
				})
				p.Principals = append(p.Principals, pr)
			})
		case "resources":
			d.sequence(v, field, func(_ int, item *yaml.Node, field string) {
				p.Resources = append(p.Resources, d.selector(item, field))
			})
		case "rules":
			d.sequence(v, field, func(_ int, item *yaml.Node, field string) {
				p.Rules = append(p.Rules, d.rule(item, field))
			})
		}
	})
	return p
}

func (d *decoder) selector(n *yaml.Node, field string) ResourceSelector {
	var s ResourceSelector
	d.mapping(n, field, []string{"type", "name", "match"}, func(key string, v *yaml.Node, field string) {
		switch key {
		case "type":
			s.Type = d.str(v, field)
		case "name":
			s.Name = d.str(v, field)
		case "match":
			if isNull(v) {
				return
			}
			s.Match = &TagMatch{}
			d.mapping(v, field, []string{"tags"}, func(_ string, v *yaml.Node, field string) {
				s.Match.Tags = d.strings(v, field)
			})
		}
	})
	return s
}

func (d *decoder) rule(n *yaml.Node, field string) Rule {
	r := Rule{Line: n.Line}
	d.mapping(n, field, []string{"action", "effect", "message", "conditions"}, func(key string, v *yaml.Node, field string) {
		switch key {
		case "action":
			// "action: write" or "action: [write, destructive]" (seed 003).
			if res := d.peek(v); res != nil && res.Kind == yaml.ScalarNode && !isNull(res) {
				r.Actions = []Action{Action(d.str(v, field))}
				return
			}
			for _, a := range d.strings(v, field) {
				r.Actions = append(r.Actions, Action(a))
			}
		case "effect":
			r.Effect = Effect(d.str(v, field))
		case "message":
			r.Message = d.str(v, field)
		case "conditions":
			if !isNull(v) {
				r.Conditions = d.conditions(v, field)
			}
		}
	})
	return r
}

// peek resolves aliases without charging the budget or recording a line.
func (d *decoder) peek(n *yaml.Node) *yaml.Node {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode && depth <= 100; depth++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

func (d *decoder) conditions(n *yaml.Node, field string) *Conditions {
	c := &Conditions{}
	keys := []string{"require_approval", "approval_quorum", "max_rows_affected", "max_pods_affected", "schedule"}
	d.mapping(n, field, keys, func(key string, v *yaml.Node, field string) {
		switch key {
		case "require_approval":
			c.RequireApproval = d.boolean(v, field)
		case "approval_quorum":
			// Checked here, not in validate: in the struct an explicit 0 and
			// an absent quorum look the same, and only the latter is fine.
			if q, ok := d.integer(v, field); ok {
				if q < 1 {
					d.errorf(v.Line, field, "%d must be at least 1", q)
				}
				c.ApprovalQuorum = q
			}
		case "max_rows_affected":
			if m, ok := d.integer(v, field); ok {
				c.MaxRowsAffected = &m
			}
		case "max_pods_affected":
			if m, ok := d.integer(v, field); ok {
				c.MaxPodsAffected = &m
			}
		case "schedule":
			if isNull(v) {
				return
			}
			s := &Schedule{}
			d.mapping(v, field, []string{"days", "hours", "timezone"}, func(key string, v *yaml.Node, field string) {
				switch key {
				case "days":
					s.Days = d.strings(v, field)
				case "hours":
					d.sequence(v, field, func(_ int, item *yaml.Node, field string) {
						if h, ok := d.integer(item, field); ok {
							s.Hours = append(s.Hours, h)
						}
					})
				case "timezone":
					s.Timezone = d.str(v, field)
				}
			})
			c.Schedule = s
		}
	})
	return c
}
