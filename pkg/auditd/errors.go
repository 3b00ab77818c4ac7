package auditd

import (
	"errors"
	"net/http"

	"github.com/govkit/govkit/pkg/approval"
)

// answerError answers err with the status its type stands for: a rule's
// refusal (its own status and code), a bad request (400), an unknown
// approval (404), a refused approval step (403, 409 or 410 by its code), a
// database that cannot take writes or a server shutting down (503), or
// else an internal error (500).
func (s *Server) answerError(w http.ResponseWriter, err error) {
	var (
		ref   *refusal
		bad   *requestError
		field *fieldError
		afld  *approval.FieldError
		aref  *approval.Refusal
		down  *unavailableError
	)
	switch {
	case errors.As(err, &down):
		// The database cannot take writes (health.go): 503 with the reason
		// /health reports, for every write endpoint alike.
		s.failCode(w, http.StatusServiceUnavailable, down.code, "not stored: "+err.Error())
	case errors.As(err, &ref):
		s.failDetail(w, ref.status, ref.code, ref.msg, ref.detail)
	case errors.Is(err, errNotFound):
		s.fail(w, http.StatusNotFound, err.Error())
	case errors.As(err, &bad), errors.As(err, &field), errors.As(err, &afld):
		s.fail(w, http.StatusBadRequest, err.Error())
	case errors.As(err, &aref):
		s.failCode(w, approvalRefusalStatus(aref.Code), aref.Code, aref.Msg)
	case errors.Is(err, errClosed):
		s.fail(w, http.StatusServiceUnavailable, err.Error())
	default:
		s.fail(w, http.StatusInternalServerError, err.Error())
	}
}

// approvalRefusalStatus is the HTTP status of a refused approval step
// (DESIGN §7, §11).
func approvalRefusalStatus(code string) int {
	switch code {
	case approval.RefusedSelfApproval, approval.RefusedNotRequester:
		return http.StatusForbidden
	case approval.RefusedStale:
		return http.StatusGone
	}
	return http.StatusConflict
}

// errorCode is the code an error answer carries for err: a rule's refusal
// or the reason the database takes no writes; "" for others.
func errorCode(err error) string {
	var ref *refusal
	if errors.As(err, &ref) {
		return ref.code
	}
	return unavailableCode(err)
}
