package token

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/govkit/govkit/pkg/atomicfile"
)

// ErrNameTaken is wrapped by Create's error for a name the file already
// holds (names are compared without case).
var ErrNameTaken = errors.New("token name already exists")

// ErrNoSuchName is wrapped by Revoke's error for a name the file does not
// hold.
var ErrNoSuchName = errors.New("no token with that name")

// newFileComment heads a tokens file that Create makes.
const newFileComment = "# auditd bearer tokens: names, roles and SHA-256 hashes, never the tokens.\n" +
	"# Managed with auditd token create|list|revoke. Keep it mode 0600: whoever\n" +
	"# can write this file can mint an admin token."

// Create makes a token for name with roles, adds its hash to the tokens file
// at path and returns the token: Prefix and 32 bytes from random, base64url
// without padding. It creates the file (mode 0600) if it is missing; its
// directory must exist. The file is rewritten atomically (a temporary file in
// the same directory, fsync, rename), keeping the other entries, their order,
// the mode, the owner and the comments (unless yaml.v3 cannot put a comment
// back where it was: then it is rewritten without comments); a failure leaves
// it as it was. Create
// refuses a name the file holds already (ErrNameTaken), an invalid name or
// role, a file that does not parse, and a file writable by group or others
// (ErrUnsafeMode). Concurrent Creates and Revokes on the same file are
// serialized where the system has flock(2).
func Create(path, name string, roles []Role, random io.Reader) (token string, err error) {
	return CreateFor(path, name, roles, nil, random)
}

// CreateFor is Create for a token that acts for principal (nil: its own
// name, with no policy roles; DESIGN §11).
func CreateFor(path, name string, roles []Role, principal *Principal, random io.Reader) (token string, err error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	if len(roles) == 0 {
		return "", fmt.Errorf("no roles given (roles: %s)", rolesList)
	}
	for i, r := range roles {
		if err := checkRole(r, roles[:i]); err != nil {
			return "", err
		}
	}
	if principal != nil {
		if err := CheckPrincipal(*principal); err != nil {
			return "", err
		}
	}
	err = update(path, true, func(data []byte) ([]byte, error) {
		tok, sum, err := newToken(random)
		if err != nil {
			return nil, err
		}
		out, err := appendEntry(data, path, entry{name: name, hash: sum, roles: roles, principal: principal})
		if err != nil {
			return nil, err
		}
		token = tok
		return out, nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// Revoke removes the token named name (compared exactly) from the tokens
// file at path, with Create's atomic rewrite. A name the file does not hold
// is an error wrapping ErrNoSuchName.
func Revoke(path, name string) error {
	return update(path, false, func(data []byte) ([]byte, error) {
		return removeEntry(data, path, name)
	})
}

// update rewrites the tokens file at path with edit, atomically, under a
// lock on its directory. With create, a missing file is edited as empty.
func update(path string, create bool, edit func([]byte) ([]byte, error)) error {
	real := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// Replace the file the link names, not the link.
		if real, err = filepath.EvalSymlinks(path); err != nil {
			return fmt.Errorf("tokens file: %w", err)
		}
	}
	dir := filepath.Dir(real)
	unlock, err := lockDir(dir)
	if err != nil {
		return fmt.Errorf("tokens file %s: directory: %w", path, unwrapPathError(err))
	}
	defer unlock()

	data, err := readFile(real)
	switch {
	case err == nil:
	case create && errors.Is(err, fs.ErrNotExist):
		data = nil
	default:
		if real != path {
			// readFile names the target; the user knows the link.
			return fmt.Errorf("%w (through %s)", err, path)
		}
		return err
	}
	out, err := edit(data)
	if err != nil {
		return err
	}
	if err := writeAtomic(real, out); err != nil {
		return fmt.Errorf("writing tokens file %s: %w (it was left unchanged)", path, err)
	}
	return nil
}

// testHookBeforeRename, when set, runs after the temporary file is written
// and before it replaces the tokens file (tests inject failures with it).
var testHookBeforeRename func(tmp string) error

// writeAtomic replaces path with data (pkg/atomicfile): a crash or an error
// leaves either the old file or the new one, never a part. The new file
// keeps the old one's owner, group and mode (root rewriting the tokens file
// of the user auditd runs as must leave it readable by that user); a new
// tokens file gets mode 0600.
func writeAtomic(path string, data []byte) error {
	err := atomicfile.WriteWith(path, data, atomicfile.Options{Perm: 0o600, Keep: true, Check: testHookBeforeRename})
	return unwrapPathError(err)
}

// appendEntry returns data, a tokens file named name in messages, with a
// token entry e appended.
func appendEntry(data []byte, name string, e entry) ([]byte, error) {
	tokName := e.name
	f, err := Parse(data, name)
	if err != nil {
		return nil, err
	}
	if i := f.lookupName(tokName); i >= 0 {
		return nil, &wrapError{
			msg: fmt.Sprintf("%s:%d: a token named %s already exists", name, f.entries[i].line, quote(f.entries[i].name)),
			err: ErrNameTaken,
		}
	}
	doc, err := parseYAML(data, name)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		doc = &yaml.Node{Kind: yaml.DocumentNode}
	}
	if root(doc) == nil || isNull(root(doc)) {
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
		if data == nil {
			doc.Content[0].HeadComment = newFileComment
		}
	}
	// "{}" and "tokens: []" grow into block style, one line per field.
	root(doc).Style &^= yaml.FlowStyle
	seq := tokensNode(root(doc))
	seq.Style &^= yaml.FlowStyle
	seq.Content = append(seq.Content, entryNode(e))

	want := append(slices.Clone(f.entries), e)
	return encode(doc, name, want)
}

// removeEntry returns data, a tokens file named name in messages, without
// the token named tokName.
func removeEntry(data []byte, name, tokName string) ([]byte, error) {
	f, err := Parse(data, name)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(f.entries, func(e entry) bool { return e.name == tokName })
	if i < 0 {
		msg := fmt.Sprintf("%s: no token named %s", name, quote(tokName))
		if j := f.lookupName(tokName); j >= 0 {
			msg += fmt.Sprintf(" (line %d has %s: names are exact here)", f.entries[j].line, quote(f.entries[j].name))
		}
		return nil, &wrapError{msg: msg, err: ErrNoSuchName}
	}
	doc, err := parseYAML(data, name)
	if err != nil {
		return nil, err
	}
	// Parse accepted every item of the list, so item i is entry i.
	seq := tokensNode(root(doc))
	seq.Content = slices.Delete(seq.Content, i, i+1)
	if len(seq.Content) == 0 {
		// yaml.v3 writes "tokens: # comment" and an empty list as an
		// invalid "tokens: # comment\n[]": move the comment after the [].
		key := keyNode(root(doc), "tokens")
		seq.Style |= yaml.FlowStyle
		seq.LineComment, key.LineComment = cmp.Or(key.LineComment, seq.LineComment), ""
	}
	want := slices.Delete(slices.Clone(f.entries), i, i+1)
	return encode(doc, name, want)
}

// keyNode returns the key node named key in the mapping m, or nil.
func keyNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

// tokensNode returns the tokens list of the mapping m, adding an empty one
// when it is missing or null.
func tokensNode(m *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "tokens" {
			v := m.Content[i+1]
			if isNull(v) {
				*v = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: v.Line, LineComment: v.LineComment}
			}
			return v
		}
	}
	v := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "tokens"}, v)
	return v
}

