package auditd

import (
	"errors"
	"net/http"

	"github.com/govkit/govkit/pkg/approval"
)

// apiError is how the API answers an error: status, code, message and
// the detail of a refusal.
type apiError struct {
	status int
	code   string
	msg    string
	detail any
}

// errorAnswer maps err to its answer, in one place for every handler: a
// rule's refusal (its own status and code), a bad request (400), an unknown
// approval (404), a refused approval step (403, 409 or 410 by its code), a
// database that cannot take writes or a server shutting down (503), or
// else an internal error (500), whose message starts with doing ("storing
// the event: ").
func errorAnswer(err error, doing string) apiError {
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
		return apiError{http.StatusServiceUnavailable, down.code, "not stored: " + err.Error(), nil}
	case errors.As(err, &ref):
		return apiError{ref.status, ref.code, ref.msg, ref.detail}
	case errors.Is(err, errNotFound):
		return apiError{status: http.StatusNotFound, msg: err.Error()}
	case errors.As(err, &bad), errors.As(err, &field), errors.As(err, &afld):
		return apiError{status: http.StatusBadRequest, msg: err.Error()}
	case errors.As(err, &aref):
		return apiError{status: approvalRefusalStatus(aref.Code), code: aref.Code, msg: aref.Msg}
	case errors.Is(err, errClosed):
		return apiError{status: http.StatusServiceUnavailable, msg: err.Error()}
	}
	return apiError{status: http.StatusInternalServerError, msg: doing + err.Error()}
}

// answerError answers err as errorAnswer maps it.
func (s *Server) answerError(w http.ResponseWriter, err error) {
	a := errorAnswer(err, "")
	s.failDetail(w, a.status, a.code, a.msg, a.detail)
}

// appendError answers an append that failed: an unexpected failure says it
// was storing.
func (s *Server) appendError(w http.ResponseWriter, err error) {
	a := errorAnswer(err, "storing the event: ")
	s.failDetail(w, a.status, a.code, a.msg, a.detail)
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
