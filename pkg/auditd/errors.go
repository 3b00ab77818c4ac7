package auditd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
)

// Operations (Append, Decide, RequestApproval, Consume, …) say what went
// wrong with typed errors and never with HTTP: a *Refusal when a rule
// refused the request, the approval workflow's *approval.Refusal and
// *approval.FieldError, a bad request (requestError, fieldError), a
// database that cannot take writes (unavailableError), or anything else, an
// internal failure. errorAnswer, the one adapter, maps them to a status and
// an error body; gate and tests calling the operations directly branch on
// the types.

// Kind is what kind of refusal a Refusal is.
type Kind int

const (
	Invalid         Kind = iota + 1 // the request is malformed (400)
	Unauthenticated                 // no valid credential (401)
	Forbidden                       // the caller may not (403)
	NotFound                        // nothing by that name (404)
	Conflict                        // it contradicts what is recorded (409)
	TooLarge                        // the body is over its bound (413)
	UnsupportedType                 // the body is not JSON (415)
	Unprocessable                   // well-formed, but nothing can be done with it (422)
	Unavailable                     // not now: no policy, read-only, shutting down (503)
	NoRoute                         // no such endpoint (404): the router's own
	NoMethod                        // the endpoint takes other methods (405)
)

// Refusal is a request refused by a rule: its kind, the stable code
// clients branch on (govapi.Code*; may be empty), a message that says what
// to do, and an optional detail (a decision or a trace) so that a refused
// caller sees why.
type Refusal struct {
	Kind   Kind
	Code   string
	Msg    string
	Detail any
}

func (e *Refusal) Error() string { return e.Msg }

func refuse(kind Kind, code, format string, args ...any) *Refusal {
	return &Refusal{Kind: kind, Code: code, Msg: fmt.Sprintf(format, args...)}
}

var kindStatus = map[Kind]int{
	Invalid: http.StatusBadRequest, Unauthenticated: http.StatusUnauthorized, Forbidden: http.StatusForbidden,
	NotFound: http.StatusNotFound, Conflict: http.StatusConflict, TooLarge: http.StatusRequestEntityTooLarge,
	UnsupportedType: http.StatusUnsupportedMediaType, Unprocessable: http.StatusUnprocessableEntity,
	Unavailable: http.StatusServiceUnavailable, NoRoute: http.StatusNotFound, NoMethod: http.StatusMethodNotAllowed,
}

// apiError is how the API answers an error: status and body.
type apiError struct {
	status int
	code   string
	msg    string
	detail any
}

// errorAnswer maps err to its answer, in one place for every endpoint: a
// refusal (its kind's status and its code), a bad request (400), an
// unknown approval or event (404), a refused approval step (403, 409 or
// 410 by its code), a database that cannot take writes or a server
// shutting down (503), or else an internal error (500; internal() says
// what auditd was doing). The message is err's, with what wraps it (a
// batch's "line 3: ").
func errorAnswer(err error) apiError {
	var (
		ref   *Refusal
		bad   *requestError
		field *fieldError
		afld  *approval.FieldError
		aref  *approval.Refusal
		down  *unavailableError
		nd    *notDecisionError
	)
	switch {
	case errors.As(err, &down):
		// The database cannot take writes (health.go): 503 with the reason
		// /health reports, for every write endpoint alike.
		return apiError{http.StatusServiceUnavailable, down.code, "not stored: " + err.Error(), nil}
	case errors.As(err, &ref):
		return apiError{kindStatus[ref.Kind], ref.Code, err.Error(), ref.Detail}
	case errors.Is(err, errNotFound):
		return apiError{status: http.StatusNotFound, msg: err.Error()}
	case errors.As(err, &nd):
		return apiError{status: http.StatusUnprocessableEntity, code: govapi.CodeNotADecision, msg: err.Error()}
	case errors.As(err, &bad):
		return apiError{status: http.StatusBadRequest, code: bad.code, msg: err.Error()}
	case errors.As(err, &field), errors.As(err, &afld):
		return apiError{status: http.StatusBadRequest, msg: err.Error()}
	case errors.As(err, &aref):
		return apiError{status: approvalRefusalStatus(aref.Code), code: aref.Code, msg: err.Error()}
	case errors.Is(err, errClosed):
		return apiError{status: http.StatusServiceUnavailable, msg: err.Error()}
	case errors.Is(err, store.ErrUnavailable):
		// A read while the database server is away (restarting, failing
		// over): worth a retry, as a write then is (issue 19).
		return apiError{http.StatusServiceUnavailable, govapi.ReasonDatabaseUnavailable, err.Error(), nil}
	}
	return apiError{status: http.StatusInternalServerError, msg: err.Error()}
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

// answerError answers err as errorAnswer maps it: the one place that
// writes an error body, and counts it.
func (s *Server) answerError(w http.ResponseWriter, err error) {
	s.writeError(w, errorAnswer(err))
}

func (s *Server) writeError(w http.ResponseWriter, a apiError) {
	s.m.rejected.WithLabelValues(strconv.Itoa(a.status)).Inc()
	b, err := json.Marshal(govapi.ErrorBody{SchemaVersion: audit.SchemaVersion, Error: a.msg, Code: a.code, Detail: a.detail})
	if err != nil {
		b, _ = json.Marshal(govapi.ErrorBody{SchemaVersion: audit.SchemaVersion, Error: a.msg, Code: a.code})
	}
	writeJSON(w, a.status, b)
}

// reply is what an endpoint answers when its operation succeeded.
type reply struct {
	status   int
	body     []byte // JSON, unless contentType says otherwise
	location string // the Location of what a POST created
	// contentType, when set, is body's type, written as it is (GET
	// PathCheckpoint's text/plain note).
	contentType string
}

// endpoint is the HTTP side of an operation: it reads the request, calls
// the operation, and says what to answer.
type endpoint func(r *http.Request) (reply, error)

// serve adapts e to net/http: its reply is written as JSON, its error by
// answerError.
func (s *Server) serve(e endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rep, err := e(r)
		if err != nil {
			s.answerError(w, err)
			return
		}
		if rep.location != "" {
			w.Header().Set("Location", rep.location)
		}
		if rep.contentType != "" {
			w.Header().Set("Content-Type", rep.contentType)
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(rep.status)
			w.Write(rep.body)
			return
		}
		writeJSON(w, rep.status, rep.body)
	}
}

// jsonReply encodes v as a reply, without HTML escaping: explanations say
// "rows_affected=1500 > limit=1000", and stored events (json.RawMessage)
// must reach clients byte for byte as hashed.
func jsonReply(status int, v any) (reply, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return reply{}, fmt.Errorf("encoding the answer: %w", err)
	}
	return reply{status: status, body: bytes.TrimSuffix(b.Bytes(), []byte("\n"))}, nil
}

// rawReply answers body, JSON already.
func rawReply(status int, body []byte) (reply, error) { return reply{status: status, body: body}, nil }

// Recorded is the result of an operation that records an event: its value,
// and whether this call recorded it (Created; 201) or an earlier call with
// the same id did (200).
type Recorded[T any] struct {
	Value   T
	Created bool
}

func (r Recorded[T]) status() int {
	if r.Created {
		return http.StatusCreated
	}
	return http.StatusOK
}
