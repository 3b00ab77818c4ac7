package token

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// A tokens file is YAML:
//
//	tokens:
//	  - name: alice
//	    sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//	    roles: [approver, auditor]
//	  - name: ci-deployer
//	    sha256: …
//	    roles: [agent]
//	    principal: {user_id: deploy-bot, roles: [deployer]}   # optional (DESIGN §11)
//
// An empty file, "tokens: []" and "tokens:" hold no tokens: valid, but no one
// can log in.

// MaxFileSize bounds a tokens file (DESIGN §3 "Bad input").
const MaxFileSize = 1 << 20

// maxErrors is how many problems one Parse reports.
const maxErrors = 10

// File is a parsed tokens file. It is immutable and safe for concurrent use.
type File struct {
	entries []entry
}

type entry struct {
	name      string
	hash      [sha256.Size]byte
	roles     []Role
	principal *Principal
	line      int
}

// ParseError is one problem in a tokens file:
//
//	tokens.yaml:7: tokens[1].roles[0]: unknown role "aprover" (roles: agent, approver, auditor, admin)
//
// Parse joins several (errors.Join); errors.As finds the first. Messages never
// hold a token or a hash.
type ParseError struct {
	File  string
	Line  int    // 1-based; 0 for the whole file
	Field string // e.g. tokens[1].roles[0]; empty for the document
	Msg   string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads and parses the tokens file at path. It refuses a file that is
// not a regular file, is larger than MaxFileSize, or is writable by group or
// others (whoever can write it can mint an admin token).
func Load(path string) (*File, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// readFile reads the tokens file at path after checking it.
func readFile(path string) ([]byte, error) {
	// Stat before opening: opening a FIFO for reading would block.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	if err := checkFile(path, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	if err := checkFile(path, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	return data, nil
}

// ErrUnsafeMode is wrapped by the errors for a tokens file that group or
// others may write.
var ErrUnsafeMode = errors.New("writable by group or others")

func checkFile(path string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("tokens file %s is not a regular file", path)
	}
	if unsafeMode(fi.Mode()) {
		return fmt.Errorf("tokens file %s is %w (mode %04o): whoever can write it can mint an admin token",
			path, ErrUnsafeMode, fi.Mode().Perm())
	}
	return nil
}

// Parse parses a tokens file; name names it in error messages. It is pure:
// Load is Parse plus the checks on the file itself. Parsing is strict:
// unknown or duplicate fields, duplicate names (compared without case) or
// hashes, a sha256 that is not 64 hex digits, an unknown role and an entry
// without roles are errors naming the line.
func Parse(data []byte, name string) (*File, error) {
	if len(data) > MaxFileSize {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("larger than %d bytes (1 MiB)", MaxFileSize)}
	}
	doc, err := parseYAML(data, name)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: name}
	f := d.document(root(doc))
	if err := d.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// Len returns the number of tokens.
func (f *File) Len() int {
	if f == nil {
		return 0
	}
	return len(f.entries)
}

// Identities returns every token's identity, in file order.
func (f *File) Identities() []Identity {
	ids := make([]Identity, len(f.entries))
	for i, e := range f.entries {
		ids[i] = e.identity()
	}
	return ids
}

func (e *entry) identity() Identity {
	id := Identity{Name: e.name, Roles: append([]Role(nil), e.roles...)}
	if e.principal != nil {
		p := *e.principal
		p.Roles = slices.Clone(p.Roles)
		id.Principal = &p
	}
	return id
}

// Bearer returns the credential of an Authorization header value in the
// Bearer scheme, whose name is case-insensitive (RFC 7235 §2.1), or "" for
// any other header: what auditd and gate serve look up.
func Bearer(authorization string) string {
	if len(authorization) > 7 && strings.EqualFold(authorization[:7], "Bearer ") {
		return strings.TrimSpace(authorization[7:])
	}
	return ""
}

// maxBearer bounds the tokens Lookup hashes; Create's are 46 bytes.
const maxBearer = 4096

