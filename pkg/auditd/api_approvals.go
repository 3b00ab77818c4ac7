package auditd

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/termtext"
	"github.com/govkit/govkit/pkg/token"
)

// The approvals API (DESIGN §7, §11): each endpoint reads its request and
// calls an operation — RequestApproval, Consume (approval_ops.go), Cancel,
// Vote, Approval, Approvals, PendingApprovals — whose errors errorAnswer
// maps.

func (s *Server) postApproval(r *http.Request) (reply, error) {
	var in govapi.ApprovalInput
	if err := decodeBody(r, &in, false); err != nil {
		return reply{}, err
	}
	req, err := s.RequestApproval(r.Context(), identity(r), in)
	if err != nil {
		return reply{}, err
	}
	rep, err := jsonReply(http.StatusCreated, req)
	rep.location = govapi.WithID(govapi.PathApproval, req.ID)
	return rep, err
}

// consumeApproval is POST /v1/approvals/{id}/consume (DESIGN §11).
func (s *Server) consumeApproval(r *http.Request) (reply, error) {
	var in govapi.ConsumeInput
	if err := decodeBody(r, &in, false); err != nil {
		return reply{}, err
	}
	return approvalReply(s.Consume(r.Context(), identity(r), r.PathValue("id"), in.ActionHash))
}

// cancelApproval is POST /v1/approvals/{id}/cancel: the requester (or an
// admin) withdraws a request.
func (s *Server) cancelApproval(r *http.Request) (reply, error) {
	if err := decodeBody(r, &struct{}{}, true); err != nil {
		return reply{}, err
	}
	return approvalReply(s.Cancel(r.Context(), identity(r), r.PathValue("id")))
}

func (s *Server) approve(r *http.Request) (reply, error) { return s.vote(r, approval.Approve) }
func (s *Server) deny(r *http.Request) (reply, error)    { return s.vote(r, approval.Deny) }

func (s *Server) vote(r *http.Request, d approval.Decision) (reply, error) {
	var in govapi.VoteInput
	if err := decodeBody(r, &in, true); err != nil {
		return reply{}, err
	}
	return approvalReply(s.Vote(r.Context(), identity(r), r.PathValue("id"), d, in.Reason))
}

func (s *Server) getApproval(r *http.Request) (reply, error) {
	v, err := query(r)
	if err == nil {
		err = govapi.CheckParams(v, "wait")
	}
	var wait time.Duration
	if err == nil {
		wait, err = govapi.ParseWait(v)
	}
	if err != nil {
		return reply{}, badRequest(err)
	}
	return approvalReply(s.Approval(r.Context(), identity(r), r.PathValue("id"), wait))
}

func (s *Server) listApprovals(r *http.Request) (reply, error) {
	v, err := query(r)
	if err != nil {
		return reply{}, err
	}
	q, err := govapi.ParseApprovalQuery(v)
	if err != nil {
		return reply{}, badRequest(err)
	}
	list, err := s.Approvals(r.Context(), identity(r), q)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, list)
}

func (s *Server) pendingApprovals(r *http.Request) (reply, error) {
	if err := noQuery(r); err != nil {
		return reply{}, err
	}
	list, err := s.PendingApprovals(r.Context(), identity(r))
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, list)
}

func approvalReply(req approval.Request, err error) (reply, error) {
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, req)
}

// Cancel withdraws request approvalID on behalf of caller: its requester,
// or an admin, while it is pending or approved and unused.
func (s *Server) Cancel(ctx context.Context, caller token.Identity, approvalID string) (approval.Request, error) {
	who, err := actor(caller)
	if err != nil {
		return approval.Request{}, err
	}
	return s.ap.cancel(ctx, approvalID, who, s.cfg.Tokens != nil && caller.Has(token.Admin), s.callerOf(caller))
}

// Vote records caller's approve or deny of request approvalID (a deny
// needs a reason) and returns the request after it. The voter is who
// authenticated (DESIGN §7), never a field.
func (s *Server) Vote(ctx context.Context, caller token.Identity, approvalID string, d approval.Decision, reason string) (approval.Request, error) {
	who, err := actor(caller)
	if err != nil {
		return approval.Request{}, err
	}
	return s.ap.decide(ctx, approvalID, who, d, reason, s.callerOf(caller))
}

