package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
)

// A kept-alive connection that the server drops under a request (as every
// one is when auditd restarts) is resent for an event with an id, which
// auditd stores once, and is an error for an event without one, which a
// resend could store twice. The CI failure this stops: secbot's
// TestReconnect posted on a connection to the auditd it had just stopped.
func TestAppendResendsOnDroppedConnection(t *testing.T) {
	var calls atomic.Int32
	drop := func() bool { return calls.Load() == 2 }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if drop() {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // the request was read; no answer comes
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"schema_version":1,"seq":1,"event_type":"tool_execution"}`))
	}))
	defer srv.Close()

	for _, tc := range []struct {
		id      string
		wantErr bool
	}{{"ev-1", false}, {"", true}} {
		calls.Store(0)
		c, err := client.New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		ev := audit.Event{EventID: tc.id, EventType: audit.TypeToolExecution, Agent: "a"}
		if _, err := c.Append(context.Background(), ev); err != nil {
			t.Fatalf("first append: %v", err)
		}
		_, err = c.Append(context.Background(), ev) // on the kept-alive connection, dropped
		if gotErr := err != nil; gotErr != tc.wantErr {
			t.Errorf("event id %q: second append error %v, want error %v (%d requests)", tc.id, err, tc.wantErr, calls.Load())
		}
		if !tc.wantErr && calls.Load() != 3 {
			t.Errorf("event id %q: %d requests, want 3 (the dropped one resent)", tc.id, calls.Load())
		}
		c.CloseIdleConnections()
	}
}
