package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
)

func TestIsTransientAndReason(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	for _, tc := range []struct {
		err       error
		transient bool
		reason    string
	}{
		{refused, true, "connection refused"},
		{fmt.Errorf("reading auditd's answer: %w", refused), true, "connection refused"},
		{&Error{StatusCode: 503, Message: "shutting down"}, true, "503: shutting down"},
		{&Error{StatusCode: 429, Message: "slow down"}, true, "429: slow down"},
		{&Error{StatusCode: 403, Message: "no", Code: "principal_not_allowed"}, false, "403: no"},
		{&Error{StatusCode: 409, Message: "taken"}, false, "409: taken"},
		{context.DeadlineExceeded, true, "context deadline exceeded"},
		{errors.New("bad json"), false, "bad json"},
	} {
		if got := IsTransient(tc.err); got != tc.transient {
			t.Errorf("IsTransient(%v) = %v", tc.err, got)
		}
		if got := Reason(tc.err); got != tc.reason {
			t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.reason)
		}
	}
}
