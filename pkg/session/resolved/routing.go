package resolved

import (
	"slices"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/session/response"
)

// Mismatch is a call aimed at a host while the session recently and
// explicitly referenced resources running on it (seed 000 Invariant 7,
// Appendix A Failure Mode 5): the file or command would run on the host's
// filesystem, not inside the container the user meant.
type Mismatch struct {
	TargetHost       string   // the target as the call named it
	MoreSpecific     []string // the children's names (their ids when unnamed), in MoreSpecificIDs' order
	MoreSpecificIDs  []string // the children's canonical ids, sorted
	TargetResourceID string   // the child to retry with: the most recently explicitly accessed (ties: smallest id)
	TargetKind       string   // the host resource's kind, "host" when it is not registered (metric label)
	ChildKind        string   // TargetResourceID's kind (metric label)
}

// CheckRouting reports whether target names a host with children that
// were explicitly accessed within ExplicitWindow. target is a host when it
// equals a child's host_uid or host_name, or resolves (by id, name or alias)
// to a resource whose id, provider_uid, name or an alias is a child's
// host_uid or host_name. Only explicit access counts, never the LRU clock,
// so bulk discovery never poisons routing (P-26, P-27).
//
// When the host resource itself was explicitly accessed after its
// most recent child, the user's latest intent is the host and the call is
// fine (strictly after: within one instant the child, the safer reading,
// wins); otherwise a mention of @child would block the host for the whole
// window, and blocks never wear down.
//
// nil is the allow path, which does not allocate. CheckRouting does not
// renew any resource's LastAccessed.
func (c *Context) CheckRouting(target string, now time.Time) *Mismatch {
	c.advance(now)
	if len(c.byHost) == 0 || target == "" {
		return nil
	}
	host := c.find(target)
	c.epoch++
	var best *entry
	n := c.visit(target, host, &best)
	if host != nil {
		r := &host.res
		n += c.visit(r.ID, host, &best)
		n += c.visit(r.Reg.ProviderUID, host, &best)
		n += c.visit(r.Reg.Name, host, &best)
		for _, a := range r.Reg.Aliases {
			n += c.visit(a, host, &best)
		}
		if n > 0 && host.explicit && host.res.ExplicitlyAccessed.After(best.res.ExplicitlyAccessed) {
			return nil
		}
	}
	if n == 0 {
		return nil
	}
	m := &Mismatch{
		TargetHost:       target,
		TargetResourceID: best.res.ID,
		TargetKind:       "host",
		ChildKind:        best.res.Reg.Kind,
	}
	if host != nil {
		m.TargetKind = host.res.Reg.Kind
	}
	// A second pass, now that there is something to report, collects them.
	children := make([]*entry, 0, n)
	c.epoch++
	collect := func(key string) {
		for l := c.byHost[key]; l != nil; l = l.next {
			if e := l.owner; e.mark != c.epoch && e != host && c.recentlyExplicit(e) {
				e.mark = c.epoch
				children = append(children, e)
			}
		}
	}
	collect(target)
	if host != nil {
		collect(host.res.ID)
		collect(host.res.Reg.ProviderUID)
		collect(host.res.Reg.Name)
		for _, a := range host.res.Reg.Aliases {
			collect(a)
		}
	}
	slices.SortFunc(children, func(a, b *entry) int { return strings.Compare(a.res.ID, b.res.ID) })
	m.MoreSpecific = make([]string, len(children))
	m.MoreSpecificIDs = make([]string, len(children))
	for i, e := range children {
		m.MoreSpecificIDs[i] = e.res.ID
		m.MoreSpecific[i] = e.res.Reg.Name
		if m.MoreSpecific[i] == "" {
			m.MoreSpecific[i] = e.res.ID
		}
	}
	return m
}

// visit counts the explicitly accessed children posted under key that this
// check has not seen yet, keeping the most recent one in best.
func (c *Context) visit(key string, host *entry, best **entry) int {
	if key == "" {
		return 0
	}
	n := 0
	for l := c.byHost[key]; l != nil; l = l.next {
		e := l.owner
		if e.mark == c.epoch || e == host {
			continue
		}
		e.mark = c.epoch
		if !c.recentlyExplicit(e) {
			continue
		}
		n++
		if b := *best; b == nil || e.res.ExplicitlyAccessed.After(b.res.ExplicitlyAccessed) ||
			(e.res.ExplicitlyAccessed.Equal(b.res.ExplicitlyAccessed) && e.res.ID < b.res.ID) {
			*best = e
		}
	}
	return n
}

func (c *Context) recentlyExplicit(e *entry) bool {
	return e.explicit && c.now.Sub(e.res.ExplicitlyAccessed) <= c.cfg.ExplicitWindow
}

// Response is the ROUTING_MISMATCH block (seed 000 Invariant 7 Error
// Response, P-23, P-24): blocked, auto-recoverable, naming the child to
// retry with.
func (m *Mismatch) Response() response.ToolResponse {
	msg := "target_host '" + m.TargetHost + "' is a host, but you recently referenced more specific resources on it: [" +
		strings.Join(m.MoreSpecific, ", ") + "]."
	return response.Blocked(response.RoutingMismatch, msg, map[string]any{
		"target_host":                m.TargetHost,
		"more_specific_resources":    m.MoreSpecific,
		"more_specific_resource_ids": m.MoreSpecificIDs,
		"target_resource_id":         m.TargetResourceID,
		"recovery_hint":              "Retry with target_resource_id='" + m.TargetResourceID + "'",
		"auto_recoverable":           true,
	})
}
