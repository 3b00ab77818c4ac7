package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// IsTransient reports whether err may go away by itself, so that a caller
// retries instead of giving up: auditd unreachable, restarting (5xx), rate
// limiting (429), or no answer in time. Refusals (4xx) are not: the same
// request gets the same answer; nor is a certificate the client does not
// trust (waiting cannot fix it: --ca-cert can).
func IsTransient(err error) bool {
	if IsCertificateError(err) {
		return false
	}
	var ae *Error
	if errors.As(err, &ae) {
		return ae.StatusCode >= 500 || ae.StatusCode == http.StatusTooManyRequests
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}

// Reason is err in a few words for a message that names auditd itself:
// auditd's answer ("403: …") or the innermost cause of any other failure
// ("connection refused"), without the method and URL net/http puts
// before it and the client's own wrapping.
func Reason(err error) string {
	var ae *Error
	if errors.As(err, &ae) {
		return fmt.Sprintf("%d: %s", ae.StatusCode, ae.Message)
	}
	for next := errors.Unwrap(err); next != nil; next = errors.Unwrap(err) {
		err = next
	}
	return err.Error()
}
