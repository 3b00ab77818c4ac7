package auditd

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/termtext"
	"github.com/govkit/govkit/pkg/token"
)

// The trust boundary (DESIGN §11): what a caller may claim about itself and
// about the world comes from its credential, never from its request body.
// Before issue 13 an agent token could assert principal.roles [dba] and
// turn a deny into an allow, send tags [staging] for a production database,
// post events as another agent, and re-post another agent's event_id to
// read it back.

// callerOf is the record of who made a request, for the hashed body of
// every event it causes: a token's name and API roles. Local mode has no
// credentials, so no roles: only the name the X-Govkit-User header gave
// (DESIGN §11), or "anonymous" without one.
func (s *Server) callerOf(id token.Identity) *audit.Caller {
	if s.cfg.Tokens == nil {
		return &audit.Caller{Name: cmp.Or(id.Name, "anonymous")}
	}
	return &audit.Caller{Name: id.Name, Roles: roleNames(id.Roles)}
}

// auditdCaller writes auditd's own bookkeeping that no request caused
// (expiry by the sweeper).
var auditdCaller = &audit.Caller{Name: expiryActor}

// actsForOthers reports whether id may name the principal, agent and tags a
// request is for: a gateway token, which authenticated the end user itself.
func actsForOthers(id token.Identity) bool { return id.Has(token.Gateway) }

// principalFor returns the policy principal and agent of a request by id
// that names asserted and agent (either may be empty: "myself"). A gateway
// token's assertions stand; every other caller acts for its token's
// principal (in local mode: the X-Govkit-User name, with no roles), and a
// request naming someone else, other roles or another agent is refused with
// 403 principal_not_allowed.
func (s *Server) principalFor(id token.Identity, asserted policy.RequestPrincipal, agent string) (policy.RequestPrincipal, string, error) {
	if actsForOthers(id) {
		p := asserted
		if p.UserID == "" && len(p.Roles) == 0 && p.Service == "" {
			own := id.ActsFor()
			p = policy.RequestPrincipal{UserID: own.UserID, Roles: own.Roles, Service: own.Service}
		}
		if agent == "" {
			agent = id.Name
		}
		return p, agent, nil
	}
	var own token.Principal
	if s.cfg.Tokens == nil {
		// Local mode: no credential, so no roles; a request without the
		// header names its user itself (there is nobody to contradict).
		own = token.Principal{UserID: id.Name}
		if own.UserID == "" {
			own.UserID = asserted.UserID
		}
	} else {
		own = id.ActsFor()
	}
	switch {
	case asserted.UserID != "" && asserted.UserID != own.UserID:
		return policy.RequestPrincipal{}, "", notAllowed(id, "principal.user_id %q: the token acts for %q", termtext.Truncate(asserted.UserID, 64), own.UserID)
	case len(asserted.Roles) > 0 && !sameSet(asserted.Roles, own.Roles):
		return policy.RequestPrincipal{}, "", notAllowed(id, "principal.roles [%s]: the token's principal has %s", strings.Join(truncateAll(asserted.Roles), ", "), rolesText(own.Roles))
	case asserted.Service != "" && asserted.Service != own.Service:
		return policy.RequestPrincipal{}, "", notAllowed(id, "principal.service %q: the token's principal has %s", termtext.Truncate(asserted.Service, 64), orNone(own.Service))
	case agent != "" && id.Name != "" && agent != id.Name:
		return policy.RequestPrincipal{}, "", notAllowed(id, "agent %q: requests are recorded as the token's own name, %q", termtext.Truncate(agent, 64), id.Name)
	}
	if agent == "" {
		agent = id.Name
	}
	return policy.RequestPrincipal{UserID: own.UserID, Roles: own.Roles, Service: own.Service}, agent, nil
}

func notAllowed(id token.Identity, format string, args ...any) error {
	who := id.Name
	if who == "" {
		who = "the caller"
	}
	return refuse(Forbidden, govapi.CodePrincipalNotAllowed,
		"%s may not assert "+format+" (only a token with the gateway role may act for others; give the token a principal with auditd token create --principal-user/--principal-roles)",
		append([]any{who}, args...)...)
}

