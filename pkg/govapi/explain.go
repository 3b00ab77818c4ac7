package govapi

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
)

// ExplainQuery is the hypothetical request of GET PathExplain (seed 003
// "Hypothetical check request parameters", plus service, the counts of
// govexplain's --service, --rows and --pods, and the session whose
// guardrails to check). Tags nil means "from
// auditd's infra file"; an empty list means "no tags". Counts make it the
// blast-radius check after execution.
type ExplainQuery struct {
	ResourceType, ResourceName string
	Action                     string
	Tags                       []string
	UserID                     string
	Roles                      []string
	Service                    string
	RowsAffected, PodsAffected int
	// SessionID evaluates the policy file's guardrails against that
	// session's recorded history, as a decision for it would be now;
	// without it the trace says they were not evaluated.
	SessionID string
	// AsCaller asks for the principal a decision by this caller would
	// get (the token's, or in local mode the X-Govkit-User name), in
	// place of UserID, Roles and Service: gate check predicts gate run's
	// decision with it.
	AsCaller bool
}

// Values is q as a query string.
func (q ExplainQuery) Values() url.Values {
	v := url.Values{"resource_type": {q.ResourceType}, "resource_name": {q.ResourceName}, "action": {q.Action}}
	if q.Tags != nil {
		v.Set("tags", strings.Join(q.Tags, ","))
	}
	if q.UserID != "" {
		v.Set("user_id", q.UserID)
	}
	if len(q.Roles) > 0 {
		v.Set("role", strings.Join(q.Roles, ","))
	}
	if q.Service != "" {
		v.Set("service", q.Service)
	}
	if q.RowsAffected > 0 {
		v.Set("rows_affected", strconv.Itoa(q.RowsAffected))
	}
	if q.PodsAffected > 0 {
		v.Set("pods_affected", strconv.Itoa(q.PodsAffected))
	}
	if q.SessionID != "" {
		v.Set("session_id", q.SessionID)
	}
	if q.AsCaller {
		v.Set("as_caller", "true")
	}
	return v
}

// ParseExplainQuery reads an ExplainQuery strictly: unknown or repeated
// parameters, a missing resource_type, resource_name or action, and counts
// that are not integers >= 0 are errors naming them. auditd checks the
// names themselves when it evaluates.
func ParseExplainQuery(v url.Values) (ExplainQuery, error) {
	err := CheckParams(v, "resource_type", "resource_name", "action", "tags", "user_id", "role", "service", "rows_affected", "pods_affected", "session_id", "as_caller")
	if err != nil {
		return ExplainQuery{}, err
	}
	for _, name := range []string{"resource_type", "resource_name", "action"} {
		if v.Get(name) == "" {
			return ExplainQuery{}, errors.New("query parameter " + name + " is required (resource_type, resource_name and action name the request)")
		}
	}
	q := ExplainQuery{
		ResourceType: v.Get("resource_type"), ResourceName: v.Get("resource_name"), Action: v.Get("action"),
		UserID: v.Get("user_id"), Service: v.Get("service"), Roles: commaList(v.Get("role")),
		SessionID: v.Get("session_id"),
	}
	if v.Has("tags") {
		q.Tags = commaList(v.Get("tags"))
	}
	if v.Has("as_caller") {
		if q.AsCaller, err = strconv.ParseBool(v.Get("as_caller")); err != nil {
			return ExplainQuery{}, fmt.Errorf("as_caller %q is not true or false", termtext.Truncate(v.Get("as_caller"), 40))
		}
		if q.AsCaller && (q.UserID != "" || len(q.Roles) > 0 || q.Service != "") {
			return ExplainQuery{}, errors.New("as_caller=true takes the principal from the credential: leave out user_id, role and service")
		}
	}
	for _, c := range [...]struct {
		name string
		n    *int
	}{{"rows_affected", &q.RowsAffected}, {"pods_affected", &q.PodsAffected}} {
		s := v.Get(c.name)
		if s == "" {
			continue
		}
		if *c.n, err = strconv.Atoi(s); err != nil || *c.n < 0 {
			return ExplainQuery{}, fmt.Errorf("%s %q is not a count (an integer >= 0)", c.name, termtext.Truncate(s, 40))
		}
	}
	return q, nil
}

// commaList splits a comma-separated parameter, trimming spaces around
// each name; "" is the empty list.
func commaList(v string) []string {
	if v == "" {
		return []string{}
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