// Lookup returns the identity whose hash is the SHA-256 of bearer. It
// compares the hash with every entry in constant time, so the time it takes
// says nothing about which entry, if any, matched.
func (f *File) Lookup(bearer string) (Identity, bool) {
	if f == nil || bearer == "" || len(bearer) > maxBearer {
		return Identity{}, false
	}
	sum := sha256.Sum256([]byte(bearer))
	found := -1
	for i := range f.entries {
		eq := subtle.ConstantTimeCompare(sum[:], f.entries[i].hash[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return Identity{}, false
	}
	return f.entries[found].identity(), true
}

// lookupName returns the index of the entry named name, compared without
// case, or -1.
func (f *File) lookupName(name string) int {
	for i, e := range f.entries {
		if strings.EqualFold(e.name, name) {
			return i
		}
	}
	return -1
}

// parseYAML parses exactly one YAML document and returns its document node,
// or nil for an empty input.
func parseYAML(data []byte, name string) (doc *yaml.Node, err error) {
	defer func() {
		// yaml.v3 re-panics on anything that is not its own error; a
		// tokens file must never crash auditd.
		if r := recover(); r != nil {
			doc, err = nil, &ParseError{File: name, Line: 1, Msg: fmt.Sprintf("invalid YAML: parser failed (%v)", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	doc = new(yaml.Node)
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlError(name, data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &ParseError{File: name, Line: max(extra.Line, 1), Msg: "more than one YAML document (remove the second \"---\")"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(name, data, err)
	}
	return doc, nil
}

// root returns the root node of doc, or nil for an empty document.
func root(doc *yaml.Node) *yaml.Node {
	if doc == nil || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError gives a yaml.v3 syntax error the file's name and a line. yaml.v3
// reports its parser's (not its scanner's) errors 0-based and drops line 0,
// so those are one line early and one without a line is on line 1; a
// problem found at the end of the input is put on the last line.
func yamlError(name string, data []byte, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if strings.HasPrefix(m[2], "did not find expected") {
			line++
		}
		last := bytes.Count(data, []byte("\n"))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			last++
		}
		return &ParseError{File: name, Line: max(min(line, last), 1), Msg: "invalid YAML: " + m[2]}
	}
	return &ParseError{File: name, Line: 1, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// decoder walks the YAML node tree, collecting errors.
type decoder struct {
	file string
	errs []error
}

func (d *decoder) errorf(line int, field, format string, args ...any) {
	if len(d.errs) == maxErrors {
		d.errs = append(d.errs, &ParseError{File: d.file, Line: line, Msg: "too many errors"})
	}
	if len(d.errs) > maxErrors {
		return
	}
	d.errs = append(d.errs, &ParseError{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) err() error { return errors.Join(d.errs...) }

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// kind checks that n is of kind want, naming what it should be otherwise.
func (d *decoder) kind(n *yaml.Node, field string, want yaml.Kind, what string) bool {
	switch {
	case n.Kind == want:
		return true
	case n.Kind == yaml.AliasNode:
		d.errorf(n.Line, field, "aliases (*name) are not allowed in a tokens file")
	default:
		d.errorf(n.Line, field, "must be %s", what)
	}
	return false
}

// mapping calls f for each key of the mapping n, refusing keys that are not
// in keys and keys given twice.
func (d *decoder) mapping(n *yaml.Node, field string, keys []string, f func(key string, v *yaml.Node, field string)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || isNull(k) {
			d.errorf(k.Line, field, "keys must be field names")
			continue
		}
		sub := k.Value
		if field != "" {
			sub = field + "." + k.Value
		}
		if line, dup := seen[k.Value]; dup {
			d.errorf(k.Line, sub, "given twice (first at line %d)", line)
			continue
		}
		seen[k.Value] = k.Line
		if !slices.Contains(keys, k.Value) {
			where := "the document"
			if field != "" {
				where = "a token"
			}
			d.errorf(k.Line, field, "unknown field %s (the fields of %s: %s)", quote(k.Value), where, strings.Join(keys, ", "))
			continue
		}
		f(k.Value, v, sub)
	}
}

func (d *decoder) document(root *yaml.Node) *File {
	f := &File{}
	if root == nil || isNull(root) {
		return f
	}
	if !d.kind(root, "", yaml.MappingNode, "a mapping with a tokens field (tokens: [])") {
		return f
	}
	d.mapping(root, "", []string{"tokens"}, func(_ string, v *yaml.Node, field string) {
		if isNull(v) || !d.kind(v, field, yaml.SequenceNode, "a list of tokens") {
			return
		}
		names := map[string]int{} // lower-case name → line
		hashes := map[[sha256.Size]byte]int{}
		for i, item := range v.Content {
			e, ok := d.entry(item, fmt.Sprintf("%s[%d]", field, i))
			if !ok {
				continue
			}
			ef := fmt.Sprintf("%s[%d]", field, i)
			if line, dup := names[strings.ToLower(e.name)]; dup {
				d.errorf(e.line, ef+".name", "duplicate name %s (first at line %d; names are compared without case)", quote(e.name), line)
				continue
			}
			if line, dup := hashes[e.hash]; dup {
				d.errorf(e.line, ef+".sha256", "the same hash as the token at line %d", line)
				continue
			}
			names[strings.ToLower(e.name)] = e.line
			hashes[e.hash] = e.line
			f.entries = append(f.entries, e)
		}
	})
	return f
}

// entry decodes one token; ok is false when it had errors.
func (d *decoder) entry(n *yaml.Node, field string) (e entry, ok bool) {
	e.line = n.Line
	if !d.kind(n, field, yaml.MappingNode, "a mapping with the fields name, sha256 and roles") {
		return e, false
	}
	before := len(d.errs)
	var haveName, haveHash, haveRoles bool
	d.mapping(n, field, []string{"name", "sha256", "roles", "principal"}, func(key string, v *yaml.Node, field string) {
		switch key {
		case "name":
			haveName = true
			if !d.scalar(v, field) {
				return
			}
			if err := CheckName(v.Value); err != nil {
				d.errorf(v.Line, field, "%v", err)
				return
			}
			e.name = v.Value
		case "sha256":
			haveHash = true
			if !d.scalar(v, field) {
				return
			}
			// The value is never echoed: a hash narrows a token down.
			if len(v.Value) != 2*sha256.Size {
				d.errorf(v.Line, field, "must be 64 hexadecimal digits, the SHA-256 of the token (got %d characters)", len(v.Value))
				return
			}
			if _, err := hex.Decode(e.hash[:], []byte(v.Value)); err != nil {
				d.errorf(v.Line, field, "must be 64 hexadecimal digits, the SHA-256 of the token (found a character that is not one)")
			}
		case "roles":
			haveRoles = true
			if isNull(v) {
				d.errorf(v.Line, field, "must list at least one role (roles: %s)", rolesList)
				return
			}
			if !d.kind(v, field, yaml.SequenceNode, "a list of roles, e.g. [approver, auditor]") {
				return
			}
			if len(v.Content) == 0 {
				d.errorf(v.Line, field, "must list at least one role (roles: %s)", rolesList)
			}
			for i, r := range v.Content {
				rf := fmt.Sprintf("%s[%d]", field, i)
				if !d.scalar(r, rf) {
					continue
				}
				if err := checkRole(Role(r.Value), e.roles); err != nil {
					d.errorf(r.Line, rf, "%v", err)
					continue
				}
				e.roles = append(e.roles, Role(r.Value))
			}
		case "principal":
			e.principal = d.principal(v, field)
		}
	})
	for _, m := range []struct {
		have bool
		key  string
	}{{haveName, "name"}, {haveHash, "sha256"}, {haveRoles, "roles"}} {
		if !m.have {
			d.errorf(n.Line, field+"."+m.key, "required")
		}
	}
	return e, len(d.errs) == before
}

// principal decodes a token's principal: {user_id, roles?, service?}.
func (d *decoder) principal(n *yaml.Node, field string) *Principal {
	if !d.kind(n, field, yaml.MappingNode, "a mapping with the fields user_id, roles and service") {
		return nil
	}
	before := len(d.errs)
	p := &Principal{}
	haveUser := false
	d.mapping(n, field, []string{"user_id", "roles", "service"}, func(key string, v *yaml.Node, field string) {
		switch key {
		case "user_id":
			haveUser = true
			if d.scalar(v, field) {
				p.UserID = v.Value
			}
		case "service":
			if d.scalar(v, field) {
				p.Service = v.Value
			}
		case "roles":
			if isNull(v) || !d.kind(v, field, yaml.SequenceNode, "a list of policy roles, e.g. [dba, sre]") {
				return
			}
			for i, r := range v.Content {
				if d.scalar(r, fmt.Sprintf("%s[%d]", field, i)) {
					p.Roles = append(p.Roles, r.Value)
				}
			}
		}
	})
	if !haveUser {
		d.errorf(n.Line, field+".user_id", "required")
	}
	if len(d.errs) != before {
		return nil
	}
	if err := CheckPrincipal(*p); err != nil {
		d.errorf(n.Line, field, "%v", err)
		return nil
	}
	return p
}

// scalar checks that n is a non-null scalar.
func (d *decoder) scalar(n *yaml.Node, field string) bool {
	if !d.kind(n, field, yaml.ScalarNode, "a single value") {
		return false
	}
	if isNull(n) || n.Value == "" {
		d.errorf(n.Line, field, "must not be empty")
		return false
	}
	return true
}
