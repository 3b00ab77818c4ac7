package auditd

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/token"
)

// Authenticator resolves bearer tokens (a *token.Set in auditd).
type Authenticator interface {
	Authenticate(bearer string) (token.Identity, bool)
}

type identityKey struct{}

// identity is who made the request, set by authorize. Name is empty in
// local mode when no X-Govkit-User header was sent.
func identity(r *http.Request) token.Identity {
	id, _ := r.Context().Value(identityKey{}).(token.Identity)
	return id
}

// localIdentity is the caller in local mode: whoever the header names, with
// every role (anyone who can reach loopback could open the file anyway).
func localIdentity(r *http.Request) (token.Identity, error) {
	name := r.Header.Get(govapi.UserHeader)
	if len(name) > 256 || strings.ContainsFunc(name, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		return token.Identity{}, fmt.Errorf("the %s header is not a user name (one line, at most 256 bytes)", govapi.UserHeader)
	}
	return token.Identity{Name: name, Roles: []token.Role{token.Admin}}, nil
}

// authorize wraps h: with a tokens file the request needs a bearer token
// of a name with one of roles (401 without a valid token, 403 with the
// wrong roles); in local mode it needs nothing. h reads the caller with
// identity(r).
func (s *Server) authorize(h http.HandlerFunc, roles ...token.Role) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var id token.Identity
		if s.cfg.Tokens == nil {
			var err error
			if id, err = localIdentity(r); err != nil {
				s.answerError(w, badRequest(err))
				return
			}
		} else {
			bearer := token.Bearer(r.Header.Get("Authorization"))
			if bearer == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="auditd"`)
				s.answerError(w, refuse(Unauthenticated, "", "no bearer token: pass --token or set GOVKIT_TOKEN (auditd token create makes one)"))
				return
			}
			var ok bool
			if id, ok = s.cfg.Tokens.Authenticate(bearer); !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="auditd", error="invalid_token"`)
				s.answerError(w, refuse(Unauthenticated, "", "invalid token: it is not in auditd's tokens file (revoked, or mistyped)"))
				return
			}
		}
		allowed := false
		for _, role := range roles {
			allowed = allowed || id.Has(role)
		}
		if !allowed {
			s.answerError(w, refuse(Forbidden, "", "%s may not %s %s: that needs the role %s (it has %s)",
				id.Name, r.Method, r.URL.Path, joinRoles(roles, " or "), joinRoles(id.Roles, ", ")))
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	}
}

func joinRoles(roles []token.Role, sep string) string {
	if len(roles) == 0 {
		return "no role"
	}
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, sep)
}
