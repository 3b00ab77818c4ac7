package auditd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// Limits on the governance API's input (DESIGN §3 "Bad input": bounded,
// and refused naming the field rather than cut).
const (
	maxGovName     = 256      // names and ids: agent, session_id, trace_id, user_id, roles, resource, tags, tool, source
	maxGovList     = 256      // roles, tags (audit.MaxListLen)
	maxRawCommand  = 64 << 10 // as an approval request's raw_command
	maxReason      = 4 << 10  // as an approval request's reason
	maxIncidentMsg = 8 << 10
	maxDetails     = 64 << 10
	maxEventIDs    = 100
)

// fieldError is an invalid request field (HTTP 400); the message starts
// with the field's name.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + " " + e.msg }

func badField(field, format string, args ...any) error {
	return &fieldError{field, fmt.Sprintf(format, args...)}
}

// checkName accepts an optional (or, with required, non-empty) short
// single-line name without control characters: names end up in terminals,
// Slack messages and logs.
func checkName(field, s string, required bool) error {
	switch {
	case s == "" && required:
		return badField(field, "is required")
	case s == "":
		return nil
	case strings.TrimSpace(s) == "":
		return badField(field, "is blank")
	case len(s) > maxGovName:
		return badField(field, "is %d bytes long; the limit is %d", len(s), maxGovName)
	case strings.ContainsAny(s, "\t\n"):
		return badField(field, "must be one line")
	}
	return checkText(field, s, maxGovName)
}

// checkText accepts valid UTF-8 of at most max bytes without control
// characters other than tab and newline (which could rewrite what a
// terminal shows).
func checkText(field, s string, max int) error {
	if len(s) > max {
		return badField(field, "is %d bytes long; the limit is %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return badField(field, "is not valid UTF-8")
	}
	for i, c := range s {
		if unicode.IsControl(c) && c != '\t' && c != '\n' {
			return badField(field, "has a control character (%U) at byte %d", c, i)
		}
	}
	return nil
}

// checkNames checks a list of names (roles, tags).
func checkNames(field string, list []string) error {
	if len(list) > maxGovList {
		return badField(field, "has %d entries; the limit is %d", len(list), maxGovList)
	}
	for i, s := range list {
		if err := checkName(fmt.Sprintf("%s[%d]", field, i), s, true); err != nil {
			return err
		}
	}
	return nil
}

// checkEventID applies pkg/audit's event_id rule (DecodeEvent): the id
// becomes the event's event_id, so it must be one POST /api/events would
// accept.
func checkEventID(field, id string) error {
	if id == "" {
		return nil
	}
	if len(id) > audit.MaxEventIDLen {
		return badField(field, "is %d bytes long; the limit is %d", len(id), audit.MaxEventIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_.:-", c) >= 0) {
			return badField(field, "%q is not 1 to %d of A-Z a-z 0-9 _ . : -", termtext.Truncate(id, 40), audit.MaxEventIDLen)
		}
	}
	return nil
}

// checkAction accepts the three actions of DESIGN §5 in any case, as the
// policy engine matches them, and lower-cases *a: the trace, the recorded
// decision and its request fingerprint say "read" however the caller spelt
// it (issue 20: "READ" is accepted).
func checkAction(field string, a *string) error {
	if *a == "" {
		return badField(field, "is required: read, write or destructive")
	}
	lower := strings.ToLower(*a)
	if !approval.ValidAction(lower) {
		return badField(field, "%q is not read, write or destructive", termtext.Truncate(*a, 40))
	}
	*a = lower
	return nil
}

// canonicalJSON checks a JSON-valued field: at most max bytes, and
// canonicalizable (the chain stores it in RFC 8785 form; a number beyond
// float64's range or a duplicate member would fail there, after an
// approval was already requested).
func canonicalJSON(field string, raw json.RawMessage, max int, object bool) (json.RawMessage, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if len(raw) > max {
		return nil, badField(field, "is %d bytes long; the limit is %d", len(raw), max)
	}
	if object && raw[0] != '{' {
		return nil, badField(field, "must be a JSON object")
	}
	c, err := audit.CanonicalizeJSON(raw)
	if err != nil {
		return nil, badField(field, "is not I-JSON: %v", err)
	}
	return c, nil
}

// validateDecision checks a decision request completely before anything is
// evaluated or recorded: a bad field must not leave an approval request
// behind.
func validateDecision(in *govapi.DecisionRequest) error {
	if err := checkEventID("event_id", in.EventID); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, v string }{
		{"agent", in.Agent}, {"session_id", in.SessionID}, {"trace_id", in.TraceID},
		{"principal.user_id", in.Principal.UserID}, {"principal.service", in.Principal.Service},
		{"approval_id", in.ApprovalID},
	} {
		if err := checkName(f.name, f.v, false); err != nil {
			return err
		}
	}
	if err := checkNames("principal.roles", in.Principal.Roles); err != nil {
		return err
	}
	if err := checkName("resource.type", in.Resource.Type, true); err != nil {
		return err
	}
	if err := checkName("resource.name", in.Resource.Name, true); err != nil {
		return err
	}
	if err := checkNames("resource.tags", in.Resource.Tags); err != nil {
		return err
	}
	if err := checkAction("action", &in.Action); err != nil {
		return err
	}
	if in.Tool != nil {
		if err := checkName("tool.name", in.Tool.Name, false); err != nil {
			return err
		}
		if err := checkText("tool.raw_command", in.Tool.RawCommand, maxRawCommand); err != nil {
			return err
		}
		p, err := canonicalJSON("tool.parameters", in.Tool.Parameters, audit.MaxJSONField, false)
		if err != nil {
			return err
		}
		in.Tool.Parameters = p
	}
	switch {
	case in.RowsAffected < 0:
		return badField("rows_affected", "is %d; a count is 0 (unknown) or more", in.RowsAffected)
	case in.PodsAffected < 0:
		return badField("pods_affected", "is %d; a count is 0 (unknown) or more", in.PodsAffected)
	}
	if err := checkText("reason", in.Reason, maxReason); err != nil {
		return err
	}
	if in.ApprovalTTL != "" {
		d, err := time.ParseDuration(in.ApprovalTTL)
		if err != nil {
			return badField("approval_ttl", "%q is not a duration such as 15m", termtext.Truncate(in.ApprovalTTL, 40))
		}
		if d < approval.MinTTL || d > approval.MaxTTL {
			return badField("approval_ttl", "%s is not between %s and %s", d, approval.MinTTL, approval.MaxTTL)
		}
	}
	return nil
}