// Approval returns request approvalID, holding the answer up to wait (at
// most govapi.MaxWait) while it is pending: a long-poll. An agent may read
// only its own requests.
func (s *Server) Approval(ctx context.Context, caller token.Identity, approvalID string, wait time.Duration) (approval.Request, error) {
	// Ownership first: an agent must not be held for another's request.
	row, err := s.ap.get(ctx, approvalID)
	if err != nil {
		return approval.Request{}, err
	}
	if ownOnly(caller) && row.Request.RequestedBy != caller.Name {
		return approval.Request{}, refuse(Forbidden, "", "%s may read only its own approval requests (role agent)", caller.Name)
	}
	if wait > 0 {
		if row, err = s.ap.wait(ctx, row.Request.ID, min(wait, govapi.MaxWait)); err != nil {
			return approval.Request{}, err
		}
	}
	return row.Request, nil
}

// Approvals lists the requests q selects that caller may see (an agent:
// its own), holding the answer up to q.Wait until one changes after
// q.AfterSeq. Without a cursor it lists the newest changes, and its
// cursor is the newest change overall, from which a watcher follows.
func (s *Server) Approvals(ctx context.Context, caller token.Identity, q govapi.ApprovalQuery) (govapi.ApprovalList, error) {
	f := store.ApprovalFilter{Status: q.Status, AfterSeq: q.AfterSeq, Limit: q.Limit, Newest: q.AfterSeq == 0}
	if f.Limit == 0 {
		f.Limit = govapi.DefaultLimit
	}
	return s.approvalList(ctx, caller, f, min(q.Wait, govapi.MaxWait))
}

// PendingApprovals lists the pending requests caller may see, oldest
// first.
func (s *Server) PendingApprovals(ctx context.Context, caller token.Identity) (govapi.ApprovalList, error) {
	return s.approvalList(ctx, caller, store.ApprovalFilter{Status: approval.Pending, ByCreation: true, Limit: govapi.MaxLimit}, 0)
}

func (s *Server) approvalList(ctx context.Context, caller token.Identity, f store.ApprovalFilter, wait time.Duration) (govapi.ApprovalList, error) {
	if f.Status != "" && !f.Status.Valid() {
		return govapi.ApprovalList{}, badField("status", "%q is not an approval status", termtext.Truncate(string(f.Status), 40))
	}
	if ownOnly(caller) {
		f.RequestedBy = caller.Name
	}
	head, err := s.st.ApprovalsSeq(ctx)
	if err != nil {
		return govapi.ApprovalList{}, err
	}
	rows, err := s.ap.list(ctx, f, wait)
	if err != nil {
		return govapi.ApprovalList{}, err
	}
	list := govapi.ApprovalList{SchemaVersion: audit.SchemaVersion, Approvals: make([]approval.Request, len(rows)), NextAfterSeq: f.AfterSeq}
	for i, row := range rows {
		list.Approvals[i] = row.Request
		list.NextAfterSeq = max(list.NextAfterSeq, row.Seq)
	}
	if f.Newest {
		list.NextAfterSeq = max(list.NextAfterSeq, head)
	}
	list.HasMore = len(rows) == f.Limit && !f.Newest && f.Status != approval.Pending
	return list, nil
}

// ownOnly reports whether id may see only its own requests: an agent that
// is not also an approver, an auditor or a gateway (which waits on the
// requests it opened for others; DESIGN §7, §11).
func ownOnly(id token.Identity) bool {
	return !id.Has(token.Approver) && !id.Has(token.Auditor) && !id.Has(token.Gateway)
}

// actor is the caller's name for a request or a vote; local mode needs the
// X-Govkit-User header for it.
func actor(caller token.Identity) (string, error) {
	if caller.Name == "" {
		return "", badRequest(errors.New("no user name: auditd runs without a tokens file and takes the user from the " + govapi.UserHeader + " header (the approvals CLI sends $USER)"))
	}
	return caller.Name, nil
}