// tagsFor returns the tags to decide on a resource with, enforcing that the
// infra file is authoritative (DESIGN §11): tags named in a request are
// refused for a resource the infra file lists, and accepted for one it does
// not list only from a gateway token.
func (s *Server) tagsFor(id token.Identity, g *governance, typ, name string, given []string) (tags []string, note string, err error) {
	if given != nil {
		if g.Infra != nil {
			if _, listed := g.Infra.Lookup(typ, name); listed {
				return nil, "", refuse(Forbidden, govapi.CodeTagsNotAllowed,
					"resource %s:%s is listed in the infra file %s, which is authoritative for its tags: remove tags from the request",
					termtext.Truncate(typ, 64), termtext.Truncate(name, 64), g.InfraFile)
			}
		}
		if !actsForOthers(id) {
			where := "no infra file is loaded (start auditd with --infra FILE)"
			if g.Infra != nil {
				where = "it is not in the infra file " + g.InfraFile
			}
			return nil, "", refuse(Forbidden, govapi.CodeTagsNotAllowed,
				"tags for resource %s:%s are accepted only from a gateway token, and %s: add the resource and its tags to the infra file, or remove tags from the request",
				termtext.Truncate(typ, 64), termtext.Truncate(name, 64), where)
		}
	}
	tags, note = g.tagsFor(typ, name, given)
	return tags, note, nil
}

// serverEventTypes are recorded by auditd alone: a posted one could claim a
// decision no policy gave, an approval no approver gave, or an incident no
// watcher raised (a critical incident makes govbot exit 2).
var serverEventTypes = []string{audit.TypePolicyDecision, audit.TypeIncident, "checkpoint"}

// reservedEventType reports whether only auditd may record events of type t:
// the decisions, approval changes, incidents and checkpoints above, and
// anything named approval_*, auditd_* or checkpoint_*, now or later.
func reservedEventType(t string) bool {
	return slices.Contains(serverEventTypes, t) ||
		strings.HasPrefix(t, "approval_") || strings.HasPrefix(t, "auditd_") || strings.HasPrefix(t, "checkpoint_")
}

// bindEvent makes a posted event say who wrote it (DESIGN §11): the caller
// from the credential, the agent and principal from the token unless a
// gateway names them, and, for an event citing an approval, the hash of the
// action it records (computed here, before any redaction, so it is the
// hash of what actually ran).
func (s *Server) bindEvent(id token.Identity, ev *audit.Event) error {
	if reservedEventType(ev.EventType) {
		how := ""
		switch {
		case ev.EventType == audit.TypePolicyDecision:
			how = "; ask for a decision with POST /api/v1/decisions"
		case ev.EventType == audit.TypeIncident:
			how = "; report incidents with POST /api/v1/incidents (roles auditor, admin or gateway)"
		case strings.HasPrefix(ev.EventType, "approval_"):
			how = "; request approvals with POST /v1/approvals"
		}
		return refuse(Invalid, govapi.CodeReservedEventType, "event_type %q is recorded by auditd itself%s", ev.EventType, how)
	}
	var asserted policy.RequestPrincipal
	if ev.Principal != nil {
		asserted = policy.RequestPrincipal{UserID: ev.Principal.UserID, Roles: ev.Principal.Roles}
	}
	p, agent, err := s.principalFor(id, asserted, ev.Agent)
	if err != nil {
		return err
	}
	ev.Agent = agent
	if p.UserID != "" || len(p.Roles) > 0 {
		ev.Principal = &audit.Principal{UserID: p.UserID, Roles: p.Roles}
	} else {
		ev.Principal = nil
	}
	ev.Caller = s.callerOf(id)
	ev.ActionHash = eventActionHash(*ev)
	return nil
}

// eventActionHash is approval.ActionHash of the action ev records, for an
// event that cites an approval; "" otherwise.
func eventActionHash(ev audit.Event) string {
	if ev.ApprovalID == "" {
		return ""
	}
	var res audit.Resource
	if ev.Resource != nil {
		res = *ev.Resource
	}
	var tool, raw string
	if ev.Tool != nil {
		tool, raw = ev.Tool.Name, ev.Tool.RawCommand
	}
	return approval.ActionHash(res, ev.ActionClass, tool, raw)
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func rolesText(roles []string) string {
	if len(roles) == 0 {
		return "no roles"
	}
	return "[" + strings.Join(roles, ", ") + "]"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

func truncateAll(ss []string) []string {
	out := make([]string, 0, min(len(ss), 8))
	for i, s := range ss {
		if i == 8 {
			out = append(out, "…")
			break
		}
		out = append(out, termtext.Truncate(s, 64))
	}
	return out
}
