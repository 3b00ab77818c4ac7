package auditd

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/strictjson"
)

// eventJSON returns a stored event as the API and the stream show it: the
// stored canonical body with event_hash added. The body bytes are served as
// stored, not re-encoded, so what a client reads is exactly what was hashed
// (plus the hash).
func eventJSON(rec audit.Record) []byte {
	b := rec.Body
	var hash []byte
	if audit.IsHash(rec.EventHash) {
		// What json.Marshal writes for hex, without its reflection, in the
		// writer's serial section (issue 20).
		hash = append(append(append(make([]byte, 0, 66), '"'), rec.EventHash...), '"')
	} else {
		hash, _ = json.Marshal(rec.EventHash) // a tampered column could hold anything
	}
	out := make([]byte, 0, len(b)+len(`,"event_hash":`)+len(hash))
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"event_hash":`...)
	out = append(out, hash...)
	return append(out, '}')
}

// storedJSON is eventJSON for records read back from the store, which
// someone with write access to the database may have edited: a body that is
// not a JSON object is reported instead of being spliced into a response.
func storedJSON(rec audit.Record) ([]byte, error) {
	b := rec.Body
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' || !json.Valid(b) {
		return nil, fmt.Errorf("stored event seq %d is not a JSON object (the database was modified; GET /api/verify reports it)", rec.Seq)
	}
	return eventJSON(rec), nil
}

// requestError is a problem with the request itself (HTTP 400); code, when
// set, is the govapi.Code* the answer carries.
type requestError struct {
	err  error
	code string
}

// badRequest marks err as the request's fault.
func badRequest(err error) error { return &requestError{err: err} }

// invalidBody marks err as a body that is not what the endpoint takes
// (govapi.CodeInvalidBody): malformed JSON, a member of the wrong type or
// unknown, what audit.CheckRequestJSON or audit.DecodeEvent refuses.
func invalidBody(err error) error {
	return &requestError{err: err, code: govapi.CodeInvalidBody}
}

// bodyError is err, a refusal of body by audit's strict parser, with
// encoding/json's line and column when the body is not well-formed JSON
// at all (strictjson's message, the one every endpoint gives); a refusal
// only audit's parser makes (invalid UTF-8, a lone surrogate, nesting
// deeper than it takes) keeps audit's words.
func bodyError(body []byte, err error) error {
	var se *audit.SyntaxError
	if errors.As(err, &se) {
		var raw json.RawMessage
		var je *strictjson.Error
		if errors.As(strictjson.Decode(body, &raw), &je) {
			return je
		}
	}
	return err
}

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }
