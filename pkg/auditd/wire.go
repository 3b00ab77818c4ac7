package auditd

import (
	"encoding/json"
	"fmt"

	"github.com/govkit/govkit/pkg/audit"
)

// eventJSON returns a stored event as the API and the stream show it: the
// stored canonical body with event_hash added. The body bytes are served as
// stored, not re-encoded, so what a client reads is exactly what was hashed
// (plus the hash).
func eventJSON(rec audit.Record) []byte {
	b := rec.Body
	hash, _ := json.Marshal(rec.EventHash) // hex, but a tampered column could hold anything
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

// requestError is a problem with the request itself (HTTP 400).
type requestError struct{ err error }

// badRequest marks err as the request's fault.
func badRequest(err error) error { return &requestError{err} }

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }
