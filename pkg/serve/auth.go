package serve

import (
	"context"
	"net/http"

	"github.com/govkit/govkit/pkg/token"
)

// Authenticator resolves bearer tokens: a *token.Set, the tokens file
// auditd reads too (auditd token create).
type Authenticator interface {
	Authenticate(bearer string) (token.Identity, bool)
}

type callerKey struct{}

// caller is who made the request: its token's identity, or nobody in local
// mode, where whoever can reach the loopback port or the 0600 socket is
// trusted alike.
func caller(ctx context.Context) (token.Identity, bool) {
	id, ok := ctx.Value(callerKey{}).(token.Identity)
	return id, ok
}

// authenticate wraps the API: with Options.Tokens every route but /health
// needs a bearer token (401 without a valid one). Who a caller is comes
// from the token only, never from the request (DESIGN §11).
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.o.Tokens == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		bearer := token.Bearer(r.Header.Get("Authorization"))
		id, ok := s.o.Tokens.Authenticate(bearer)
		if bearer == "" || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gate serve"`)
			msg := "no bearer token: pass --token or set GOVKIT_TOKEN (auditd token create makes one)"
			if bearer != "" {
				msg = "the bearer token is not in gate serve's --tokens file (or was revoked)"
			}
			writeError(w, http.StatusUnauthorized, "unauthenticated", msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, id)))
	})
}

// seesAll is a caller who reads every conversation: admin and auditor
// tokens (Has counts an admin as every role but gateway; local mode has no
// callers, and everyone sees everything).
func seesAll(id token.Identity) bool { return id.Has(token.Auditor) }

// may says whether the request's caller may use the conversation: its
// owner, an admin, or an auditor for reading. Anyone else is told the
// conversation does not exist, so ids cannot be probed.
func may(r *http.Request, owner string) bool {
	id, ok := caller(r.Context())
	switch {
	case !ok, id.Name == owner, id.Has(token.Admin):
		return true
	case id.Has(token.Auditor):
		return r.Method == http.MethodGet
	}
	return false
}

// owner is the name a new conversation is stored under.
func owner(ctx context.Context) string {
	id, _ := caller(ctx)
	return id.Name
}
