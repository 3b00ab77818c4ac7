package sessionloop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/session/receipt"
)

// fakeAuditd takes batches, or refuses them with err.
type fakeAuditd struct {
	mu     sync.Mutex
	events []audit.Event
	err    error
	hold   chan struct{} // when set, each append waits for it
}

func (f *fakeAuditd) AppendBatch(_ context.Context, evs []audit.Event) ([]client.AppendResult, error) {
	if f.hold != nil {
		<-f.hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	f.events = append(f.events, evs...)
	return make([]client.AppendResult, len(evs)), nil
}

func testReceipt(i int) *receipt.Receipt {
	return &receipt.Receipt{
		ReceiptID: fmt.Sprint("rcpt_", i), SessionID: "s1", TurnID: "t1", ToolID: "read_file", CallID: fmt.Sprint("c", i),
		OK: i%2 == 0, Error: "boom", Inputs: json.RawMessage(`{"path":"secret.txt"}`), Excerpt: "file text",
		SHA256: "ab", FullSize: 9, Timestamp: "2025-01-01T00:00:00Z", SignatureAlg: "HMAC-SHA256", Signature: "c2ln",
	}
}

// TestReceiptLog: every receipt becomes a tool_receipt event, in order,
// with the receipt's proof and never the tool's inputs or output (G-16).
// The queue is smaller than the receipts: Receipt waits, nothing drops.
func TestReceiptLog(t *testing.T) {
	a := &fakeAuditd{hold: make(chan struct{})}
	l := NewReceiptLog(a, 2, nil, nil)
	// auditd answers once the queue is full: Receipt must then wait.
	go func() {
		for len(l.ch) < cap(l.ch) {
			time.Sleep(time.Millisecond)
		}
		close(a.hold)
	}()
	const n = 300
	for i := range n {
		l.Receipt(testReceipt(i))
	}
	rep := l.Close(context.Background())
	if rep.Receipts != n || rep.Recorded != n || rep.Unrecorded() != 0 || rep.Err != nil {
		t.Fatalf("report %+v", rep)
	}
	if len(a.events) != n {
		t.Fatalf("%d events", len(a.events))
	}
	for i, ev := range a.events {
		var d receiptData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if ev.EventType != EventTypeReceipt || ev.SessionID != "s1" || ev.Tool.Name != "read_file" || d.ReceiptID != fmt.Sprint("rcpt_", i) ||
			d.CallID != fmt.Sprint("c", i) || d.Signature != "c2ln" || d.SHA256 != "ab" || !strings.HasPrefix(ev.EventID, "evt_") {
			t.Fatalf("event %d: %+v data %s", i, ev, ev.Data)
		}
		if status := ev.Outcome.Status; (status == "success") != (i%2 == 0) || (ev.Tool.Error != "") == (i%2 == 0) {
			t.Fatalf("event %d: outcome %s, error %q", i, status, ev.Tool.Error)
		}
		if strings.Contains(string(ev.Data), "secret.txt") || strings.Contains(string(ev.Data), "file text") {
			t.Fatalf("event %d carries the tool's inputs or output: %s", i, ev.Data)
		}
	}
}

// TestReceiptLogRefused: a refusal does not stop the session; Close says
// how many receipts are not in the chain, and why.
func TestReceiptLogRefused(t *testing.T) {
	a := &fakeAuditd{err: &client.Error{StatusCode: 403, Message: "forbidden"}}
	l := NewReceiptLog(a, 0, nil, nil)
	for i := range 3 {
		l.Receipt(testReceipt(i))
	}
	rep := l.Close(context.Background())
	if rep.Unrecorded() != 3 || rep.Err == nil || !strings.Contains(rep.Err.Error(), "403") {
		t.Fatalf("report %+v", rep)
	}
	l.Receipt(testReceipt(4))
	if rep := l.Close(context.Background()); rep.Unrecorded() != 4 {
		t.Fatalf("after close: %+v", rep)
	}
}
