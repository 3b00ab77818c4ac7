package sessionloop

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/session/receipt"
	"github.com/govkit/govkit/pkg/termtext"
)

// EventTypeReceipt is the audit event type a receipt is recorded as.
const EventTypeReceipt = "tool_receipt"

// Appender appends events to auditd's chain in one request: *client.Client.
type Appender interface {
	AppendBatch(ctx context.Context, evs []audit.Event) ([]client.AppendResult, error)
}

// ReceiptLog appends every receipt of a session to auditd's chain, as a
// tool_receipt event, so that receipts are append-only and listable per
// session (G-16, G-20: GET /api/events?session_id=). It works on its own
// goroutine, in batches, through a bounded channel that blocks the session
// when full: a receipt is never dropped. A receipt auditd did not take is
// counted, and Close says how many.
type ReceiptLog struct {
	app  Appender
	now  func() time.Time
	rand io.Reader
	ch   chan audit.Event
	done chan struct{}

	queued, recorded, failed atomic.Int64
	lastErr                  atomic.Pointer[error]
	closed                   bool
}

// receiptBatch bounds one append request; receiptRetries are the pauses
// before retrying a batch auditd could not take for a reason that may pass.
const receiptBatch = 256

var receiptRetries = []time.Duration{200 * time.Millisecond, time.Second}

// NewReceiptLog starts a log of at most size waiting receipts (size ≤ 0:
// 1024). Event ids come from now and rand (nil: time.Now, crypto/rand).
func NewReceiptLog(app Appender, size int, now func() time.Time, random io.Reader) *ReceiptLog {
	if size <= 0 {
		size = 1024
	}
	if now == nil {
		now = time.Now
	}
	if random == nil {
		random = rand.Reader
	}
	l := &ReceiptLog{app: app, now: now, rand: random, ch: make(chan audit.Event, size), done: make(chan struct{})}
	go l.run()
	return l
}

// receiptData is the event's data: the receipt's identity, digest and
// signature, never the key and never the tool's inputs or output (those
// stay with the runtime; auditd keeps the proof that they existed).
type receiptData struct {
	ReceiptID    string `json:"receipt_id"`
	CallID       string `json:"call_id"`
	TurnID       string `json:"turn_id,omitempty"`
	Tool         string `json:"tool"`
	AgentID      string `json:"agent_id,omitempty"`
	OK           bool   `json:"ok"`
	SHA256       string `json:"sha256"`
	FullSize     int    `json:"full_size"`
	Truncated    bool   `json:"truncated,omitempty"`
	Timestamp    string `json:"timestamp"`
	SignatureAlg string `json:"signature_alg"`
	Signature    string `json:"signature"`
}

// Receipt queues r, waiting while the queue is full. After Close it only
// counts r as not recorded.
func (l *ReceiptLog) Receipt(r *receipt.Receipt) {
	l.queued.Add(1)
	if l.closed {
		l.fail(errors.New("the session ended before the receipt was queued"), 1)
		return
	}
	data, err := json.Marshal(receiptData{
		ReceiptID: r.ReceiptID, CallID: r.CallID, TurnID: r.TurnID, Tool: r.ToolID, AgentID: r.AgentID, OK: r.OK,
		SHA256: r.SHA256, FullSize: r.FullSize, Truncated: r.Truncated, Timestamp: r.Timestamp,
		SignatureAlg: r.SignatureAlg, Signature: r.Signature,
	})
	if err != nil {
		l.fail(err, 1)
		return
	}
	status := "success"
	tool := &audit.Tool{Name: r.ToolID}
	if !r.OK {
		status = "error"
		// tool.error is a field auditd redacts secrets from; data is not.
		tool.Error = termtext.Cut(r.Error, audit.MaxResult)
	}
	l.ch <- audit.Event{
		SchemaVersion: audit.SchemaVersion, EventID: audit.NewEventID(l.now(), l.rand), EventType: EventTypeReceipt,
		SessionID: r.SessionID, Tool: tool, Outcome: &audit.Outcome{Status: status}, Data: data,
	}
}

func (l *ReceiptLog) run() {
	defer close(l.done)
	batch := make([]audit.Event, 0, receiptBatch)
	for ev := range l.ch {
		batch = append(batch[:0], ev)
	fill:
		for len(batch) < receiptBatch {
			select {
			case ev, ok := <-l.ch:
				if !ok {
					break fill
				}
				batch = append(batch, ev)
			default:
				break fill
			}
		}
		l.send(batch)
	}
}

// send appends batch, retrying what may pass (auditd restarting or busy):
// the events' ids make a retry idempotent.
func (l *ReceiptLog) send(batch []audit.Event) {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := l.app.AppendBatch(ctx, batch)
		cancel()
		if err == nil {
			l.recorded.Add(int64(len(batch)))
			return
		}
		if attempt == len(receiptRetries) || !client.IsTransient(err) {
			l.fail(err, len(batch))
			return
		}
		time.Sleep(receiptRetries[attempt])
	}
}

func (l *ReceiptLog) fail(err error, n int) {
	l.failed.Add(int64(n))
	l.lastErr.Store(&err)
}

// ReceiptReport is what became of a session's receipts.
type ReceiptReport struct {
	Receipts int   // handed to the log
	Recorded int   // appended to auditd's chain
	Err      error // why the others were not, when some were not
}

// Unrecorded is how many receipts are not in auditd's chain.
func (r ReceiptReport) Unrecorded() int { return r.Receipts - r.Recorded }

// Close sends what is queued and waits for it until ctx ends. It must be
// called once, after the last Receipt.
func (l *ReceiptLog) Close(ctx context.Context) ReceiptReport {
	if !l.closed {
		l.closed = true
		close(l.ch)
	}
	var waitErr error
	select {
	case <-l.done:
	case <-ctx.Done():
		waitErr = fmt.Errorf("auditd did not take them in time: %w", ctx.Err())
	}
	rep := ReceiptReport{Receipts: int(l.queued.Load()), Recorded: int(l.recorded.Load())}
	if rep.Unrecorded() > 0 {
		rep.Err = waitErr
		if p := l.lastErr.Load(); p != nil && rep.Err == nil {
			rep.Err = *p
		}
	}
	return rep
}