func entryNode(e entry) *yaml.Node {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	list := func(items []string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, it := range items {
			n.Content = append(n.Content, str(it))
		}
		return n
	}
	roles := make([]string, len(e.roles))
	for i, r := range e.roles {
		roles[i] = string(r)
	}
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		str("name"), str(e.name),
		str("sha256"), str(hex.EncodeToString(e.hash[:])),
		str("roles"), list(roles),
	}}
	if p := e.principal; p != nil {
		pn := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle, Content: []*yaml.Node{str("user_id"), str(p.UserID)}}
		if len(p.Roles) > 0 {
			pn.Content = append(pn.Content, str("roles"), list(p.Roles))
		}
		if p.Service != "" {
			pn.Content = append(pn.Content, str("service"), str(p.Service))
		}
		n.Content = append(n.Content, str("principal"), pn)
	}
	return n
}

// encode marshals doc and checks that the result parses to exactly want.
// The file is rewritten from its node tree to keep comments and layout; when
// a quirk of yaml.v3's encoder (comments in odd places) makes that fail to
// read back, the file is written afresh from want, without its comments: a
// token must never be dropped or changed.
func encode(doc *yaml.Node, name string, want []entry) ([]byte, error) {
	if out, err := encodeChecked(doc, name, want); err == nil {
		return out, nil
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", HeadComment: newFileComment}
	seq := tokensNode(m)
	for _, e := range want {
		seq.Content = append(seq.Content, entryNode(e))
	}
	out, err := encodeChecked(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}, name, want)
	if err != nil {
		return nil, fmt.Errorf("%s: internal error: the rewritten tokens file does not read back (%v); nothing was written", name, err)
	}
	return out, nil
}

func encodeChecked(doc *yaml.Node, name string, want []entry) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("encoder failed: %v", r)
		}
	}()
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	g, err := Parse(buf.Bytes(), name)
	if err != nil {
		return nil, err
	}
	if !sameEntries(g.entries, want) {
		return nil, errors.New("the tokens changed")
	}
	return buf.Bytes(), nil
}

func sameEntries(a, b []entry) bool {
	return slices.EqualFunc(a, b, func(x, y entry) bool {
		return x.name == y.name && x.hash == y.hash && slices.Equal(x.roles, y.roles) && samePrincipal(x.principal, y.principal)
	})
}

func samePrincipal(a, b *Principal) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.UserID == b.UserID && a.Service == b.Service && slices.Equal(a.Roles, b.Roles)
}

// wrapError is an error with its own message that wraps a sentinel.
type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

// unwrapPathError drops the *fs.PathError wrapper, whose message would
// name a temporary file or repeat the path the caller names.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
