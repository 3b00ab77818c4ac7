package auditd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/token"
)

// MaxWait bounds a long-poll's wait= parameter: under the 30 s timeout of
// pkg/client and of most proxies.
const MaxWait = 25 * time.Second

// ApprovalList is the body of GET /v1/approvals and /v1/approvals/pending.
// NextAfterSeq is the cursor for following changes: the audit seq of the
// last change listed, or without after_seq the newest change overall.
type ApprovalList struct {
	SchemaVersion int                `json:"schema_version"`
	Approvals     []approval.Request `json:"approvals"`
	NextAfterSeq  int64              `json:"next_after_seq"`
	HasMore       bool               `json:"has_more"`
}

// DecisionInput is the body of POST /v1/approvals/{id}/approve and /deny.
// The approver is the caller (DESIGN §7), never a field.
type DecisionInput struct {
	Reason string `json:"reason,omitempty"`
}

func (s *Server) postApproval(w http.ResponseWriter, r *http.Request) {
	var in govapi.ApprovalInput
	if !s.decodeBody(w, r, &in, false) {
		return
	}
	req, err := s.RequestApproval(r.Context(), identity(r), in)
	if err != nil {
		s.answerError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/approvals/"+url.PathEscape(req.ID))
	s.writeApproval(w, http.StatusCreated, req)
}

// consumeApproval is POST /v1/approvals/{id}/consume (DESIGN §11).
func (s *Server) consumeApproval(w http.ResponseWriter, r *http.Request) {
	var in govapi.ConsumeInput
	if !s.decodeBody(w, r, &in, false) {
		return
	}
	req, err := s.Consume(r.Context(), identity(r), r.PathValue("id"), in.ActionHash)
	if err != nil {
		s.answerError(w, err)
		return
	}
	s.writeApproval(w, http.StatusOK, req)
}

// cancelApproval is POST /v1/approvals/{id}/cancel: the requester (or an
// admin) withdraws a request.
func (s *Server) cancelApproval(w http.ResponseWriter, r *http.Request) {
	if !s.decodeBody(w, r, &struct{}{}, true) {
		return
	}
	who, ok := s.actor(w, r)
	if !ok {
		return
	}
	id := identity(r)
	req, err := s.ap.cancel(r.Context(), r.PathValue("id"), who, s.cfg.Tokens != nil && id.Has(token.Admin), s.callerOf(id))
	if err != nil {
		s.answerError(w, err)
		return
	}
	s.writeApproval(w, http.StatusOK, req)
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) { s.decide(w, r, approval.Approve) }
func (s *Server) deny(w http.ResponseWriter, r *http.Request)    { s.decide(w, r, approval.Deny) }

func (s *Server) decide(w http.ResponseWriter, r *http.Request, d approval.Decision) {
	var in DecisionInput
	if !s.decodeBody(w, r, &in, true) {
		return
	}
	who, ok := s.actor(w, r)
	if !ok {
		return
	}
	req, err := s.ap.decide(r.Context(), r.PathValue("id"), who, d, in.Reason, s.callerOf(identity(r)))
	if err != nil {
		s.approvalError(w, err)
		return
	}
	s.writeApproval(w, http.StatusOK, req)
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	wait, ok := s.waitParam(w, r, map[string]bool{"wait": true})
	if !ok {
		return
	}
	// Ownership first: an agent must not be held for another's request.
	row, err := s.ap.get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.approvalError(w, err)
		return
	}
	if id := identity(r); ownOnly(id) && row.Request.RequestedBy != id.Name {
		s.fail(w, http.StatusForbidden, fmt.Sprintf("%s may read only its own approval requests (role agent)", id.Name))
		return
	}
	if wait > 0 {
		if row, err = s.ap.wait(r.Context(), row.Request.ID, wait); err != nil {
			s.approvalError(w, err)
			return
		}
	}
	s.writeApproval(w, http.StatusOK, row.Request)
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	wait, ok := s.waitParam(w, r, map[string]bool{"wait": true, "status": true, "after_seq": true, "limit": true})
	if !ok {
		return
	}
	q, _ := parseQuery(r.URL.RawQuery) // checked by waitParam
	f := store.ApprovalFilter{Status: approval.Status(q.Get("status"))}
	if f.Status != "" && !f.Status.Valid() {
		s.fail(w, http.StatusBadRequest, fmt.Sprintf("status=%q is not pending, approved, denied, expired, cancelled or consumed", truncate(q.Get("status"), 40)))
		return
	}
	var err error
	if f.AfterSeq, f.Limit, err = cursorParams(q); err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	// Without a cursor: the newest changes, and a cursor at the newest
	// change overall, from which a watcher follows.
	f.Newest = f.AfterSeq == 0
	s.writeList(w, r, f, wait)
}

