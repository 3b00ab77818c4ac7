package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
)

// AppendBatch against a real auditd: the events come back stored, in
// order; a retry reports them as not created; a bad event fails the batch
// naming its line, and nothing is stored.
func TestAppendBatch(t *testing.T) {
	d := auditdtest.Start(t, auditdtest.Options{})
	c, err := client.New(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	evs := make([]audit.Event, 20)
	for i := range evs {
		evs[i] = audit.Event{EventType: audit.TypeToolExecution, Agent: "a1", Tool: &audit.Tool{Name: "bash", RawCommand: fmt.Sprintf("echo %d", i)}}
	}
	evs[3].EventID = "client-chosen"
	res, err := c.AppendBatch(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Created || r.Event.Seq != int64(i+1) || r.Event.Tool.RawCommand != evs[i].Tool.RawCommand || r.Event.EventHash == "" {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if res[3].Event.EventID != "client-chosen" {
		t.Fatalf("event_id %q, want the client's", res[3].Event.EventID)
	}

	// A retry of the event with an id, with a new one: only the new one is
	// created.
	again, err := c.AppendBatch(ctx, []audit.Event{evs[3], evs[0]})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Created || again[0].Event.EventHash != res[3].Event.EventHash || !again[1].Created || again[1].Event.Seq != 21 {
		t.Fatalf("retry: %+v", again)
	}

	bad := []audit.Event{evs[0], {EventType: audit.TypePolicyDecision}}
	var e *client.Error
	if _, err := c.AppendBatch(ctx, bad); !errors.As(err, &e) || e.StatusCode != 400 || !strings.HasPrefix(e.Message, "line 2: ") {
		t.Fatalf("a reserved event_type on line 2: %v", err)
	}
	if h, err := c.Health(ctx); err != nil || h.HeadSeq != 21 {
		t.Fatalf("head %+v, %v; want 21: a refused batch stored something", h, err)
	}

	// Refused before sending: server-assigned fields, too many events.
	if _, err := c.AppendBatch(ctx, []audit.Event{evs[0], {EventType: "x", Seq: 4}}); err == nil || !strings.Contains(err.Error(), "evs[1]: seq is assigned") {
		t.Fatalf("seq set: %v", err)
	}
	if _, err := c.AppendBatch(ctx, make([]audit.Event, govapi.MaxBatchEvents+1)); err == nil || !strings.Contains(err.Error(), "at most 1000") {
		t.Fatalf("1001 events: %v", err)
	}
	if res, err := c.AppendBatch(ctx, nil); res != nil || err != nil {
		t.Fatalf("no events: %v, %v", res, err)
	}
}
