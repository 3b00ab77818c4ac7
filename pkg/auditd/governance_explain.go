package auditd

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
)

// Query parameters of GET /api/v1/governance/explain (seed 003
// "Hypothetical check request parameters", plus service and the counts
// that govexplain's --service, --rows and --pods take).
var explainParams = map[string]bool{
	"resource_type": true, "resource_name": true, "action": true, "tags": true, "user_id": true,
	"role": true, "service": true, "rows_affected": true, "pods_affected": true,
}

// explainHypothetical is GET /api/v1/governance/explain: what would the
// policy in force decide? It evaluates exactly as POST /api/v1/decisions
// would — same engine, infra file and clock, so the answer predicts the
// decision — and records nothing: no event, no approval (H-59).
func (s *Server) explainHypothetical(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r.URL.RawQuery)
	var in policy.Request
	var post bool
	if err == nil {
		in, post, err = parseExplainQuery(q)
	}
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	g, ok := s.policyInForce(w)
	if !ok {
		return
	}
	tags, note := g.tagsFor(in.Resource.Type, in.Resource.Name, in.Resource.Tags)
	in.Resource.Tags = tags
	// Counts are only known after execution: like govexplain --rows, that
	// is the blast-radius check (seed 003 "Guardrails").
	trace := s.evaluate(g, in, post)
	s.writeGov(w, http.StatusOK, govapi.Explanation{SchemaVersion: audit.SchemaVersion, DecisionTrace: trace, Note: note})
}

// parseExplainQuery reads the hypothetical request strictly: unknown or
// repeated parameters and bad values are errors naming them. tags absent
// leaves Resource.Tags nil (the infra file's); tags present but empty means
// no tags. post reports known counts.
func parseExplainQuery(q url.Values) (req policy.Request, post bool, err error) {
	if err := checkParams(q, explainParams); err != nil {
		return req, false, err
	}
	for _, name := range []string{"resource_type", "resource_name", "action"} {
		if q.Get(name) == "" {
			return req, false, errors.New("query parameter " + name + " is required (resource_type, resource_name and action name the request)")
		}
	}
	if err := checkName("resource_type", q.Get("resource_type"), true); err != nil {
		return req, false, err
	}
	if err := checkName("resource_name", q.Get("resource_name"), true); err != nil {
		return req, false, err
	}
	if err := checkAction("action", q.Get("action")); err != nil {
		return req, false, err
	}
	for _, name := range []string{"user_id", "service"} {
		if err := checkName(name, q.Get(name), false); err != nil {
			return req, false, err
		}
	}
	req = policy.Request{
		Principal: policy.RequestPrincipal{UserID: q.Get("user_id"), Service: q.Get("service")},
		Resource:  policy.RequestResource{Type: q.Get("resource_type"), Name: q.Get("resource_name")},
		Action:    policy.Action(q.Get("action")),
	}
	if q.Has("tags") {
		if req.Resource.Tags, err = commaList("tags", q.Get("tags")); err != nil {
			return req, false, err
		}
	}
	if req.Principal.Roles, err = commaList("role", q.Get("role")); err != nil {
		return req, false, err
	}
	for _, c := range []struct {
		name string
		n    *int
	}{{"rows_affected", &req.Context.RowsAffected}, {"pods_affected", &req.Context.PodsAffected}} {
		v := q.Get(c.name)
		if v == "" {
			continue
		}
		if *c.n, err = strconv.Atoi(v); err != nil || *c.n < 0 {
			return req, false, badField(c.name, "%q is not a count (an integer >= 0)", truncate(v, 40))
		}
	}
	return req, req.Context.RowsAffected > 0 || req.Context.PodsAffected > 0, nil
}

// commaList splits a comma-separated parameter into names (spaces around
// each trimmed); "" is the empty list.
func commaList(field, v string) ([]string, error) {
	if v == "" {
		return []string{}, nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if err := checkNames(field, parts); err != nil {
		return nil, err
	}
	return parts, nil
}

// explainEvent is GET /api/v1/governance/events/{id}/explain: the trace
// recorded with a policy_decision event, as it was then. Nothing is
// evaluated again, so a policy changed or reloaded since cannot change the
// answer (H-58; seed 003 "Retrospective").
func (s *Server) explainEvent(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.waitParam(w, r, map[string]bool{}); !ok {
		return
	}
	id := r.PathValue("id")
	rec, ok, err := s.st.Get(r.Context(), id)
	switch {
	case err != nil:
		s.fail(w, http.StatusInternalServerError, "reading the event: "+err.Error())
		return
	case !ok:
		s.fail(w, http.StatusNotFound, "no event with event_id "+strconv.Quote(truncate(id, 100)))
		return
	}
	if _, err := storedJSON(rec); err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	ex, _, err := explanationOf(rec.Body)
	var notDecision *notDecisionError
	switch {
	case errors.As(err, &notDecision):
		s.failCode(w, http.StatusUnprocessableEntity, "not_a_decision", err.Error())
	case err != nil:
		s.fail(w, http.StatusInternalServerError, err.Error())
	default:
		s.writeGov(w, http.StatusOK, ex)
	}
}