func (s *Server) pendingApprovals(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.waitParam(w, r, map[string]bool{}); !ok {
		return
	}
	s.writeList(w, r, store.ApprovalFilter{Status: approval.Pending, ByCreation: true, Limit: store.MaxLimit}, 0)
}

func (s *Server) writeList(w http.ResponseWriter, r *http.Request, f store.ApprovalFilter, wait time.Duration) {
	if id := identity(r); ownOnly(id) {
		f.RequestedBy = id.Name
	}
	head, err := s.st.ApprovalsSeq(r.Context())
	if err != nil {
		s.approvalError(w, err)
		return
	}
	rows, err := s.ap.list(r.Context(), f, wait)
	if err != nil {
		s.approvalError(w, err)
		return
	}
	list := ApprovalList{SchemaVersion: audit.SchemaVersion, Approvals: make([]approval.Request, len(rows)), NextAfterSeq: f.AfterSeq}
	for i, row := range rows {
		list.Approvals[i] = row.Request
		list.NextAfterSeq = max(list.NextAfterSeq, row.Seq)
	}
	if f.Newest {
		list.NextAfterSeq = max(list.NextAfterSeq, head)
	}
	list.HasMore = len(rows) == f.Limit && !f.Newest && f.Status != approval.Pending
	b, err := json.Marshal(list)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// ownOnly reports whether id may see only its own requests: an agent that
// is not also an approver, an auditor or a gateway (which waits on the
// requests it opened for others; DESIGN §7, §11).
func ownOnly(id token.Identity) bool {
	return !id.Has(token.Approver) && !id.Has(token.Auditor) && !id.Has(token.Gateway)
}

// actor is the caller's name for a request or a vote; local mode needs the
// X-Govkit-User header for it.
func (s *Server) actor(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := identity(r).Name
	if name == "" {
		s.fail(w, http.StatusBadRequest, "no user name: auditd runs without a tokens file and takes the user from the "+UserHeader+" header (the approvals CLI sends $USER)")
		return "", false
	}
	return name, true
}

// waitParam checks the query parameters against known and reads wait=.
func (s *Server) waitParam(w http.ResponseWriter, r *http.Request, known map[string]bool) (time.Duration, bool) {
	q, err := parseQuery(r.URL.RawQuery)
	if err == nil {
		err = checkParams(q, known)
	}
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return 0, false
	}
	v := q.Get("wait")
	if v == "" {
		return 0, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > MaxWait {
		s.fail(w, http.StatusBadRequest, fmt.Sprintf("wait=%q is not a duration between 0s and %s", truncate(v, 40), MaxWait))
		return 0, false
	}
	return d, true
}

// decodeBody reads one JSON object into v strictly: unknown fields, a
// second value, what audit.CheckRequestJSON refuses (duplicate members,
// invalid UTF-8, integers beyond 2^53, NUL) and bodies over MaxBody are
// refused naming the problem.
// An empty body is allowed when emptyOK.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) bool {
	body, ok := s.readBody(w, r)
	if !ok {
		return false
	}
	if emptyOK && len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	// encoding/json alone would take the last of duplicate members (also
	// ones that differ in case), replace invalid UTF-8 with U+FFFD and
	// round big integers: refused first, as POST /api/events refuses them
	// (issue 13 "Bad input, everywhere").
	if err := audit.CheckRequestJSON(body); err != nil {
		s.fail(w, http.StatusBadRequest, "request body: "+err.Error())
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		s.fail(w, http.StatusBadRequest, "request body: "+err.Error())
		return false
	}
	if dec.More() {
		s.fail(w, http.StatusBadRequest, "request body: more than one JSON value")
		return false
	}
	return true
}

// approvalError answers an error of the approval workflow with its status.
func (s *Server) approvalError(w http.ResponseWriter, err error) { s.answerError(w, err) }

func (s *Server) writeApproval(w http.ResponseWriter, code int, req approval.Request) {
	b, err := json.Marshal(req)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, code, b)
}
