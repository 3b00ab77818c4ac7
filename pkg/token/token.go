// Package token is auditd's bearer tokens file: names, roles and the SHA-256
// hashes of the tokens that authenticate HTTP clients (DESIGN §7 "Auth").
package token

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
)

// Role is what a token may do.
type Role string

// The roles of DESIGN §7. Admin has every role.
const (
	Agent    Role = "agent"    // append events, request approvals, read its own requests
	Approver Role = "approver" // list approval requests and decide them
	Auditor  Role = "auditor"  // read everything
	Admin    Role = "admin"    // everything
	// Gateway is a trusted enforcement point (such as gate running under
	// an operator's identity) that authenticated the end user itself: it
	// may name the principal, agent and tags a request is for, which every
	// other token takes from its own entry and the infra file (DESIGN §11).
	// It does not include the other roles.
	Gateway Role = "gateway"
)

// allRoles lists every role, in the order help texts and messages show them.
var allRoles = []Role{Agent, Approver, Auditor, Admin, Gateway}

// rolesList is "agent, approver, auditor, admin", for messages.
var rolesList = func() string {
	s := make([]string, len(allRoles))
	for i, r := range allRoles {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}()

// Valid reports whether r is agent, approver, auditor, admin or gateway.
func (r Role) Valid() bool { return slices.Contains(allRoles, r) }

// Identity is who a token belongs to: the name auditd records for its
// requests (an approver's identity is this name, never a request field) and
// what it may do.
type Identity struct {
	Name  string
	Roles []Role
	// Principal is who the token acts for in policy decisions (DESIGN
	// §11): nil means the token's own name, with no policy roles.
	Principal *Principal
}

// Principal is the policy principal a token acts for: a user id and the
// policy roles (dba, sre, …: not API roles) policies match on, and an
// optional service account (DESIGN §5 principals).
type Principal struct {
	UserID  string   `json:"user_id" yaml:"user_id"`
	Roles   []string `json:"roles,omitempty" yaml:"roles,omitempty"`
	Service string   `json:"service,omitempty" yaml:"service,omitempty"`
}

// Has reports whether id has role r. Admin has every role but gateway:
// acting for principals the token did not authenticate is a trust decision
// of its own, granted by name.
func (id Identity) Has(r Role) bool {
	if r == Gateway {
		return slices.Contains(id.Roles, Gateway)
	}
	return slices.Contains(id.Roles, r) || slices.Contains(id.Roles, Admin)
}

// ActsFor is the principal id's requests are decided for: its configured
// principal, or else its own name with no policy roles.
func (id Identity) ActsFor() Principal {
	if id.Principal != nil {
		p := *id.Principal
		p.Roles = slices.Clone(p.Roles)
		return p
	}
	return Principal{UserID: id.Name}
}

// MaxPrincipalRoles bounds the policy roles of a token's principal.
const MaxPrincipalRoles = 32

// CheckPrincipal validates a token's principal: a user id (a token name's
// characters, but up to 256 bytes, as e-mail addresses may be long), policy
// roles named like token names, and an optional service named likewise.
func CheckPrincipal(p Principal) error {
	if p.UserID == "" {
		return errors.New("principal user_id is empty")
	}
	if err := checkIdent("principal user_id", p.UserID, maxPrincipalName); err != nil {
		return err
	}
	if len(p.Roles) > MaxPrincipalRoles {
		return fmt.Errorf("principal has %d roles; the limit is %d", len(p.Roles), MaxPrincipalRoles)
	}
	for i, r := range p.Roles {
		if err := checkIdent("principal role", r, MaxNameLen); err != nil {
			return err
		}
		if slices.Contains(p.Roles[:i], r) {
			return fmt.Errorf("principal role %s is listed twice", quote(r))
		}
	}
	if p.Service != "" {
		return checkIdent("principal service", p.Service, maxPrincipalName)
	}
	return nil
}

// ParsePrincipalRoles parses a comma-separated list of policy roles
// ("dba,sre"); an empty string is no roles.
func ParsePrincipalRoles(s string) []string {
	var roles []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			roles = append(roles, item)
		}
	}
	return roles
}

const maxPrincipalName = 256

// ParseRoles parses a comma-separated list of roles ("approver,auditor").
// Spaces around names are ignored; an empty item, an unknown role or a role
// named twice is an error that lists the valid roles.
func ParseRoles(s string) ([]Role, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no roles given (roles: %s)", rolesList)
	}
	var roles []Role
	for item := range strings.SplitSeq(s, ",") {
		r := Role(strings.TrimSpace(item))
		if err := checkRole(r, roles); err != nil {
			return nil, err
		}
		roles = append(roles, r)
	}
	return roles, nil
}

// checkRole validates r as the next role after seen.
func checkRole(r Role, seen []Role) error {
	switch {
	case r == "":
		return fmt.Errorf("empty role name (roles: %s)", rolesList)
	case !r.Valid():
		return fmt.Errorf("unknown role %s (roles: %s)", quote(string(r)), rolesList)
	case slices.Contains(seen, r):
		return fmt.Errorf("role %s is listed twice", r)
	}
	return nil
}

// MaxNameLen bounds a token name.
const MaxNameLen = 64

// CheckName reports whether name can name a token: 1 to 64 ASCII letters,
// digits and ". - _ @", starting with a letter or a digit. Names appear in
// logs, audit events and approval votes, so nothing that could be mistaken
// for something else there (spaces, quotes, control characters, look-alike
// Unicode letters) is allowed.
func CheckName(name string) error {
	if name == "" {
		return errors.New("token name is empty")
	}
	return checkIdent("token name", name, MaxNameLen)
}

// checkIdent is CheckName's rule for what a name may hold, for the names
// of what, of at most limit bytes.
func checkIdent(what, name string, limit int) error {
	if len(name) > limit {
		return fmt.Errorf("%s is %d bytes long; the limit is %d", what, len(name), limit)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if i == 0 && !alnum {
			return fmt.Errorf("%s %s must start with a letter or a digit", what, quote(name))
		}
		if !alnum && c != '.' && c != '-' && c != '_' && c != '@' {
			return fmt.Errorf("%s %s may hold only letters, digits and . - _ @", what, quote(name))
		}
	}
	return nil
}

// Prefix starts every token Create makes, so that a token is recognisable
// in a leaked file or log (and secret scanners can look for it).
const Prefix = "gk_"

// tokenBytes is how much randomness a token carries.
const tokenBytes = 32

// newToken reads 32 bytes from random and returns the token (Prefix and
// base64url without padding: URL-safe, 46 characters) and its hash.
func newToken(random io.Reader) (string, [sha256.Size]byte, error) {
	var b [tokenBytes]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return "", [sha256.Size]byte{}, fmt.Errorf("generating a token: %w", err)
	}
	tok := Prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return tok, sha256.Sum256([]byte(tok)), nil
}

// quote quotes s for a message, cut to 40 bytes: names and keys come from a
// file someone else may have written (DESIGN §3: never echo whole untrusted
// inputs).
func quote(s string) string { return termtext.Quote(s, 40) }