// validateIncident checks an incident (POST /api/v1/incidents) and
// canonicalizes its details.
func validateIncident(in *govapi.IncidentInput) error {
	if err := checkEventID("incident_id", in.IncidentID); err != nil {
		return err
	}
	if in.Type == "" {
		return badField("type", "is required: what was detected, such as chain_tampering (a-z, 0-9, _; at most 64)")
	}
	if len(in.Type) > 64 || strings.IndexFunc(in.Type, func(c rune) bool {
		return !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_')
	}) >= 0 {
		return badField("type", "%q is not 1 to 64 of a-z 0-9 _ (such as chain_tampering)", termtext.Truncate(in.Type, 70))
	}
	switch in.Severity {
	case govapi.SeverityInfo, govapi.SeverityWarning, govapi.SeverityCritical:
	case "":
		return badField("severity", "is required: info, warning or critical")
	default:
		return badField("severity", "%q is not info, warning or critical", termtext.Truncate(in.Severity, 40))
	}
	for _, f := range [...]struct {
		name, v  string
		required bool
	}{{"source", in.Source, true}, {"agent", in.Agent, false}, {"session_id", in.SessionID, false}, {"trace_id", in.TraceID, false}} {
		if err := checkName(f.name, f.v, f.required); err != nil {
			return err
		}
	}
	if strings.TrimSpace(in.Message) == "" {
		return badField("message", "is required: what happened, for the people who read the incident")
	}
	if err := checkText("message", in.Message, maxIncidentMsg); err != nil {
		return err
	}
	if len(in.EventIDs) > maxEventIDs {
		return badField("event_ids", "has %d entries; the limit is %d", len(in.EventIDs), maxEventIDs)
	}
	for i, id := range in.EventIDs {
		if id == "" {
			return badField(fmt.Sprintf("event_ids[%d]", i), "is empty")
		}
		if err := checkEventID(fmt.Sprintf("event_ids[%d]", i), id); err != nil {
			return err
		}
	}
	d, err := canonicalJSON("details", in.Details, maxDetails, true)
	if err != nil {
		return err
	}
	in.Details = d
	return nil
}
