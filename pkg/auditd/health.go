package auditd

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
)

// errReadOnly answers every write of an auditd started read-only.
var errReadOnly = errors.New("auditd serves this database read-only (--read-only): it records nothing; restart it without --read-only on a writable database to record")

// unavailableError is a write auditd cannot make durable now: the store is
// read-only, full, or no longer the database file. The API answers it
// with 503 and its code; pkg/client takes 503 as worth a retry, which is
// right for a full disk, and harmless for the others.
type unavailableError struct {
	code string
	err  error
}

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// dbHealth is the truth /health tells about the database: nil while the
// last commit succeeded, else why not. A read-only or replaced database
// stays degraded (sticky); a failed commit, until one succeeds.
type dbHealth struct {
	mu     sync.Mutex
	cur    *unavailableError
	sticky bool
	gauge  prometheus.Gauge // govkit_auditd_degraded: 1 while degraded
}

// get returns the reason and message of the degradation, or "" when the
// database is healthy.
func (h *dbHealth) get() (reason, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		return "", ""
	}
	return h.cur.code, h.cur.Error()
}

// set records a degradation; sticky ones are never cleared.
func (h *dbHealth) set(e *unavailableError, sticky bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sticky {
		return
	}
	h.cur, h.sticky = e, sticky
	h.gauge.Set(1)
}

// committed records a successful commit: it ends a degradation that is not
// sticky.
func (h *dbHealth) committed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur != nil && !h.sticky {
		h.cur = nil
		h.gauge.Set(0)
	}
}

// commitError classifies a failed commit for /health and the API: a full
// disk and a read-only store are unavailableErrors (503); anything else
// stays a plain error (500), reported as write_failed.
func commitError(err error) (*unavailableError, error) {
	var u *unavailableError
	switch {
	case errors.As(err, &u):
		return u, err
	case errors.Is(err, store.ErrFull):
		u = &unavailableError{govapi.ReasonDiskFull, err}
		return u, u
	case errors.Is(err, store.ErrReadOnly):
		u = &unavailableError{govapi.ReasonReadOnly, err}
		return u, u
	case errors.Is(err, store.ErrUnavailable):
		// The commit may or may not have happened: a client retries
		// with its event_id and gets the event either way (issue 19).
		u = &unavailableError{govapi.ReasonDatabaseUnavailable, err}
		return u, u
	}
	return &unavailableError{govapi.ReasonWriteFailed, err}, err
}
